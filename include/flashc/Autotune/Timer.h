//===- Timer.h - check and time a candidate bundle on the GPU ---*- C++ -*-===//
//
// The runtime half of flash-tune (used by flash-tune-run; no MLIR, no
// libLLVM.so): every candidate of a bundle is checked once against the
// float64 reference and, if it passes, timed on every shape of the bundle
// with CUDA events after a warm-up, taking the median, with inputs rotated
// among sets larger than L2 so L2 does not serve them.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_AUTOTUNE_TIMER_H
#define FLASHC_AUTOTUNE_TIMER_H

#include "flashc/Autotune/Selection.h"

#include "llvm/Support/raw_ostream.h"

namespace flashc::tune {

struct TimerOptions {
  int device = 0;
  unsigned warmup = 10;
  unsigned iters = 50;
  unsigned seed = 1;
  /// Query rows compared with the reference (first, last, hard rows and a
  /// random sample).
  unsigned checkRows = 128;
  /// Relative error allowed (0: 1e-2 for bf16, 5e-3 for f16, as flash-run).
  double tolerance = 0;
  /// Input sets rotate until they span this many bytes (an H200 has 60 MB
  /// of L2).
  size_t rotateBytes = size_t(256) << 20;
  llvm::raw_ostream *progress = nullptr;
  bool interactive = false;
};

/// Times the bundle in `dir`. Fails only when nothing can be timed: no
/// driver or GPU (the error's code is the runtime's NoDriver/NoDevice), an
/// unreadable bundle, or a failed allocation. A candidate that cannot load
/// or launch, or fails the check, is recorded as such.
llvm::Expected<TimingsFile> timeBundle(llvm::StringRef dir,
                                       const BundleManifest &manifest,
                                       const TimerOptions &options);

} // namespace flashc::tune

#endif // FLASHC_AUTOTUNE_TIMER_H

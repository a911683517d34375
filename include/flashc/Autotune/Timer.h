//===- Timer.h - check and time a candidate bundle on the GPU ---*- C++ -*-===//
//
// The runtime half of flash-tune (used by flash-tune-run; no MLIR, no
// libLLVM.so): every candidate of a bundle is checked once against the
// float64 reference and, if it passes, timed on every shape of the bundle
// with CUDA events after a warm-up, taking the median, with inputs rotated
// among sets larger than L2 so L2 does not serve them.
//
// Most of a search space is slow, so there are two passes. The first
// checks every candidate and times it over `probe` launches per shape; the
// second gives the full `iters` launches only to the finalists, those whose
// probe median is within `screenRatio` of the best probe of the shape. The
// others keep their probe median, marked as screened: they cannot win. The
// second pass runs in `rounds` rounds, each giving every finalist its share
// of the launches, and a finalist's median is over all of them. Timed one
// after another, one finalist once read 19% slower than in every later run,
// which cost its shape the better config; interleaved, such a slow spell
// falls on every finalist alike (docs/decisions.md, "Interleaved rounds in
// flash-tune-run").
//
// One worker thread per GPU takes candidates from a shared queue; every
// device gets the same inputs, so a candidate's check does not depend on
// where it ran.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_AUTOTUNE_TIMER_H
#define FLASHC_AUTOTUNE_TIMER_H

#include "flashc/Autotune/Selection.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

namespace flashc::tune {

struct TimerOptions {
  /// CUDA device ordinals to use, one worker each; empty: every device.
  std::vector<int> devices;
  unsigned warmup = 5;
  unsigned iters = 50;
  /// Launches per shape in the first pass.
  unsigned probe = 5;
  /// Interleaved rounds the second pass splits `iters` into.
  unsigned rounds = 5;
  /// Finalists: probe median within this multiple of the best probe of the
  /// shape (0: no first pass, every candidate gets `iters` launches).
  double screenRatio = 1.10;
  unsigned seed = 1;
  /// Query rows compared with the reference (first, last, hard rows and a
  /// random sample).
  unsigned checkRows = 128;
  /// Relative error allowed (0: 1e-2 for bf16, 5e-3 for f16, as flash-run).
  double tolerance = 0;
  /// Input sets rotate until they span this many bytes (an H200 has 60 MB
  /// of L2).
  size_t rotateBytes = size_t(256) << 20;
  /// Bytes written before each timed launch (outside its events), as
  /// triton.testing.do_bench, and so bench/compare.py, does: the launch
  /// finds L2 full of another buffer's dirty lines, as in the benchmark that
  /// judges the picks (0: launches back to back). On its own it did not
  /// bring the D64 causal N = 2048 / 4096 ranking to compare.py's
  /// (docs/decisions.md, "L2 flush in flash-tune-run").
  size_t flushBytes = size_t(256) << 20;
  /// A launch that has not finished after this long is taken for a hang:
  /// the GPU cannot be used further by this process, so the run stops with
  /// an error naming the candidate (rerun with it in `skip`).
  double hangSeconds = 20;
  /// Candidate ids not to run at all.
  llvm::StringSet<> skip;
  llvm::raw_ostream *progress = nullptr;
  bool interactive = false;
};

/// Times the bundle in `dir`. Fails only when nothing can be timed: no
/// driver or GPU (the error's code is the runtime's NoDriver/NoDevice), an
/// unreadable bundle, a failed allocation or a hung kernel. A candidate that
/// cannot load or launch, or fails the check, is recorded as such.
llvm::Expected<TimingsFile> timeBundle(llvm::StringRef dir,
                                       const BundleManifest &manifest,
                                       const TimerOptions &options);

} // namespace flashc::tune

#endif // FLASHC_AUTOTUNE_TIMER_H

//===- Compile.h - prune, deduplicate and compile candidates ----*- C++ -*-===//
//
// The compiler half of flash-tune: from a kernel source and the configs of
// the search space to a bundle directory (a cubin and kernel.json per
// candidate, and the manifest), in LLVM's thread pool with one MLIRContext
// per task.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_AUTOTUNE_COMPILE_H
#define FLASHC_AUTOTUNE_COMPILE_H

#include "flashc/Autotune/Bundle.h"
#include "flashc/Autotune/Progress.h"
#include "flashc/Autotune/Prune.h"

#include <vector>

namespace flashc::tune {

struct CompileOptions {
  std::string arch = "sm_90a";
  std::string cudaRoot = "/usr/local/cuda";
  /// Worker threads (0: one per hardware thread).
  unsigned threads = 0;
  /// Keep kernels ptxas reports spills for (by default they are pruned:
  /// a spilling wgmma kernel loses its accumulators to local memory).
  bool keepSpills = false;
  /// Keep kernels whose wgmma chain ptxas serialised (C7513, C7518; by default
  /// they are pruned).
  bool keepSerializedWgmma = false;
  /// Stop after pruning: no NVVM, no ptxas, no files but the manifest.
  bool pruneOnly = false;
  /// Where progress goes (nullptr: nowhere), and whether it is a terminal.
  llvm::raw_ostream *progress = nullptr;
  bool interactive = false;
};

/// The configs that survive the verifier and the conversion, one per
/// distinct kernel (the first config of each in `configs` order), and the
/// rest with their reasons. Parallel over `configs`.
struct PruneResult {
  std::vector<TuneConfig> kept; ///< as the conversion applied them
  std::vector<PrunedConfig> pruned;
};
PruneResult pruneConfigs(const KernelSource &source,
                         llvm::ArrayRef<TuneConfig> configs,
                         const CompileOptions &options);

/// Prunes `configs`, compiles the survivors into `dir` (created) and writes
/// dir/manifest.json for `shapes`. Candidates ptxas rejects (or that spill)
/// are listed as pruned. Fails only on I/O or a missing toolkit.
llvm::Expected<BundleManifest> emitBundle(const KernelSource &source,
                                          llvm::ArrayRef<TuneConfig> configs,
                                          llvm::ArrayRef<ProblemShape> shapes,
                                          llvm::StringRef dir,
                                          const CompileOptions &options);

} // namespace flashc::tune

#endif // FLASHC_AUTOTUNE_COMPILE_H

//===- Prune.h - which configs can become a kernel --------------*- C++ -*-===//
//
// A config is pruned before anything is compiled by the rules that already
// exist, never by copies of them: the dialect's verifier
// (ConfigAttr::getChecked: MMA shapes, ranges) and then -convert-flash-to-gpu
// itself (block_m = 64 * warpgroups, shared memory <= 227 KiB per block,
// head dim), whose diagnostic becomes the reason. The conversion also says
// which schedule it really applied (it turns ping-pong off unless there are
// two consumer warpgroups, overlap off above head dim 128), so configs that
// lower to the same kernel are found from its output.
//
// One rule of flash-tune's own comes after the conversion, because only
// ptxas knows registers and compiling is the expensive step: a config whose
// accumulators alone, plus a floor for everything else, exceed the
// registers setmaxnreg gives a consumer thread is certain to spill
// (checkRegisterFit). Close calls are left to ptxas.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_AUTOTUNE_PRUNE_H
#define FLASHC_AUTOTUNE_PRUNE_H

#include "flashc/Autotune/Config.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <optional>
#include <string>

namespace flashc::tune {

/// The kernel being tuned: its source text and what its flash.attention is.
struct KernelSource {
  std::string path;
  std::string text;
  std::string hash;   ///< flashc::hashSource(text)
  std::string kernel; ///< the function holding flash.attention
  std::string dtype;  ///< "bf16" or "f16"
  int64_t headDim = 0;
  bool causal = false;
};

/// Reads and parses `path`; it must hold exactly one flash.attention.
llvm::Expected<KernelSource> loadKernelSource(llvm::StringRef path);

/// A context with every dialect flashc uses, single-threaded (flash-tune
/// parallelises over candidates, one context each).
std::unique_ptr<mlir::MLIRContext> createTuneContext();

/// The dialect verifier's message for `config`, or nothing if it is valid.
std::optional<std::string> checkConfigAttr(mlir::MLIRContext &context,
                                           const TuneConfig &config);

/// A kernel lowered to its gpu.module (not yet to NVVM).
struct LoweredKernel {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  /// The config the conversion recorded in flash.launch (what it applied).
  TuneConfig applied;
  /// Accumulator registers a consumer thread keeps live, and what
  /// setmaxnreg gives it (flash.launch).
  int64_t accumulatorRegs = 0;
  int64_t consumerRegs = 0;
};

/// Registers every consumer thread needs beyond the accumulators (row max
/// and sum, addresses, loop and barrier state); the lowest the kernels of
/// -convert-flash-to-gpu were seen to use (ptxas -v).
constexpr int64_t kRegisterFloor = 32;

/// Why a kernel must spill: the accumulators it keeps live (the
/// conversion's count: O, S and, with overlap, P beside the next S) plus
/// kRegisterFloor exceed `consumerRegs`. Nothing when it may fit.
std::optional<std::string> checkRegisterFit(int64_t accumulatorRegs,
                                            int64_t consumerRegs);

/// Parses the source in `context` and runs the tuned kernel pipeline; on
/// failure the error holds the diagnostics (the reason to prune).
llvm::Expected<LoweredKernel> lowerCandidate(mlir::MLIRContext &context,
                                             const KernelSource &source,
                                             const TuneConfig &config,
                                             llvm::StringRef arch);

} // namespace flashc::tune

#endif // FLASHC_AUTOTUNE_PRUNE_H

//===- GpuTarget.h - gpu.module -> PTX -> cubin -----------------*- C++ -*-===//
//
// The target layer: the NVVM lowering of a module's gpu.modules, their
// serialization to PTX (or LLVM IR), and ptxas for cubin.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_TARGET_GPUTARGET_H
#define FLASHC_TARGET_GPUTARGET_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"
#include "llvm/Support/Error.h"

#include <string>

namespace flashc {

struct GpuTargetOptions {
  /// The chip; flashc's kernels use wgmma and setmaxnreg, so sm_90a.
  std::string arch = "sm_90a";
  /// PTX ISA features for the NVPTX backend (sm_90a needs PTX 8.0).
  std::string ptxFeatures = "+ptx80";
  unsigned optLevel = 3;
  /// Where ptxas and libdevice are looked up first.
  std::string cudaRoot = "/usr/local/cuda";
};

/// What the target layer serializes each gpu.module to.
enum class GpuArtefact { Ptx, LlvmIr };

/// Fails with a message naming the supported architectures.
llvm::Error checkSupportedArch(llvm::StringRef arch);

/// Lowers every gpu.module of `module` to NVVM and serializes it; returns
/// the text of the single gpu.module (PTX or LLVM IR). Errors are emitted
/// as diagnostics on the module.
mlir::FailureOr<std::string> serializeGpuModule(mlir::ModuleOp module,
                                                const GpuTargetOptions &options,
                                                GpuArtefact artefact);

/// ptxas's path: under `cudaRoot`, then on PATH, then CUDA_HOME/CUDA_PATH.
std::optional<std::string> findPtxas(llvm::StringRef cudaRoot);

/// The result of one ptxas run.
struct Cubin {
  std::string bytes;
  /// ptxas -v's resource report (registers, shared memory, spills).
  std::string resourceReport;
};

/// Assembles `ptx` with ptxas for `options.arch`. The error carries ptxas's
/// own message when it rejects the PTX.
llvm::Expected<Cubin> assembleCubin(llvm::StringRef ptx,
                                    const GpuTargetOptions &options);

} // namespace flashc

#endif // FLASHC_TARGET_GPUTARGET_H

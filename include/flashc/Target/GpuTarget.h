//===- GpuTarget.h - gpu.module -> PTX -> cubin -----------------*- C++ -*-===//
//
// The target layer: what serializing a gpu.module needs and yields (the
// NVVM lowering that serializes it is lib/Pipeline's
// buildNVVMLoweringPipeline / serializeGpuModule), and ptxas for cubin.
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

/// Checks, before the NVVM lowering runs, that `module` holds exactly one
/// gpu.module and that `options.cudaRoot` has libdevice. Errors are emitted
/// as diagnostics on the module.
mlir::LogicalResult checkSerializable(mlir::ModuleOp module,
                                      const GpuTargetOptions &options);

/// The object the NVVM lowering left in the module's gpu.binary, as text:
/// PTX, or LLVM IR read from its bitcode. Errors are emitted as diagnostics
/// on the module.
mlir::FailureOr<std::string> readGpuBinary(mlir::ModuleOp module,
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

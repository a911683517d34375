//===- CompileKernel.h - one entry point from kernel IR to artefacts -------===//
//
// What flashc, flash-tune and the tests call to compile a kernel: the
// kernel-level module in, the stage asked for out (the tile program, the
// lowered MLIR, LLVM IR, PTX or cubin, or on the CPU target a host shared
// library; and for PTX, cubin and the library the kernel.json metadata).
// Every caller goes through the same passes, the same serialization and the
// same ptxas invocation.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_PIPELINE_COMPILEKERNEL_H
#define FLASHC_PIPELINE_COMPILEKERNEL_H

#include "flashc/Pipeline/Pipelines.h"
#include "flashc/Target/GpuTarget.h"
#include "flashc/Target/HostTarget.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>

namespace flashc {

/// The stages a compilation can stop at, in pipeline order. Ptx and Cubin
/// are the GPU target's, SharedLibrary the CPU target's.
enum class KernelStage { Tile, Mlir, LlvmIr, Ptx, Cubin, SharedLibrary };

/// What the kernel runs on: the sm_90a GPU kernel, or the same tile program
/// run as loops on the host CPU (slow; for tests and machines without a
/// GPU).
enum class TargetKind { Gpu, Cpu };

struct KernelCompileOptions {
  /// The config overrides (none: the kernel's own #flash.config).
  TileOverrides overrides;
  KernelStage stage = KernelStage::Ptx;
  TargetKind targetKind = TargetKind::Gpu;
  GpuTargetOptions target;
  HostTargetOptions host;
  /// The developer probe (-flash-gpu-schedule's probe-stamps).
  bool probeStamps = false;
  /// Compile the backward pass of the input's forward functions instead
  /// (-flash-derive-backward with replace: the same mods, captures and
  /// sinks).
  bool backward = false;
  /// kernel.json's binary name and the source's hash (PTX, cubin and the
  /// shared library).
  std::string binaryName;
  std::string sourceHash;
};

struct CompiledKernel {
  /// The stage's text: the module (Tile, Mlir), LLVM IR, PTX, or the
  /// cubin's or shared library's bytes.
  std::string artefact;
  /// PTX, cubin and the shared library: the launch contract (kernel.json).
  std::optional<llvm::json::Object> metadata;
  /// Cubin: ptxas -v's resource report.
  std::string resourceReport;
};

/// Whether `module` is kernel level (holds flash.attention), which the
/// flash passes lower, rather than a module they already lowered.
bool isKernelLevel(mlir::ModuleOp module);

/// A failure whose diagnostics were already emitted on the module's
/// context: the caller has nothing more to print.
class DiagnosedFailure : public llvm::ErrorInfo<DiagnosedFailure> {
public:
  static char ID;
  /// `stage`: "conversion" (the flash passes), "metadata" (kernel.json) or
  /// "nvvm" (the NVVM lowering and serialization).
  explicit DiagnosedFailure(std::string stage) : stage(std::move(stage)) {}
  void log(llvm::raw_ostream &os) const override { os << stage << " failed"; }
  std::error_code convertToErrorCode() const override {
    return llvm::inconvertibleErrorCode();
  }

  std::string stage;
};

/// Compiles `module` (kernel level: flash.attention; or, for the GPU
/// target's stages after Tile, a module the GPU pipeline already lowered)
/// in place to `options.stage`. The CPU target's library exports the kernel
/// function's C interface, `_mlir_ciface_<function>` (kernel.json's
/// `kernel`), taking a pointer to a memref descriptor per argument. A
/// pass's or the serialization's errors are emitted as diagnostics on the
/// module's context and come back as DiagnosedFailure; others (ptxas's or
/// the linker's message, an input the stage cannot take) as the error's
/// message.
llvm::Expected<CompiledKernel> compileKernel(mlir::ModuleOp module,
                                             const KernelCompileOptions &options);

} // namespace flashc

#endif // FLASHC_PIPELINE_COMPILEKERNEL_H

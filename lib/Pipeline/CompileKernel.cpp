//===- CompileKernel.cpp - kernel IR -> tile program, MLIR, PTX, cubin ----===//
//
// The GPU target; the CPU target's stages are HostKernel.cpp's.
//
//===----------------------------------------------------------------------===//

#include "flashc/Pipeline/CompileKernel.h"
#include "HostKernel.h"

#include "Flash/FlashOps.h"
#include "flashc/Target/KernelMetadata.h"
#include "flashc/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"

using namespace mlir;

char flashc::DiagnosedFailure::ID = 0;

namespace {

llvm::Error failedIn(llvm::StringRef stage) {
  return llvm::make_error<flashc::DiagnosedFailure>(stage.str());
}

std::string printModule(ModuleOp module) {
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os);
  return text;
}

} // namespace

bool flashc::isKernelLevel(ModuleOp module) {
  return module
      .walk([](Operation *op) {
        return isa<flash::AttentionOp, flash::AttentionBackwardOp>(op)
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      })
      .wasInterrupted();
}

llvm::Expected<flashc::CompiledKernel>
flashc::compileKernel(ModuleOp module, const KernelCompileOptions &options) {
  if (options.backward) {
    PassManager derive(module.getContext());
    flash::FlashDeriveBackwardOptions replace;
    replace.replace = true;
    derive.addPass(flash::createFlashDeriveBackward(replace));
    if (failed(derive.run(module)))
      return failedIn("-flash-derive-backward");
  }
  if (options.targetKind == TargetKind::Cpu)
    return compileHostKernel(module, options);
  if (options.stage == KernelStage::SharedLibrary)
    return llvm::createStringError(
        "a shared library is the CPU target's artefact: the GPU target "
        "writes PTX or cubin");
  if (isKernelLevel(module)) {
    PassManager pm(module.getContext());
    if (options.stage == KernelStage::Tile)
      buildTilePipeline(pm, options.overrides);
    else
      buildGpuKernelPipeline(pm, options.overrides, options.target.arch,
                             options.probeStamps);
    if (failed(pm.run(module)))
      return failedIn("conversion");
  } else if (options.stage == KernelStage::Tile) {
    return llvm::createStringError(
        llvm::inconvertibleErrorCode(),
        "the tile stage needs a kernel-level input (flash.attention)");
  }

  CompiledKernel result;
  if (options.stage == KernelStage::Tile || options.stage == KernelStage::Mlir) {
    result.artefact = printModule(module);
    return result;
  }

  bool binary = options.stage == KernelStage::Ptx ||
                options.stage == KernelStage::Cubin;
  if (binary) {
    FailureOr<llvm::json::Object> metadata = buildKernelMetadata(
        module, {options.binaryName,
                 options.stage == KernelStage::Cubin ? "cubin" : "ptx",
                 options.target.arch, options.sourceHash});
    if (failed(metadata))
      return failedIn("metadata");
    result.metadata = std::move(*metadata);
  }

  FailureOr<std::string> serialized = serializeGpuModule(
      module, options.target,
      options.stage == KernelStage::LlvmIr ? GpuArtefact::LlvmIr
                                           : GpuArtefact::Ptx);
  if (failed(serialized))
    return failedIn("nvvm");
  if (options.stage != KernelStage::Cubin) {
    result.artefact = std::move(*serialized);
    return result;
  }
  llvm::Expected<Cubin> cubin = assembleCubin(*serialized, options.target);
  if (!cubin)
    return cubin.takeError();
  result.artefact = std::move(cubin->bytes);
  result.resourceReport = std::move(cubin->resourceReport);
  return result;
}

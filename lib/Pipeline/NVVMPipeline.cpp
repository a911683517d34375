//===- NVVMPipeline.cpp - gpu.module -> NVVM -> PTX text ------------------===//
//
// The passes of upstream's gpu-lower-to-nvvm-pipeline, spelled out so the
// serialization step can be told where the CUDA toolkit is (the Debian
// build's default is empty) and which artefact to produce, plus one fix-up
// of upstream's output (-flash-extern-dynamic-shared-memory, a pass of
// lib/Conversion: which is why the list lives here and not in lib/Target).
//
//===----------------------------------------------------------------------===//

#include "flashc/Conversion/Passes.h"
#include "flashc/Pipeline/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace flashc {

void buildNVVMLoweringPipeline(OpPassManager &pm,
                               const GpuTargetOptions &options,
                               GpuArtefact artefact) {
  pm.addPass(createConvertNVGPUToNVVMPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertNVVMToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(memref::createExpandStridedMetadataPass());

  GpuNVVMAttachTargetOptions target;
  target.chip = options.arch;
  target.features = options.ptxFeatures;
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));
  pm.addPass(createLowerAffinePass());
  pm.addPass(createArithToLLVMConversionPass());
  ConvertIndexToLLVMPassOptions index;
  index.indexBitwidth = 64;
  pm.addPass(createConvertIndexToLLVMPass(index));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());

  OpPassManager &gpuModule = pm.nest<gpu::GPUModuleOp>();
  ConvertGpuOpsToNVVMOpsOptions toNVVM;
  toNVVM.indexBitwidth = 64;
  gpuModule.addPass(createConvertGpuOpsToNVVMOps(toNVVM));
  gpuModule.addPass(flash::createExternDynamicSharedMemory());
  gpuModule.addPass(flash::createGridConstantTensorMaps());
  gpuModule.addPass(createCanonicalizerPass());
  gpuModule.addPass(createCSEPass());
  gpuModule.addPass(createReconcileUnrealizedCastsPass());

  pm.addPass(createGpuToLLVMConversionPass());
  GpuModuleToBinaryPassOptions binary;
  binary.toolkitPath = options.cudaRoot;
  binary.compilationTarget = artefact == GpuArtefact::Ptx ? "isa" : "llvm";
  pm.addPass(createGpuModuleToBinaryPass(binary));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

FailureOr<std::string> serializeGpuModule(ModuleOp module,
                                          const GpuTargetOptions &options,
                                          GpuArtefact artefact) {
  if (failed(checkSerializable(module, options)))
    return failure();
  PassManager pm(module.getContext());
  buildNVVMLoweringPipeline(pm, options, artefact);
  if (failed(pm.run(module)))
    return failure();
  return readGpuBinary(module, artefact);
}

} // namespace flashc

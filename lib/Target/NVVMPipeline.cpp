//===- NVVMPipeline.cpp - gpu.module -> NVVM -> PTX text ------------------===//
//
// The passes of upstream's gpu-lower-to-nvvm-pipeline, spelled out so the
// serialization step can be told where the CUDA toolkit is (the Debian
// build's default is empty) and which artefact to produce, plus one fix-up
// of upstream's output (-flash-extern-dynamic-shared-memory).
//
//===----------------------------------------------------------------------===//

#include "flashc/Target/GpuTarget.h"

#include "flashc/Conversion/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace flashc {

llvm::Error checkSupportedArch(llvm::StringRef arch) {
  if (arch == "sm_90a")
    return llvm::Error::success();
  return llvm::createStringError(
      "unsupported arch '%s': flashc generates Hopper code (wgmma, TMA, "
      "setmaxnreg) and supports only sm_90a",
      arch.str().c_str());
}

static void buildNVVMLowering(OpPassManager &pm,
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
  auto gpuModules = module.getOps<gpu::GPUModuleOp>();
  size_t count = std::distance(gpuModules.begin(), gpuModules.end());
  if (count != 1)
    return module.emitError() << "expected exactly one gpu.module to "
                                 "serialize, found "
                              << count;

  // The serializer links libdevice from the toolkit and, without it, only
  // warns and leaves ptxas an unresolved __nv_* call; say so up front.
  llvm::SmallString<256> libdevice(options.cudaRoot);
  llvm::sys::path::append(libdevice, "nvvm", "libdevice", "libdevice.10.bc");
  if (!llvm::sys::fs::exists(libdevice))
    return module.emitError()
           << "no CUDA toolkit at '" << options.cudaRoot << "' (" << libdevice
           << " is missing): install the CUDA toolkit or pass --cuda-root";

  PassManager pm(module.getContext());
  buildNVVMLowering(pm, options, artefact);
  if (failed(pm.run(module)))
    return failure();

  std::string text;
  module.walk([&](gpu::BinaryOp binary) {
    for (Attribute object : binary.getObjects())
      text = cast<gpu::ObjectAttr>(object).getObject().getValue().str();
  });
  if (text.empty())
    return module.emitError() << "serialization produced no object";
  if (artefact == GpuArtefact::Ptx)
    return text;

  // The "llvm" target hands back bitcode; users read LLVM IR as text.
  llvm::LLVMContext llvmContext;
  llvm::Expected<std::unique_ptr<llvm::Module>> llvmModule =
      llvm::parseBitcodeFile(llvm::MemoryBufferRef(text, "kernel"),
                             llvmContext);
  if (!llvmModule)
    return module.emitError() << "cannot read the kernel's LLVM bitcode: "
                              << llvm::toString(llvmModule.takeError());
  std::string ir;
  llvm::raw_string_ostream os(ir);
  (*llvmModule)->print(os, nullptr);
  return ir;
}

} // namespace flashc

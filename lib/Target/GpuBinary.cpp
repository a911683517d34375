//===- GpuBinary.cpp - what the NVVM lowering needs and what it yields ----===//
//
// The target's side of serializing a gpu.module: the checks that must pass
// before lib/Pipeline's NVVM lowering runs (one gpu.module, a CUDA toolkit
// with libdevice), and reading its result, the gpu.binary's object, as PTX
// or LLVM IR text. The pass list itself lives in lib/Pipeline so that this
// layer calls nothing from lib/Conversion.
//
//===----------------------------------------------------------------------===//

#include "flashc/Target/GpuTarget.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
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

LogicalResult checkSerializable(ModuleOp module,
                                const GpuTargetOptions &options) {
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
  return success();
}

FailureOr<std::string> readGpuBinary(ModuleOp module, GpuArtefact artefact) {
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

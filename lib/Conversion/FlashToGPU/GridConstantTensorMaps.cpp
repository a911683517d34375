//===- GridConstantTensorMaps.cpp - tensor maps as by-value params -------===//
//
// -flash-grid-constant-tensor-maps: see Passes.td. The kernel's launch
// contract (`flash.launch`) says which parameters are tensor maps by value;
// gpu-to-nvvm keeps that discardable attribute on the llvm.func, so this
// pass reads it there and gives those arguments the attributes the NVPTX
// backend turns into a 64-byte-aligned 128-byte grid-constant parameter.
//
//===----------------------------------------------------------------------===//

#include "flashc/Config/LaunchAttr.h"
#include "flashc/Conversion/Passes.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::flash {
#define GEN_PASS_DEF_GRIDCONSTANTTENSORMAPS
#include "flashc/Conversion/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;

namespace {

/// Bytes and alignment of a CUtensorMap.
constexpr int64_t kTensorMapBytes = 128;
constexpr int64_t kTensorMapAlign = 64;

struct GridConstantTensorMapsPass
    : public mlir::flash::impl::GridConstantTensorMapsBase<
          GridConstantTensorMapsPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    Builder b(ctx);
    auto mapType = LLVM::LLVMArrayType::get(b.getI8Type(), kTensorMapBytes);
    WalkResult result = getOperation().walk([&](LLVM::LLVMFuncOp func) {
      auto launch =
          func->getAttrOfType<DictionaryAttr>(flashc::kLaunchAttrName);
      auto params =
          launch ? launch.getAs<ArrayAttr>("params") : ArrayAttr();
      if (!params)
        return WalkResult::advance();
      for (auto [index, param] : llvm::enumerate(params)) {
        auto entry = dyn_cast<DictionaryAttr>(param);
        auto kind = entry ? entry.getAs<StringAttr>("kind") : StringAttr();
        if (!kind || kind.getValue() != "tma")
          continue;
        if (index >= func.getNumArguments() ||
            !isa<LLVM::LLVMPointerType>(func.getArgumentTypes()[index])) {
          func.emitError("flash-grid-constant-tensor-maps: flash.launch "
                         "parameter ")
              << index << " is a tensor map by value, but the kernel's "
              << "argument " << index << " is not a pointer to it";
          return WalkResult::interrupt();
        }
        func.setArgAttr(index, LLVM::LLVMDialect::getByValAttrName(),
                        TypeAttr::get(mapType));
        func.setArgAttr(index, LLVM::LLVMDialect::getAlignAttrName(),
                        b.getI64IntegerAttr(kTensorMapAlign));
        func.setArgAttr(index, NVVM::NVVMDialect::getGridConstantAttrName(),
                        b.getUnitAttr());
      }
      return WalkResult::advance();
    });
    if (result.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

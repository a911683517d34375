//===- FlashWarpgroupToNVVM.cpp - the -convert-flash-wg-to-nvvm pass ------===//
//
// The type conversions of the warp-specialised level and the list of its
// pattern families; the pass only applies them. -convert-flash-to-gpu runs
// the same lowering on the kernel it emits.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"

#include "Flash/FlashOps.h"
#include "flashc/Conversion/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace mlir::flash {
#define GEN_PASS_DEF_CONVERTFLASHWARPGROUPTONVVM
#include "flashc/Conversion/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::flash;

void mlir::flash::populateFlashWarpgroupTypeConversions(
    TypeConverter &converter) {
  // Tried last: every type the level does not define stays as it is.
  converter.addConversion([](Type type) { return type; });
  converter.addConversion([](SmemDescriptorType type) -> Type {
    return IntegerType::get(type.getContext(), 64);
  });
  converter.addConversion([](FragmentType type, SmallVectorImpl<Type> &results)
                              -> std::optional<LogicalResult> {
    SmallVector<Type> registers(type.getNumRegisters(), type.getRegisterType());
    // The A operand's registers go straight into the wgmma asm, a row
    // vector's into scalar arithmetic; the accumulator is the struct
    // nvvm.wgmma.mma_async carries.
    if (type.isRegisterList())
      results.append(registers);
    else
      results.push_back(
          LLVM::LLVMStructType::getLiteral(type.getContext(), registers));
    return success();
  });
  // A ring slot is its index and its phase, computed once where it is
  // taken (RingToNVGPU.cpp).
  converter.addConversion(
      [](RingSlotType type,
         SmallVectorImpl<Type> &results) -> std::optional<LogicalResult> {
        results.push_back(IndexType::get(type.getContext()));
        results.push_back(IntegerType::get(type.getContext(), 1));
        return success();
      });
}

void mlir::flash::populateFlashWarpgroupToNVVMPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  wg_lowering::populateSmemDescriptorPatterns(converter, patterns);
  wg_lowering::populateFragmentPatterns(converter, patterns);
  wg_lowering::populateMmaPatterns(converter, patterns);
  wg_lowering::populateSharedWindowPatterns(converter, patterns);
  wg_lowering::populateInitBarriersPatterns(converter, patterns);
  wg_lowering::populateTmaLoadTilePatterns(converter, patterns);
  wg_lowering::populateRingPatterns(converter, patterns);
  wg_lowering::populateRowReducePatterns(converter, patterns);
  wg_lowering::populateRowwisePatterns(converter, patterns);
  wg_lowering::populateMaskKeysPatterns(converter, patterns);
  wg_lowering::populateModScoresPatterns(converter, patterns);
  wg_lowering::populateSoftmaxUpdatePatterns(converter, patterns);
  wg_lowering::populateTruncFPatterns(converter, patterns);
  wg_lowering::populateStoreGlobalPatterns(converter, patterns);
  wg_lowering::populateStoreSharedPatterns(converter, patterns);
  wg_lowering::populateWarpSpecializePatterns(converter, patterns);
  wg_lowering::populatePingpongTurnPatterns(converter, patterns);
  wg_lowering::populateTileLoopPatterns(converter, patterns);
  wg_lowering::populatePackedTilePatterns(converter, patterns);
  wg_lowering::populateClaimedTileLoopPatterns(converter, patterns);
  wg_lowering::populateTileBoundsPatterns(converter, patterns);
  wg_lowering::populateWarpUniformPatterns(converter, patterns);
}

LogicalResult mlir::flash::lowerFlashWarpgroupOps(Operation *root) {
  MLIRContext *ctx = root->getContext();
  TypeConverter converter;
  populateFlashWarpgroupTypeConversions(converter);
  RewritePatternSet patterns(ctx);
  populateFlashWarpgroupToNVVMPatterns(converter, patterns);
  ConversionTarget target(*ctx);
  // Every op of the warp-specialised level has its pattern; none may stay.
  target.markUnknownOpDynamicallyLegal([](Operation *op) {
    return !op->getName().getStringRef().starts_with("flash.wg.");
  });
  return applyPartialConversion(root, target, std::move(patterns));
}

namespace {

struct ConvertFlashWarpgroupToNVVMPass
    : public mlir::flash::impl::ConvertFlashWarpgroupToNVVMBase<
          ConvertFlashWarpgroupToNVVMPass> {
  using Base::Base;

  void runOnOperation() override {
    if (failed(lowerFlashWarpgroupOps(getOperation())))
      signalPassFailure();
  }
};

} // namespace

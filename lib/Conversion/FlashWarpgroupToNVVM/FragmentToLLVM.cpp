//===- FragmentToLLVM.cpp - fragments to and from registers ---------------===//
//
// An accumulator fragment is the LLVM struct of f32 that
// nvvm.wgmma.mma_async takes and returns, so entering and leaving it is an
// insertvalue / extractvalue per register. A register A fragment and a row
// vector convert 1:N to their registers (nothing reads them as a struct, and
// a struct would leave an insert/extract pair per register before each
// MMA), so entering and leaving them emits nothing.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "RegisterUtils.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::wg_lowering;

namespace {

struct FragmentFromValuesOpLowering
    : public OpConversionPattern<WgFragmentFromValuesOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgFragmentFromValuesOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    SmallVector<Value> values;
    for (ValueRange v : adaptor.getValues())
      llvm::append_range(values, v);
    auto type = cast<FragmentType>(op.getResult().getType());
    if (type.isRegisterList()) {
      rewriter.replaceOpWithMultiple(op, {values});
      return success();
    }
    Type structType = getTypeConverter()->convertType(type);
    if (!structType)
      return rewriter.notifyMatchFailure(op, "fragment type not convertible");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    rewriter.replaceOp(op, accumulatorFromRegisters(b, structType, values));
    return success();
  }
};

struct FragmentValuesOpLowering
    : public OpConversionPattern<WgFragmentValuesOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgFragmentValuesOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ValueRange converted = adaptor.getFragment();
    auto type = cast<FragmentType>(op.getFragment().getType());
    if (type.isRegisterList()) {
      rewriter.replaceOp(op, converted);
      return success();
    }
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    rewriter.replaceOp(op, accumulatorRegisters(b, converted.front()));
    return success();
  }
};

} // namespace

void mlir::flash::wg_lowering::populateFragmentPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<FragmentFromValuesOpLowering, FragmentValuesOpLowering>(
      converter, patterns.getContext());
}

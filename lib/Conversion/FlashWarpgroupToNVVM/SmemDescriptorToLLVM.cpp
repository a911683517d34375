//===- SmemDescriptorToLLVM.cpp - the wgmma descriptor ops ----------------===//
//
// A descriptor is its i64. flash.wg.smem_descriptor only names the layout
// its operand already encodes; flash.wg.make_descriptor ors the type's
// layout bits into a start address field; flash.wg.advance_descriptor adds
// to that field. The address field (14 bits) never carries into the layout
// fields, so the kernel's descriptors stay cheap adds of constants to a
// few base values.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"

#include "RegisterUtils.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::flash;

namespace {

struct SmemDescriptorOpLowering
    : public OpConversionPattern<WgSmemDescriptorOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgSmemDescriptorOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getDescriptor());
    return success();
  }
};

struct MakeDescriptorLowering
    : public OpConversionPattern<WgMakeDescriptorOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgMakeDescriptorOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    uint64_t bits = cast<SmemDescriptorType>(op.getType()).getLayoutBits();
    Value layout = wg_lowering::entryConstant(
        rewriter, op, rewriter.getI64IntegerAttr(int64_t(bits)));
    rewriter.replaceOpWithNewOp<arith::OrIOp>(op, adaptor.getAddress(),
                                              layout);
    return success();
  }
};

struct AdvanceDescriptorLowering
    : public OpConversionPattern<WgAdvanceDescriptorOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgAdvanceDescriptorOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value descriptor = adaptor.getBase();
    if (Value units = adaptor.getUnits())
      descriptor = arith::AddIOp::create(b, descriptor, units);
    if (int64_t bytes = op.getBytes())
      descriptor = arith::AddIOp::create(
          b, descriptor,
          wg_lowering::entryConstant(b, op, b.getI64IntegerAttr(bytes / 16)));
    rewriter.replaceOp(op, descriptor);
    return success();
  }
};

} // namespace

void mlir::flash::wg_lowering::populateSmemDescriptorPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<SmemDescriptorOpLowering, MakeDescriptorLowering,
               AdvanceDescriptorLowering>(converter, patterns.getContext());
}

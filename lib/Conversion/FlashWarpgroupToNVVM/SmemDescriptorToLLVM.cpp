//===- SmemDescriptorToLLVM.cpp - flash.wg.smem_descriptor ----------------===//
//
// The descriptor type only names the layout the i64 already encodes, so the
// op lowers to its operand.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"

#include "Flash/FlashOps.h"

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

} // namespace

void mlir::flash::wg_lowering::populateSmemDescriptorPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<SmemDescriptorOpLowering>(converter, patterns.getContext());
}

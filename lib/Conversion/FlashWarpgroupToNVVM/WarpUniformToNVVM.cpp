//===- WarpUniformToNVVM.cpp - flash.wg.warp_uniform ----------------------===//
//
// shfl.sync.idx from lane 0 over the full mask: the one instruction from
// which ptxas learns that a value is the same in every lane.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "RegisterUtils.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::wg_lowering;

namespace {

struct WarpUniformLowering : public OpConversionPattern<WgWarpUniformOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgWarpUniformOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto c32 = [&](int64_t v) {
      return entryConstant(rewriter, op, rewriter.getI32IntegerAttr(v));
    };
    rewriter.replaceOpWithNewOp<NVVM::ShflOp>(
        op, rewriter.getI32Type(), c32(-1), adaptor.getValue(), c32(0),
        c32(31), NVVM::ShflKind::idx, UnitAttr());
    return success();
  }
};

} // namespace

void mlir::flash::wg_lowering::populateWarpUniformPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<WarpUniformLowering>(converter, patterns.getContext());
}

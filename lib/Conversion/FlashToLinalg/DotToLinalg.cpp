//===- DotToLinalg.cpp - flash.dot -> linalg.generic ----------------------===//
//
// The contraction of the CPU reference path: operands are widened to f32 one
// element at a time, as the tensor cores do, and summed into the f32
// accumulator.
//
//===----------------------------------------------------------------------===//

#include "Flash/FlashOps.h"
#include "LinalgBuilders.h"
#include "flashc/Conversion/Passes.h"

using namespace mlir;
using namespace mlir::flash;

namespace {

struct DotToLinalg : OpRewritePattern<DotOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(DotOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    MLIRContext *ctx = op.getContext();
    AffineExpr i = b.getAffineDimExpr(0), j = b.getAffineDimExpr(1),
               k = b.getAffineDimExpr(2);
    SmallVector<AffineMap> maps = {
        op.getTransposeA() ? AffineMap::get(3, 0, {k, i}, ctx)
                           : AffineMap::get(3, 0, {i, k}, ctx),
        op.getTransposeB() ? AffineMap::get(3, 0, {j, k}, ctx)
                           : AffineMap::get(3, 0, {k, j}, ctx),
        AffineMap::get(3, 0, {i, j}, ctx)};
    Value result = buildGeneric(
        b, ValueRange{op.getA(), op.getB()}, op.getAcc(), maps,
        {utils::IteratorType::parallel, utils::IteratorType::parallel,
         utils::IteratorType::reduction},
        buildMultiplyAdd);
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::flash::populateDotToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<DotToLinalg>(patterns.getContext());
}

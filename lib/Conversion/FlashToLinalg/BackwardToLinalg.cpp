//===- BackwardToLinalg.cpp - the backward pass's tile ops -> linalg ------===//
//
// row_dot, softmax_recompute, softmax_grad and sink_grad as parallel and
// reduction generics: the definitions of FlashOps.td written out, including the
// guard that keeps masked logits and rows that saw no key at p = 0, never NaN.
//
//===----------------------------------------------------------------------===//

#include "Flash/FlashOps.h"
#include "LinalgBuilders.h"
#include "flashc/Conversion/Passes.h"

#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::flash;

namespace {

Value f32Constant(ImplicitLocOpBuilder &b, float value) {
  return arith::ConstantOp::create(b, b.getF32FloatAttr(value));
}

struct RowDotToLinalg : OpRewritePattern<RowDotOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RowDotOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    MLIRContext *ctx = op.getContext();
    auto rowType = cast<RankedTensorType>(op.getResult().getType());
    AffineMap tile = AffineMap::getMultiDimIdentityMap(2, ctx);
    AffineMap row = AffineMap::get(2, 0, {b.getAffineDimExpr(0)}, ctx);
    Value result = buildGeneric(
        b, ValueRange{op.getA(), op.getB()}, buildFilled(b, rowType, 0.0f),
        {tile, tile, row},
        {utils::IteratorType::parallel, utils::IteratorType::reduction},
        buildMultiplyAdd);
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct SoftmaxRecomputeToLinalg : OpRewritePattern<SoftmaxRecomputeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SoftmaxRecomputeOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto tileType = cast<RankedTensorType>(op.getScores().getType());
    float scaleValue = op.getScale().convertToFloat();
    bool base2 = op.getBase2();
    Value p = buildTileElementwise(
        b, tileType, ValueRange{op.getScores(), op.getLse()},
        [&](ImplicitLocOpBuilder &b, ValueRange args) -> Value {
          Value score = args[0], lse = args[1];
          Value negInf =
              f32Constant(b, -std::numeric_limits<float>::infinity());
          Value masked = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ,
                                               score, negInf);
          Value empty =
              arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, lse, negInf);
          Value hidden = arith::OrIOp::create(b, masked, empty);
          Value scale = f32Constant(b, scaleValue);
          Value exponent;
          if (base2) {
            Value log2e = f32Constant(b, static_cast<float>(M_LOG2E));
            Value shift = arith::MulFOp::create(b, lse, log2e);
            Value negShift = arith::NegFOp::create(b, shift);
            exponent = math::FmaOp::create(b, score, scale, negShift);
          } else {
            Value x = arith::MulFOp::create(b, score, scale);
            exponent = arith::SubFOp::create(b, x, lse);
          }
          Value e = base2 ? math::Exp2Op::create(b, exponent).getResult()
                          : math::ExpOp::create(b, exponent).getResult();
          return arith::SelectOp::create(b, hidden, f32Constant(b, 0.0f), e);
        });
    rewriter.replaceOp(op, p);
    return success();
  }
};

struct SoftmaxGradToLinalg : OpRewritePattern<SoftmaxGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SoftmaxGradOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto tileType = cast<RankedTensorType>(op.getP().getType());
    Value ds = buildTileElementwise(
        b, tileType, ValueRange{op.getP(), op.getDp(), op.getDelta()},
        [](ImplicitLocOpBuilder &b, ValueRange args) -> Value {
          Value centred = arith::SubFOp::create(b, args[1], args[2]);
          return arith::MulFOp::create(b, args[0], centred);
        });
    rewriter.replaceOp(op, ds);
    return success();
  }
};

/// One reduction over the tile's rows into a 0-d tensor: the rows past
/// seq_q add nothing.
struct SinkGradToLinalg : OpRewritePattern<SinkGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SinkGradOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    MLIRContext *ctx = op.getContext();
    AffineMap row = AffineMap::getMultiDimIdentityMap(1, ctx);
    AffineMap scalar = AffineMap::get(1, 0, {}, ctx);
    auto resultType = RankedTensorType::get({}, b.getF32Type());
    Value sum =
        buildGeneric(b, ValueRange{op.getLse(), op.getDelta()},
                     buildFilled(b, resultType, 0.0f), {row, row, scalar},
                     {utils::IteratorType::reduction},
                     [&](ImplicitLocOpBuilder &b, ValueRange args) -> Value {
                       Value lse = args[0], delta = args[1], running = args[2];
                       Value query = arith::AddIOp::create(
                           b, op.getRowStart(), linalg::IndexOp::create(b, 0));
                       Value inside = arith::CmpIOp::create(
                           b, arith::CmpIPredicate::ult, query, op.getSeqQ());
                       Value p = math::ExpOp::create(
                           b, arith::SubFOp::create(b, op.getSink(), lse));
                       Value term = arith::MulFOp::create(b, p, delta);
                       Value next = arith::SubFOp::create(b, running, term);
                       return arith::SelectOp::create(b, inside, next, running);
                     });
    rewriter.replaceOpWithNewOp<tensor::ExtractOp>(op, sum, ValueRange());
    return success();
  }
};

} // namespace

void mlir::flash::populateBackwardToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<RowDotToLinalg, SoftmaxRecomputeToLinalg, SoftmaxGradToLinalg,
               SinkGradToLinalg>(patterns.getContext());
}

//===- SoftmaxToLinalg.cpp - online-softmax ops -> linalg.generic ---------===//
//
// mask, softmax_update, rescale, finalize and merge_split as parallel and
// reduction generics: the definitions of FlashOps.td written out, including the
// guards that keep fully masked rows at p = 0, O = 0, LSE = -inf instead of
// NaN.
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

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

Value f32Constant(ImplicitLocOpBuilder &b, float value) {
  return arith::ConstantOp::create(b, b.getF32FloatAttr(value));
}

/// The max to subtract before exp: m itself, or 0 while m is -inf so that
/// exp(-inf - -inf) never happens.
Value safeMax(ImplicitLocOpBuilder &b, Value max) {
  Value negInf = f32Constant(b, kNegInf);
  Value isNegInf =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, max, negInf);
  Value zero = f32Constant(b, 0.0f);
  return arith::SelectOp::create(b, isNegInf, zero, max);
}

/// l * alpha + added per row: a running sum brought to a new max, plus
/// what the new max's step adds.
Value rescaledSum(ImplicitLocOpBuilder &b, RankedTensorType rowType, Value sum,
                  Value alpha, Value added) {
  return buildRowElementwise(
      b, rowType, ValueRange{sum, alpha, added},
      [](ImplicitLocOpBuilder &b, ValueRange args) -> Value {
        Value kept = arith::MulFOp::create(b, args[0], args[1]);
        return arith::AddFOp::create(b, kept, args[2]);
      });
}

struct MaskToLinalg : OpRewritePattern<MaskOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MaskOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto type = cast<RankedTensorType>(op.getScores().getType());
    bool causal = op.getCausal();
    Value result = buildTileElementwise(
        b, type, op.getScores(),
        [&](ImplicitLocOpBuilder &b, ValueRange args) -> Value {
          auto [query, key] =
              elementQueryAndKey(b, op.getRowStart(), op.getColStart());
          Value hidden = arith::CmpIOp::create(b, arith::CmpIPredicate::uge,
                                               key, op.getSeqK());
          if (causal) {
            // A grouped tile's rows run through several heads' queries.
            if (op.getGroupedRows())
              query = arith::RemUIOp::create(b, query, op.getSeqQ());
            // key > query + seq_k - seq_q, kept in unsigned range by moving
            // seq_q to the left-hand side.
            Value lhs = arith::AddIOp::create(b, key, op.getSeqQ());
            Value rhs = arith::AddIOp::create(b, query, op.getSeqK());
            Value future =
                arith::CmpIOp::create(b, arith::CmpIPredicate::ugt, lhs, rhs);
            hidden = arith::OrIOp::create(b, hidden, future);
          }
          Value negInf = f32Constant(b, kNegInf);
          return arith::SelectOp::create(b, hidden, negInf, args[0]);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct SoftmaxUpdateToLinalg : OpRewritePattern<SoftmaxUpdateOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(SoftmaxUpdateOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto tileType = cast<RankedTensorType>(op.getScores().getType());
    auto rowType = cast<RankedTensorType>(op.getRowMax().getType());
    float scaleValue = op.getScale().convertToFloat();
    bool base2 = op.getBase2();
    auto scaled = [&](ImplicitLocOpBuilder &b, Value score) -> Value {
      Value scale = f32Constant(b, scaleValue);
      return arith::MulFOp::create(b, score, scale);
    };
    auto exponential = [&](ImplicitLocOpBuilder &b, Value x) -> Value {
      if (base2)
        return math::Exp2Op::create(b, x);
      return math::ExpOp::create(b, x);
    };

    Value tileMax = buildRowReduction(
        b, op.getScores(), kNegInf,
        [&](ImplicitLocOpBuilder &b, ValueRange args) -> Value {
          Value x = scaled(b, args[0]);
          return arith::MaximumFOp::create(b, x, args[1]);
        });
    Value newMax = buildRowElementwise(
        b, rowType, ValueRange{op.getRowMax(), tileMax},
        [](ImplicitLocOpBuilder &b, ValueRange args) -> Value {
          return arith::MaximumFOp::create(b, args[0], args[1]);
        });
    Value p = buildTileElementwise(
        b, tileType, ValueRange{op.getScores(), newMax},
        [&](ImplicitLocOpBuilder &b, ValueRange args) -> Value {
          Value max = safeMax(b, args[1]);
          if (base2) {
            // scale * s - m as the single fma the GPU path uses.
            Value scale = f32Constant(b, scaleValue);
            Value negMax = arith::NegFOp::create(b, max);
            Value shifted = math::FmaOp::create(b, args[0], scale, negMax);
            return exponential(b, shifted);
          }
          Value x = scaled(b, args[0]);
          Value shifted = arith::SubFOp::create(b, x, max);
          return exponential(b, shifted);
        });
    Value alpha = buildRowElementwise(
        b, rowType, ValueRange{op.getRowMax(), newMax},
        [&](ImplicitLocOpBuilder &b, ValueRange args) -> Value {
          Value max = safeMax(b, args[1]);
          Value shifted = arith::SubFOp::create(b, args[0], max);
          return exponential(b, shifted);
        });
    Value tileSum = buildRowReduction(
        b, p, 0.0f, [](ImplicitLocOpBuilder &b, ValueRange args) -> Value {
          return arith::AddFOp::create(b, args[0], args[1]);
        });
    Value newSum = rescaledSum(b, rowType, op.getRowSum(), alpha, tileSum);
    rewriter.replaceOp(op, {p, newMax, newSum, alpha});
    return success();
  }
};

struct RescaleToLinalg : OpRewritePattern<RescaleOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(RescaleOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value result = buildTileElementwise(
        b, cast<RankedTensorType>(op.getAcc().getType()),
        ValueRange{op.getAcc(), op.getAlpha()},
        [](ImplicitLocOpBuilder &b, ValueRange args) -> Value {
          return arith::MulFOp::create(b, args[0], args[1]);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct FinalizeToLinalg : OpRewritePattern<FinalizeOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(FinalizeOp op,
                                PatternRewriter &rewriter) const override {
    if (op.getSink())
      return rewriter.notifyMatchFailure(op, "has a sink");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto isEmptyRow = [](ImplicitLocOpBuilder &b, Value sum) -> Value {
      Value zero = f32Constant(b, 0.0f);
      return arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, sum, zero);
    };
    Value output = buildTileElementwise(
        b, cast<RankedTensorType>(op.getAcc().getType()),
        ValueRange{op.getAcc(), op.getRowSum()},
        [&](ImplicitLocOpBuilder &b, ValueRange args) -> Value {
          Value normalised = arith::DivFOp::create(b, args[0], args[1]);
          Value empty = isEmptyRow(b, args[1]);
          Value zero = f32Constant(b, 0.0f);
          return arith::SelectOp::create(b, empty, zero, normalised);
        });
    Value lse = buildRowElementwise(
        b, cast<RankedTensorType>(op.getRowMax().getType()),
        ValueRange{op.getRowMax(), op.getRowSum()},
        [&](ImplicitLocOpBuilder &b, ValueRange args) -> Value {
          Value value;
          if (op.getBase2()) {
            Value log2Sum = math::Log2Op::create(b, args[1]);
            Value sum = arith::AddFOp::create(b, args[0], log2Sum);
            Value ln2 = f32Constant(b, static_cast<float>(M_LN2));
            value = arith::MulFOp::create(b, sum, ln2);
          } else {
            Value logSum = math::LogOp::create(b, args[1]);
            value = arith::AddFOp::create(b, args[0], logSum);
          }
          Value empty = isEmptyRow(b, args[1]);
          Value negInf = f32Constant(b, kNegInf);
          return arith::SelectOp::create(b, empty, negInf, value);
        });
    rewriter.replaceOp(op, {output, lse});
    return success();
  }
};

/// flash.finalize with an attention sink: the sink joins each row's sum
/// as one more key (FlashOps.td), so the rows are rescaled to the larger
/// of the running max and the sink before they are normalised.
struct FinalizeWithSinkToLinalg : OpRewritePattern<FinalizeOp> {
  FinalizeWithSinkToLinalg(MLIRContext *context)
      : OpRewritePattern(context, /*benefit=*/2) {}

  LogicalResult matchAndRewrite(FinalizeOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getSink())
      return rewriter.notifyMatchFailure(op, "no sink");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    const bool base2 = op.getBase2();
    Value sink = op.getSink();
    if (base2)
      sink = arith::MulFOp::create(b, sink,
                                   f32Constant(b, static_cast<float>(M_LOG2E)));
    auto rowType = cast<RankedTensorType>(op.getRowMax().getType());
    // exp(x - max) in the max's units, 0 where x is -inf (no key, or a sink
    // of -inf: no sink).
    auto weight = [&](ImplicitLocOpBuilder &b, Value x, Value max) -> Value {
      Value diff = arith::SubFOp::create(b, x, max);
      Value e = base2 ? Value(math::Exp2Op::create(b, diff))
                      : Value(math::ExpOp::create(b, diff));
      Value none = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, x,
                                         f32Constant(b, kNegInf));
      return arith::SelectOp::create(b, none, f32Constant(b, 0.0f), e);
    };
    // The rescaled max, its weight on the running sum, and the new sum.
    auto rowState = [&](ImplicitLocOpBuilder &b, Value m, Value l) {
      Value newMax = arith::MaximumFOp::create(b, m, sink);
      Value alpha = weight(b, m, newMax);
      Value newSum = arith::AddFOp::create(
          b, arith::MulFOp::create(b, l, alpha), weight(b, sink, newMax));
      return std::make_tuple(newMax, alpha, newSum);
    };
    auto isZero = [](ImplicitLocOpBuilder &b, Value x) -> Value {
      return arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, x,
                                   f32Constant(b, 0.0f));
    };
    SmallVector<Value, 2> state = {op.getRowMax(), op.getRowSum()};
    Value factor = buildRowElementwise(
        b, rowType, state, [&](ImplicitLocOpBuilder &b, ValueRange args) {
          auto [newMax, alpha, newSum] = rowState(b, args[0], args[1]);
          return arith::SelectOp::create(
                     b, isZero(b, newSum), f32Constant(b, 0.0f),
                     arith::DivFOp::create(b, alpha, newSum))
              .getResult();
        });
    Value lse = buildRowElementwise(
        b, rowType, state, [&](ImplicitLocOpBuilder &b, ValueRange args) {
          auto [newMax, alpha, newSum] = rowState(b, args[0], args[1]);
          Value value;
          if (base2)
            value = arith::MulFOp::create(
                b,
                arith::AddFOp::create(b, newMax,
                                      math::Log2Op::create(b, newSum)),
                f32Constant(b, static_cast<float>(M_LN2)));
          else
            value = arith::AddFOp::create(b, newMax,
                                          math::LogOp::create(b, newSum));
          return arith::SelectOp::create(b, isZero(b, newSum),
                                         f32Constant(b, kNegInf), value)
              .getResult();
        });
    Value output = buildTileElementwise(
        b, cast<RankedTensorType>(op.getAcc().getType()),
        ValueRange{op.getAcc(), factor},
        [&](ImplicitLocOpBuilder &b, ValueRange args) -> Value {
          return arith::MulFOp::create(b, args[0], args[1]);
        });
    rewriter.replaceOp(op, {output, lse});
    return success();
  }
};

/// flash.merge_split as FlashOps.td writes it, natural units: the new max,
/// the weights of the running rows and of the split (0 where either is
/// -inf), and the sums they weigh.
struct MergeSplitToLinalg : OpRewritePattern<MergeSplitOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(MergeSplitOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto rowType = cast<RankedTensorType>(op.getRowMax().getType());
    auto tileType = cast<RankedTensorType>(op.getAcc().getType());
    Value newMax = buildRowElementwise(
        b, rowType, ValueRange{op.getRowMax(), op.getPartialLse()},
        [](ImplicitLocOpBuilder &b, ValueRange args) -> Value {
          return arith::MaximumFOp::create(b, args[0], args[1]);
        });
    auto weightOf = [&](Value x) {
      return buildRowElementwise(
          b, rowType, ValueRange{x, newMax},
          [](ImplicitLocOpBuilder &b, ValueRange args) -> Value {
            Value shifted =
                arith::SubFOp::create(b, args[0], safeMax(b, args[1]));
            return math::ExpOp::create(b, shifted);
          });
    };
    Value alpha = weightOf(op.getRowMax());
    Value weight = weightOf(op.getPartialLse());
    Value newSum = rescaledSum(b, rowType, op.getRowSum(), alpha, weight);
    Value newAcc = buildTileElementwise(
        b, tileType, ValueRange{op.getAcc(), alpha, op.getPartial(), weight},
        [](ImplicitLocOpBuilder &b, ValueRange args) -> Value {
          Value kept = arith::MulFOp::create(b, args[0], args[1]);
          return math::FmaOp::create(b, args[2], args[3], kept);
        });
    rewriter.replaceOp(op, {newAcc, newMax, newSum});
    return success();
  }
};

} // namespace

void mlir::flash::populateSoftmaxToLinalgPatterns(RewritePatternSet &patterns) {
  patterns.add<MaskToLinalg, SoftmaxUpdateToLinalg, RescaleToLinalg,
               FinalizeToLinalg, FinalizeWithSinkToLinalg, MergeSplitToLinalg>(
      patterns.getContext());
}

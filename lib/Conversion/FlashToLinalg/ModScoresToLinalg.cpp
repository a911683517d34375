//===- ModScoresToLinalg.cpp - flash.mod_scores -> linalg.generic ---------===//
//
// The score and mask mods on the CPU path: one elementwise generic over the
// score tile whose body is the regions' own ops, inlined with each
// element's query and key index; and their backward, whose body is the
// score mod's derivative.
//
//===----------------------------------------------------------------------===//

#include "Flash/FlashOps.h"
#include "LinalgBuilders.h"
#include "flashc/Conversion/Passes.h"

#include <limits>

using namespace mlir;
using namespace mlir::flash;

namespace {

/// min(index, limit - 1): the regions see only rows inside the sequence
/// (the ragged tile's rows and keys past the end read the last one; their
/// results are masked or never stored), so a capture of seq rows is never
/// read past its end.
Value clampIndex(ImplicitLocOpBuilder &b, Value index, Value limit) {
  Value one = arith::ConstantIndexOp::create(b, 1);
  Value last = arith::SubIOp::create(b, limit, one);
  return arith::MinUIOp::create(b, index, last);
}

/// In a tile generic's body: the scaled logit of the element `score` and
/// the mods' fixed arguments (batch, head, clamped query and key) for a
/// flash.mod_scores or flash.mod_scores_grad `op`.
template <typename ModOp>
std::pair<Value, SmallVector<Value>> scaledElement(ImplicitLocOpBuilder &b,
                                                   ModOp op, Value score) {
  auto [row, column] =
      elementQueryAndKey(b, op.getRowStart(), op.getColStart());
  Value scale = arith::ConstantOp::create(b, op.getScaleAttr());
  Value head = op.getHead();
  Value query = clampIndex(b, row, op.getSeqQ());
  if constexpr (std::is_same_v<ModOp, ModScoresOp>) {
    // A grouped tile: row r (below G * R) is query r % R of head
    // head + r / R, at seq_q - R past the step's first position.
    if (Value perHead = op.getRowsPerHead()) {
      Value r = clampIndex(
          b, row, arith::MulIOp::create(b, perHead, op.getGroupSize()));
      head =
          arith::AddIOp::create(b, head, arith::DivUIOp::create(b, r, perHead));
      query = arith::AddIOp::create(
          b, arith::RemUIOp::create(b, r, perHead),
          arith::SubIOp::create(b, op.getSeqQ(), perHead));
    }
  }
  return {arith::MulFOp::create(b, score, scale),
          {op.getBatch(), head, query, clampIndex(b, column, op.getSeqK())}};
}

struct ModScoresToLinalg : OpRewritePattern<ModScoresOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ModScoresOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto type = cast<RankedTensorType>(op.getScores().getType());
    Value result = buildTileElementwise(
        b, type, op.getScores(),
        [&](ImplicitLocOpBuilder &b, ValueRange args) -> Value {
          auto [score, indices] = scaledElement(b, op, args[0]);
          if (!op.getScoreMod().empty()) {
            SmallVector<Value> scoreArgs = {score};
            llvm::append_range(scoreArgs, indices);
            llvm::append_range(scoreArgs, op.getCaptures());
            score = inlineModRegion(b, op.getScoreMod(), scoreArgs);
          }
          if (op.getMaskMod().empty())
            return score;
          llvm::append_range(indices, op.getCaptures());
          Value keep = inlineModRegion(b, op.getMaskMod(), indices);
          Value negInf = arith::ConstantOp::create(
              b, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
          return arith::SelectOp::create(b, keep, score, negInf);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// The backward of the score mod: the region's derivative, formed by the
/// chain rule as it is inlined, times the incoming gradient.
struct ModScoresGradToLinalg : OpRewritePattern<ModScoresGradOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ModScoresGradOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto type = cast<RankedTensorType>(op.getScores().getType());
    Value result = buildTileElementwise(
        b, type, ValueRange{op.getGrad(), op.getScores()},
        [&](ImplicitLocOpBuilder &b, ValueRange args) -> Value {
          auto [x, indices] = scaledElement(b, op, args[1]);
          SmallVector<Value> scoreArgs = {x};
          llvm::append_range(scoreArgs, indices);
          llvm::append_range(scoreArgs, op.getCaptures());
          Value derivative =
              inlineScoreModDerivative(b, op.getScoreMod(), scoreArgs);
          Value zero = arith::ConstantOp::create(b, b.getF32FloatAttr(0.0f));
          Value none = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ,
                                             args[0], zero);
          Value grad = arith::MulFOp::create(b, args[0], derivative);
          return arith::SelectOp::create(b, none, zero, grad);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::flash::populateModScoresToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<ModScoresToLinalg, ModScoresGradToLinalg>(patterns.getContext());
}

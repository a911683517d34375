//===- SoftmaxUpdateToRowOps.cpp - the online softmax's schedule ----------===//
//
// flash.wg.softmax_update becomes the row ops of this level (row_max,
// scaled_exp2, row_sum, truncf) and the per-row arithmetic of its running
// max, which reads the two registers of each #flash.wgmma_rows vector; the
// guarded flash.wg.scale_rows (`if_moved`) becomes a warp vote and a branch
// around the plain one. Both are rewrites within the level: the ops they
// write are lowered by their own patterns in the same conversion.
//
//===----------------------------------------------------------------------===//

#include "RegisterUtils.h"
#include "Patterns.h"

#include "../InlinePtx.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::wg_lowering;

/// How far (log2 units) a row's running max may lag the true max before it
/// moves (`lag_max`). Any reference gives the same O / l and LSE; a lagging
/// one saves the O rescale of every tile whose max did not grow by more
/// than this (FlashAttention-4's conditional rescaling): p <= 2^8 still fits
/// a bf16 or fp16 P and an f32 row sum.
static constexpr float kMaxLag = 8.0f;

/// `speculative`'s bound on a thread's part of a row sum (so on each of its
/// p) under which the speculative P stands: the largest power of two whose
/// p a 16-bit P holds with room to spare (fp16's maximum is 65504; bf16
/// shares f32's exponent range, and l and O stay far from f32's).
static float speculativeSumBound(Type elementType) {
  return std::exp2(elementType.isF16() ? 15.0f : 32.0f);
}

namespace {

/// The scalar steps of one update, on the registers of the thread's two
/// rows.
class SoftmaxUpdateWriter {
public:
  SoftmaxUpdateWriter(ImplicitLocOpBuilder &b, WgSoftmaxUpdateOp op)
      : b(b), op(op), scores(op.getScores()), scale(op.getScale()),
        rowsType(cast<FragmentType>(op.getMOld().getType())),
        partialsType(cast<FragmentType>(op.getLOld().getType())),
        pType(cast<FragmentType>(op.getP().getType())) {}

  /// The op's results in order: p, m_new, l_new, alpha, moved.
  SmallVector<Value> write() {
    SmallVector<Value> mOld = fragmentValues(b, op.getMOld());
    SmallVector<Value> lOld = fragmentValues(b, op.getLOld());
    Result res = op.getSpeculative() ? speculative(mOld, lOld)
                                     : referenced(mOld, lOld);
    Value moved = res.moved ? res.moved : constant(b.getBoolAttr(true));
    return {WgFragmentFromValuesOp::create(b, pType, res.packedP),
            WgFragmentFromValuesOp::create(b, rowsType, res.mNew),
            WgFragmentFromValuesOp::create(b, partialsType, res.lNew),
            WgFragmentFromValuesOp::create(b, rowsType, res.alpha), moved};
  }

private:
  struct Result {
    SmallVector<Value> mNew, lNew, alpha, packedP;
    Value moved;
  };

  Value constant(TypedAttr attr) { return entryConstant(b, op, attr); }
  Value cF32(float v) { return constant(b.getF32FloatAttr(v)); }
  Value negInf() { return cF32(-std::numeric_limits<float>::infinity()); }

  /// The exact or the lagging reference.
  Result referenced(ArrayRef<Value> mOld, ArrayRef<Value> lOld) {
    Result res;
    SmallVector<Value, 2> mNeg;
    SmallVector<Value> mxScaled = rowMaxLog2();
    for (int64_t r = 0; r < 2; ++r) {
      Value mNew;
      if (op.getLagMax()) {
        // The reference moves only when the tile's max passes it by more
        // than kMaxLag (so always from -inf): p stays <= 2^kMaxLag.
        Value bar = arith::AddFOp::create(b, mOld[r], cF32(kMaxLag));
        Value moves = arith::CmpFOp::create(b, arith::CmpFPredicate::OGT,
                                            mxScaled[r], bar);
        mNew = arith::SelectOp::create(b, moves, mxScaled[r], mOld[r]);
        res.moved = res.moved
                        ? arith::OrIOp::create(b, res.moved, moves).getResult()
                        : moves;
      } else {
        mNew = arith::MaxNumFOp::create(b, mOld[r], mxScaled[r]);
      }
      Rebased moved = rebase(mOld[r], mNew);
      res.alpha.push_back(moved.alpha);
      res.mNew.push_back(mNew);
      mNeg.push_back(moved.mNeg);
    }
    Value p = expScores(mNeg);
    SmallVector<Value> sums = rowSums(p);
    for (int64_t r = 0; r < 2; ++r)
      res.lNew.push_back(
          math::FmaOp::create(b, lOld[r], res.alpha[r], sums[r]));
    res.packedP = packScores(p);
    return res;
  }

  Result speculative(ArrayRef<Value> mOld, ArrayRef<Value> lOld) {
    // P against the old reference, with no max of this tile: the row max's
    // tree of FMNMX and two shuffles ran before any exp could start, and
    // with one softmax warp per scheduler nothing hid it. This thread's
    // part of the row sum bounds each of its p, so while it stays under
    // speculativeSumBound P stands (a reference that lags, as with
    // lag_max). Otherwise, or for a row that saw no key yet, the warp takes
    // the tile's max, moves the reference and computes P again (a
    // warp-uniform branch; the speculative P, perhaps inf, is dropped).
    // Rescaling the speculative P there instead (one multiply per score)
    // gained at most 1.5% and spilled (docs/decisions.md, "Speculative exp
    // off").
    SmallVector<Value, 2> mNegOld;
    for (int64_t r = 0; r < 2; ++r)
      mNegOld.push_back(arith::NegFOp::create(b, zeroIfNegInf(mOld[r])));
    Value pSpec = expScores(mNegOld);
    SmallVector<Value> kept = {cF32(1.0f), cF32(1.0f), mOld[0], mOld[1]};
    Value bound = cF32(speculativeSumBound(pType.getElementType()));
    Value rowRedo;
    SmallVector<Value> sums = rowSums(pSpec);
    for (int64_t r = 0; r < 2; ++r) {
      kept.push_back(sums[r]);
      Value over =
          arith::CmpFOp::create(b, arith::CmpFPredicate::UGT, sums[r], bound);
      Value noKeyYet = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ,
                                             mOld[r], negInf());
      Value redo = arith::OrIOp::create(b, over, noKeyYet);
      rowRedo =
          rowRedo ? arith::OrIOp::create(b, rowRedo, redo).getResult() : redo;
    }
    // Both ways out pack P with the same conversions, which LLVM sinks past
    // PV_{j-1}'s wait. Where P_j was packed inside a branch before that
    // wait (docs/decisions.md, "P packed after the wait"), it could take
    // P_{j-1}'s registers while the wgmma still read them: ptxas serialised
    // the chain (C7513), and one such build wrote NaN.
    llvm::append_range(kept, packScores(pSpec));
    Value warpRedo = NVVM::VoteSyncOp::create(
        b, b.getI1Type(), constant(b.getI32IntegerAttr(-1)), rowRedo,
        NVVM::VoteSyncKind::any);
    SmallVector<Type> types(6, b.getF32Type());
    types.append(pType.getNumRegisters(), b.getI32Type());
    SmallVector<Value> out = ifThenElse(
        b, b.getLoc(), warpRedo, types,
        [&] {
          SmallVector<Value> alpha, mNew, mNeg;
          SmallVector<Value> mx = rowMaxLog2();
          for (int64_t r = 0; r < 2; ++r) {
            mNew.push_back(arith::MaxNumFOp::create(b, mOld[r], mx[r]));
            Rebased moved = rebase(mOld[r], mNew[r]);
            alpha.push_back(moved.alpha);
            mNeg.push_back(moved.mNeg);
          }
          Value p = expScores(mNeg);
          SmallVector<Value> yielded = alpha;
          llvm::append_range(yielded, mNew);
          llvm::append_range(yielded, rowSums(p));
          llvm::append_range(yielded, packScores(p));
          return yielded;
        },
        [&] { return kept; });

    Result res;
    ArrayRef<Value> outs(out);
    res.alpha.assign(outs.begin(), outs.begin() + 2);
    res.mNew.assign(outs.begin() + 2, outs.begin() + 4);
    for (int64_t r = 0; r < 2; ++r)
      res.lNew.push_back(
          math::FmaOp::create(b, lOld[r], res.alpha[r], outs[4 + r]));
    res.packedP.assign(outs.begin() + 6, outs.end());
    res.moved = rowRedo;
    return res;
  }

  /// Each of this thread's rows' max over the tile, times scale.
  SmallVector<Value> rowMaxLog2() {
    Value mx = WgRowMaxOp::create(b, rowsType, scores);
    SmallVector<Value> scaled;
    for (Value m : fragmentValues(b, mx))
      scaled.push_back(arith::MulFOp::create(b, m, scale));
    return scaled;
  }

  /// Moving a row's reference from mOld to mNew: alpha = 2^(mOld - mNew)
  /// scales its l and O, mNeg = -mNew offsets its exps (with 0 for a
  /// reference still at -inf, so nothing becomes NaN).
  struct Rebased {
    Value alpha, mNeg;
  };
  Rebased rebase(Value mOld, Value mNew) {
    Value mUse = zeroIfNegInf(mNew);
    Value d = arith::SubFOp::create(b, mOld, mUse);
    Value alpha = exp2FlushDenormals(b, d);
    return {alpha, arith::NegFOp::create(b, mUse)};
  }

  Value zeroIfNegInf(Value m) {
    Value isNegInf =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, m, negInf());
    return arith::SelectOp::create(b, isNegInf, cF32(0.0f), m);
  }

  Value expScores(ArrayRef<Value> mNeg) {
    Value bias = WgFragmentFromValuesOp::create(b, rowsType, mNeg);
    return WgScaledExp2Op::create(b, scores.getType(), scores, bias, scale);
  }

  SmallVector<Value> rowSums(Value p) {
    return fragmentValues(b, WgRowSumOp::create(b, partialsType, p));
  }

  SmallVector<Value> packScores(Value p) {
    return fragmentValues(b, WgTruncFOp::create(b, pType, p));
  }

  ImplicitLocOpBuilder &b;
  WgSoftmaxUpdateOp op;
  Value scores, scale;
  FragmentType rowsType, partialsType, pType;
};

struct SoftmaxUpdateToRowOps : public OpRewritePattern<WgSoftmaxUpdateOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(WgSoftmaxUpdateOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    rewriter.replaceOp(op, SoftmaxUpdateWriter(b, op).write());
    return success();
  }
};

/// scale_rows ... if_moved: the plain scale_rows in the branch a warp takes
/// when one of its lanes moved a row.
struct GuardedScaleRowsToSCF : public OpRewritePattern<WgScaleRowsOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(WgScaleRowsOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getMoved())
      return rewriter.notifyMatchFailure(op, "not guarded");
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto accType = cast<FragmentType>(op.getInput().getType());
    // The branch carries the accumulator's registers, not its struct, as
    // the key loops carry them.
    SmallVector<Value> acc = fragmentValues(b, op.getInput());
    Value anyMoved = NVVM::VoteSyncOp::create(
        b, b.getI1Type(), entryConstant(b, op, b.getI32IntegerAttr(-1)),
        op.getMoved(), NVVM::VoteSyncKind::any);
    SmallVector<Type> types(acc.size(), b.getF32Type());
    SmallVector<Value> out = ifThenElse(
        b, b.getLoc(), anyMoved, types,
        [&] {
          Value o = WgFragmentFromValuesOp::create(b, accType, acc);
          Value scaled =
              WgScaleRowsOp::create(b, accType, o, op.getFactor(), Value());
          return fragmentValues(b, scaled);
        },
        [&] { return acc; });
    rewriter.replaceOp(op, WgFragmentFromValuesOp::create(b, accType, out));
    return success();
  }
};

} // namespace

void mlir::flash::wg_lowering::populateSoftmaxUpdatePatterns(
    const TypeConverter &, RewritePatternSet &patterns) {
  patterns.add<SoftmaxUpdateToRowOps, GuardedScaleRowsToSCF>(
      patterns.getContext());
}

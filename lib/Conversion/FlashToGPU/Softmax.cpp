//===- Softmax.cpp - the online softmax on the wgmma accumulator layout ---===//
//
// flash.mask, flash.softmax_update (base2) and flash.rescale for one S tile
// held in registers, written with the fragment ops of the warp-specialised
// level (flash.wg.mask_columns, row_max, scaled_exp2, row_sum, scale_rows,
// truncf; lowered in lib/Conversion/FlashWarpgroupToNVVM/). A thread holds
// two rows of the tile; their statistics are #flash.wgmma_rows vectors, of
// which the schedule's arithmetic (the running max, its rebase, the lagging
// reference, the speculative branch) reads the two registers. The running
// max m is kept in log2 units and p = exp2(s * scale_log2 - m); the row sum
// l is kept per thread (#flash.wgmma_row_partials) and quad-reduced once,
// in the epilogue. A row that saw no key yet (m = -inf) subtracts 0
// instead, so nothing becomes NaN. With KernelSpec::lagMax m is a
// reference that trails the true max by up to kMaxLag, and O is rescaled
// only in tiles where it moved.
//
//===----------------------------------------------------------------------===//

#include "FlashToGPU.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;

/// How far (log2 units) a row's running max may lag the true max before it
/// moves (KernelSpec::lagMax). Any reference gives the same O / l and LSE; a
/// lagging one saves the O rescale of every tile whose max did not grow by
/// more than this (FlashAttention-4's conditional rescaling): p <= 2^8 still
/// fits a bf16 or fp16 P and an f32 row sum.
static constexpr float kMaxLag = 8.0f;

KernelEmitter::SoftmaxResult KernelEmitter::softmax(SmallVector<Value> s,
                                                    ArrayRef<Value> mOld,
                                                    ArrayRef<Value> lOld,
                                                    bool masked, Value j,
                                                    bool firstTile) {
  Value scores = WgFragmentFromValuesOp::create(b, sType, s);
  if (masked) {
    // flash.mask: key column c of row i is visible iff c < seq_k and, when
    // causal, c <= i + seq_k - seq_q: one limit per row.
    Value j32 = arith::IndexCastOp::create(b, i32, j);
    Value first = arith::MulIOp::create(b, j32, cI32(spec.blockN));
    // seq_k - seq_q, as the tile bounds have it (LLVM keeps one).
    Value diag =
        spec.causal ? arith::SubIOp::create(b, seqK, seqQ).getResult() : Value();
    SmallVector<Value, 2> limits;
    for (Value row : {row0, row1}) {
      Value limit = seqK;
      if (spec.causal) {
        Value a = arith::AddIOp::create(b, row, diag);
        Value a1 = arith::AddIOp::create(b, a, cI32(1));
        limit = arith::MinSIOp::create(b, a1, seqK);
      }
      limits.push_back(limit);
    }
    Value limitRows = WgFragmentFromValuesOp::create(b, rowsI32Type, limits);
    scores = WgMaskColumnsOp::create(b, sType, scores, limitRows, first);
  }
  if (spec.sw.speculativeExp && !firstTile)
    return speculativeSoftmax(scores, mOld, lOld);

  SoftmaxResult res;
  SmallVector<Value, 2> mNeg;
  SmallVector<Value> mxScaled = rowMaxLog2(scores);
  for (int64_t r = 0; r < 2; ++r) {
    Value mNew;
    if (spec.lagMax) {
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
  Value p = expScores(scores, mNeg);
  SmallVector<Value> sums = rowSums(p);
  for (int64_t r = 0; r < 2; ++r)
    res.lNew.push_back(math::FmaOp::create(b, lOld[r], res.alpha[r], sums[r]));
  res.packedP = packScores(p);
  return res;
}

/// speculativeSoftmax's bounds on a thread's part of a row sum (so on each
/// of its p) under which the speculative P stands: the largest power of two
/// whose p a 16-bit P holds with room to spare (fp16's maximum is 65504;
/// bf16 shares f32's exponent range, and l and O stay far from f32's).
static float speculativeSumBound(Type elementType) {
  return std::exp2(elementType.isF16() ? 15.0f : 32.0f);
}

KernelEmitter::SoftmaxResult
KernelEmitter::speculativeSoftmax(Value scores, ArrayRef<Value> mOld,
                                  ArrayRef<Value> lOld) {
  // P against the old reference, with no max of this tile: the row max's
  // tree of FMNMX and two shuffles ran before any exp could start, and with
  // one softmax warp per scheduler nothing hid it. This thread's part of the
  // row sum bounds each of its p, so while it stays under
  // speculativeSumBound P stands (a reference that lags, as with lagMax).
  // Otherwise, or for a row that saw no key yet, the warp takes the tile's
  // max, moves the reference and computes P again (a warp-uniform branch;
  // the speculative P, perhaps inf, is dropped). Rescaling the speculative
  // P there instead (one multiply per score) gained at most 1.5% and
  // spilled (docs/decisions.md, "Speculative exp off").
  SmallVector<Value, 2> mNegOld;
  for (int64_t r = 0; r < 2; ++r)
    mNegOld.push_back(arith::NegFOp::create(b, zeroIfNegInf(mOld[r])));
  Value pSpec = expScores(scores, mNegOld);
  SmallVector<Value> kept = {cF32(1.0f), cF32(1.0f), mOld[0], mOld[1]};
  Value negInf = cF32(-std::numeric_limits<float>::infinity());
  Value bound = cF32(speculativeSumBound(spec.elementType));
  Value rowRedo;
  SmallVector<Value> sums = rowSums(pSpec);
  for (int64_t r = 0; r < 2; ++r) {
    kept.push_back(sums[r]);
    Value over =
        arith::CmpFOp::create(b, arith::CmpFPredicate::UGT, sums[r], bound);
    Value noKeyYet =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, mOld[r], negInf);
    Value redo = arith::OrIOp::create(b, over, noKeyYet);
    rowRedo =
        rowRedo ? arith::OrIOp::create(b, rowRedo, redo).getResult() : redo;
  }
  // Both ways out pack P with the same conversions, which LLVM sinks past
  // PV_{j-1}'s wait. Where P_j was packed inside a branch before that wait
  // (docs/decisions.md, "P packed after the wait"), it could take P_{j-1}'s
  // registers while the wgmma still read them: ptxas serialised the chain
  // (C7513), and one such build wrote NaN.
  llvm::append_range(kept, packScores(pSpec));
  Value warpRedo = NVVM::VoteSyncOp::create(b, i1, cI32(-1), rowRedo,
                                            NVVM::VoteSyncKind::any);
  SmallVector<Type> types(6, f32);
  types.append(spec.sRegs() / 2, i32);
  SmallVector<Value> out = ifThenElse(
      warpRedo, types,
      [&] {
        SmallVector<Value> alpha, mNew, mNeg;
        SmallVector<Value> mx = rowMaxLog2(scores);
        for (int64_t r = 0; r < 2; ++r) {
          mNew.push_back(arith::MaxNumFOp::create(b, mOld[r], mx[r]));
          Rebased moved = rebase(mOld[r], mNew[r]);
          alpha.push_back(moved.alpha);
          mNeg.push_back(moved.mNeg);
        }
        Value p = expScores(scores, mNeg);
        SmallVector<Value> yielded = alpha;
        llvm::append_range(yielded, mNew);
        llvm::append_range(yielded, rowSums(p));
        llvm::append_range(yielded, packScores(p));
        return yielded;
      },
      kept);

  SoftmaxResult res;
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

SmallVector<Value> KernelEmitter::rowMaxLog2(Value scores) {
  Value mx = WgRowMaxOp::create(b, rowsF32Type, scores);
  SmallVector<Value> scaled;
  for (Value m : WgFragmentValuesOp::create(b, mx).getValues())
    scaled.push_back(arith::MulFOp::create(b, m, scaleLog2));
  return scaled;
}

KernelEmitter::Rebased KernelEmitter::rebase(Value mOld, Value mNew) {
  Value mUse = zeroIfNegInf(mNew);
  Value d = arith::SubFOp::create(b, mOld, mUse);
  Value alpha = exp2FlushDenormals(b, d);
  return {alpha, arith::NegFOp::create(b, mUse)};
}

Value KernelEmitter::zeroIfNegInf(Value m) {
  // A row that saw no key yet subtracts 0 instead, so nothing becomes NaN.
  Value negInf = cF32(-std::numeric_limits<float>::infinity());
  Value isNegInf =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, m, negInf);
  return arith::SelectOp::create(b, isNegInf, cF32(0.0f), m);
}

Value KernelEmitter::expScores(Value scores, ArrayRef<Value> mNeg) {
  Value bias = WgFragmentFromValuesOp::create(b, rowsF32Type, mNeg);
  return WgScaledExp2Op::create(b, sType, scores, bias, scaleLog2);
}

SmallVector<Value> KernelEmitter::rowSums(Value p) {
  Value sums = WgRowSumOp::create(b, rowPartialsType, p);
  auto values = WgFragmentValuesOp::create(b, sums).getValues();
  return SmallVector<Value>(values.begin(), values.end());
}

SmallVector<Value> KernelEmitter::packScores(Value p) {
  auto pType = FragmentType::get(ctx, {64, spec.blockN}, spec.elementType,
                                 WgmmaOperandALayoutAttr::get(ctx));
  Value packed = WgTruncFOp::create(b, pType, p);
  auto values = WgFragmentValuesOp::create(b, packed).getValues();
  return SmallVector<Value>(values.begin(), values.end());
}

SmallVector<Value> KernelEmitter::scaleAcc(ArrayRef<Value> acc,
                                           ArrayRef<Value> alpha, Value moved) {
  auto scaled = [&] {
    Value o = WgFragmentFromValuesOp::create(b, oType, acc);
    Value factor = WgFragmentFromValuesOp::create(b, rowsF32Type, alpha);
    Value out = WgScaleRowsOp::create(b, oType, o, factor);
    auto values = WgFragmentValuesOp::create(b, out).getValues();
    return SmallVector<Value>(values.begin(), values.end());
  };
  if (!moved)
    return scaled();
  // Every lane of the warp takes the same branch (a warp-wide vote), so the
  // wgmma that follows stays convergent.
  Value anyMoved =
      NVVM::VoteSyncOp::create(b, i1, cI32(-1), moved, NVVM::VoteSyncKind::any);
  SmallVector<Type> types(acc.size(), f32);
  return ifThenElse(anyMoved, types, scaled, acc);
}

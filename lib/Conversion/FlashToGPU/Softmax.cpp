//===- Softmax.cpp - the online softmax on the wgmma accumulator layout ---===//
//
// flash.mask, flash.softmax_update (base2) and flash.rescale for one S tile
// held in registers. In the m64nNk16 accumulator layout thread t of a
// warpgroup holds rows warp*16 + lane/4 (r = 0) and +8 (r = 1), columns
// 8i + 2(lane%4) + {0,1}: register i belongs to row (i/2)%2, column
// 8(i/4) + i%2 of the thread's 8-column group. A row is spread over the four
// threads of a quad, so row reductions are a register tree plus two
// butterfly shuffles. The running max m is kept in log2 units and
// p = exp2(s * scale_log2 - m) is one fma plus ex2.approx.ftz; the row sum
// l is kept per thread and quad-reduced once, in the epilogue. A row that
// saw no key yet (m = -inf) subtracts 0 instead, so nothing becomes NaN.
// With KernelSpec::lagMax m is a reference that trails the true max by up
// to kMaxLag, and O is rescaled only in tiles where it moved.
//
//===----------------------------------------------------------------------===//

#include "FlashToGPU.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::flash::gpu_lowering;

/// 2^x as one MUFU.EX2. math.exp2 becomes `ex2.approx.f32`, which ptxas
/// wraps in a denormal guard (compare, two predicated multiplies); the flushed
/// inputs lie below 2^-126 of the row max and add nothing to the row sum.
static Value exp2FlushDenormals(ImplicitLocOpBuilder &b, Value x) {
  return LLVM::CallIntrinsicOp::create(
             b, x.getType(), b.getStringAttr("llvm.nvvm.ex2.approx.ftz.f32"),
             ValueRange{x})
      .getResult(0);
}

/// How far (log2 units) a row's running max may lag the true max before it
/// moves (KernelSpec::lagMax). Any reference gives the same O / l and LSE; a
/// lagging one saves the O rescale of every tile whose max did not grow by
/// more than this (FlashAttention-4's conditional rescaling): p <= 2^8 still
/// fits a bf16 or fp16 P and an f32 row sum.
static constexpr float kMaxLag = 8.0f;

/// Pairwise tree reduction of `xs` with `combine`, level by level in place:
/// (x0 op x1), (x2 op x3), ..., an odd last element carried up.
template <typename OpTy>
static Value treeReduce(ImplicitLocOpBuilder &b, SmallVector<Value> xs) {
  if (xs.empty())
    llvm_unreachable("a row holds at least one accumulator register");
  for (size_t width = xs.size(); width > 1; width = (width + 1) / 2) {
    for (size_t a = 0; a < width / 2; ++a)
      xs[a] = OpTy::create(b, xs[2 * a], xs[2 * a + 1]);
    if (width % 2)
      xs[width / 2] = xs[width - 1];
  }
  return xs.front();
}

KernelEmitter::SoftmaxResult KernelEmitter::softmax(SmallVector<Value> s,
                                                    ArrayRef<Value> mOld,
                                                    ArrayRef<Value> lOld,
                                                    bool masked, Value j,
                                                    bool firstTile) {
  const int64_t numS = spec.sRegs();
  Value negInf = cF32(-std::numeric_limits<float>::infinity());
  if (masked) {
    // flash.mask: key column c of row i is visible iff c < seq_k and, when
    // causal, c <= i + seq_k - seq_q. Compared as coff < limit - colBase.
    Value j32 = arith::IndexCastOp::create(b, i32, j);
    Value colBase0 = arith::MulIOp::create(b, j32, cI32(spec.blockN));
    Value colBase = arith::AddIOp::create(b, colBase0, col0);
    SmallVector<Value, 2> rel;
    for (Value row : {row0, row1}) {
      Value limit = seqK;
      if (spec.causal) {
        Value a = arith::AddIOp::create(b, row, diag);
        Value a1 = arith::AddIOp::create(b, a, cI32(1));
        limit = arith::MinSIOp::create(b, a1, seqK);
      }
      rel.push_back(limit);
    }
    for (Value &r : rel)
      r = arith::SubIOp::create(b, r, colBase);
    for (int64_t i = 0; i < numS; ++i) {
      int64_t r = (i / 2) % 2;
      int64_t colOff = 8 * (i / 4) + (i % 2);
      Value ok = arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, rel[r],
                                       cI32(colOff));
      s[i] = arith::SelectOp::create(b, ok, s[i], negInf);
    }
  }
  if (spec.sw.speculativeExp && !firstTile)
    return speculativeSoftmax(s, mOld, lOld);

  SoftmaxResult res;
  SmallVector<Value, 2> mNeg;
  for (int64_t r = 0; r < 2; ++r) {
    Value mxScaled = rowMaxLog2(s, r);
    Value mNew;
    if (spec.lagMax) {
      // The reference moves only when the tile's max passes it by more
      // than kMaxLag (so always from -inf): p stays <= 2^kMaxLag.
      Value bar = arith::AddFOp::create(b, mOld[r], cF32(kMaxLag));
      Value moves =
          arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, mxScaled, bar);
      mNew = arith::SelectOp::create(b, moves, mxScaled, mOld[r]);
      res.moved = res.moved
                      ? arith::OrIOp::create(b, res.moved, moves).getResult()
                      : moves;
    } else {
      mNew = arith::MaxNumFOp::create(b, mOld[r], mxScaled);
    }
    Rebased moved = rebase(mOld[r], mNew);
    res.alpha.push_back(moved.alpha);
    res.mNew.push_back(mNew);
    mNeg.push_back(moved.mNeg);
  }
  SmallVector<Value> p = expScores(s, mNeg);
  for (int64_t r = 0; r < 2; ++r)
    res.lNew.push_back(
        math::FmaOp::create(b, lOld[r], res.alpha[r], rowSum(p, r)));
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
KernelEmitter::speculativeSoftmax(ArrayRef<Value> s, ArrayRef<Value> mOld,
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
  SmallVector<Value> pSpec = expScores(s, mNegOld);
  SmallVector<Value> kept = {cF32(1.0f), cF32(1.0f), mOld[0], mOld[1]};
  Value negInf = cF32(-std::numeric_limits<float>::infinity());
  Value bound = cF32(speculativeSumBound(spec.elementType));
  Value rowRedo;
  for (int64_t r = 0; r < 2; ++r) {
    Value sum = rowSum(pSpec, r);
    kept.push_back(sum);
    Value over =
        arith::CmpFOp::create(b, arith::CmpFPredicate::UGT, sum, bound);
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
        for (int64_t r = 0; r < 2; ++r) {
          Value mx = rowMaxLog2(s, r);
          mNew.push_back(arith::MaxNumFOp::create(b, mOld[r], mx));
          Rebased moved = rebase(mOld[r], mNew[r]);
          alpha.push_back(moved.alpha);
          mNeg.push_back(moved.mNeg);
        }
        SmallVector<Value> p = expScores(s, mNeg);
        SmallVector<Value> yielded = alpha;
        llvm::append_range(yielded, mNew);
        yielded.push_back(rowSum(p, 0));
        yielded.push_back(rowSum(p, 1));
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

/// The registers of `xs` (one per score, accumulator layout) in row r.
static SmallVector<Value> rowValues(ArrayRef<Value> xs, int64_t r) {
  SmallVector<Value> row;
  for (auto [i, x] : llvm::enumerate(xs))
    if ((int64_t(i) / 2) % 2 == r)
      row.push_back(x);
  return row;
}

Value KernelEmitter::rowMaxLog2(ArrayRef<Value> s, int64_t r) {
  Value mx = treeReduce<arith::MaxNumFOp>(b, rowValues(s, r));
  for (int64_t off : {1, 2}) {
    Value sh = NVVM::ShflOp::create(b, f32, cI32(-1), mx, cI32(off), cI32(31),
                                    NVVM::ShflKind::bfly, UnitAttr());
    mx = arith::MaxNumFOp::create(b, mx, sh);
  }
  return arith::MulFOp::create(b, mx, scaleLog2);
}

KernelEmitter::Rebased KernelEmitter::rebase(Value mOld, Value mNew) {
  Value mUse = zeroIfNegInf(mNew);
  Value d = arith::SubFOp::create(b, mOld, mUse);
  return {exp2FlushDenormals(b, d), arith::NegFOp::create(b, mUse)};
}

Value KernelEmitter::zeroIfNegInf(Value m) {
  // A row that saw no key yet subtracts 0 instead, so nothing becomes NaN.
  Value negInf = cF32(-std::numeric_limits<float>::infinity());
  Value isNegInf =
      arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, m, negInf);
  return arith::SelectOp::create(b, isNegInf, cF32(0.0f), m);
}

SmallVector<Value> KernelEmitter::expScores(ArrayRef<Value> s,
                                            ArrayRef<Value> mNeg) {
  SmallVector<Value> p;
  for (auto [i, x] : llvm::enumerate(s)) {
    Value t = math::FmaOp::create(b, x, scaleLog2, mNeg[(i / 2) % 2]);
    p.push_back(exp2FlushDenormals(b, t));
  }
  return p;
}

Value KernelEmitter::rowSum(ArrayRef<Value> p, int64_t r) {
  return treeReduce<arith::AddFOp>(b, rowValues(p, r));
}

SmallVector<Value> KernelEmitter::packScores(ArrayRef<Value> p) {
  SmallVector<Value> packed;
  for (size_t i = 0; i + 1 < p.size(); i += 2)
    packed.push_back(packPair(p[i], p[i + 1]));
  return packed;
}

SmallVector<Value> KernelEmitter::scaleAcc(ArrayRef<Value> acc,
                                           ArrayRef<Value> alpha, Value moved) {
  auto scaled = [&] {
    SmallVector<Value> out;
    for (auto [i, a] : llvm::enumerate(acc))
      out.push_back(arith::MulFOp::create(b, a, alpha[(i / 2) % 2]));
    return out;
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

Value KernelEmitter::packPair(Value lo, Value hi) {
  // llvm.fptrunc of a vector<2xf32> becomes one cvt.rn.{bf16,f16}x2.f32;
  // vector.from_elements/bitcast would not be lowered inside gpu-to-nvvm.
  auto v2f32 = VectorType::get({2}, f32);
  auto v2half = VectorType::get({2}, spec.elementType);
  Value u = LLVM::UndefOp::create(b, v2f32);
  Value v0 = LLVM::InsertElementOp::create(b, u, lo, cI32(0));
  Value v1 = LLVM::InsertElementOp::create(b, v0, hi, cI32(1));
  Value t = LLVM::FPTruncOp::create(b, v2half, v1);
  return LLVM::BitcastOp::create(b, i32, t);
}

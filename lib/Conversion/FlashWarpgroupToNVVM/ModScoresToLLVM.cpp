//===- ModScoresToLLVM.cpp - flash.wg.mod_scores --------------------------===//
//
// The score and mask mods register by register: each register's row (one
// of the thread's two, rowHalf) and column (the tile's first key, the
// thread's column offset and the register's place in the layout) clamped
// into the sequences, the score scaled, then the regions' ops inlined with
// those indices and the captures. LLVM folds what depends on the row
// alone into the two rows. math.tanh becomes one tanh.approx (soft-capping);
// arith.divf may use the reciprocal (arcp), as Triton's default division does.
//
//===----------------------------------------------------------------------===//

#include "ModRegions.h"
#include "Patterns.h"
#include "RegisterUtils.h"

#include "../InlinePtx.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <limits>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::wg_lowering;

Value mlir::flash::wg_lowering::clampedIndex(ImplicitLocOpBuilder &b, Value x,
                                             Value limit, Value zero,
                                             Value one) {
  Value last = arith::SubIOp::create(b, limit, one);
  Value clamped =
      arith::MinSIOp::create(b, arith::MaxSIOp::create(b, x, zero), last);
  return arith::IndexCastOp::create(b, b.getIndexType(), clamped);
}

namespace {

/// clampedIndex with its constants at the function's entry.
Value clampedIndex(ImplicitLocOpBuilder &b, Operation *op, Value x,
                   Value limit) {
  return wg_lowering::clampedIndex(
      b, x, limit, entryConstant(b, op, b.getI32IntegerAttr(0)),
      entryConstant(b, op, b.getI32IntegerAttr(1)));
}

/// `load`'s indices clamped into its memref's bounds: a capture of the
/// wrong shape then gives wrong numbers, never a read outside it.
void clampLoadIndices(ImplicitLocOpBuilder &b, memref::LoadOp load) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(load);
  b.setLoc(load.getLoc());
  Value zero = arith::ConstantIndexOp::create(b, 0);
  Value one = arith::ConstantIndexOp::create(b, 1);
  for (OpOperand &index : load.getIndicesMutable()) {
    Value size = memref::DimOp::create(b, load.getMemRef(),
                                       index.getOperandNumber() - 1);
    Value last = arith::SubIOp::create(b, size, one);
    index.set(arith::MinSIOp::create(
        b, arith::MaxSIOp::create(b, index.get(), zero), last));
  }
}

/// `inline_` (which clones ops at `b`'s insertion point and gives a value
/// of them), then the GPU's forms of tanh and division on what it cloned
/// and its capture loads clamped; `*also` (when given), another value of
/// them, follows the rewrite too.
Value inlineInGpuForms(ImplicitLocOpBuilder &b, function_ref<Value()> inline_,
                       Value *also = nullptr) {
  Block *block = b.getInsertionBlock();
  auto before = b.getInsertionPoint();
  bool atStart = before == block->begin();
  Operation *last = atStart ? nullptr : &*std::prev(before);
  Value result = inline_();
  // Rewrite what was just cloned: [first, insertion point).
  auto first = atStart ? block->begin() : std::next(last->getIterator());
  SmallVector<Operation *> cloned;
  for (auto it = first; it != b.getInsertionPoint(); ++it)
    cloned.push_back(&*it);
  for (Operation *op : cloned) {
    if (auto div = dyn_cast<arith::DivFOp>(op)) {
      div.setFastmath(arith::FastMathFlags::arcp);
    } else if (auto load = dyn_cast<memref::LoadOp>(op)) {
      clampLoadIndices(b, load);
    } else if (auto tanh = dyn_cast<math::TanhOp>(op)) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(tanh);
      b.setLoc(tanh.getLoc());
      Value t = tanhApprox(b, tanh.getOperand());
      if (result == tanh.getResult())
        result = t;
      if (also && *also == tanh.getResult())
        *also = t;
      tanh.replaceAllUsesWith(t);
      tanh.erase();
    }
  }
  return result;
}

} // namespace

Value mlir::flash::wg_lowering::inlineModRegionForGpu(ImplicitLocOpBuilder &b,
                                                      Region &region,
                                                      ValueRange args) {
  return inlineInGpuForms(b, [&] { return inlineModRegion(b, region, args); });
}

Value mlir::flash::wg_lowering::inlineScoreModDerivativeForGpu(
    ImplicitLocOpBuilder &b, Region &scoreMod, ValueRange args, Value *value) {
  return inlineInGpuForms(
      b, [&] { return inlineScoreModDerivative(b, scoreMod, args, value); },
      value);
}

namespace {

struct ModScoresLowering : public OpConversionPattern<WgModScoresOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgModScoresOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Type structType = getTypeConverter()->convertType(op.getResult().getType());
    if (!structType)
      return rewriter.notifyMatchFailure(op, "accumulator not convertible");
    SmallVector<Value> registers =
        accumulatorRegisters(b, adaptor.getScores().front());
    ValueRange rows = adaptor.getRows();
    if (rows.size() != 2)
      return rewriter.notifyMatchFailure(op, "rows are not two registers");
    Value seqQ = adaptor.getSeqQ().front(), seqK = adaptor.getSeqK().front();
    Value columnBase = arith::AddIOp::create(b, adaptor.getFirstKey().front(),
                                             threadColumnOffset(b, op));
    Value batch = arith::IndexCastOp::create(b, b.getIndexType(),
                                             adaptor.getBatch().front());
    Value head = arith::IndexCastOp::create(b, b.getIndexType(),
                                            adaptor.getHead().front());
    // A packed decoding tile's rows are of several heads, each row its own.
    Value rowHead[2] = {head, head};
    if (ValueRange heads = adaptor.getHeads(); !heads.empty()) {
      if (heads.size() != 2)
        return rewriter.notifyMatchFailure(op, "heads are not two registers");
      for (int r = 0; r < 2; ++r)
        rowHead[r] = arith::IndexCastOp::create(b, b.getIndexType(), heads[r]);
    }
    Value scale = adaptor.getScale().front();
    SmallVector<Value> captures;
    for (ValueRange capture : adaptor.getCaptures())
      captures.push_back(capture.front());
    Value rowIndex[2] = {clampedIndex(b, op, rows[0], seqQ),
                         clampedIndex(b, op, rows[1], seqQ)};
    Value negInf = entryConstant(
        b, op, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
    auto modded = [&](bool withMask) {
      SmallVector<Value> out;
      for (auto [i, x] : llvm::enumerate(registers)) {
        Value column = arith::AddIOp::create(
            b, columnBase,
            entryConstant(b, op, b.getI32IntegerAttr(columnInGroup(i))));
        Value key = clampedIndex(b, op, column, seqK);
        Value query = rowIndex[rowHalf(i)];
        Value queryHead = rowHead[rowHalf(i)];
        Value y = arith::MulFOp::create(b, x, scale);
        if (!op.getScoreMod().empty()) {
          SmallVector<Value> args = {y, batch, queryHead, query, key};
          llvm::append_range(args, captures);
          y = inlineModRegionForGpu(b, op.getScoreMod(), args);
        }
        if (withMask && !op.getMaskMod().empty()) {
          SmallVector<Value> args = {batch, queryHead, query, key};
          llvm::append_range(args, captures);
          Value keep = inlineModRegionForGpu(b, op.getMaskMod(), args);
          y = arith::SelectOp::create(b, keep, y, negInf);
        }
        out.push_back(y);
      }
      return out;
    };
    SmallVector<Value> result;
    if (Value whole = adaptor.getWhole().empty() ? Value()
                                                 : adaptor.getWhole().front();
        whole && !op.getMaskMod().empty()) {
      // A tile inside the window: the mask_mod is not evaluated.
      SmallVector<Type> types(registers.size(), b.getF32Type());
      result = ifThenElse(
          b, op.getLoc(), whole, types, [&] { return modded(false); },
          [&] { return modded(true); });
    } else {
      result = modded(true);
    }
    rewriter.replaceOp(op, accumulatorFromRegisters(b, structType, result));
    return success();
  }
};

} // namespace

void mlir::flash::wg_lowering::populateModScoresPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<ModScoresLowering>(converter, patterns.getContext());
}

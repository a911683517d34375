//===- RowwiseToLLVM.cpp - accumulator ops with a per-row operand ---------===//
//
// flash.wg.mask_columns, flash.wg.scaled_exp2 and flash.wg.scale_rows
// combine each register of an accumulator with the value of its row in a
// #flash.wgmma_rows vector: register i takes row register rowHalf(i), so
// they are one instruction (or two) per register and no data movement.
//
//===----------------------------------------------------------------------===//

#include "RegisterUtils.h"
#include "Patterns.h"

#include "../InlinePtx.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"

#include <limits>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::wg_lowering;

namespace {

/// Rewrites an accumulator op register by register: `perRegister(i, x,
/// rows)` gives register i's result from its input x and the op's row
/// vector.
template <typename OpTy>
struct RowwiseLowering : public OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OneToNOpAdaptor = typename OpConversionPattern<OpTy>::OneToNOpAdaptor;

  virtual Value perRegister(ImplicitLocOpBuilder &b, OpTy op,
                            OneToNOpAdaptor adaptor, int64_t i, Value x,
                            ArrayRef<Value> rows) const = 0;
  /// Per-op values computed once, before the registers.
  virtual SmallVector<Value> prepareRows(ImplicitLocOpBuilder &b, OpTy op,
                                         OneToNOpAdaptor adaptor,
                                         ValueRange rows) const {
    return SmallVector<Value>(rows);
  }

  LogicalResult
  matchAndRewrite(OpTy op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Type structType =
        this->getTypeConverter()->convertType(op.getResult().getType());
    if (!structType)
      return rewriter.notifyMatchFailure(op, "accumulator not convertible");
    // Operand 0 is the accumulator, operand 1 the row vector.
    SmallVector<Value> registers =
        accumulatorRegisters(b, adaptor.getOperands()[0].front());
    SmallVector<Value> rows =
        prepareRows(b, op, adaptor, adaptor.getOperands()[1]);
    for (auto [i, x] : llvm::enumerate(registers))
      x = perRegister(b, op, adaptor, i, x, rows);
    rewriter.replaceOp(op, accumulatorFromRegisters(b, structType, registers));
    return success();
  }
};

struct MaskColumnsLowering : public RowwiseLowering<WgMaskColumnsOp> {
  using RowwiseLowering::RowwiseLowering;

  SmallVector<Value> prepareRows(ImplicitLocOpBuilder &b, WgMaskColumnsOp op,
                                 OneToNOpAdaptor adaptor,
                                 ValueRange limits) const override {
    // first + column < limit as column offset < limit - (first + 2 (lane %
    // 4)): one compare per register against a constant offset.
    Value columnBase = arith::AddIOp::create(b, adaptor.getFirst().front(),
                                             threadColumnOffset(b, op));
    SmallVector<Value> remaining;
    for (Value limit : limits)
      remaining.push_back(arith::SubIOp::create(b, limit, columnBase));
    return remaining;
  }

  Value perRegister(ImplicitLocOpBuilder &b, WgMaskColumnsOp op,
                    OneToNOpAdaptor, int64_t i, Value x,
                    ArrayRef<Value> remaining) const override {
    Value offset =
        entryConstant(b, op, b.getI32IntegerAttr(columnInGroup(i)));
    Value visible = arith::CmpIOp::create(b, arith::CmpIPredicate::sgt,
                                          remaining[rowHalf(i)], offset);
    Value negInf = entryConstant(
        b, op, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
    return arith::SelectOp::create(b, visible, x, negInf);
  }
};

struct ScaledExp2Lowering : public RowwiseLowering<WgScaledExp2Op> {
  using RowwiseLowering::RowwiseLowering;

  Value perRegister(ImplicitLocOpBuilder &b, WgScaledExp2Op,
                    OneToNOpAdaptor adaptor, int64_t i, Value x,
                    ArrayRef<Value> bias) const override {
    Value t = math::FmaOp::create(b, x, adaptor.getScale().front(),
                                  bias[rowHalf(i)]);
    return exp2FlushDenormals(b, t);
  }
};

struct ScaleRowsLowering : public RowwiseLowering<WgScaleRowsOp> {
  using RowwiseLowering::RowwiseLowering;

  LogicalResult
  matchAndRewrite(WgScaleRowsOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    // The guarded form is first a branch around this one
    // (SoftmaxUpdateToRowOps.cpp).
    if (op.getMoved())
      return rewriter.notifyMatchFailure(op, "guarded by if_moved");
    return RowwiseLowering::matchAndRewrite(op, adaptor, rewriter);
  }

  Value perRegister(ImplicitLocOpBuilder &b, WgScaleRowsOp, OneToNOpAdaptor,
                    int64_t i, Value x,
                    ArrayRef<Value> factor) const override {
    return arith::MulFOp::create(b, x, factor[rowHalf(i)]);
  }
};

} // namespace

void mlir::flash::wg_lowering::populateRowwisePatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<MaskColumnsLowering, ScaledExp2Lowering, ScaleRowsLowering>(
      converter, patterns.getContext());
}

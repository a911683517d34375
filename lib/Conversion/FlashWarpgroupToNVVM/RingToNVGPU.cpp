//===- RingToNVGPU.cpp - the ring ops ------------------------------------===//
//
// A `!flash.ring_slot` converts 1:N to its slot index and its phase (index,
// i1), computed once where the slot is taken, so the waits, releases and
// addresses of the slot share them. The barrier of a slot is the ring's
// base plus the slot index in the kernel's one mbarrier group.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "RegisterUtils.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::flash;

/// Spin budget of one mbarrier try_wait (the op loops until the phase
/// flips, so this only bounds each try).
static constexpr int64_t kWaitTicks = 10000000;

static Value indexConstant(ConversionPatternRewriter &rewriter, Operation *op,
                           int64_t v) {
  return wg_lowering::entryConstant(rewriter, op, rewriter.getIndexAttr(v));
}

namespace {

struct RingSlotOpLowering : public OpConversionPattern<WgRingSlotOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgRingSlotOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value position = adaptor.getPosition();
    int64_t stages = op.getType().getStages();
    Type i32 = rewriter.getI32Type();
    auto i32Constant = [&](int64_t v) -> Value {
      return wg_lowering::entryConstant(rewriter, op,
                                        rewriter.getI32IntegerAttr(v));
    };
    Value slot, round32;
    if (position.getType().isIndex()) {
      Value count = indexConstant(rewriter, op, stages);
      slot = arith::RemUIOp::create(rewriter, loc, position, count);
      Value round = arith::DivUIOp::create(rewriter, loc, position, count);
      round32 = arith::IndexCastOp::create(rewriter, loc, i32, round);
    } else if (stages == 1) {
      // One buffer: slot 0, and every position is a round of its own.
      slot = indexConstant(rewriter, op, 0);
      round32 = position;
    } else {
      // The verifier asks for a power of two: a mask and a shift.
      Value slot32 = arith::AndIOp::create(rewriter, loc, position,
                                           i32Constant(stages - 1));
      slot = arith::IndexCastOp::create(rewriter, loc, rewriter.getIndexType(),
                                        slot32);
      round32 = arith::ShRUIOp::create(rewriter, loc, position,
                                       i32Constant(llvm::Log2_64(stages)));
    }
    Value bit = arith::AndIOp::create(rewriter, loc, round32, i32Constant(1));
    Value phase =
        arith::TruncIOp::create(rewriter, loc, rewriter.getI1Type(), bit);
    rewriter.replaceOpWithMultiple(op, {{slot, phase}});
    return success();
  }
};

struct RingSlotIndexOpLowering : public OpConversionPattern<WgRingSlotIndexOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgRingSlotIndexOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getSlot().front());
    return success();
  }
};

/// The slot's barrier of the ring whose barriers start at `base`.
static Value slotBarrier(ConversionPatternRewriter &rewriter, Operation *op,
                         Value slotIndex, int64_t base) {
  return arith::AddIOp::create(rewriter, op->getLoc(), slotIndex,
                               indexConstant(rewriter, op, base));
}

struct RingWaitFullOpLowering : public OpConversionPattern<WgRingWaitFullOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgRingWaitFullOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ValueRange slot = adaptor.getSlot();
    Value barrier = slotBarrier(rewriter, op, slot[0], op.getBase());
    nvgpu::MBarrierTryWaitParityOp::create(
        rewriter, loc, adaptor.getBarriers().front(), slot[1],
        indexConstant(rewriter, op, kWaitTicks), barrier);
    rewriter.eraseOp(op);
    return success();
  }
};

struct RingReleaseOpLowering : public OpConversionPattern<WgRingReleaseOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgRingReleaseOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value barrier =
        slotBarrier(rewriter, op, adaptor.getSlot()[0], op.getBase());
    nvgpu::MBarrierArriveOp::create(
        rewriter, loc, nvgpu::MBarrierTokenType::get(op.getContext()),
        adaptor.getBarriers().front(), barrier);
    rewriter.eraseOp(op);
    return success();
  }
};

struct RingWaitReleasedOpLowering
    : public OpConversionPattern<WgRingWaitReleasedOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgRingWaitReleasedOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    ValueRange slot = adaptor.getSlot();
    Value previous = arith::XOrIOp::create(
        rewriter, loc, slot[1],
        wg_lowering::entryConstant(rewriter, op, rewriter.getBoolAttr(true)));
    Value barrier = slotBarrier(rewriter, op, slot[0], op.getBase());
    nvgpu::MBarrierTryWaitParityOp::create(
        rewriter, loc, adaptor.getBarriers().front(), previous,
        indexConstant(rewriter, op, kWaitTicks), barrier);
    rewriter.eraseOp(op);
    return success();
  }
};

struct RingWaitEmptyOpLowering : public OpConversionPattern<WgRingWaitEmptyOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgRingWaitEmptyOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value position = adaptor.getPosition();
    Value stages = indexConstant(rewriter, op, op.getStages());
    Value reuse = arith::CmpIOp::create(
        rewriter, loc, arith::CmpIPredicate::uge, position, stages);
    auto ifOp = scf::IfOp::create(rewriter, loc, TypeRange(), reuse,
                                  /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(rewriter);
    rewriter.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    // The previous use of the slot was in the round before this position's.
    Value slot = arith::RemUIOp::create(rewriter, loc, position, stages);
    Value round = arith::DivUIOp::create(rewriter, loc, position, stages);
    Value previous = arith::SubIOp::create(rewriter, loc, round,
                                           indexConstant(rewriter, op, 1));
    Value previous32 = arith::IndexCastOp::create(
        rewriter, loc, rewriter.getI32Type(), previous);
    Value bit =
        arith::AndIOp::create(rewriter, loc, previous32,
                              wg_lowering::entryConstant(
                                  rewriter, op, rewriter.getI32IntegerAttr(1)));
    Value parity =
        arith::TruncIOp::create(rewriter, loc, rewriter.getI1Type(), bit);
    Value barrier = slotBarrier(rewriter, op, slot, op.getBase());
    nvgpu::MBarrierTryWaitParityOp::create(
        rewriter, loc, adaptor.getBarriers(), parity,
        indexConstant(rewriter, op, kWaitTicks), barrier);
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::flash::wg_lowering::populateRingPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<RingSlotOpLowering, RingSlotIndexOpLowering,
               RingWaitFullOpLowering, RingReleaseOpLowering,
               RingWaitReleasedOpLowering, RingWaitEmptyOpLowering>(
      converter, patterns.getContext());
}

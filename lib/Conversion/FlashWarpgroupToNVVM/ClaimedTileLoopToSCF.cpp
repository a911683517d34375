//===- ClaimedTileLoopToSCF.cpp - flash.wg.claimed_tile_loop --------------===//
//
// An scf.while whose condition region takes the next tile: the producer's
// waits until the tile's Q buffer is free, decodes its claim (taken one
// tile ahead, so the atomic's round trip of about a microsecond passes
// under the current tile's K/V loads instead of delaying the next tile's
// Q) and publishes it beside the buffer; the consumers' wait for the
// buffer's Q, whose mbarrier orders the claim for them, and read it. The
// static pairs leave the last round's blocks idle (15.5 or 7.8 rounds at
// the FA3 shapes); claims fill the tail with the shortest tiles, as the
// hardware does for one block per tile.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "RegisterUtils.h"
#include "TileOrder.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::wg_lowering;

namespace {

struct ClaimedTileLoopLowering
    : public OpConversionPattern<WgClaimedTileLoopOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgClaimedTileLoopOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    MLIRContext *ctx = op.getContext();
    auto c32 = [&](int64_t v) {
      return entryConstant(b, op, b.getI32IntegerAttr(v));
    };
    auto cIndex = [&](int64_t v) {
      return entryConstant(b, op, b.getIndexAttr(v));
    };
    Type i32 = b.getI32Type(), indexTy = b.getIndexType();
    auto slotType =
        cast<RingSlotType>(op.getBody().front().getArgument(4).getType());
    const int64_t buffers = slotType.getStages();
    Value counter = adaptor.getCounter();
    const bool producer = counter != nullptr;
    Value bars = adaptor.getBarriers();

    TileOrder order = TileOrder::build(
        b, op, adaptor.getSeqQ(), adaptor.getSeqK(), adaptor.getBatch(),
        adaptor.getHeads(), op.getBlockM(), op.getSections(),
        /*pairs=*/false);
    Value last = arith::SubIOp::create(b, order.queryBlocks, c32(1));
    auto claimsType = MemRefType::get(
        {2 * buffers}, i32, AffineMap(),
        cast<MemRefType>(adaptor.getSmem().getType()).getMemorySpace());
    Value claimsStart = arith::AddIOp::create(b, adaptor.getWindow(),
                                              cIndex(op.getClaimsOffset()));
    Value claims = memref::ViewOp::create(b, claimsType, adaptor.getSmem(),
                                          claimsStart, ValueRange());

    // Buffer q's claim: its query block at 2q (-1: no more work), its head
    // at 2q + 1.
    Value buffer;
    auto selectBuffer = [&](Value done) {
      Value slot = WgRingSlotOp::create(b, slotType, done);
      if (buffers > 1)
        buffer = WgRingSlotIndexOp::create(b, slot);
      return slot;
    };
    auto claimIndex = [&](int64_t field) -> Value {
      if (buffers == 1)
        return cIndex(field);
      return arith::AddIOp::create(
          b, arith::MulIOp::create(b, buffer, cIndex(2)), cIndex(field));
    };
    auto claimNext = [&]() -> Value {
      return LLVM::AtomicRMWOp::create(b, LLVM::AtomicBinOp::add, counter,
                                       c32(1), LLVM::AtomicOrdering::monotonic);
    };
    // Every block claims until it draws past the end, once: the
    // items + grid-th claim is the launch's last.
    Value lastClaim;
    SmallVector<Value> inits = {cIndex(0), c32(0)};
    if (producer) {
      Value draws = arith::AddIOp::create(b, order.items, order.grid);
      lastClaim = arith::SubIOp::create(b, draws, c32(1));
      inits.push_back(claimNext());
    }
    SmallVector<Type> passed = {i32, i32, indexTy, i32};
    if (producer)
      passed.push_back(i32);
    auto ifThen = [&](Value cond, function_ref<void()> then) {
      auto ifOp = scf::IfOp::create(b, TypeRange(), cond, /*withElse=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      then();
    };
    scf::WhileOp::create(
        b, passed, inits,
        [&](OpBuilder &nb, Location, ValueRange args) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          Value done = args[1];
          Value slot = selectBuffer(done);
          SmallVector<Value> forward;
          Value x, head, valid;
          if (producer) {
            // The Q buffer must be free before its claim is rewritten.
            WgRingWaitReleasedOp::create(b, slot, bars, op.getQEmpty());
            Value claim = args[2];
            ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::eq, claim,
                                         lastClaim),
                   [&] {
                     LLVM::AtomicRMWOp::create(
                         b, LLVM::AtomicBinOp::xchg, counter, c32(0),
                         LLVM::AtomicOrdering::monotonic);
                   });
            valid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, claim,
                                          order.items);
            // Decoded here, off the consumers' path from Q to their
            // first S: item t is query block last - level, longest first.
            auto [level, h] = order.locate(
                b, arith::SelectOp::create(b, valid, claim, c32(0)));
            Value x0 = arith::SubIOp::create(b, last, level);
            x = arith::SelectOp::create(b, valid, x0, c32(-1));
            head = h;
            // Published before Q's arrive (a release): the consumers read
            // it once Q's phase completed. Without work the phase
            // completes on a plain arrive.
            memref::StoreOp::create(b, x, claims, claimIndex(0));
            memref::StoreOp::create(b, head, claims, claimIndex(1));
            Value none = arith::XOrIOp::create(
                b, valid, entryConstant(b, op, b.getBoolAttr(true)));
            ifThen(none, [&] {
              Value barrier =
                  buffers == 1
                      ? cIndex(op.getQFull())
                      : arith::AddIOp::create(b, buffer, cIndex(op.getQFull()))
                            .getResult();
              nvgpu::MBarrierArriveOp::create(
                  b, nvgpu::MBarrierTokenType::get(ctx), bars, barrier);
            });
            auto next = scf::IfOp::create(b, TypeRange{i32}, valid,
                                          /*withElse=*/true);
            {
              OpBuilder::InsertionGuard inner(b);
              b.setInsertionPointToStart(next.thenBlock());
              scf::YieldOp::create(b, claimNext());
              b.setInsertionPointToStart(next.elseBlock());
              scf::YieldOp::create(b, claim);
            }
            forward.push_back(next.getResult(0));
          } else {
            WgRingWaitFullOp::create(b, slot, bars, op.getQFull());
            x = memref::LoadOp::create(b, claims, claimIndex(0));
            head = memref::LoadOp::create(b, claims, claimIndex(1));
            valid =
                arith::CmpIOp::create(b, arith::CmpIPredicate::sge, x, c32(0));
          }
          SmallVector<Value> condArgs = {x, head, args[0], done};
          llvm::append_range(condArgs, forward);
          scf::ConditionOp::create(b, valid, condArgs);
        },
        [&](OpBuilder &nb, Location, ValueRange args) {
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
          SmallVector<Value> next =
              inlineTile(rewriter, b, op, op.getBody(), args[0], args[1],
                         order.queryBlocks, args[2], args[3]);
          if (producer)
            next.push_back(args[4]);
          scf::YieldOp::create(b, next);
        });
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::flash::wg_lowering::populateClaimedTileLoopPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<ClaimedTileLoopLowering>(converter, patterns.getContext());
}

//===- TileLoopToSCF.cpp - flash.wg.tile_loop and flash.wg.block_tile -----===//
//
// A persistent block's static share of the tiles: an scf.for over rounds,
// block c taking item r * gridDim.x + c of each round while items last, and
// within a pair item an scf.for over its one or two query blocks. The loop
// carries the ring position of the next tile's first key tile and the
// number of tiles done (the next tile's Q ring position). Left to the
// hardware (one block per tile, flash.wg.block_tile) causal tiles balance
// because blocks are handed out as SMs free up; a static assignment of
// single causal tiles does not (0.70x the throughput at N = 16384,
// measured), hence the pairs.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "RegisterUtils.h"
#include "TileOrder.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::wg_lowering;

namespace {

/// An index (a block id, a grid dimension) as the i32 the schedule's
/// arithmetic uses.
Value toI32(ImplicitLocOpBuilder &b, Value index) {
  return arith::IndexCastOp::create(b, b.getI32Type(), index);
}

struct BlockTileLowering : public OpConversionPattern<WgBlockTileOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgBlockTileOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    if (!op.getSections()) {
      Value head = gpu::BlockIdOp::create(b, gpu::Dimension::y);
      Value queryBlock =
          toI32(b, gpu::BlockIdOp::create(b, gpu::Dimension::x));
      Value queryBlocks =
          toI32(b, gpu::GridDimOp::create(b, gpu::Dimension::x));
      rewriter.replaceOp(op, {queryBlock, head, queryBlocks});
      return success();
    }
    // Block (x, y, z): head z * gridDim.x + x, query block
    // gridDim.y - 1 - y.
    Value sectionHeads = toI32(b, gpu::GridDimOp::create(b, gpu::Dimension::x));
    Value levels = toI32(b, gpu::GridDimOp::create(b, gpu::Dimension::y));
    Value x = toI32(b, gpu::BlockIdOp::create(b, gpu::Dimension::x));
    Value y = toI32(b, gpu::BlockIdOp::create(b, gpu::Dimension::y));
    Value z = toI32(b, gpu::BlockIdOp::create(b, gpu::Dimension::z));
    Value head =
        arith::AddIOp::create(b, arith::MulIOp::create(b, z, sectionHeads), x);
    Value headIndex = arith::IndexCastOp::create(b, b.getIndexType(), head);
    Value one = entryConstant(b, op, b.getI32IntegerAttr(1));
    Value queryBlock =
        arith::SubIOp::create(b, arith::SubIOp::create(b, levels, one), y);
    rewriter.replaceOp(op, {queryBlock, headIndex, levels});
    return success();
  }
};

struct TileLoopLowering : public OpConversionPattern<WgTileLoopOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgTileLoopOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto c32 = [&](int64_t v) {
      return entryConstant(b, op, b.getI32IntegerAttr(v));
    };
    auto cIndex = [&](int64_t v) {
      return entryConstant(b, op, b.getIndexAttr(v));
    };
    std::optional<int64_t> sections = op.getSections();
    const bool pairs = sections.has_value();
    TileOrder order = TileOrder::build(
        b, op, adaptor.getSeqQ(), adaptor.getSeqK(), adaptor.getBatch(),
        adaptor.getHeads(), op.getBlockM(), sections, pairs);
    Value last = arith::SubIOp::create(b, order.queryBlocks, c32(1));
    Value block = toI32(b, gpu::BlockIdOp::create(b, gpu::Dimension::x));
    Value rounds = arith::IndexCastOp::create(
        b, b.getIndexType(),
        arith::CeilDivUIOp::create(b, order.items, order.grid));
    Type indexTy = b.getIndexType(), i32 = b.getI32Type();
    auto forLoop = [&](Value ub, ValueRange inits, auto body) {
      return scf::ForOp::create(
                 b, cIndex(0), ub, cIndex(1), inits,
                 [&](OpBuilder &nb, Location, Value iv, ValueRange args) {
                   OpBuilder::InsertionGuard guard(b);
                   b.setInsertionPoint(nb.getInsertionBlock(),
                                       nb.getInsertionPoint());
                   scf::YieldOp::create(b, body(iv, args));
                 })
          .getResults();
    };
    forLoop(rounds, ValueRange{cIndex(0), c32(0)}, [&](Value r,
                                                      ValueRange carried) {
      Value t = arith::AddIOp::create(
          b, arith::MulIOp::create(b, toI32(b, r), order.grid), block);
      Value owned = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, t,
                                          order.items);
      auto ifOp = scf::IfOp::create(b, TypeRange{indexTy, i32}, owned,
                                    /*withElse=*/true);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        auto [level, head] = order.locate(b, t);
        Value longer = arith::SubIOp::create(b, last, level);
        // A pair: query block `level` with block numM - 1 - level (the
        // middle block of an odd count is alone).
        Value count = cIndex(1);
        if (pairs) {
          Value paired = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                               level, longer);
          count = arith::SelectOp::create(b, paired, cIndex(2), cIndex(1));
        }
        ValueRange next = forLoop(
            count, carried, [&](Value member, ValueRange state) {
              Value second = arith::CmpIOp::create(
                  b, arith::CmpIPredicate::ne, member, cIndex(0));
              Value x = arith::SelectOp::create(b, second, level, longer);
              return inlineTile(rewriter, b, op, op.getBody(), x, head,
                                order.queryBlocks, state[0], state[1]);
            });
        scf::YieldOp::create(b, next);
        b.setInsertionPointToStart(ifOp.elseBlock());
        scf::YieldOp::create(b, carried);
      }
      return SmallVector<Value>(ifOp.getResults());
    });
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::flash::wg_lowering::populateTileLoopPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<BlockTileLowering, TileLoopLowering>(converter,
                                                    patterns.getContext());
}

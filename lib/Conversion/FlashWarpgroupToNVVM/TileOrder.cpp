//===- TileOrder.cpp - the order a persistent grid walks tiles ------------===//
//
// Without the causal mask a head's query blocks go one after another, so
// the blocks running at once read few heads' K and V (level by level, a
// head's last blocks ran a round after its first and read its K and V from
// DRAM again: +40% DRAM bytes at D128 N = 2048, docs/decisions.md). Under
// the mask heads go in sections whose K and V fit a share of L2, level by
// level within a section, so the blocks running at once read the same keys
// and the longest tiles (the pairs' or the claims') start first.
//
//===----------------------------------------------------------------------===//

#include "TileOrder.h"
#include "RegisterUtils.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::wg_lowering;

TileOrder TileOrder::build(ImplicitLocOpBuilder &b, Operation *op, Value seqQ,
                           Value seqK, Value batch, Value heads,
                           int64_t blockM, std::optional<int64_t> sectionKeys,
                           bool pairs) {
  auto c32 = [&](int64_t v) {
    return entryConstant(b, op, b.getI32IntegerAttr(v));
  };
  TileOrder order;
  order.pairs = pairs;
  order.queryBlocks = arith::CeilDivUIOp::create(b, seqQ, c32(blockM));
  order.heads = arith::MulIOp::create(b, batch, heads);
  order.perHead =
      pairs ? arith::CeilDivUIOp::create(b, order.queryBlocks, c32(2))
                  .getResult()
            : order.queryBlocks;
  order.items = arith::MulIOp::create(b, order.perHead, order.heads);
  order.grid = arith::IndexCastOp::create(
      b, b.getI32Type(), gpu::GridDimOp::create(b, gpu::Dimension::x));
  if (sectionKeys) {
    Value fit = arith::DivUIOp::create(b, c32(*sectionKeys), seqK);
    order.sectionHeads = arith::MinUIOp::create(
        b, arith::MaxUIOp::create(b, fit, c32(1)), order.heads);
    order.sectionItems =
        arith::MulIOp::create(b, order.sectionHeads, order.perHead);
  }
  return order;
}

std::pair<Value, Value> TileOrder::locate(ImplicitLocOpBuilder &b,
                                          Value t) const {
  if (!sectionHeads) {
    Value head = arith::DivUIOp::create(b, t, queryBlocks);
    Value level = arith::SubIOp::create(
        b, t, arith::MulIOp::create(b, head, queryBlocks));
    return {level, head};
  }
  Value section = arith::DivUIOp::create(b, t, sectionItems);
  Value first = arith::MulIOp::create(b, section, sectionHeads);
  Value local = arith::SubIOp::create(
      b, t, arith::MulIOp::create(b, section, sectionItems));
  Value headsHere = arith::MinUIOp::create(
      b, sectionHeads, arith::SubIOp::create(b, heads, first));
  Value level = arith::DivUIOp::create(b, local, headsHere);
  Value head = arith::AddIOp::create(
      b, first,
      arith::SubIOp::create(b, local,
                            arith::MulIOp::create(b, level, headsHere)));
  return {level, head};
}

SmallVector<Value> wg_lowering::inlineTile(ConversionPatternRewriter &rewriter,
                                           ImplicitLocOpBuilder &b,
                                           Operation *loop, Region &body,
                                           Value queryBlock, Value head,
                                           Value queryBlocks, Value kvBase,
                                           Value done) {
  Block &tile = body.front();
  Value headIndex = arith::IndexCastOp::create(b, b.getIndexType(), head);
  Value slot = WgRingSlotOp::create(b, tile.getArgument(4).getType(), done);
  Operation *yield = tile.getTerminator();
  Value keyTiles = yield->getOperand(0);
  rewriter.eraseOp(yield);
  rewriter.inlineBlockBefore(&tile, b.getInsertionBlock(),
                             b.getInsertionPoint(),
                             {queryBlock, headIndex, queryBlocks, kvBase, slot});
  Value one = entryConstant(b, loop, b.getI32IntegerAttr(1));
  Value nextBase = arith::AddIOp::create(b, kvBase, keyTiles);
  Value nextDone = arith::AddIOp::create(b, done, one);
  return {nextBase, nextDone};
}

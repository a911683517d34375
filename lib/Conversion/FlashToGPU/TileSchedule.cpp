//===- TileSchedule.cpp - which tiles a block computes --------------------===//
//
// A tile is one block_m slice of queries of one (batch, head). Without
// `persistent` the grid has a block per tile and the prologue reads it
// with flash.wg.block_tile (a tiles grid, or under a causal mask the
// runtime's sections grid). With it each role of a block walks the same
// tiles, in flash.wg.tile_loop (static: single query blocks head by head,
// or under the mask pairs of them in sections of heads) or, with
// dynamicSchedule, flash.wg.claimed_tile_loop (claimed from the runtime's
// tile counter); the order and why it is what it is are in
// lib/Conversion/FlashWarpgroupToNVVM/TileOrder.cpp and the loops'
// patterns. The loop's region gets the tile's coordinates, kvBase (the
// K/V ring position of its first key tile: the ring runs on across a
// block's tiles) and qSlot (its slot of the Q buffers' ring), and yields
// the key tiles it used.
//
//===----------------------------------------------------------------------===//

#include "FlashToGPU.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;

void KernelContext::forEachTile(TileValues &tile, bool producer,
                                function_ref<void()> body) {
  if (!spec.sw.persistent) {
    body();
    return;
  }
  // Sections of heads whose K and V fill kSectionBytes under the mask.
  std::optional<int64_t> sections;
  if (spec.causal)
    sections = spec.sectionKeys();
  Region *tileBody;
  if (spec.sw.dynamicSchedule) {
    // The claims sit after the K/V ring, two i32 per Q buffer.
    auto loop = WgClaimedTileLoopOp::create(
        b, seqQ, seqK, batchArg, headsArg, producer ? tileCounter : Value(),
        smem, shift, spec.offTileIds(), bar, spec.barQ(), spec.barQEmpty(),
        spec.blockM, *sections);
    tileBody = &loop.getBody();
  } else {
    auto loop = WgTileLoopOp::create(b, seqQ, seqK, batchArg, headsArg,
                                     spec.blockM,
                                     sections ? b.getI64IntegerAttr(*sections)
                                              : IntegerAttr());
    tileBody = &loop.getBody();
  }
  OpBuilder::InsertionGuard guard(b);
  Block *block = b.createBlock(tileBody);
  tile.blockX32 = block->addArgument(i32, b.getLoc());
  tile.blockY = block->addArgument(indexTy, b.getLoc());
  tile.numQueryBlocks = block->addArgument(i32, b.getLoc());
  tile.kvBase = block->addArgument(indexTy, b.getLoc());
  tile.qSlot = block->addArgument(qSlotType, b.getLoc());
  if (spec.qBuffers > 1)
    tile.qBuf = WgRingSlotIndexOp::create(b, tile.qSlot);
  emitTileBounds(tile);
  body();
  WgYieldOp::create(b, ValueRange{tile.nHiIdx});
}

Value TileValues::ringPosition(ImplicitLocOpBuilder &b, Value j) const {
  return kvBase ? arith::AddIOp::create(b, kvBase, j).getResult() : j;
}

Value TileValues::firstKey(ImplicitLocOpBuilder &b, Value j,
                           Value cBlockN) const {
  Value tileIdx = kLoIdx ? arith::AddIOp::create(b, kLoIdx, j).getResult() : j;
  return arith::MulIOp::create(b, tileIdx, cBlockN);
}

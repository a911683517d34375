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
// A tiles grid's block, once its producer issued its last K/V load,
// prefetches into L2 the Q and first K/V tile of the block that will start
// about when it ends (prefetchNextBlockInputs).
//
//===----------------------------------------------------------------------===//

#include "FlashToGPU.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;

/// An index (a block id, a grid dimension) as the i32 the schedule's
/// arithmetic uses.
static Value toI32(ImplicitLocOpBuilder &b, Value index) {
  return arith::IndexCastOp::create(b, b.getI32Type(), index);
}

void KernelEmitter::prefetchNextBlockInputs() {
  // The hardware hands out blocks in x-fastest order as SMs free up, and
  // the blocks of a tiles grid all cost the same: while this block runs
  // every other SM takes about one block, so the block nsmid places on
  // starts about when this one ends. Its Q box is cold in DRAM (no other
  // block reads it), and when it opens a head so are its first K/V tiles.
  // Issued after this block's last K/V load, a couple of key tiles before
  // its end: early enough to land, late enough that the lines are still in
  // L2. (Under a causal mask the blocks' lengths differ, so the guess
  // misses; measured 0.3-1.1% slower there, docs/decisions.md.)
  Value gx = toI32(b, gpu::GridDimOp::create(b, gpu::Dimension::x));
  Value gy = toI32(b, gpu::GridDimOp::create(b, gpu::Dimension::y));
  Value y = toI32(b, blockY);
  Value linear =
      arith::AddIOp::create(b, blockX32, arith::MulIOp::create(b, y, gx));
  Value next = arith::AddIOp::create(b, linear, NVVM::SmDimOp::create(b, i32));
  Value queryBlock = arith::RemUIOp::create(b, next, gx);
  Value head = arith::DivUIOp::create(b, next, gx);
  Value exists = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, head, gy);
  ifThen(exists, [&] {
    auto prefetch = [&](Value map, Value col, Value row) {
      NVVM::CpAsyncBulkTensorPrefetchOp::create(
          b, map, ValueRange{col, row, head}, ValueRange(),
          NVVM::TMALoadMode::TILE, Value());
    };
    Value firstRow = arith::MulIOp::create(b, queryBlock, cI32(spec.blockM));
    for (int64_t c = 0; c < spec.boxesPerRow(); ++c) {
      Value col = cI32(64 * c);
      prefetch(qMapPtr, col, firstRow);
      prefetch(kMapPtr, col, cI32(0));
      prefetch(vMapPtr, col, cI32(0));
    }
  });
}

void KernelEmitter::forEachTile(bool producer, function_ref<void()> body) {
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
  Block *tile = b.createBlock(tileBody);
  blockX32 = tile->addArgument(i32, b.getLoc());
  blockY = tile->addArgument(indexTy, b.getLoc());
  numQueryBlocks = tile->addArgument(i32, b.getLoc());
  kvBase = tile->addArgument(indexTy, b.getLoc());
  qSlot = tile->addArgument(qSlotType, b.getLoc());
  if (spec.qBuffers > 1)
    qBuf = WgRingSlotIndexOp::create(b, qSlot);
  emitTileBounds();
  body();
  WgYieldOp::create(b, ValueRange{nHiIdx});
}

void KernelEmitter::releaseQ(Value cond) {
  // The condition is uniform across the warpgroup and every consumer thread
  // arrives (count 128 x warpgroups).
  ifThen(cond,
         [&] { WgRingReleaseOp::create(b, qSlot, bar, spec.barQEmpty()); });
}

void KernelEmitter::releaseQAfterLastS(Value j) {
  // With tmaStoreO the epilogue frees Q, after O's store read the buffer.
  if (!spec.sw.persistent || spec.sw.tmaStoreO)
    return;
  Value last = arith::SubIOp::create(b, ownHiIdx, cIndex(1));
  releaseQ(arith::CmpIOp::create(b, arith::CmpIPredicate::eq, j, last));
}

void KernelEmitter::releaseQIfNoKeyTiles() {
  if (!spec.sw.persistent || spec.sw.tmaStoreO)
    return;
  releaseQ(arith::CmpIOp::create(b, arith::CmpIPredicate::sle, ownHi, cI32(0)));
}

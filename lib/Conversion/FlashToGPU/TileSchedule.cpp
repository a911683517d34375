//===- TileSchedule.cpp - which tiles a block computes --------------------===//
//
// A tile is one block_m slice of queries of one (batch, head). Without
// `persistent` the grid has a block per tile: (x: query block, y:
// batch*head), or under a causal mask the runtime's "sections" grid (x: head
// within a section, y: query block from the last, z: section), whose
// x-fastest block order is the order below with single query blocks. With
// it the grid has a block per SM and each block walks the tile list:
//
// * Work items: a query block, or under a causal mask a pair of them, the
//   i-th from the end and the i-th from the start (the middle one alone for
//   an odd count), longer first. A pair sees numM + 1 blocks' worth of keys
//   whichever i it is, so every item costs about the same and a static
//   round robin balances: in round r block c takes item r * G + c (G = grid
//   size). Left to the hardware (one block per tile) causal tiles balance
//   because blocks are handed out as SMs free up; a static assignment of
//   single causal tiles does not (0.70x the throughput at N = 16384,
//   measured).
// * Order: without a causal mask, head by head (a head's query blocks one
//   after another), so the blocks running at once read few heads' K and V
//   (level by level, a head's last blocks ran a round after its first and
//   read its K and V from DRAM again: +40% DRAM bytes at D128 N = 2048,
//   docs/decisions.md). Under a causal mask heads are taken in
//   sections whose K and V fit a share of L2, so the blocks running at
//   once read the same keys; within a section, items go level by level
//   (item i of every head, then i + 1), which the pairs and the
//   longest-first claims need.
// * Claimed (KernelSpec::dynamicSchedule, causal): items are single query
//   blocks in that order, longest first, and a block takes the next one
//   from a global counter (the runtime's tile_counter) when it frees up:
//   the longest tiles go first and the shortest fill the tail, as the
//   hardware does for one block per tile, where the static pairs leave the
//   last round's blocks idle (15.5 or 7.8 rounds at the FA3 shapes). The
//   producer claims, decodes the claim into (query block, head) and
//   publishes it in shared memory beside the tile's Q, whose mbarrier
//   orders it for the consumers.
//
// A tiles grid's block, once its producer issued its last K/V load,
// prefetches into L2 the Q and first K/V tile of the block that will start
// about when it ends (prefetchNextBlockInputs).
//
// The K/V ring and the Q buffers' ring run on across a block's tiles:
// kvBase is the ring position of the tile's first key tile, qSlot the slot
// of the Q buffers the tile uses (tiles alternate between two where shared
// memory allows, one position per tile) and qBuf that slot's buffer.
//
//===----------------------------------------------------------------------===//

#include "FlashToGPU.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

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

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

void KernelEmitter::locateSectionTile() {
  // Block (x, y, z) of a sections grid: head z * gridDim.x + x, query
  // block gridDim.y - 1 - y. The longest tiles start first, a section of
  // heads at a time.
  Value sectionHeads = toI32(b, gpu::GridDimOp::create(b, gpu::Dimension::x));
  Value levels = toI32(b, gpu::GridDimOp::create(b, gpu::Dimension::y));
  Value x = toI32(b, gpu::BlockIdOp::create(b, gpu::Dimension::x));
  Value y = toI32(b, gpu::BlockIdOp::create(b, gpu::Dimension::y));
  Value z = toI32(b, gpu::BlockIdOp::create(b, gpu::Dimension::z));
  Value head =
      arith::AddIOp::create(b, arith::MulIOp::create(b, z, sectionHeads), x);
  blockY = arith::IndexCastOp::create(b, indexTy, head);
  blockX32 =
      arith::SubIOp::create(b, arith::SubIOp::create(b, levels, cI32(1)), y);
  numQueryBlocks = levels;
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
  Value numM = arith::CeilDivUIOp::create(b, seqQ, cI32(spec.blockM));
  numQueryBlocks = numM;
  Value heads = arith::MulIOp::create(b, batchArg, headsArg);
  // Work items per head: query blocks, or (causal, static) pairs of them.
  Value perHead = spec.causal && !spec.sw.dynamicSchedule
                      ? arith::CeilDivUIOp::create(b, numM, cI32(2)).getResult()
                      : numM;
  Value numItems = arith::MulIOp::create(b, perHead, heads);
  Value grid = toI32(b, gpu::GridDimOp::create(b, gpu::Dimension::x));
  // Heads per section (causal order only): as many as fit kSectionBytes,
  // at least one.
  Value sectionHeads, sectionItems;
  if (spec.causal) {
    Value fit = arith::DivUIOp::create(b, cI32(spec.sectionKeys()), seqK);
    sectionHeads = arith::MinUIOp::create(
        b, arith::MaxUIOp::create(b, fit, cI32(1)), heads);
    sectionItems = arith::MulIOp::create(b, sectionHeads, perHead);
  }
  Value last = arith::SubIOp::create(b, numM, cI32(1));

  // Item t -> (level, head): sections of heads, level by level within one.
  auto locateInSections = [&](Value t) -> std::pair<Value, Value> {
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
  };
  // Item t -> (level, head), a head's query blocks one after another: the
  // blocks running at once share few heads' K and V, as in a tiles grid.
  auto locateHeadMajor = [&](Value t) -> std::pair<Value, Value> {
    Value head = arith::DivUIOp::create(b, t, numM);
    Value level =
        arith::SubIOp::create(b, t, arith::MulIOp::create(b, head, numM));
    return {level, head};
  };
  auto locate = [&](Value t) {
    return spec.causal ? locateInSections(t) : locateHeadMajor(t);
  };
  // Tile `done` of this block is position `done` of the Q buffers' ring.
  auto selectBuffer = [&](Value done) {
    qSlot = WgRingSlotOp::create(b, qSlotType, done);
    if (spec.qBuffers > 1)
      qBuf = WgRingSlotIndexOp::create(b, qSlot);
  };
  // Runs `body` on query block x of head `head`; returns the next tile's
  // (kvBase, done).
  auto runTile = [&](Value x, Value head, Value base,
                     Value done) -> SmallVector<Value> {
    blockX32 = x;
    blockY = arith::IndexCastOp::create(b, indexTy, head);
    kvBase = base;
    selectBuffer(done);
    emitTileBounds();
    body();
    Value nextBase = arith::AddIOp::create(b, kvBase, nHiIdx);
    Value nextDone = arith::AddIOp::create(b, done, cI32(1));
    return {nextBase, nextDone};
  };

  if (spec.sw.dynamicSchedule) {
    auto blockOf = [&](Value t) -> std::pair<Value, Value> {
      auto [level, head] = locate(t);
      return {arith::SubIOp::create(b, last, level), head};
    };
    forEachClaimedTile(producer, numItems, grid, blockOf, runTile,
                       selectBuffer);
    return;
  }

  Value block = toI32(b, gpu::BlockIdOp::create(b, gpu::Dimension::x));
  Value rounds = arith::IndexCastOp::create(
      b, indexTy, arith::CeilDivUIOp::create(b, numItems, grid));
  SmallVector<Value> init = {cIndex(0), cI32(0)};
  forLoop(cIndex(0), rounds, init, [&](Value r, ValueRange it) {
    Value r32 = toI32(b, r);
    Value t =
        arith::AddIOp::create(b, arith::MulIOp::create(b, r32, grid), block);
    Value owned =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, t, numItems);
    SmallVector<Value> carried(it);
    return ifThenElse(
        owned, TypeRange{indexTy, i32},
        [&] {
          auto [level, head] = locate(t);
          Value longer = arith::SubIOp::create(b, last, level);
          // Causal: query block `level` pairs with block numM-1-level (the
          // middle block of an odd count is alone).
          Value count = cIndex(1);
          if (spec.causal) {
            Value paired = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                                 level, longer);
            count = arith::SelectOp::create(b, paired, cIndex(2), cIndex(1));
          }
          return forLoop(
              cIndex(0), count, carried, [&](Value member, ValueRange st) {
                Value second = arith::CmpIOp::create(
                    b, arith::CmpIPredicate::ne, member, cIndex(0));
                Value x = arith::SelectOp::create(b, second, level, longer);
                return runTile(x, head, st[0], st[1]);
              });
        },
        carried);
  });
}

void KernelEmitter::forEachClaimedTile(
    bool producer, Value numItems, Value grid,
    function_ref<std::pair<Value, Value>(Value)> blockOf,
    function_ref<SmallVector<Value>(Value, Value, Value, Value)> runTile,
    function_ref<void(Value)> selectBuffer) {
  auto tileIds = MemRefType::get(
      {2 * spec.qBuffers}, i32, AffineMap(),
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
  Value idsStart = arith::AddIOp::create(b, shift, cIndex(spec.offTileIds()));
  Value ids = memref::ViewOp::create(b, tileIds, smem, idsStart, ValueRange());
  // Buffer q's claim: its query block at 2q (-1: no more work), its head
  // at 2q + 1.
  auto idIndex = [&](int64_t field) {
    if (spec.qBuffers == 1)
      return cIndex(field);
    return arith::AddIOp::create(b, arith::MulIOp::create(b, qBuf, cIndex(2)),
                                 cIndex(field))
        .getResult();
  };
  auto claimNext = [&]() -> Value {
    return LLVM::AtomicRMWOp::create(b, LLVM::AtomicBinOp::add, tileCounter,
                                     cI32(1), LLVM::AtomicOrdering::monotonic);
  };
  // The producer claims one tile ahead: the atomic's round trip (about a
  // microsecond) then passes under the current tile's K/V loads instead of
  // delaying the next tile's Q.
  // Every block claims until it draws past the end, once: the
  // numItems + grid-th claim is the launch's last, and it rewinds the
  // counter for the next launch on the stream.
  Value lastClaim;
  SmallVector<Value> inits = {cIndex(0), cI32(0)};
  if (producer) {
    Value claims = arith::AddIOp::create(b, numItems, grid);
    lastClaim = arith::SubIOp::create(b, claims, cI32(1));
    inits.push_back(claimNext());
  }
  SmallVector<Type> passed = {i32, i32, indexTy, i32};
  if (producer)
    passed.push_back(i32);
  scf::WhileOp::create(
      b, passed, inits,
      [&](OpBuilder &nb, Location, ValueRange args) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        Value done = args[1];
        selectBuffer(done);
        SmallVector<Value> forward;
        Value x, head, valid;
        if (producer) {
          // The Q buffer must be free before its claim slot is rewritten.
          waitQBufferFree();
          Value claim = args[2];
          ifThen(arith::CmpIOp::create(b, arith::CmpIPredicate::eq, claim,
                                       lastClaim),
                 [&] {
                   LLVM::AtomicRMWOp::create(b, LLVM::AtomicBinOp::xchg,
                                             tileCounter, cI32(0),
                                             LLVM::AtomicOrdering::monotonic);
                 });
          valid = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, claim,
                                        numItems);
          // Decoded here, off the consumers' path from Q to their first S.
          auto [x0, h] =
              blockOf(arith::SelectOp::create(b, valid, claim, cI32(0)));
          x = arith::SelectOp::create(b, valid, x0, cI32(-1));
          head = h;
          // Published before Q's arrive (a release): the consumers read it
          // once Q's phase completed. Without work the phase completes on
          // a plain arrive.
          memref::StoreOp::create(b, x, ids, idIndex(0));
          memref::StoreOp::create(b, head, ids, idIndex(1));
          Value none = arith::XOrIOp::create(b, valid, cI1(true));
          ifThen(none, [&] {
            nvgpu::MBarrierArriveOp::create(b,
                                            nvgpu::MBarrierTokenType::get(ctx),
                                            bar, qBarrier(spec.barQ()));
          });
          forward.push_back(ifThenElse(
                                valid, TypeRange{i32},
                                [&] { return SmallVector<Value>{claimNext()}; },
                                ValueRange{claim})
                                .front());
        } else {
          WgRingWaitFullOp::create(b, qSlot, bar, spec.barQ());
          x = memref::LoadOp::create(b, ids, idIndex(0));
          head = memref::LoadOp::create(b, ids, idIndex(1));
          valid =
              arith::CmpIOp::create(b, arith::CmpIPredicate::sge, x, cI32(0));
        }
        SmallVector<Value> condArgs = {x, head, args[0], done};
        llvm::append_range(condArgs, forward);
        scf::ConditionOp::create(b, valid, condArgs);
      },
      [&](OpBuilder &nb, Location, ValueRange args) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        SmallVector<Value> next = runTile(args[0], args[1], args[2], args[3]);
        if (producer)
          next.push_back(args[4]);
        scf::YieldOp::create(b, next);
      });
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

//===- Consumer.cpp - a consumer warpgroup's body -------------------------===//
//
// A consumer owns 64 query rows of each tile. Its setup: the rows this
// thread holds in the accumulator layout, the descriptors of Q, K and V,
// the wait for a one-tile block's Q, and with ping-pong the second
// consumer's first arrival, so the first consumer issues first. Per tile,
// the tile program's key loops and epilogue are cloned here and rewritten by
// the patterns of KeyLoopToWarpgroup.cpp (the serial or the overlapped
// schedule) and Epilogue.cpp, with this role as their context. Under the
// causal mask each consumer walks only the key tiles its own 64 rows see
// and releases the block's others without a GEMM (skipUnseenKeyTiles).
//
//===----------------------------------------------------------------------===//

#include "../FlashWarpgroupToNVVM/RegisterUtils.h"
#include "FlashToGPU.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;

ConsumerRole::ConsumerRole(KernelContext &k, Value consumerIdx,
                           Value threadInGroup)
    : k(k), b(k.b), spec(k.spec), tile(k.blockTile), consumerIdx(consumerIdx),
      threadInGroup(threadInGroup) {}

void ConsumerRole::emit() {
  k.probeStamp(KernelContext::ConsumerStart);
  // The rows this thread holds in the accumulator layout
  // (#flash.wgmma_accumulator): the mask's limits are per row.
  Value lane = arith::RemUIOp::create(b, threadInGroup, cI32(32));
  Value warp = arith::DivUIOp::create(b, threadInGroup, cI32(32));
  Value laneRow = arith::DivUIOp::create(b, lane, cI32(4));
  Value w16 = arith::MulIOp::create(b, warp, cI32(16));
  Value cw64 = arith::MulIOp::create(b, consumerIdx, cI32(64));
  Value rowInGroup = arith::AddIOp::create(b, w16, laneRow);
  Value rowInBlock = arith::AddIOp::create(b, rowInGroup, cw64);
  auto setRows = [&] {
    row0 = arith::AddIOp::create(b, rowInBlock, tile.m0);
    row1 = arith::AddIOp::create(b, row0, cI32(8));
    // A packed decoding program's row r is query r % seq_q of its head.
    if (spec.packGqa) {
      groupRow0 = row0;
      groupRow1 = row1;
      row0 = arith::RemUIOp::create(b, row0, k.seqQ);
      row1 = arith::RemUIOp::create(b, row1, k.seqQ);
    }
  };
  if (!spec.sw.persistent)
    setRows();
  emitDescriptors();

  auto waitQ = [&] {
    WgRingWaitFullOp::create(b, tile.qSlot, k.bar, spec.barQ());
  };
  // A block that owns one tile waits for Q before the ping-pong starts; a
  // persistent one waits per tile. Its one tile is the first (position 0)
  // of the Q buffers' ring.
  if (!spec.sw.persistent) {
    tile.qSlot = WgRingSlotOp::create(b, k.qSlotType, cI32(0));
    waitQ();
  }
  k.probeStamp(KernelContext::BlockQArrived);
  if (spec.sw.pingpong) {
    // Consumer 1 lets consumer 0 issue its GEMMs first. Both consumers work
    // on the same tiles, so the turns stay paired across a persistent
    // block's tiles.
    Value isSecond = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                           consumerIdx, cI32(1));
    k.ifThen(isSecond,
             [&] { NVVM::BarrierArriveOp::create(b, cI32(1), cI32(256)); });
  }

  k.forEachTile(tile, /*producer=*/false, [&] {
    k.probeStamp(KernelContext::TileStart);
    if (spec.sw.persistent) {
      setRows();
      selectQBuffer();
      if (!spec.sw.dynamicSchedule)
        waitQ();
    }
    emitOwnKeyRange();
    k.probeStamp(KernelContext::TileQArrived);
    // The serial schedule has no separate first tile.
    if (!spec.sw.overlap)
      k.probeStamp(KernelContext::FirstSoftmaxDone);
    if (failed(lowerTileProgram([&] {
          skipUnseenKeyTiles();
          k.probeStamp(KernelContext::KeyLoopsDone);
          releaseQIfNoKeyTiles();
        }))) {
      k.fail();
      return;
    }
    k.probeStamp(KernelContext::EpilogueDone);
    writeProbeRecord();
  });
}

void ConsumerRole::emitOwnKeyRange() {
  ownHi = tile.nHi;
  ownHiIdx = tile.nHiIdx;
  if (!spec.ownKeyRanges())
    return;
  // This warpgroup's last row is m0 + 64 (w + 1) - 1: where a key tile
  // starts after it but before the block's last row, the warpgroup skips
  // that tile (D256 bm128 bn64: one in 34 of the consumers' tiles at
  // N = 2048).
  Value rowsEnd = arith::AddIOp::create(
      b, tile.m0,
      arith::MulIOp::create(b, arith::AddIOp::create(b, consumerIdx, cI32(1)),
                            cI32(64)));
  // Derived from the thread index the bound looked divergent to ptxas, and
  // the key loops' descriptor arithmetic left the uniform datapath (+46
  // instructions per key tile, 2-5% slower).
  ownHi = WgWarpUniformOp::create(b, k.i32, k.keyTilesSeenBelow(rowsEnd));
  ownHiIdx = arith::IndexCastOp::create(b, k.indexTy, ownHi);
}

ConsumerRole::Slot ConsumerRole::slotInfo(Value j) {
  // The slot and its phase are taken once per key tile: the waits for K and
  // V, the descriptors and the releases all use them.
  Value slot = WgRingSlotOp::create(b, k.kvSlotType, tile.ringPosition(b, j));
  Value index = WgRingSlotIndexOp::create(b, slot);
  Value slot64 = arith::IndexCastOp::create(b, k.i64, index);
  Value descOffset =
      arith::MulIOp::create(b, slot64, cI64(spec.stageBytes() / 16));
  return {slot, descOffset};
}

void ConsumerRole::waitFull(int64_t baseBarrier, Value slot) {
  WgRingWaitFullOp::create(b, slot, k.bar, baseBarrier);
}

SmallVector<Value>
ConsumerRole::inTurn(TypeRange types, function_ref<SmallVector<Value>()> body) {
  if (!spec.sw.pingpong)
    return body();
  auto turn = WgPingpongTurnOp::create(b, types, consumerIdx);
  OpBuilder::InsertionGuard guard(b);
  b.createBlock(&turn.getBody());
  WgYieldOp::create(b, body());
  return SmallVector<Value>(turn.getResults());
}

SmallVector<Value> ConsumerRole::waitedS(const Slot &s, Value j) {
  Value sAcc =
      inTurn(k.sType, [&] { return SmallVector<Value>{emitS(prepS(s))}; })[0];
  wgWait(0);
  SmallVector<Value> sv = sValues(sAcc);
  releaseK(s.slot);
  releaseQAfterLastS(j);
  return sv;
}

void ConsumerRole::releaseQ(Value cond) {
  // The condition is uniform across the warpgroup and every consumer thread
  // arrives (count 128 x warpgroups).
  k.ifThen(cond, [&] {
    WgRingReleaseOp::create(b, tile.qSlot, k.bar, spec.barQEmpty());
  });
}

void ConsumerRole::releaseQAfterLastS(Value j) {
  // With tmaStoreO the epilogue frees Q, after O's store read the buffer.
  if (!spec.sw.persistent || spec.sw.tmaStoreO)
    return;
  Value last = arith::SubIOp::create(b, ownHiIdx, cIndex(1));
  releaseQ(arith::CmpIOp::create(b, arith::CmpIPredicate::eq, j, last));
}

void ConsumerRole::releaseQIfNoKeyTiles() {
  if (!spec.sw.persistent || spec.sw.tmaStoreO)
    return;
  releaseQ(arith::CmpIOp::create(b, arith::CmpIPredicate::sle, ownHi, cI32(0)));
}

LogicalResult
ConsumerRole::lowerTileProgram(function_ref<void()> afterKeyLoops) {
  ArrayRef<Operation *> loops = spec.keyLoops;
  SmallVector<Operation *> ops(loops);
  llvm::append_range(ops, spec.epilogueOps);
  ProgramClone program(k, "consumer", ops);

  // Each key loop starts from its predecessor's results.
  SmallVector<Operation *> clones;
  if (loops.size() == 1) {
    // The tiles before nFull need no mask: the loop once without it, then
    // once more, carrying on.
    Operation *unmasked = program.clone(loops.front());
    SmallVector<MaskOp> masks;
    unmasked->walk([&](MaskOp mask) { masks.push_back(mask); });
    for (MaskOp mask : masks) {
      llvm::erase(program.worklist, mask.getOperation());
      mask.replaceAllUsesWith(mask.getScores());
      mask.erase();
    }
    clones.push_back(unmasked);
  }
  for (Operation *loop : loops)
    clones.push_back(program.clone(loop));
  for (auto [prev, next] : llvm::zip(clones, llvm::drop_begin(clones)))
    cast<scf::ForOp>(next).getInitArgsMutable().assign(prev->getResults());

  afterKeyLoops();
  for (Operation *op : spec.epilogueOps)
    program.clone(op);

  RewritePatternSet patterns(k.ctx);
  populateKeyLoopToWarpgroupPatterns(patterns, *this);
  populateEpilogueToWarpgroupPatterns(patterns, *this);
  return program.lower(std::move(patterns));
}

void ConsumerRole::skipUnseenKeyTiles() {
  if (!spec.ownKeyRanges())
    return;
  // The other consumer spends one turn per tile in the overlapped loops
  // (S_j beside PV_{j-1}) and two in serial steps (S_j, then PV_j).
  const bool overlapped = spec.sw.overlap && !spec.serialMaskedTiles;
  // One block per tile: the block's nHi again, from m0 behind an empty asm.
  // Kept from the tile bounds it would be one more register through the
  // key loops (ptxas then spilled D256 causal bm128 bn80). A persistent
  // kernel keeps nHi for the next tile's ring position anyway.
  Value blockHiIdx = tile.nHiIdx;
  if (!spec.sw.persistent) {
    Value rowsEnd =
        arith::AddIOp::create(b, fenceOperand(b, tile.m0), cI32(spec.blockM));
    blockHiIdx =
        arith::IndexCastOp::create(b, k.indexTy, k.keyTilesSeenBelow(rowsEnd));
  }
  // Each release waits for the tile's copy first: that copy began only
  // after the slot's previous use was released by every consumer, so this
  // arrival cannot count towards that earlier phase.
  k.forLoop(ownHiIdx, blockHiIdx, ValueRange(), [&](Value j, ValueRange) {
    Slot s = slotInfo(j);
    waitFull(spec.barFullK(), s.slot);
    releaseK(s.slot);
    skipTurn();
    waitFull(spec.barFullV(), s.slot);
    release(s.slot);
    if (!overlapped) {
      skipTurn();
    }
    return SmallVector<Value>();
  });
  if (!overlapped || !spec.sw.pingpong)
    return;
  // Without key tiles a consumer also skipped the first S's turn.
  Value none =
      arith::CmpIOp::create(b, arith::CmpIPredicate::sle, ownHi, cI32(0));
  Value blockHas =
      arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, tile.nHi, cI32(0));
  k.ifThen(arith::AndIOp::create(b, none, blockHas), [&] { skipTurn(); });
}

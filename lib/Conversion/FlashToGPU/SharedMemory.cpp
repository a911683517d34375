//===- SharedMemory.cpp - smem layout, mbarriers, TMA producer ------------===//
//
// The shared-memory side of the kernel: the dynamic shared memory window
// from its first 1 KiB-aligned byte (flash.wg.shared_window), the mbarrier
// group (full_k[s], full_v[s], empty[s], q), the block's key-tile bounds,
// and the producer warpgroup that issues, per tile, the TMA loads of Q and
// of K/V tile j into the slot of ring position kvBase + j: a persistent
// block's ring runs on across its tiles. The loads and the ring's waits
// and releases are the flash.wg ops of dialects/Flash/FlashPipeline.td,
// which own the slot and phase arithmetic.
//
//===----------------------------------------------------------------------===//

#include "FlashToGPU.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;

void KernelEmitter::emitSharedMemoryAndBarriers() {
  auto smemType = MemRefType::get(
      {ShapedType::kDynamic}, b.getI8Type(), AffineMap(),
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup));
  // 128B-swizzled TMA boxes and wgmma descriptors want a 1024-B aligned
  // base (the kernel asks for 1 KiB more than the tiles need).
  auto window = WgSharedWindowOp::create(b, smemType, indexTy, i64,
                                         b.getI64IntegerAttr(1024));
  smem = window.getWindow();
  shift = window.getShift();
  baseDesc = window.getField();

  tid = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  tid32 = arith::IndexCastOp::create(b, i32, tid);
  if (!spec.sw.persistent) {
    auto tile =
        WgBlockTileOp::create(b, i32, indexTy, i32, spec.sectionsGrid());
    blockX32 = tile.getQueryBlock();
    blockY = tile.getHead();
    numQueryBlocks = tile.getQueryBlocks();
  }
  // The barriers by index: full_k[s] and full_v[s] complete on a TMA
  // arrival; every consumer thread arrives on empty[s] (and empty_k[s])
  // once done with the slot; q[b] completes on Q's TMA, q_empty[b] once
  // the buffer's last reader released it.
  SmallVector<int64_t> counts(spec.numBarriers(), 1);
  for (int64_t s = 0; s < spec.stages; ++s) {
    counts[spec.barEmpty() + s] = 128 * spec.warpgroups;
    if (spec.sw.splitRelease)
      counts[spec.barEmptyK() + s] = 128 * spec.warpgroups;
  }
  if (spec.sw.persistent)
    for (int64_t q = 0; q < spec.qBuffers; ++q)
      counts[spec.barQEmpty() + q] = spec.qEmptyArrivals();
  bar = WgInitBarriersOp::create(b, barType, counts);
  isThread0 =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, tid, cIndex(0));
}

void KernelEmitter::emitTileBounds() {
  // Under the mask the query blocks end at seq_q (a sections grid or a
  // persistent kernel gives the count), not with the TMA store of O: a box
  // that starts before row 0 faults (CUDA_ERROR_ILLEGAL_INSTRUCTION on the
  // H200; docs/decisions.md) where one past the end is clipped.
  const bool alignToEnd = spec.causal && !spec.sw.tmaStoreO;
  auto bounds = WgTileBoundsOp::create(
      b, i32, i32, i32, blockX32, numQueryBlocks, seqQ, seqK, spec.blockM, spec.blockN,
      spec.causal, alignToEnd);
  m0 = bounds.getM0();
  nFull = bounds.getNFull();
  nHi = bounds.getNHi();
  nFullIdx = arith::IndexCastOp::create(b, indexTy, nFull);
  nHiIdx = arith::IndexCastOp::create(b, indexTy, nHi);
  m0Idx = arith::IndexCastOp::create(b, indexTy, m0);
}

Value KernelEmitter::keyTilesSeenBelow(Value rowsEnd) {
  return WgKeyTilesSeenOp::create(b, i32, rowsEnd, seqQ, seqK,
                                  b.getI64IntegerAttr(spec.blockN));
}

void KernelEmitter::emitOwnKeyRange() {
  ownHi = nHi;
  ownHiIdx = nHiIdx;
  if (!spec.ownKeyRanges())
    return;
  // This warpgroup's last row is m0 + 64 (w + 1) - 1: where a key tile
  // starts after it but before the block's last row, the warpgroup skips
  // that tile (D256 bm128 bn64: one in 34 of the consumers' tiles at
  // N = 2048).
  Value rowsEnd = arith::AddIOp::create(
      b, m0,
      arith::MulIOp::create(b, arith::AddIOp::create(b, consumerIdx, cI32(1)),
                            cI32(64)));
  // Derived from the thread index the bound looked divergent to ptxas, and
  // the key loops' descriptor arithmetic left the uniform datapath (+46
  // instructions per key tile, 2-5% slower).
  ownHi = WgWarpUniformOp::create(b, i32, keyTilesSeenBelow(rowsEnd));
  ownHiIdx = arith::IndexCastOp::create(b, indexTy, ownHi);
}

Value KernelEmitter::qBarrier(int64_t base) {
  if (spec.qBuffers == 1)
    return cIndex(base);
  return arith::AddIOp::create(b, qBuf, cIndex(base));
}

Value KernelEmitter::qBufferStart() {
  if (spec.qBuffers == 1)
    return shift;
  return arith::AddIOp::create(
      b, shift, arith::MulIOp::create(b, qBuf, cIndex(spec.qBytes())));
}

void KernelEmitter::issueQ() {
  Value barId = qBarrier(spec.barQ());
  WgTmaLoadTileOp::create(
      b, tmQ, m0Idx, blockY, smem, shift, /*offset=*/Value(), qBuf, bar, barId,
      spec.headDim, /*offsetBytes=*/IntegerAttr(),
      qBuf ? b.getI64IntegerAttr(spec.qBytes()) : IntegerAttr());
}

Value KernelEmitter::ringPosition(Value j) {
  return kvBase ? arith::AddIOp::create(b, kvBase, j).getResult() : j;
}

void KernelEmitter::issueKV(Value j, KV which) {
  Value ringSlot = WgRingSlotOp::create(b, kvSlotType, ringPosition(j));
  Value slot = WgRingSlotIndexOp::create(b, ringSlot);
  Value row = arith::MulIOp::create(b, j, cIndex(spec.blockN));
  Value slotBytes = arith::MulIOp::create(b, slot, cIndex(spec.stageBytes()));
  struct Operand {
    KV which;
    Value map;
    int64_t offset, barrier;
  };
  for (Operand op : {Operand{KV::K, tmK, spec.offK(), spec.barFullK()},
                     Operand{KV::V, tmV, spec.offV(), spec.barFullV()}}) {
    if (which != KV::Both && which != op.which)
      continue;
    Value barId = arith::AddIOp::create(b, slot, cIndex(op.barrier));
    WgTmaLoadTileOp::create(b, op.map, row, blockY, smem, shift, slotBytes,
                            /*buffer=*/Value(), bar, barId, spec.headDim,
                            b.getI64IntegerAttr(op.offset),
                            /*bufferBytes=*/IntegerAttr());
  }
}

void KernelEmitter::waitEmpty(Value pos, int64_t baseBarrier) {
  WgRingWaitEmptyOp::create(b, pos, bar, baseBarrier, kvSlotType);
}

void KernelEmitter::waitQBufferFree() {
  // The previous tile's Q in this buffer must be consumed.
  WgRingWaitReleasedOp::create(b, qSlot, bar, spec.barQEmpty());
}

void KernelEmitter::emitProducer() {
  // One thread issues every copy; the others of the warpgroup idle.
  ifThen(isThread0, [&] {
    nvgpu::TmaPrefetchOp::create(b, tmK, Value());
    nvgpu::TmaPrefetchOp::create(b, tmV, Value());
    forEachTile(/*producer=*/true, [&] {
      if (failed(lowerProducerProgram()))
        status = failure();
    });
    if (spec.prefetchNextBlock)
      prefetchNextBlockInputs();
  });
}

KernelEmitter::Slot KernelEmitter::slotInfo(Value j) {
  // The slot and its phase are taken once per key tile: the waits for K and
  // V, the descriptors and the releases all use them.
  Value slot = WgRingSlotOp::create(b, kvSlotType, ringPosition(j));
  Value index = WgRingSlotIndexOp::create(b, slot);
  Value slot64 = arith::IndexCastOp::create(b, i64, index);
  Value descOffset =
      arith::MulIOp::create(b, slot64, cI64(spec.stageBytes() / 16));
  return {slot, descOffset};
}

void KernelEmitter::waitFull(int64_t baseBarrier, Value slot) {
  WgRingWaitFullOp::create(b, slot, bar, baseBarrier);
}

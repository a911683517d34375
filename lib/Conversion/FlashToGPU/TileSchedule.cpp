//===- TileSchedule.cpp - which tiles a block computes --------------------===//
//
// A tile is one block_m slice of queries of one (batch, head). Without
// `persistent` the grid has a block per tile (x: query block, y: batch*head).
// With it the grid has a block per SM and each block walks the tile list:
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
// * Order: heads are taken in sections whose K and V fit a share of L2, so
//   the blocks running at once read the same keys; within a section, items
//   go level by level (item i of every head, then i + 1).
//
// The K/V ring and the Q barriers run on across a block's tiles: kvBase is
// the ring position of the tile's first key tile, qBuf the Q buffer the
// tile uses (tiles alternate between two where shared memory allows) and
// qParity the phase of its Q load.
//
//===----------------------------------------------------------------------===//

#include "FlashToGPU.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;
using namespace mlir::flash::gpu_lowering;

/// K and V bytes of the heads of one section: a third of the H100/H200 L2
/// (50 MiB), leaving room for Q, O and the next section's first loads.
static constexpr int64_t kSectionBytes = 16 << 20;

void KernelEmitter::forEachTile(function_ref<void()> body) {
  if (!spec.persistent) {
    body();
    return;
  }
  Value numM = arith::CeilDivUIOp::create(b, seqQ, cI32(spec.blockM));
  Value heads = arith::MulIOp::create(b, batchArg, headsArg);
  // Work items per head: query blocks, or (causal) pairs of them.
  Value perHead = spec.causal
                      ? arith::CeilDivUIOp::create(b, numM, cI32(2)).getResult()
                      : numM;
  Value numItems = arith::MulIOp::create(b, perHead, heads);
  Value grid = arith::IndexCastOp::create(
      b, i32, gpu::GridDimOp::create(b, gpu::Dimension::x));
  Value block = arith::IndexCastOp::create(
      b, i32, gpu::BlockIdOp::create(b, gpu::Dimension::x));
  // Heads per section: as many as fit kSectionBytes, at least one.
  int64_t sectionKeys = kSectionBytes / (spec.headDim * 2 * 2);
  Value fit = arith::DivUIOp::create(b, cI32(sectionKeys), seqK);
  Value sectionHeads =
      arith::MinUIOp::create(b, arith::MaxUIOp::create(b, fit, cI32(1)), heads);
  Value sectionItems = arith::MulIOp::create(b, sectionHeads, perHead);
  Value rounds = arith::IndexCastOp::create(
      b, indexTy, arith::CeilDivUIOp::create(b, numItems, grid));

  SmallVector<Value> init = {cIndex(0), cI32(0)};
  forLoop(cIndex(0), rounds, init, [&](Value r, ValueRange it) {
    Value r32 = arith::IndexCastOp::create(b, i32, r);
    Value t =
        arith::AddIOp::create(b, arith::MulIOp::create(b, r32, grid), block);
    Value owned =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, t, numItems);
    SmallVector<Value> carried(it);
    return ifThenElse(
        owned, TypeRange{indexTy, i32},
        [&] {
          Value section = arith::DivUIOp::create(b, t, sectionItems);
          Value first = arith::MulIOp::create(b, section, sectionHeads);
          Value local = arith::SubIOp::create(
              b, t, arith::MulIOp::create(b, section, sectionItems));
          Value headsHere = arith::MinUIOp::create(
              b, sectionHeads, arith::SubIOp::create(b, heads, first));
          Value level = arith::DivUIOp::create(b, local, headsHere);
          Value head = arith::AddIOp::create(
              b, first,
              arith::SubIOp::create(
                  b, local, arith::MulIOp::create(b, level, headsHere)));
          Value last = arith::SubIOp::create(b, numM, cI32(1));
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
                blockX32 = arith::SelectOp::create(b, second, level, longer);
                blockY = arith::IndexCastOp::create(b, indexTy, head);
                kvBase = st[0];
                Value done = st[1];
                // Tile `done` of this block uses Q buffer done % qBuffers,
                // for the (done / qBuffers)-th time.
                Value uses = done;
                if (spec.qBuffers == 2) {
                  qBuf = arith::IndexCastOp::create(
                      b, indexTy, arith::AndIOp::create(b, done, cI32(1)));
                  uses = arith::ShRUIOp::create(b, done, cI32(1));
                }
                qParity = arith::TruncIOp::create(
                    b, i1, arith::AndIOp::create(b, uses, cI32(1)));
                emitTileBounds();
                body();
                Value nextBase = arith::AddIOp::create(b, kvBase, nHiIdx);
                Value nextDone = arith::AddIOp::create(b, done, cI32(1));
                return SmallVector<Value>{nextBase, nextDone};
              });
        },
        carried);
  });
}

void KernelEmitter::releaseQ(Value cond) {
  // The condition is uniform across the warpgroup and every consumer thread
  // arrives (count 128 x warpgroups).
  ifThen(cond, [&] {
    nvgpu::MBarrierArriveOp::create(b, nvgpu::MBarrierTokenType::get(ctx), bar,
                                    qBarrier(spec.barQEmpty()));
  });
}

void KernelEmitter::releaseQAfterLastS(Value j) {
  // With tmaStoreO the epilogue frees Q, after O's store read the buffer.
  if (!spec.persistent || spec.tmaStoreO)
    return;
  Value last = arith::SubIOp::create(b, nHiIdx, cIndex(1));
  releaseQ(arith::CmpIOp::create(b, arith::CmpIPredicate::eq, j, last));
}

void KernelEmitter::releaseQIfNoKeyTiles() {
  if (!spec.persistent || spec.tmaStoreO)
    return;
  releaseQ(arith::CmpIOp::create(b, arith::CmpIPredicate::sle, nHi, cI32(0)));
}

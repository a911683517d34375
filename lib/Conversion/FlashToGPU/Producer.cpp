//===- Producer.cpp - the producer warpgroup's body -----------------------===//
//
// One thread of the producer warpgroup issues every copy: per tile, the TMA
// load of Q into its buffer and of each key tile's K and V into the slot of
// ring position kvBase + j (a persistent block's ring runs on across its
// tiles), from the tile program's loads rewritten by the patterns of
// ProducerLoads.cpp. The loads and the ring's waits are the flash.wg ops of
// dialects/Flash/FlashPipeline.td, which own the slot and phase
// arithmetic. A tiles grid's block, once its producer issued its last K/V
// load, prefetches into L2 the Q and first K/V tile of the block that will
// start about when it ends (prefetchNextBlockInputs).
//
//===----------------------------------------------------------------------===//

#include "FlashToGPU.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;

ProducerRole::ProducerRole(KernelContext &k)
    : k(k), b(k.b), spec(k.spec), tile(k.blockTile) {}

void ProducerRole::emit() {
  // One thread issues every copy; the others of the warpgroup idle.
  k.ifThen(k.isThread0, [&] {
    nvgpu::TmaPrefetchOp::create(b, k.tmK, Value());
    nvgpu::TmaPrefetchOp::create(b, k.tmV, Value());
    k.forEachTile(tile, /*producer=*/true, [&] {
      setPlanes();
      if (failed(lowerProgram()))
        k.fail();
    });
    if (spec.prefetchNextBlock)
      prefetchNextBlockInputs();
  });
}

LogicalResult ProducerRole::lowerProgram() {
  SmallVector<Operation *> ops = {spec.qLoad};
  llvm::append_range(ops, spec.keyLoops);
  ProgramClone program(k, "producer", ops);
  for (Operation *op : ops)
    program.clone(op);
  // Nothing in the producer reads the loads' tiles or the key loops' state;
  // without a user the driver would erase them, loads and all, as dead.
  program.keepAlive(program.map.lookup(spec.qLoad->getResult(0)));
  program.keepAlive(program.map.lookup(spec.keyLoops.back()->getResult(0)));
  RewritePatternSet patterns(k.ctx);
  populateProducerLoadPatterns(patterns, *this);
  return program.lower(std::move(patterns));
}

void ProducerRole::issueQ() {
  // The barrier q[b] of this tile's Q buffer.
  Value barId = spec.qBuffers == 1
                    ? k.cIndex(spec.barQ())
                    : arith::AddIOp::create(b, tile.qBuf, k.cIndex(spec.barQ()))
                          .getResult();
  // A packed sequence's rows start at its first row in the tensor.
  Value row = tile.qRow0 ? arith::AddIOp::create(b, tile.qRow0, tile.m0Idx)
                         : tile.m0Idx;
  WgTmaLoadTileOp::create(
      b, k.tmQ, row, ValueRange{head, batch}, /*gather=*/ValueRange(), k.smem,
      k.shift,
      /*offset=*/Value(), tile.qBuf, k.bar, barId, spec.headDim,
      /*offsetBytes=*/IntegerAttr(),
      tile.qBuf ? b.getI64IntegerAttr(spec.qBytes()) : IntegerAttr());
}

ProducerRole::KeyTile ProducerRole::keyTileAt(Value j) {
  Value row = tile.firstKey(b, j, k.cIndex(spec.blockN));
  if (tile.kRow0)
    row = arith::AddIOp::create(b, tile.kRow0, row);
  if (!spec.pageSize)
    return {row, batch, {}};
  // A paged cache: the tile lies in one page (block_n divides the page
  // size) or spans block_n / page_size whole ones, each page's index from
  // the table, clamped into the cache.
  Value pageSize = k.cIndex(spec.pageSize);
  Value slot = arith::DivUIOp::create(b, row, pageSize);
  auto pageAt = [&](Value slot) -> Value {
    Value entry = arith::AddIOp::create(
        b,
        arith::MulIOp::create(b, arith::IndexCastOp::create(b, k.i64, batch),
                              arith::ExtUIOp::create(b, k.i64, k.tableCols)),
        arith::IndexCastOp::create(b, k.i64, slot));
    Value at = LLVM::GEPOp::create(b, k.pageTable.getType(), k.i32, k.pageTable,
                                   ValueRange{entry});
    Value page = LLVM::LoadOp::create(b, k.i32, at, /*alignment=*/4);
    page =
        arith::MinSIOp::create(b, arith::MaxSIOp::create(b, page, k.cI32(0)),
                               arith::SubIOp::create(b, k.numPages, k.cI32(1)));
    return arith::IndexCastOp::create(b, k.indexTy, page);
  };
  int64_t pages = spec.blockN / spec.kvBoxRows();
  if (pages == 1) {
    Value plane = pageAt(slot);
    return {arith::RemUIOp::create(b, row, pageSize), plane, {}};
  }
  // The tile starts a page. The table's last entries may cover only part
  // of the last tile: its pages past them read the table's last entry
  // again, keys the consumers mask (and whose values they zero).
  Value lastSlot = arith::IndexCastOp::create(
      b, k.indexTy, arith::SubIOp::create(b, k.tableCols, k.cI32(1)));
  KeyTile at{k.cIndex(0), pageAt(slot), {}};
  for (int64_t i = 1; i < pages; ++i) {
    Value next = arith::MinUIOp::create(
        b, arith::AddIOp::create(b, slot, k.cIndex(i)), lastSlot);
    at.gather.append({k.cIndex(0), kvHead, pageAt(next)});
  }
  return at;
}

void ProducerRole::issueKV(Value j, KV which, const KeyTile &at) {
  Value ringSlot =
      WgRingSlotOp::create(b, k.kvSlotType, tile.ringPosition(b, j));
  Value slot = WgRingSlotIndexOp::create(b, ringSlot);
  Value slotBytes = arith::MulIOp::create(b, slot, k.cIndex(spec.stageBytes()));
  struct Operand {
    KV which;
    Value map;
    int64_t offset, barrier;
  };
  for (Operand op : {Operand{KV::K, k.tmK, spec.offK(), spec.barFullK()},
                     Operand{KV::V, k.tmV, spec.offV(), spec.barFullV()}}) {
    if (which != KV::Both && which != op.which)
      continue;
    Value barId = arith::AddIOp::create(b, slot, k.cIndex(op.barrier));
    WgTmaLoadTileOp::create(b, op.map, at.row, ValueRange{kvHead, at.plane},
                            at.gather, k.smem, k.shift, slotBytes,
                            /*buffer=*/Value(), k.bar, barId, spec.headDim,
                            b.getI64IntegerAttr(op.offset),
                            /*bufferBytes=*/IntegerAttr());
  }
}

void ProducerRole::setPlanes() {
  // Query head h reads K/V head h / G (grouped-query attention). A
  // decoding tile's bounds read its batch and head already.
  if (spec.decode)
    std::tie(batch, head) = std::make_pair(tile.batch, tile.programHead);
  else
    std::tie(batch, head) = k.batchAndHead(tile.blockY);
  // A packed decoding program's head is the K/V head.
  if (spec.packGqa) {
    kvHead = head;
    return;
  }
  Value group = arith::IndexCastOp::create(b, k.indexTy, k.kvGroup);
  kvHead = arith::DivUIOp::create(b, head, group);
}

void ProducerRole::waitEmpty(Value pos, int64_t baseBarrier) {
  WgRingWaitEmptyOp::create(b, pos, k.bar, baseBarrier, k.kvSlotType);
}

void ProducerRole::waitQBufferFree() {
  // The previous tile's Q in this buffer must be consumed.
  WgRingWaitReleasedOp::create(b, tile.qSlot, k.bar, spec.barQEmpty());
}

/// An index (a block id, a grid dimension) as the i32 the schedule's
/// arithmetic uses.
static Value toI32(ImplicitLocOpBuilder &b, Value index) {
  return arith::IndexCastOp::create(b, b.getI32Type(), index);
}

void ProducerRole::prefetchNextBlockInputs() {
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
  Value y = toI32(b, tile.blockY);
  Value linear =
      arith::AddIOp::create(b, tile.blockX32, arith::MulIOp::create(b, y, gx));
  Value next =
      arith::AddIOp::create(b, linear, NVVM::SmDimOp::create(b, k.i32));
  Value queryBlock = arith::RemUIOp::create(b, next, gx);
  Value batchHead = arith::DivUIOp::create(b, next, gx);
  Value exists =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, batchHead, gy);
  k.ifThen(exists, [&] {
    auto prefetch = [&](Value map, Value col, Value row, Value head,
                        Value batch) {
      NVVM::CpAsyncBulkTensorPrefetchOp::create(
          b, map, ValueRange{col, row, head, batch}, ValueRange(),
          NVVM::TMALoadMode::TILE, Value());
    };
    Value firstRow = arith::MulIOp::create(b, queryBlock, k.cI32(spec.blockM));
    Value nextBatch = arith::DivUIOp::create(b, batchHead, k.headsArg);
    Value nextHead = arith::RemUIOp::create(b, batchHead, k.headsArg);
    Value nextKvHead = arith::DivUIOp::create(b, nextHead, k.kvGroup);
    for (int64_t c = 0; c < spec.boxesPerRow(); ++c) {
      Value col = k.cI32(64 * c);
      prefetch(k.qMapPtr, col, firstRow, nextHead, nextBatch);
      prefetch(k.kMapPtr, col, k.cI32(0), nextKvHead, nextBatch);
      prefetch(k.vMapPtr, col, k.cI32(0), nextKvHead, nextBatch);
    }
  });
}

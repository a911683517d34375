//===- SharedMemory.cpp - the block's shared memory, barriers and bounds --===//
//
// What a block's roles share: the dynamic shared memory window from its
// first 1 KiB-aligned byte (flash.wg.shared_window), the mbarrier group
// (full_k[s], full_v[s], empty[s], q), a one-tile block's tile
// (flash.wg.block_tile) and a tile's key-tile bounds (flash.wg.tile_bounds).
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

#include <limits>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;

void KernelContext::emitSharedMemoryAndBarriers() {
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
  if (spec.packed) {
    // The block's sequence and its lengths: the bounds and the mask below
    // are the sequence's.
    Value offset =
        arith::AddIOp::create(b, shift, cIndex(spec.offPackedSequence()));
    auto tile = WgPackedTileOp::create(b, i32, indexTy, i32, i32, i32, i32, i32,
                                       cuSeqlensQ, cuSeqlensK, headsArg, totalQ,
                                       totalK, smem, offset, spec.blockM,
                                       kPackedLongFirstLimit);
    blockTile.blockX32 = tile.getQueryBlock();
    blockTile.blockY = tile.getHead();
    blockTile.numQueryBlocks = tile.getQueryBlocks();
    blockTile.qRow0 = arith::IndexCastOp::create(b, indexTy, tile.getQStart());
    blockTile.kRow0 = arith::IndexCastOp::create(b, indexTy, tile.getKStart());
    blockTile.inSequence = arith::CmpIOp::create(b, arith::CmpIPredicate::sge,
                                                 tile.getQueryBlock(), cI32(0));
    seqQ = tile.getLenQ();
    seqK = tile.getLenK();
  } else if (!spec.sw.persistent) {
    auto tile =
        WgBlockTileOp::create(b, i32, indexTy, i32, spec.sectionsGrid());
    blockTile.blockX32 = tile.getQueryBlock();
    blockTile.blockY = tile.getHead();
    blockTile.numQueryBlocks = tile.getQueryBlocks();
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

void KernelContext::emitTileBounds(TileValues &tile) {
  if (spec.decode)
    return emitDecodeTileBounds(tile);
  // Under the mask the query blocks end at seq_q (a sections grid or a
  // persistent kernel gives the count), not with the TMA store of O: a box
  // that starts before row 0 faults (CUDA_ERROR_ILLEGAL_INSTRUCTION on the
  // H200; docs/decisions.md) where one past the end is clipped.
  // (A packed sequence's TMA stores take only slabs inside it.)
  const bool alignToEnd = spec.causal && (!spec.sw.tmaStoreO || spec.packed);
  auto bounds = WgTileBoundsOp::create(
      b, i32, i32, i32, tile.blockX32, tile.numQueryBlocks, seqQ, seqK,
      spec.blockM, spec.blockN, spec.causal, alignToEnd);
  tile.m0 = bounds.getM0();
  tile.nFull = bounds.getNFull();
  tile.nHi = bounds.getNHi();
  Value kLo;
  if (spec.keyWindow) {
    // The block's first row sees no key before m0 - W, and later rows see
    // fewer: its key tiles start at max(m0 - W, 0) / block_n.
    Value first = arith::MaxSIOp::create(
        b, arith::SubIOp::create(b, tile.m0, cI32(*spec.keyWindow)), cI32(0));
    kLo = arith::DivUIOp::create(b, first, cI32(spec.blockN));
  }
  // Keys [lo, hi) bound the block's rows' keys: the key tiles from lo's to
  // hi's, within those the mask leaves.
  auto narrowTo = [&](Value lo, Value hi) {
    Value loTile = arith::DivUIOp::create(
        b, arith::MaxSIOp::create(b, lo, cI32(0)), cI32(spec.blockN));
    Value hiTile = arith::CeilDivUIOp::create(
        b, arith::MaxSIOp::create(b, hi, cI32(0)), cI32(spec.blockN));
    tile.nFull = arith::MinSIOp::create(b, tile.nFull, hiTile);
    tile.nHi = arith::MinSIOp::create(b, tile.nHi, hiTile);
    kLo = kLo ? arith::MaxSIOp::create(b, kLo, loTile).getResult() : loTile;
  };
  // The chunks of the block's first and last rows.
  if (spec.keyChunk) {
    Value chunk = cI32(*spec.keyChunk);
    Value first = arith::MaxSIOp::create(b, tile.m0, cI32(0));
    Value last = arith::MaxSIOp::create(
        b, arith::AddIOp::create(b, tile.m0, cI32(spec.blockM - 1)), cI32(0));
    narrowTo(arith::MulIOp::create(b, arith::DivUIOp::create(b, first, chunk),
                                   chunk),
             arith::MulIOp::create(
                 b,
                 arith::AddIOp::create(
                     b, arith::DivUIOp::create(b, last, chunk), cI32(1)),
                 chunk));
  }
  // The caller's [lo, hi) keys for the block's rows (key_ranges).
  if (spec.keyRanges) {
    auto [lo, hi] = blockKeyRange(tile);
    narrowTo(lo, hi);
  }
  if (kLo) {
    auto countFrom = [&](Value n) -> Value {
      return arith::MaxSIOp::create(b, arith::SubIOp::create(b, n, kLo),
                                    cI32(0));
    };
    tile.nFull = countFrom(tile.nFull);
    tile.nHi = countFrom(tile.nHi);
    tile.kLoIdx = arith::IndexCastOp::create(b, indexTy, kLo);
  }
  tile.nFullIdx = arith::IndexCastOp::create(b, indexTy, tile.nFull);
  tile.nHiIdx = arith::IndexCastOp::create(b, indexTy, tile.nHi);
  tile.m0Idx = arith::IndexCastOp::create(b, indexTy, tile.m0);
}

void KernelContext::emitDecodeTileBounds(TileValues &tile) {
  auto toI32 = [&](Value index) -> Value {
    return arith::IndexCastOp::create(b, i32, index);
  };
  std::tie(tile.batch, tile.programHead) = batchAndHead(tile.blockY);
  Value split = toI32(gpu::BlockIdOp::create(b, gpu::Dimension::z));
  Value splits = toI32(gpu::GridDimOp::create(b, gpu::Dimension::z));
  Value programs = toI32(gpu::GridDimOp::create(b, gpu::Dimension::y));
  // The split's rows in the scratch: [S, B, Hx, rows] in the program's
  // order (grid y is batch * Hx + head).
  tile.partialBlock = arith::AddIOp::create(
      b, arith::MulIOp::create(b, split, programs), toI32(tile.blockY));
  // A paged cache's keys are its batch's length, clamped to the table's
  // pages (the program's clamp): from here on the mask's seq_k.
  if (spec.pageSize) {
    Value batch64 = arith::IndexCastOp::create(b, i64, tile.batch);
    Value at = LLVM::GEPOp::create(b, cacheLens.getType(), i32, cacheLens,
                                   ValueRange{batch64});
    Value len = LLVM::LoadOp::create(b, i32, at, /*alignment=*/4);
    Value pagesEnd = arith::MulIOp::create(b, tableCols, cI32(spec.pageSize));
    seqK = arith::MinSIOp::create(b, arith::MaxSIOp::create(b, len, cI32(0)),
                                  pagesEnd);
  }
  tile.m0 = arith::MulIOp::create(b, tile.blockX32, cI32(spec.blockM));
  Value bn = cI32(spec.blockN);
  Value tiles = arith::CeilDivUIOp::create(b, seqK, bn);
  // The keys every query sees whole: all of them, or under the causal mask
  // (aligned to the cache's end) those before the first query's position.
  Value fullKeys = seqK;
  if (spec.causal)
    fullKeys = arith::MaxSIOp::create(
        b,
        arith::AddIOp::create(b, arith::SubIOp::create(b, seqK, seqQ), cI32(1)),
        cI32(0));
  Value fullTiles = arith::DivUIOp::create(b, fullKeys, bn);
  tile.firstQuery =
      arith::MaxSIOp::create(b, arith::SubIOp::create(b, seqK, seqQ), cI32(0));
  // A window or a chunk hides the keys before the one of the step's first
  // query from every row: the key tiles start at that key's.
  Value firstTile;
  if (spec.keyWindow || spec.keyChunk) {
    Value firstQuery = tile.firstQuery;
    Value firstKey = cI32(0);
    if (spec.keyWindow)
      firstKey = arith::MaxSIOp::create(
          b, arith::SubIOp::create(b, firstQuery, cI32(*spec.keyWindow)),
          firstKey);
    if (spec.keyChunk) {
      Value chunk = cI32(*spec.keyChunk);
      firstKey = arith::MaxSIOp::create(
          b, firstKey,
          arith::MulIOp::create(b, arith::DivUIOp::create(b, firstQuery, chunk),
                                chunk));
    }
    firstTile = arith::MinUIOp::create(
        b, arith::DivUIOp::create(b, firstKey, bn), tiles);
  }
  // The split's equal share of those whole key tiles (-flash-tile's rule);
  // a split past the last tile has none and writes O = 0, LSE = -inf.
  Value share = arith::CeilDivUIOp::create(
      b, firstTile ? Value(arith::SubIOp::create(b, tiles, firstTile)) : tiles,
      splits);
  Value kLo = arith::MulIOp::create(b, split, share);
  if (firstTile)
    kLo = arith::AddIOp::create(b, firstTile, kLo);
  kLo = arith::MinUIOp::create(b, kLo, tiles);
  tile.nHi =
      arith::MinUIOp::create(b, share, arith::SubIOp::create(b, tiles, kLo));
  tile.nFull = arith::MinSIOp::create(
      b,
      arith::MaxSIOp::create(b, arith::SubIOp::create(b, fullTiles, kLo),
                             cI32(0)),
      tile.nHi);
  tile.kLoIdx = arith::IndexCastOp::create(b, indexTy, kLo);
  tile.nFullIdx = arith::IndexCastOp::create(b, indexTy, tile.nFull);
  tile.nHiIdx = arith::IndexCastOp::create(b, indexTy, tile.nHi);
  tile.m0Idx = arith::IndexCastOp::create(b, indexTy, tile.m0);
}

std::pair<Value, Value> KernelContext::blockKeyRange(TileValues &tile) {
  Value table = captures[spec.keyRanges->capture];
  Value rows = cI32(spec.keyRanges->rows);
  Value first = arith::MaxSIOp::create(b, tile.m0, cI32(0));
  Value end = arith::MinSIOp::create(
      b, arith::AddIOp::create(b, tile.m0, cI32(spec.blockM)), seqQ);
  Value e0 = arith::DivUIOp::create(b, first, rows);
  Value e1 = arith::CeilDivUIOp::create(
      b, arith::MaxSIOp::create(b, end, cI32(0)), rows);
  auto clampTo = [&](Value x, int64_t dim) {
    Value last = arith::SubIOp::create(b, memref::DimOp::create(b, table, dim),
                                       cIndex(1));
    return arith::MinSIOp::create(b, arith::MaxSIOp::create(b, x, cIndex(0)),
                                  last);
  };
  Value batch = clampTo(batchAndHead(tile.blockY).first, 0);
  const int32_t none = std::numeric_limits<int32_t>::max();
  SmallVector<Value> inits = {cI32(none), cI32(0)};
  if (spec.fullKeyRanges())
    inits.append({cI32(0), cI32(none)});
  SmallVector<Value> range = forLoop(
      arith::IndexCastOp::create(b, indexTy, e0),
      arith::IndexCastOp::create(b, indexTy, e1), inits,
      [&](Value e, ValueRange acc) -> SmallVector<Value> {
        Value entry = clampTo(e, 1);
        auto field = [&](int64_t i) -> Value {
          return memref::LoadOp::create(b, table,
                                        ValueRange{batch, entry, cIndex(i)});
        };
        SmallVector<Value> next = {arith::MinSIOp::create(b, acc[0], field(0)),
                                   arith::MaxSIOp::create(b, acc[1], field(1))};
        // The keys every entry's rows keep: the intersection.
        if (spec.fullKeyRanges())
          next.append({arith::MaxSIOp::create(b, acc[2], field(2)),
                       arith::MinSIOp::create(b, acc[3], field(3))});
        return next;
      });
  if (spec.fullKeyRanges()) {
    tile.fullLo = range[2];
    tile.fullHi = range[3];
  }
  return {range[0], range[1]};
}

Value KernelContext::keyTilesSeenBelow(Value rowsEnd) {
  return WgKeyTilesSeenOp::create(b, i32, rowsEnd, seqQ, seqK,
                                  b.getI64IntegerAttr(spec.blockN));
}

Value KernelContext::qBufferStart(const TileValues &tile) {
  if (spec.qBuffers == 1)
    return shift;
  return arith::AddIOp::create(
      b, shift, arith::MulIOp::create(b, tile.qBuf, cIndex(spec.qBytes())));
}

std::pair<Value, Value> KernelContext::batchAndHead(Value batchHead) {
  // A packed kernel's tensors are one batch of every sequence's rows.
  if (spec.packed)
    return {cIndex(0), batchHead};
  // A decoding program's heads are K/V heads where it packs their groups.
  Value heads = arith::IndexCastOp::create(
      b, indexTy, spec.decode ? programHeads : headsArg);
  return {arith::DivUIOp::create(b, batchHead, heads),
          arith::RemUIOp::create(b, batchHead, heads)};
}

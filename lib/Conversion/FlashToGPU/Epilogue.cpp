//===- Epilogue.cpp - flash.finalize and the O / LSE stores ---------------===//
//
// After the last key tile: the row sums are quad-reduced, O = acc / l (0 when
// l = 0) is converted to 16-bit pairs and stored straight from the
// accumulator registers with a row bound check (flash.store_tile's "rows past
// the end are not written"; a causal first block also has rows before row 0,
// see emitTileBounds), and LSE = (m + log2 l) * ln 2 (-inf when l = 0)
// is stored by the first thread of each quad. O is [B, H, seq_q, D]
// contiguous, LSE [B, H, seq_q]. With KernelSpec::tmaStoreO, O goes through
// the warpgroup's rows of the Q buffer and a TMA store instead (TMA clips
// the rows past the end).
//
//===----------------------------------------------------------------------===//

#include "FlashToGPU.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;

void KernelEmitter::emitEpilogue(ArrayRef<Value> mFinal, ArrayRef<Value> lFinal,
                                 ArrayRef<Value> accFinal) {
  Value negInf = cF32(-std::numeric_limits<float>::infinity());
  SmallVector<Value, 2> inv, lse;
  for (int64_t r = 0; r < 2; ++r) {
    Value l = lFinal[r];
    for (int64_t off : {1, 2}) {
      Value sh = NVVM::ShflOp::create(b, f32, cI32(-1), l, cI32(off), cI32(31),
                                      NVVM::ShflKind::bfly, UnitAttr());
      l = arith::AddFOp::create(b, l, sh);
    }
    Value empty =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, l, cF32(0.0f));
    Value rcp = arith::DivFOp::create(b, cF32(1.0f), l);
    inv.push_back(arith::SelectOp::create(b, empty, cF32(0.0f), rcp));
    if (!spec.hasLse)
      continue;
    Value lg = math::Log2Op::create(b, l);
    Value t = arith::AddFOp::create(b, mFinal[r], lg);
    Value t2 = arith::MulFOp::create(b, t, cF32(float(std::log(2.0))));
    lse.push_back(arith::SelectOp::create(b, empty, negInf, t2));
  }

  if (spec.sw.tmaStoreO)
    storeOViaTma(accFinal, inv);
  // What is left for the registers to store: O (unless TMA stored it) and
  // LSE, both row by row with the bound check.
  // Under probeStamps the LSE buffer holds the probe's records.
  const bool storeLse = spec.hasLse && !spec.probeStamps;
  if (spec.sw.tmaStoreO && !storeLse)
    return;
  auto globalPtr = LLVM::LLVMPointerType::get(ctx, 1);
  Value by32 = arith::IndexCastOp::create(b, i32, blockY);
  Value headRow0 = arith::MulIOp::create(b, by32, seqQ);
  for (auto [r, row] : llvm::enumerate(SmallVector<Value, 2>{row0, row1})) {
    // Unsigned: a causal first block's rows before row 0 are out too.
    Value inBounds =
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, seqQ);
    ifThen(inBounds, [&] {
      Value gRow = arith::AddIOp::create(b, headRow0, row);
      Value gRow64 = arith::ExtUIOp::create(b, i64, gRow);
      if (!spec.sw.tmaStoreO) {
        Value rowBase = arith::MulIOp::create(b, gRow64, cI64(spec.headDim));
        Value col64 = arith::ExtUIOp::create(b, i64, col0);
        Value rowCol = arith::AddIOp::create(b, rowBase, col64);
        for (int64_t g = 0; g < spec.headDim / 8; ++g) {
          Value word = oWord(accFinal, inv, r, g);
          Value idx = arith::AddIOp::create(b, rowCol, cI64(8 * g));
          Value ptr = LLVM::GEPOp::create(b, globalPtr, spec.elementType,
                                          outPtr, ValueRange{idx});
          LLVM::StoreOp::create(b, word, ptr, /*alignment=*/4);
        }
      }
      if (!storeLse)
        return;
      Value quad0 =
          arith::CmpIOp::create(b, arith::CmpIPredicate::eq, quad, cI32(0));
      ifThen(quad0, [&] {
        Value ptr =
            LLVM::GEPOp::create(b, globalPtr, f32, lsePtr, ValueRange{gRow64});
        LLVM::StoreOp::create(b, lse[r], ptr, /*alignment=*/4);
      });
    });
  }
}

Value KernelEmitter::oWord(ArrayRef<Value> accFinal, ArrayRef<Value> inv,
                           int64_t r, int64_t g) {
  Value a0 = arith::MulFOp::create(b, accFinal[4 * g + 2 * r], inv[r]);
  Value a1 = arith::MulFOp::create(b, accFinal[4 * g + 2 * r + 1], inv[r]);
  return packPair(a0, a1);
}

void KernelEmitter::storeOViaTma(ArrayRef<Value> accFinal,
                                 ArrayRef<Value> inv) {
  // The rows about to be overwritten are the A operand of this warpgroup's
  // S wgmmas, and each warp has only waited for its own wgmma.wait_group:
  // once all 128 threads are here, no warp's S of the tile is in flight.
  Value barrierId = arith::AddIOp::create(b, consumerIdx, cI32(3));
  auto warpgroupBarrier = [&] {
    NVVM::BarrierOp::create(b, Type(), barrierId, cI32(128),
                            NVVM::BarrierReductionAttr(), Value());
  };
  warpgroupBarrier();
  // The words go where TMA's 128-byte swizzle puts them: in a 64-column
  // box, 16-byte chunk c of row r sits at chunk c ^ (r % 8), and r % 8 is
  // laneRow. A warp's 32 stores of one g then hit 32 different banks.
  auto workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto wordsType =
      MemRefType::get({spec.qBytes() / 4}, i32, AffineMap(), workgroup);
  Value buffer = qBufferStart();
  Value words =
      memref::ViewOp::create(b, wordsType, smem, buffer, ValueRange());
  // This warpgroup's rows start oBoxBytes per consumer into the buffer.
  Value base =
      arith::MulIOp::create(b, consumerIdx, cI32(spec.oBoxBytes() / 4));
  SmallVector<Value, 8> chunkWords;
  for (int64_t chunk = 0; chunk < 8; ++chunk) {
    Value swz = arith::XOrIOp::create(b, laneRow, cI32(chunk));
    chunkWords.push_back(arith::MulIOp::create(b, swz, cI32(4)));
  }
  for (int64_t r = 0; r < 2; ++r) {
    Value row = arith::AddIOp::create(b, rowInGroup, cI32(8 * r));
    Value rowWords = arith::MulIOp::create(b, row, cI32(128 / 4));
    Value rowBase = arith::AddIOp::create(
        b, arith::AddIOp::create(b, base, rowWords), quad);
    for (int64_t g = 0; g < spec.headDim / 8; ++g) {
      Value word = oWord(accFinal, inv, r, g);
      Value box = cI32(g / 8 * spec.qBoxBytes() / 4);
      Value at = arith::AddIOp::create(
          b, arith::AddIOp::create(b, rowBase, box), chunkWords[g % 8]);
      memref::StoreOp::create(
          b, word, words,
          ValueRange{arith::IndexCastOp::create(b, indexTy, at)});
    }
  }
  // The TMA engine reads through the async proxy: make the generic stores
  // visible to it, then let one thread store once the warpgroup wrote.
  NVVM::FenceProxyOp::create(
      b, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
  warpgroupBarrier();
  Value elected = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                        threadInGroup, cI32(0));
  ifThen(elected, [&] {
    Value rowOff = arith::IndexCastOp::create(
        b, indexTy, arith::MulIOp::create(b, consumerIdx, cI32(64)));
    Value firstRow = arith::AddIOp::create(b, m0Idx, rowOff);
    Value rowsStart = arith::AddIOp::create(
        b, buffer,
        arith::IndexCastOp::create(
            b, indexTy,
            arith::MulIOp::create(b, consumerIdx, cI32(spec.oBoxBytes()))));
    for (int64_t c = 0; c < spec.boxesPerRow(); ++c) {
      Value off =
          arith::AddIOp::create(b, rowsStart, cIndex(c * spec.qBoxBytes()));
      Value view = memref::ViewOp::create(b, oBoxType, smem, off, ValueRange());
      nvgpu::TmaAsyncStoreOp::create(
          b, view, tmO, ValueRange{cIndex(64 * c), firstRow, blockY}, Value());
    }
    NVVM::CpAsyncBulkCommitGroupOp::create(b);
    // Wait until the store has read the buffer: only then may the block
    // exit (one tile) or the producer load a later Q into it (persistent).
    NVVM::CpAsyncBulkWaitGroupOp::create(b, b.getI32IntegerAttr(0),
                                         b.getUnitAttr());
    if (spec.sw.persistent)
      WgRingReleaseOp::create(b, qSlot, bar, spec.barQEmpty());
  });
}

//===- Epilogue.cpp - flash.finalize and the O / LSE stores ---------------===//
//
// After the last key tile: the row sums are quad-reduced (flash.wg.row_sum),
// O = acc / l (0 when l = 0) is rounded to 16-bit pairs (flash.wg.scale_rows,
// flash.wg.truncf) and stored straight from the registers with a row bound
// check (flash.wg.store_global: flash.store_tile's "rows past the end are not
// written"; a causal first block also has rows before row 0, see
// emitTileBounds), and LSE = (m + log2 l) * ln 2 (-inf when l = 0) is stored
// as a row vector. O is [B, H, seq_q, D] contiguous, LSE [B, H, seq_q]. With
// KernelSpec::tmaStoreO, O goes through the warpgroup's rows of the Q buffer
// (flash.wg.store_shared) and a TMA store instead (TMA clips the rows past
// the end).
//
//===----------------------------------------------------------------------===//

#include "FlashToGPU.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
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
  Value partials = WgFragmentFromValuesOp::create(b, rowPartialsType, lFinal);
  Value sums = WgRowSumOp::create(b, rowsF32Type, partials);
  SmallVector<Value, 2> inv, lse;
  for (auto [r, l] :
       llvm::enumerate(WgFragmentValuesOp::create(b, sums).getValues())) {
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
  Value o = WgFragmentFromValuesOp::create(b, oType, accFinal);
  Value normalised = WgScaleRowsOp::create(
      b, oType, o, WgFragmentFromValuesOp::create(b, rowsF32Type, inv),
      /*moved=*/Value());
  auto o16Type = FragmentType::get(ctx, {64, spec.headDim}, spec.elementType,
                                   WgmmaOperandALayoutAttr::get(ctx));
  Value o16 = WgTruncFOp::create(b, o16Type, normalised);

  // The warpgroup's rows: 64 from the block's first, per consumer.
  Value head = arith::IndexCastOp::create(b, i32, blockY);
  Value firstRow = arith::AddIOp::create(
      b, m0, arith::MulIOp::create(b, consumerIdx, cI32(64)));
  if (spec.sw.tmaStoreO)
    storeOViaTma(o16);
  else
    WgStoreGlobalOp::create(b, o16, outPtr, head, firstRow, seqQ);
  // Under probeStamps the LSE buffer holds the probe's records.
  if (spec.hasLse && !spec.probeStamps)
    WgStoreGlobalOp::create(
        b, WgFragmentFromValuesOp::create(b, rowsF32Type, lse), lsePtr, head,
        firstRow, seqQ);
}

void KernelEmitter::storeOViaTma(Value o16) {
  // The rows about to be overwritten are the A operand of this warpgroup's
  // S wgmmas, and each warp has only waited for its own wgmma.wait_group:
  // once all 128 threads are here, no warp's S of the tile is in flight.
  Value barrierId = arith::AddIOp::create(b, consumerIdx, cI32(3));
  auto warpgroupBarrier = [&] {
    NVVM::BarrierOp::create(b, Type(), barrierId, cI32(128),
                            NVVM::BarrierReductionAttr(), Value());
  };
  warpgroupBarrier();
  // This warpgroup's rows start oBoxBytes per consumer into the Q buffer,
  // whose boxes are the TMA boxes of Q (and of O, 64 rows of each).
  Value buffer = qBufferStart();
  Value rowsStart = arith::AddIOp::create(
      b, buffer,
      arith::IndexCastOp::create(
          b, indexTy,
          arith::MulIOp::create(b, consumerIdx, cI32(spec.oBoxBytes()))));
  WgStoreSharedOp::create(b, o16, smem, rowsStart,
                          b.getI64IntegerAttr(spec.qBoxBytes()));
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

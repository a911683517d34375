//===- Wgmma.cpp - wgmma descriptors, S = Q K^T and O += P V --------------===//
//
// The tensor-core side of a consumer warpgroup. Tiles sit in shared memory as
// D/64 boxes of [rows x 64] 16-bit elements with the 128-byte swizzle, so:
//   * Q and K are K-major operands: SW128, SBO = 1024 B (8 rows of 128 B);
//     the k-step of 16 elements is +32 B, the next 64-column box +rows*128 B;
//   * V is the MN-major (transposed) B operand of P V: SW128, LBO = one box
//     (block_n * 128 B), SBO = 1024 B, the k-step of 16 keys is +2048 B.
// Both products are `flash.wg.mma` steps whose descriptor types record these
// layouts: S = Q K^T with both operands in shared memory, O += P V with P in
// registers; -convert-flash-to-gpu lowers them with the warpgroup patterns
// (lib/Conversion/FlashWarpgroupToNVVM/).
//
//===----------------------------------------------------------------------===//

#include "FlashToGPU.h"
#include "../FlashWarpgroupToNVVM/RegisterUtils.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;

/// The layouts of the operands: Q and K K-major (LBO 16 B), V MN-major.
static SmemDescriptorType kMajorType(const KernelSpec &spec) {
  return SmemDescriptorType::get(spec.elementType.getContext(),
                                 spec.elementType, /*mnMajor=*/false, 128,
                                 /*lbo=*/16, /*sbo=*/1024);
}
static SmemDescriptorType vType(const KernelSpec &spec) {
  return SmemDescriptorType::get(spec.elementType.getContext(),
                                 spec.elementType, /*mnMajor=*/true, 128,
                                 /*lbo=*/spec.kvBoxBytes(), /*sbo=*/1024);
}

/// `base` moved on by `units` x 16 bytes (when given) and `bytes`.
static Value advance(ImplicitLocOpBuilder &b, Value base, Value units,
                     int64_t bytes) {
  return WgAdvanceDescriptorOp::create(b, base.getType(), base, units,
                                       b.getI64IntegerAttr(bytes));
}

void ConsumerRole::emitDescriptors() {
  SmemDescriptorType kMajor = kMajorType(spec), vMajor = vType(spec);
  // This warpgroup's 64 query rows start 64 * 128 B into each Q box.
  Value cw64 = arith::ExtUIOp::create(b, k.i64, consumerIdx);
  Value qOff = arith::MulIOp::create(b, cw64, cI64(64 * 128 / 16));
  Value qd0 = arith::AddIOp::create(b, k.baseDesc, qOff);
  if (spec.rematQDescriptors) {
    // The loops rebuild Q's descriptors from its low word (prepS), so they
    // keep it as an i64.
    qBitsBuffer0 = arith::OrIOp::create(b, qd0, cI64(kMajor.getLayoutBits()));
    qBits = qBitsBuffer0;
  } else {
    qDescBuffer0 = WgMakeDescriptorOp::create(b, kMajor, qd0);
    qDesc = qDescBuffer0;
  }
  auto at = [&](SmemDescriptorType type, int64_t offset) -> Value {
    Value base = WgMakeDescriptorOp::create(b, type, k.baseDesc);
    return advance(b, base, Value(), offset);
  };
  kDesc0 = at(kMajor, spec.offK());
  vDesc0 = at(vMajor, spec.offV());
}

void ConsumerRole::selectQBuffer() {
  if (spec.qBuffers == 1)
    return;
  Value buf64 = arith::IndexCastOp::create(b, k.i64, tile.qBuf);
  Value off = arith::MulIOp::create(b, buf64, cI64(spec.qBytes() / 16));
  if (qBitsBuffer0)
    qBits = arith::AddIOp::create(b, qBitsBuffer0, off);
  else
    qDesc = advance(b, qDescBuffer0, off, 0);
}

Value ConsumerRole::descriptorFromLow(Value low, int64_t offset) {
  SmemDescriptorType kMajor = kMajorType(spec);
  // The high word (the swizzle and the stride) from the type; the low word
  // (address and LBO) is `low`'s.
  uint64_t highWord = kMajor.getLayoutBits() & ~uint64_t(0xFFFFFFFF);
  Value word = arith::AddIOp::create(b, low, cI32(offset));
  Value wide = arith::ExtUIOp::create(b, k.i64, word);
  Value bits = arith::OrIOp::create(b, wide, cI64(highWord));
  return WgSmemDescriptorOp::create(b, kMajor, bits);
}

ConsumerRole::SOperands ConsumerRole::prepS(const Slot &s) {
  // Wait for K and compute every descriptor before the wgmma fence: ptxas
  // serialises the wgmma chain (C7513) if a non-wgmma instruction defines a
  // wgmma input between fence and commit.
  waitFull(spec.barFullK(), s.slot);
  Value kd = advance(b, kDesc0, s.descOffset, 0);
  // rematQDescriptors: the empty asm hides that Q's descriptor is the same
  // every tile, so the adds stay here and only its low word (address and
  // LBO; the high word is the same constant in every descriptor) is live
  // across the loop. Building the low words in 32 bits also halves the
  // registers the k-step descriptors take just before the fence, the peak
  // at which the overlapped D = 256 loop spilled.
  Value qLow = spec.rematQDescriptors
                   ? fenceOperand(b, arith::TruncIOp::create(b, k.i32, qBits))
                   : Value();
  SOperands ops;
  for (int64_t step = 0; step < spec.headDim / 16; ++step) {
    int64_t box = step / 4, kk = step % 4;
    int64_t qOffset = box * spec.qBoxBytes() / 16 + kk * 2;
    ops.a.push_back(qLow ? descriptorFromLow(qLow, qOffset)
                         : advance(b, qDesc, Value(), 16 * qOffset));
    ops.b.push_back(
        advance(b, kd, Value(), box * spec.kvBoxBytes() + kk * 32));
  }
  return ops;
}

Value ConsumerRole::emitS(const SOperands &ops, bool fence) {
  if (fence)
    NVVM::WgmmaFenceAlignedOp::create(b);
  // The first k step has no C: D = Q_0 K_0^T.
  Value acc;
  for (int64_t step = 0; step < spec.headDim / 16; ++step)
    acc = WgMmaOp::create(b, k.sType, ops.a[step], ops.b[step], acc);
  NVVM::WgmmaGroupSyncAlignedOp::create(b);
  return acc;
}

SmallVector<Value> ConsumerRole::fencedValues(Value acc, int64_t count) {
  SmallVector<Value> vals = wg_lowering::fragmentValues(b, acc);
  assert(int64_t(vals.size()) == count && "fragment of another size");
  for (Value &v : vals)
    v = fenceOperand(b, v);
  return vals;
}

SmallVector<Value> ConsumerRole::prepPV(const Slot &s, Value j) {
  waitFull(spec.barFullV(), s.slot);
  if (spec.pageSize)
    zeroValuesPastEnd(s, j);
  Value vd = advance(b, vDesc0, s.descOffset, 0);
  SmallVector<Value> descs;
  // A k-step of 16 keys is 16 rows of 128 B.
  for (int64_t kk = 0; kk < spec.blockN / 16; ++kk)
    descs.push_back(advance(b, vd, Value(), kk * 16 * 128));
  return descs;
}

void ConsumerRole::zeroValuesPastEnd(const Slot &s, Value j) {
  // The mask gives the keys past the end P = 0, but 0 x NaN is NaN: a
  // page's rows past a sequence's length hold whatever the cache holds
  // there (a contiguous tensor's read as zeros instead, by TMA's
  // out-of-bounds fill). Only the tile that crosses the end has such rows.
  Value first = arith::IndexCastOp::create(
      b, k.i32, tile.firstKey(b, j, cIndex(spec.blockN)));
  Value valid = arith::SubIOp::create(b, k.seqK, first);
  Value crosses = arith::CmpIOp::create(b, arith::CmpIPredicate::slt, valid,
                                        cI32(spec.blockN));
  k.ifThen(crosses, [&] {
    Value from = arith::MaxSIOp::create(b, valid, cI32(0));
    // 16-byte chunks: rows [from, block_n) of each 64-column box, whose
    // 128 bytes a row keeps whatever the swizzle does within it.
    Value perBox = arith::MulIOp::create(
        b, arith::SubIOp::create(b, cI32(spec.blockN), from), cI32(8));
    Value chunks = arith::MulIOp::create(b, perBox, cI32(spec.boxesPerRow()));
    Value slotStart = arith::AddIOp::create(
        b, k.shift,
        arith::IndexCastOp::create(
            b, k.indexTy, arith::MulIOp::create(b, s.descOffset, cI64(16))));
    Value valuesStart =
        arith::AddIOp::create(b, slotStart, cIndex(spec.offV()));
    auto chunkType = MemRefType::get(
        {1}, VectorType::get({4}, k.i32), AffineMap(),
        gpu::AddressSpaceAttr::get(k.ctx, gpu::AddressSpace::Workgroup));
    Value zeros = arith::ConstantOp::create(
        b, DenseElementsAttr::get(VectorType::get({4}, k.i32),
                                  b.getI32IntegerAttr(0).getValue()));
    auto toIndex = [&](Value v) {
      return arith::IndexCastOp::create(b, k.indexTy, v).getResult();
    };
    auto loop = scf::ForOp::create(b, toIndex(threadInGroup), toIndex(chunks),
                                   cIndex(128));
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value c = loop.getInductionVar();
      Value perBoxIdx = toIndex(perBox);
      Value box = arith::DivUIOp::create(b, c, perBoxIdx);
      Value inBox = arith::RemUIOp::create(b, c, perBoxIdx);
      Value at = arith::AddIOp::create(
          b,
          arith::AddIOp::create(
              b, valuesStart,
              arith::MulIOp::create(b, box, cIndex(spec.kvBoxBytes()))),
          arith::AddIOp::create(
              b, arith::MulIOp::create(b, toIndex(from), cIndex(128)),
              arith::MulIOp::create(b, inBox, cIndex(16))));
      Value chunk =
          memref::ViewOp::create(b, chunkType, k.smem, at, ValueRange());
      memref::StoreOp::create(b, zeros, chunk, ValueRange{cIndex(0)});
    }
    // wgmma reads shared memory through the async proxy: the zeros must be
    // visible to it, from every thread, before any thread's P V.
    NVVM::FenceProxyOp::create(
        b, NVVM::ProxyKind::async_shared,
        NVVM::SharedSpaceAttr::get(k.ctx, NVVM::SharedSpace::shared_cta));
    NVVM::BarrierOp::create(b, Type(),
                            arith::AddIOp::create(b, consumerIdx, cI32(5)),
                            cI32(128), NVVM::BarrierReductionAttr(), Value());
  });
}

Value ConsumerRole::emitPV(ArrayRef<Value> packedP, ArrayRef<Value> acc,
                           ArrayRef<Value> vDescs, bool fence) {
  auto pType = FragmentType::get(k.ctx, {64, 16}, spec.elementType,
                                 WgmmaOperandALayoutAttr::get(k.ctx));
  Value o = WgFragmentFromValuesOp::create(b, k.oType, acc);
  if (fence)
    NVVM::WgmmaFenceAlignedOp::create(b);
  for (int64_t kk = 0; kk < spec.blockN / 16; ++kk) {
    Value p =
        WgFragmentFromValuesOp::create(b, pType, packedP.slice(4 * kk, 4));
    o = WgMmaOp::create(b, k.oType, p, vDescs[kk], o);
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b);
  return o;
}

void ConsumerRole::wgWait(int64_t pending) {
  NVVM::WgmmaWaitGroupSyncOp::create(b, pending);
}

void ConsumerRole::release(Value slot) {
  // Every consumer thread arrives (count 128 x warpgroups): no divergent
  // branch before the next .aligned wgmma.
  WgRingReleaseOp::create(b, slot, k.bar, spec.barEmpty());
}

void ConsumerRole::releaseK(Value slot) {
  if (!spec.sw.splitRelease)
    return;
  WgRingReleaseOp::create(b, slot, k.bar, spec.barEmptyK());
}

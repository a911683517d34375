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

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;

/// wgmma shared-memory descriptor bits: swizzle mode 128B (bit 62), stride
/// byte offset 1024 B >> 4 (bits 32..45), leading byte offset (bits 16..29).
static constexpr uint64_t kSwizzle128 = uint64_t(1) << 62;
static constexpr uint64_t kSbo1024 = uint64_t(64) << 32;

/// The types that name those bits: Q and K K-major (LBO 16 B), V MN-major.
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
void KernelEmitter::emitDescriptors(Value consumerIdx) {
  // K-major: LBO is unused with the 128B swizzle (conventionally 1).
  const uint64_t kMajor = kSwizzle128 | kSbo1024 | (uint64_t(1) << 16);
  const uint64_t vMajor =
      kSwizzle128 | kSbo1024 | (uint64_t(spec.kvBoxBytes() >> 4) << 16);
  // This warpgroup's 64 query rows start 64 * 128 B into each Q box.
  Value cw64 = arith::ExtUIOp::create(b, i64, consumerIdx);
  Value qOff = arith::MulIOp::create(b, cw64, cI64(64 * 128 / 16));
  Value qd0 = arith::AddIOp::create(b, baseDesc, qOff);
  // The address field is below 2^14, so or-ing in the mode bits cannot carry.
  qDescBuffer0 = arith::OrIOp::create(b, qd0, cI64(kMajor));
  qDesc = qDescBuffer0;
  kDesc0 = arith::AddIOp::create(b, baseDesc, cI64(kMajor + spec.offK() / 16));
  vDesc0 = arith::AddIOp::create(b, baseDesc, cI64(vMajor + spec.offV() / 16));
}

void KernelEmitter::selectQBuffer() {
  if (spec.qBuffers == 1)
    return;
  Value buf64 = arith::IndexCastOp::create(b, i64, qBuf);
  Value off = arith::MulIOp::create(b, buf64, cI64(spec.qBytes() / 16));
  qDesc = arith::AddIOp::create(b, qDescBuffer0, off);
}

Value KernelEmitter::descriptorFromLow(Value low, int64_t offset) {
  Value word = arith::AddIOp::create(b, low, cI32(offset));
  Value wide = arith::ExtUIOp::create(b, i64, word);
  return arith::OrIOp::create(b, wide, cI64(kSwizzle128 | kSbo1024));
}

KernelEmitter::SOperands KernelEmitter::prepS(const Slot &s) {
  // Wait for K and compute every descriptor before the wgmma fence: ptxas
  // serialises the wgmma chain (C7513) if a non-wgmma instruction defines a
  // wgmma input between fence and commit.
  waitFull(spec.barFullK(), s.slot);
  Value kd = arith::AddIOp::create(b, kDesc0, s.descOffset);
  // rematQDescriptors: the empty asm hides that Q's descriptor is the same
  // every tile, so the adds stay here and only its low word (address and
  // LBO; the high word is the same constant in every descriptor) is live
  // across the loop. Building the low words in 32 bits also halves the
  // registers the k-step descriptors take just before the fence, the peak
  // at which the overlapped D = 256 loop spilled.
  Value qLow = spec.rematQDescriptors
                   ? fenceOperand(b, arith::TruncIOp::create(b, i32, qDesc))
                   : Value();
  SOperands ops;
  for (int64_t k = 0; k < spec.headDim / 16; ++k) {
    int64_t box = k / 4, kk = k % 4;
    int64_t qOffset = box * spec.qBoxBytes() / 16 + kk * 2;
    ops.a.push_back(
        qLow ? descriptorFromLow(qLow, qOffset)
             : arith::AddIOp::create(b, qDesc, cI64(qOffset)).getResult());
    ops.b.push_back(arith::AddIOp::create(
        b, kd, cI64(box * spec.kvBoxBytes() / 16 + kk * 2)));
  }
  return ops;
}

Value KernelEmitter::emitS(const SOperands &ops, bool fence) {
  SmemDescriptorType descType = kMajorType(spec);
  if (fence)
    NVVM::WgmmaFenceAlignedOp::create(b);
  // The first k step has no C: D = Q_0 K_0^T.
  Value acc;
  for (int64_t k = 0; k < spec.headDim / 16; ++k) {
    Value qd = WgSmemDescriptorOp::create(b, descType, ops.a[k]);
    Value kd = WgSmemDescriptorOp::create(b, descType, ops.b[k]);
    acc = WgMmaOp::create(b, sType, qd, kd, acc);
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b);
  return acc;
}

SmallVector<Value> KernelEmitter::fencedValues(Value acc, int64_t count) {
  auto values = WgFragmentValuesOp::create(b, acc).getValues();
  assert(int64_t(values.size()) == count && "fragment of another size");
  SmallVector<Value> vals(values.begin(), values.end());
  for (Value &v : vals)
    v = fenceOperand(b, v);
  return vals;
}

SmallVector<Value> KernelEmitter::prepPV(const Slot &s) {
  waitFull(spec.barFullV(), s.slot);
  Value vd = arith::AddIOp::create(b, vDesc0, s.descOffset);
  SmallVector<Value> descs;
  for (int64_t kk = 0; kk < spec.blockN / 16; ++kk)
    descs.push_back(arith::AddIOp::create(b, vd, cI64(kk * 16 * 128 / 16)));
  return descs;
}

Value KernelEmitter::emitPV(ArrayRef<Value> packedP, ArrayRef<Value> acc,
                            ArrayRef<Value> vDescs, bool fence) {
  auto pType = FragmentType::get(ctx, {64, 16}, spec.elementType,
                                 WgmmaOperandALayoutAttr::get(ctx));
  SmemDescriptorType descType = vType(spec);
  Value o = WgFragmentFromValuesOp::create(b, oType, acc);
  if (fence)
    NVVM::WgmmaFenceAlignedOp::create(b);
  for (int64_t kk = 0; kk < spec.blockN / 16; ++kk) {
    Value p =
        WgFragmentFromValuesOp::create(b, pType, packedP.slice(4 * kk, 4));
    Value vd = WgSmemDescriptorOp::create(b, descType, vDescs[kk]);
    o = WgMmaOp::create(b, oType, p, vd, o);
  }
  NVVM::WgmmaGroupSyncAlignedOp::create(b);
  return o;
}

void KernelEmitter::wgWait(int64_t pending) {
  NVVM::WgmmaWaitGroupSyncOp::create(b, pending);
}

void KernelEmitter::release(Value slot) {
  // Every consumer thread arrives (count 128 x warpgroups): no divergent
  // branch before the next .aligned wgmma.
  WgRingReleaseOp::create(b, slot, bar, spec.barEmpty());
}

void KernelEmitter::releaseK(Value slot) {
  if (!spec.sw.splitRelease)
    return;
  WgRingReleaseOp::create(b, slot, bar, spec.barEmptyK());
}

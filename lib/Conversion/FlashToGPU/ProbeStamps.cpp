//===- ProbeStamps.cpp - per-tile-program clock64 records -----------------===//
//
// KernelSpec::probeStamps, a developer probe of where a tile program's time
// goes (bench/stamps.py). Thread 0 of every consumer reads clock64 at each
// ProbePoint and, after the tile's epilogue, writes one record of 32 u32
// words over the LSE buffer, in the rows of the tile's (batch, head):
//
//   head h's LSE floats [h * seq_q, (h + 1) * seq_q) hold the records of
//   its query blocks, record r = query block * warpgroups + consumer at
//   word 32 * r: smid, consumer, query block, head, the NumProbePoints
//   stamps (lo, hi), globaltimer (lo, hi).
//
// A record that would not fit the head's seq_q floats is dropped (query
// blocks of 64 rows per consumer need 32 words of 64: only a ragged last
// block can overflow). Each stamp goes to a volatile stack slot the moment
// it is read: held in registers across the key loop, the stamps made ptxas
// grow the D128 loop by 27 instructions, and printf serialised every wgmma
// of the kernel (an extern call). The stores are 4-byte, as LSE's rows of
// an odd seq_q are only 4-byte aligned, and plain: volatile ones become
// strong system-scope stores (STG.E.STRONG.SYS), slower to issue, and the
// gap before the next tile program's first stamp would include them.
//
//===----------------------------------------------------------------------===//

#include "FlashToGPU.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::flash::gpu_lowering;

namespace {
constexpr int64_t kRecordWords = 32;
constexpr int64_t kHeaderWords = 4;
} // namespace

void KernelContext::probeStamp(ProbePoint point) {
  if (!spec.probeStamps)
    return;
  auto ptrTy = LLVM::LLVMPointerType::get(ctx);
  if (!probeSlots) {
    OpBuilder::InsertionGuard guard(b);
    Block &entry = b.getInsertionBlock()
                       ->getParent()
                       ->getParentOfType<gpu::GPUFuncOp>()
                       .getBody()
                       .front();
    b.setInsertionPointToStart(&entry);
    Value count =
        LLVM::ConstantOp::create(b, i32, b.getI32IntegerAttr(NumProbePoints));
    probeSlots = LLVM::AllocaOp::create(b, ptrTy, i64, count, 8);
  }
  Value clock = NVVM::Clock64Op::create(b, i64);
  Value slot = LLVM::GEPOp::create(b, ptrTy, i64, probeSlots,
                                   ValueRange{cI32(int64_t(point))});
  LLVM::StoreOp::create(b, clock, slot, 8, /*isVolatile=*/true);
}

void ConsumerRole::writeProbeRecord() {
  if (!spec.probeStamps)
    return;
  auto ptrTy = LLVM::LLVMPointerType::get(k.ctx);
  auto globalPtr = LLVM::LLVMPointerType::get(k.ctx, 1);
  Value timer = NVVM::GlobalTimerOp::create(b, k.i64);
  Value sm = NVVM::SmIdOp::create(b, k.i32);
  Value head = arith::IndexCastOp::create(b, k.i32, tile.blockY);
  Value record = arith::AddIOp::create(
      b, arith::MulIOp::create(b, tile.blockX32, cI32(spec.warpgroups)),
      consumerIdx);
  Value end = arith::MulIOp::create(
      b, arith::AddIOp::create(b, record, cI32(1)), cI32(kRecordWords));
  Value fits = arith::CmpIOp::create(b, arith::CmpIPredicate::ule, end, k.seqQ);
  Value first = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                      threadInGroup, cI32(0));
  k.ifThen(arith::AndIOp::create(b, first, fits), [&] {
    Value base = arith::AddIOp::create(
        b, arith::MulIOp::create(b, head, k.seqQ),
        arith::MulIOp::create(b, record, cI32(kRecordWords)));
    SmallVector<Value> words = {sm, consumerIdx, tile.blockX32, head};
    auto split = [&](Value v64) {
      words.push_back(arith::TruncIOp::create(b, k.i32, v64));
      words.push_back(arith::TruncIOp::create(
          b, k.i32, arith::ShRUIOp::create(b, v64, cI64(32))));
    };
    for (int64_t p = 0; p < KernelContext::NumProbePoints; ++p) {
      Value slot = LLVM::GEPOp::create(b, ptrTy, k.i64, k.probeSlots,
                                       ValueRange{cI32(p)});
      split(LLVM::LoadOp::create(b, k.i64, slot, 8, /*isVolatile=*/true));
    }
    split(timer);
    static_assert(kHeaderWords + 2 * (KernelContext::NumProbePoints + 1) <=
                      kRecordWords,
                  "a record holds the header, the stamps and the timer");
    for (auto [i, word] : llvm::enumerate(words)) {
      Value at = arith::AddIOp::create(b, base, cI32(int64_t(i)));
      Value ptr =
          LLVM::GEPOp::create(b, globalPtr, k.i32, k.lsePtr, ValueRange{at});
      LLVM::StoreOp::create(b, word, ptr, 4);
    }
  });
}

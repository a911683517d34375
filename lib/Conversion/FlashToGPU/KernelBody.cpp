//===- KernelBody.cpp - kernel roles and the consumer main loop -----------===//
//
// The skeleton of the kernel: constants, the prologue, the split into the
// producer warpgroup (setmaxnreg dec, TMA) and the consumer warpgroups
// (setmaxnreg inc), and a consumer's two key loops (unmasked tiles, then the
// tiles that need flash.mask: the ragged tail and the causal diagonal; tiles
// past the diagonal are never visited). Per key tile j:
//   wait K_j; S = Q K_j^T (wgmma, wait 0); softmax; O *= alpha;
//   wait V_j; O += P V_j (wgmma, wait 0); release slot j % stages.
//
//===----------------------------------------------------------------------===//

#include "FlashToGPU.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
using namespace mlir::flash::gpu_lowering;

KernelEmitter::KernelEmitter(ImplicitLocOpBuilder &b, const KernelSpec &spec,
                             Block *entry)
    : b(b), spec(spec), ctx(b.getContext()), constBuilder(b.getContext()) {
  f32 = b.getF32Type();
  i32 = b.getI32Type();
  i64 = b.getI64Type();
  i1 = b.getI1Type();
  indexTy = b.getIndexType();
  auto workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  barType = nvgpu::MBarrierGroupType::get(ctx, workgroup, spec.numBarriers());
  auto boxType = [&](int64_t rows) {
    return MemRefType::get({1, rows, 64}, spec.elementType, AffineMap(),
                           workgroup);
  };
  qBoxType = boxType(spec.blockM);
  kvBoxType = boxType(spec.blockN);
  auto mapType = [&](MemRefType box) {
    return nvgpu::TensorMapDescriptorType::get(
        ctx, box, nvgpu::TensorMapSwizzleKind::SWIZZLE_128B,
        nvgpu::TensorMapL2PromoKind::L2PROMO_256B,
        nvgpu::TensorMapOOBKind::OOB_ZERO,
        nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE);
  };
  tmQType = mapType(qBoxType);
  tmKVType = mapType(kvBoxType);

  // Arguments: tmQ, tmK, tmV (pointers to CUtensorMaps), O, [LSE], seq_q,
  // seq_k, scale_log2. A kernel argument of the nvgpu descriptor type makes
  // convert-gpu-to-nvvm fail to legalize the gpu.func, so the pointers are
  // cast here; the descriptor type lowers to !llvm.ptr and the casts fold.
  b.setInsertionPointToStart(entry);
  auto cast = [&](Value arg, Type type) {
    return UnrealizedConversionCastOp::create(b, type, arg).getResult(0);
  };
  tmQ = cast(entry->getArgument(0), tmQType);
  tmK = cast(entry->getArgument(1), tmKVType);
  tmV = cast(entry->getArgument(2), tmKVType);
  unsigned next = 3;
  outPtr = entry->getArgument(next++);
  if (spec.hasLse)
    lsePtr = entry->getArgument(next++);
  seqQ = entry->getArgument(next++);
  seqK = entry->getArgument(next++);
  scaleLog2 = entry->getArgument(next++);
  // Constants go before the casts, in creation order.
  constBuilder.setInsertionPoint(tmQ.getDefiningOp());
}

Value KernelEmitter::constant(TypedAttr attr) {
  Value &slot = constants[attr];
  if (!slot)
    slot = arith::ConstantOp::create(constBuilder, b.getLoc(), attr);
  return slot;
}
Value KernelEmitter::cIndex(int64_t v) { return constant(b.getIndexAttr(v)); }
Value KernelEmitter::cI32(int64_t v) {
  return constant(b.getI32IntegerAttr(v));
}
Value KernelEmitter::cI64(int64_t v) {
  return constant(b.getI64IntegerAttr(v));
}
Value KernelEmitter::cI1(bool v) { return constant(b.getBoolAttr(v)); }
Value KernelEmitter::cF32(float v) { return constant(b.getF32FloatAttr(v)); }

SmallVector<Value> KernelEmitter::forLoop(
    Value lb, Value ub, ValueRange inits,
    function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto loop = scf::ForOp::create(
      b, lb, ub, cIndex(1), inits,
      [&](OpBuilder &nb, Location, Value iv, ValueRange args) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        SmallVector<Value> yielded = body(iv, args);
        scf::YieldOp::create(b, yielded);
      });
  return SmallVector<Value>(loop.getResults());
}

void KernelEmitter::ifThen(Value cond, function_ref<void()> thenFn) {
  auto ifOp = scf::IfOp::create(b, TypeRange(), cond, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  thenFn();
}

SmallVector<Value>
KernelEmitter::ifThenElse(Value cond, TypeRange types,
                          function_ref<SmallVector<Value>()> thenFn,
                          ValueRange elseVals) {
  auto ifOp = scf::IfOp::create(b, types, cond, /*withElse=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    scf::YieldOp::create(b, thenFn());
    b.setInsertionPointToStart(ifOp.elseBlock());
    scf::YieldOp::create(b, elseVals);
  }
  return SmallVector<Value>(ifOp.getResults());
}

void KernelEmitter::emitKernel() {
  emitSharedMemoryAndBarriers();
  emitTileBounds();

  Value wg = arith::DivUIOp::create(b, tid32, cI32(128));
  Value threadInGroup = arith::RemUIOp::create(b, tid32, cI32(128));
  Value isProducer =
      arith::CmpIOp::create(b, arith::CmpIPredicate::eq, wg, cI32(0));
  auto roles = scf::IfOp::create(b, TypeRange(), isProducer, /*withElse=*/true);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(roles.thenBlock()->getTerminator());
    emitProducer();
    b.setInsertionPoint(roles.elseBlock()->getTerminator());
    NVVM::SetMaxRegisterOp::create(b, spec.consumerRegs(),
                                   NVVM::SetMaxRegisterAction::increase);
    Value consumerIdx = arith::SubIOp::create(b, wg, cI32(1));
    emitConsumer(consumerIdx, threadInGroup);
  }
  gpu::ReturnOp::create(b);
}

void KernelEmitter::emitConsumer(Value consumerIdx, Value threadInGroup) {
  // Accumulator layout coordinates of this thread (see Softmax.cpp).
  Value lane = arith::RemUIOp::create(b, threadInGroup, cI32(32));
  Value warp = arith::DivUIOp::create(b, threadInGroup, cI32(32));
  quad = arith::RemUIOp::create(b, lane, cI32(4));
  Value laneRow = arith::DivUIOp::create(b, lane, cI32(4));
  Value w16 = arith::MulIOp::create(b, warp, cI32(16));
  Value cw64 = arith::MulIOp::create(b, consumerIdx, cI32(64));
  Value r0a = arith::AddIOp::create(b, w16, laneRow);
  Value r0b = arith::AddIOp::create(b, r0a, cw64);
  row0 = arith::AddIOp::create(b, r0b, m0);
  row1 = arith::AddIOp::create(b, row0, cI32(8));
  col0 = arith::MulIOp::create(b, quad, cI32(2));
  emitDescriptors(consumerIdx);

  // Wait for Q (phase 0: it is loaded once).
  nvgpu::MBarrierTryWaitParityOp::create(b, bar, cI1(false), cIndex(10000000),
                                         cIndex(spec.barQ()));

  auto body = [&](bool masked) {
    return [&, masked](Value j, ValueRange it) {
      SmallVector<Value> itVec(it);
      ArrayRef<Value> its(itVec);
      Slot s = slotInfo(j);
      SOperands sOps = prepS(s);
      Value sAcc = emitS(sOps);
      wgWait(0);
      SoftmaxResult sm =
          softmax(sValues(sAcc), its.slice(0, 2), its.slice(2, 2), masked, j);
      SmallVector<Value> acc = scaleAcc(its.drop_front(4), sm.alpha);
      SmallVector<Value> vDescs = prepPV(s);
      Value o = emitPV(sm.packedP, acc, vDescs);
      wgWait(0);
      SmallVector<Value> acc2 = oValues(o);
      release(s.slot);
      SmallVector<Value> yielded = sm.mNew;
      llvm::append_range(yielded, sm.lNew);
      llvm::append_range(yielded, acc2);
      return yielded;
    };
  };
  Value negInf = cF32(-std::numeric_limits<float>::infinity());
  SmallVector<Value> init = {negInf, negInf, cF32(0.0f), cF32(0.0f)};
  init.append(spec.oRegs(), cF32(0.0f));
  SmallVector<Value> state = forLoop(cIndex(0), nFullIdx, init, body(false));
  state = forLoop(nFullIdx, nHiIdx, state, body(true));
  ArrayRef<Value> st(state);
  emitEpilogue(st.slice(0, 2), st.slice(2, 2), st.drop_front(4));
}

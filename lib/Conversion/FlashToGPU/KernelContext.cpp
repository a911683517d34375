//===- KernelContext.cpp - what both roles of the kernel share ------------===//
//
// The kernel's types (the fragments, the rings' slots, the tensor maps),
// its arguments, and constants hoisted to the entry block in creation
// order, one per value; the control-flow helpers the roles build with.
//
//===----------------------------------------------------------------------===//

#include "../FlashWarpgroupToNVVM/RegisterUtils.h"
#include "FlashToGPU.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;

KernelContext::KernelContext(ImplicitLocOpBuilder &b, const KernelSpec &spec,
                             Block *entry)
    : b(b), spec(spec), ctx(b.getContext()), constBuilder(b.getContext()) {
  f32 = b.getF32Type();
  i32 = b.getI32Type();
  i64 = b.getI64Type();
  i1 = b.getI1Type();
  indexTy = b.getIndexType();
  auto accumulator = [&](int64_t n) {
    return FragmentType::get(ctx, {64, n}, f32,
                             WgmmaAccumulatorLayoutAttr::get(ctx));
  };
  sType = accumulator(spec.blockN);
  oType = accumulator(spec.headDim);
  rowsF32Type =
      FragmentType::get(ctx, {64}, f32, WgmmaRowsLayoutAttr::get(ctx));
  rowsI32Type =
      FragmentType::get(ctx, {64}, i32, WgmmaRowsLayoutAttr::get(ctx));
  rowPartialsType =
      FragmentType::get(ctx, {64}, f32, WgmmaRowPartialsLayoutAttr::get(ctx));
  auto workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  barType = nvgpu::MBarrierGroupType::get(ctx, workgroup, spec.numBarriers());
  kvSlotType = RingSlotType::get(ctx, spec.stages);
  qSlotType = RingSlotType::get(ctx, spec.qBuffers);
  // Q, K and V are read, and O is written, through rank-4 maps over
  // [B, H, N, D] with the tensors' own strides.
  auto boxType = [&](ArrayRef<int64_t> shape) {
    return MemRefType::get(shape, spec.elementType, AffineMap(), workgroup);
  };
  qBoxType = boxType({1, 1, spec.blockM, 64});
  kvBoxType = boxType({1, 1, spec.kvBoxRows(), 64});
  oBoxType = boxType({1, 1, 64, 64});
  auto mapType = [&](MemRefType box) {
    return nvgpu::TensorMapDescriptorType::get(
        ctx, box, nvgpu::TensorMapSwizzleKind::SWIZZLE_128B,
        nvgpu::TensorMapL2PromoKind::L2PROMO_256B,
        nvgpu::TensorMapOOBKind::OOB_ZERO,
        nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE);
  };
  tmQType = mapType(qBoxType);
  tmKVType = mapType(kvBoxType);
  tmOType = mapType(oBoxType);

  // Arguments: tmQ, tmK, tmV (CUtensorMaps by value, as pointers to the
  // parameters: -flash-grid-constant-tensor-maps), O (a pointer, or with
  // tmaStoreO a CUtensorMap too), [LSE], seq_q, seq_k, scale_log2,
  // kv_group (query heads per K/V head), for a persistent kernel batch,
  // heads, with dynamicSchedule the tile counter, and a packed kernel's
  // cu_seqlens_q, cu_seqlens_k and O's strides (stride_o_h, stride_o_n),
  // then the captures (memrefs: MLIR's expanded descriptors). A
  // kernel argument of the nvgpu descriptor type makes convert-gpu-to-nvvm fail
  // to legalize the gpu.func, so the pointers are cast here; the descriptor
  // type lowers to !llvm.ptr and the casts fold.
  b.setInsertionPointToStart(entry);
  auto cast = [&](Value arg, Type type) {
    return UnrealizedConversionCastOp::create(b, type, arg).getResult(0);
  };
  qMapPtr = entry->getArgument(0);
  kMapPtr = entry->getArgument(1);
  vMapPtr = entry->getArgument(2);
  tmQ = cast(entry->getArgument(0), tmQType);
  tmK = cast(entry->getArgument(1), tmKVType);
  tmV = cast(entry->getArgument(2), tmKVType);
  unsigned next = 3;
  if (spec.decode) {
    // A decoding split: the partial O and LSE, a paged cache's table and
    // lengths, seq_q, seq_k, scale_log2, kv_group, heads and a paged
    // cache's pages and table columns (ConvertFlashToGPU.cpp's list).
    partialOut = entry->getArgument(next++);
    partialLse = entry->getArgument(next++);
    if (spec.pageSize) {
      pageTable = entry->getArgument(next++);
      cacheLens = entry->getArgument(next++);
    }
    seqQ = entry->getArgument(next++);
    seqK = entry->getArgument(next++);
    scaleLog2 = entry->getArgument(next++);
    kvGroup = entry->getArgument(next++);
    headsArg = entry->getArgument(next++);
    if (spec.pageSize) {
      numPages = entry->getArgument(next++);
      tableCols = entry->getArgument(next++);
    }
    for (unsigned i = 0, e = spec.captures.size(); i < e; ++i)
      captures.push_back(entry->getArgument(next++));
    totalQ = seqQ;
    totalK = seqK;
    std::tie(programRows, programHeads) =
        decodeProgramShape(b, spec, seqQ, headsArg, kvGroup);
    constBuilder.setInsertionPoint(tmQ.getDefiningOp());
    return;
  }
  if (spec.sw.tmaStoreO)
    tmO = cast(entry->getArgument(next++), tmOType);
  else
    outPtr = entry->getArgument(next++);
  if (spec.hasLse)
    lsePtr = entry->getArgument(next++);
  seqQ = entry->getArgument(next++);
  seqK = entry->getArgument(next++);
  scaleLog2 = entry->getArgument(next++);
  kvGroup = entry->getArgument(next++);
  if (spec.sw.persistent)
    batchArg = entry->getArgument(next++);
  headsArg = entry->getArgument(next++);
  if (spec.sw.dynamicSchedule)
    tileCounter = entry->getArgument(next++);
  if (spec.packed) {
    cuSeqlensQ = entry->getArgument(next++);
    cuSeqlensK = entry->getArgument(next++);
    if (spec.sw.tmaStoreO)
      outPtr = entry->getArgument(next++);
    oStrideH = entry->getArgument(next++);
    oStrideN = entry->getArgument(next++);
  }
  for (unsigned i = 0, e = spec.captures.size(); i < e; ++i)
    captures.push_back(entry->getArgument(next++));
  totalQ = seqQ;
  totalK = seqK;
  // Constants go before the casts, in creation order.
  constBuilder.setInsertionPoint(tmQ.getDefiningOp());
}

std::pair<Value, Value> mlir::flash::gpu_lowering::decodeProgramShape(
    ImplicitLocOpBuilder &b, const KernelSpec &spec, Value seqQ, Value heads,
    Value kvGroup) {
  // A packed program's rows are its group's queries, its heads the K/V
  // heads.
  if (!spec.packGqa)
    return {seqQ, heads};
  return {arith::MulIOp::create(b, seqQ, kvGroup),
          arith::DivUIOp::create(b, heads, kvGroup)};
}

Value KernelContext::constant(TypedAttr attr) {
  Value &slot = constants[attr];
  if (!slot)
    slot = arith::ConstantOp::create(constBuilder, b.getLoc(), attr);
  return slot;
}
Value KernelContext::cIndex(int64_t v) { return constant(b.getIndexAttr(v)); }
Value KernelContext::cI32(int64_t v) {
  return constant(b.getI32IntegerAttr(v));
}
Value KernelContext::cI64(int64_t v) {
  return constant(b.getI64IntegerAttr(v));
}
Value KernelContext::cF32(float v) { return constant(b.getF32FloatAttr(v)); }

SmallVector<Value> KernelContext::forLoop(
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

void KernelContext::ifThen(Value cond, function_ref<void()> thenFn) {
  auto ifOp = scf::IfOp::create(b, TypeRange(), cond, /*withElse=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  thenFn();
}

SmallVector<Value>
KernelContext::ifThenElse(Value cond, TypeRange types,
                          function_ref<SmallVector<Value>()> thenFn,
                          ValueRange elseVals) {
  SmallVector<Value> elseCopy(elseVals);
  return ifThenElse(cond, types, thenFn, [&] { return elseCopy; });
}

SmallVector<Value>
KernelContext::ifThenElse(Value cond, TypeRange types,
                          function_ref<SmallVector<Value>()> thenFn,
                          function_ref<SmallVector<Value>()> elseFn) {
  return wg_lowering::ifThenElse(b, b.getLoc(), cond, types, thenFn, elseFn);
}

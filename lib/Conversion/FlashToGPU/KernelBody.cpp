//===- KernelBody.cpp - kernel roles and the consumer main loop -----------===//
//
// The skeleton of the kernel: constants, the prologue, the split into the
// producer warpgroup (setmaxnreg dec, TMA) and the consumer warpgroups
// (setmaxnreg inc), and a consumer's two key loops (unmasked tiles, then the
// tiles that need flash.mask: the ragged tail and the causal diagonal; tiles
// past the diagonal are never visited). Serial schedule, per key tile j:
//   wait K_j; S = Q K_j^T (wgmma, wait 0); softmax; O *= alpha;
//   wait V_j; O += P V_j (wgmma, wait 0); release slot j % stages.
// Overlapped schedule (FA3): S_j and PV_{j-1} issued back to back, wait 1,
// softmax(S_j) under PV_{j-1}, wait 0, O *= alpha. With ping-pong the two
// consumers take turns issuing their GEMMs (named barriers 1 and 2), so one's
// softmax runs under the other's GEMMs; with split release the K slot is
// freed as soon as S retired. At D = 256 (KernelSpec::serialMaskedTiles)
// only the unmasked tiles overlap; the masked ones follow serially. Under
// the causal mask each consumer walks only the key tiles its own 64 rows see
// and releases the block's others without a GEMM (skipUnseenKeyTiles).
//
//===----------------------------------------------------------------------===//

#include "FlashToGPU.h"
#include "../FlashWarpgroupToNVVM/RegisterUtils.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;

KernelEmitter::KernelEmitter(ImplicitLocOpBuilder &b, const KernelSpec &spec,
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
  auto boxType = [&](int64_t rows) {
    return MemRefType::get({1, rows, 64}, spec.elementType, AffineMap(),
                           workgroup);
  };
  qBoxType = boxType(spec.blockM);
  kvBoxType = boxType(spec.blockN);
  oBoxType = boxType(64);
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
  // tmaStoreO a CUtensorMap too), [LSE], seq_q,
  // seq_k, scale_log2, for a persistent kernel batch and heads, and with
  // dynamicSchedule the tile counter. A kernel
  // argument of the nvgpu descriptor type makes convert-gpu-to-nvvm fail to
  // legalize the gpu.func, so the pointers are cast here; the descriptor
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
  if (spec.sw.tmaStoreO)
    tmO = cast(entry->getArgument(next++), tmOType);
  else
    outPtr = entry->getArgument(next++);
  if (spec.hasLse)
    lsePtr = entry->getArgument(next++);
  seqQ = entry->getArgument(next++);
  seqK = entry->getArgument(next++);
  scaleLog2 = entry->getArgument(next++);
  if (spec.sw.persistent) {
    batchArg = entry->getArgument(next++);
    headsArg = entry->getArgument(next++);
  }
  if (spec.sw.dynamicSchedule)
    tileCounter = entry->getArgument(next++);
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
  SmallVector<Value> elseCopy(elseVals);
  return ifThenElse(cond, types, thenFn, [&] { return elseCopy; });
}

SmallVector<Value>
KernelEmitter::ifThenElse(Value cond, TypeRange types,
                          function_ref<SmallVector<Value>()> thenFn,
                          function_ref<SmallVector<Value>()> elseFn) {
  return wg_lowering::ifThenElse(b, b.getLoc(), cond, types, thenFn, elseFn);
}

void KernelEmitter::emitKernel() {
  emitSharedMemoryAndBarriers();
  if (!spec.sw.persistent)
    emitTileBounds();

  // The roles (flash.wg.warp_specialize): warpgroup 0 produces, the others
  // consume, each with the registers the schedule gave it.
  auto roles = WgWarpSpecializeOp::create(
      b, b.getI64IntegerAttr(spec.warpgroups),
      b.getI64IntegerAttr(spec.producerRegs()),
      b.getI64IntegerAttr(spec.consumerRegs()));
  auto roleBody = [&](Region &region, unsigned numArgs) {
    Block *block = b.createBlock(&region);
    for (unsigned i = 0; i < numArgs; ++i)
      block->addArgument(i32, b.getLoc());
    WgYieldOp::create(b);
    b.setInsertionPointToStart(block);
    return block;
  };
  {
    OpBuilder::InsertionGuard guard(b);
    roleBody(roles.getProducer(), 1);
    emitProducer();
    Block *consumer = roleBody(roles.getConsumer(), 2);
    emitConsumer(consumer->getArgument(0), consumer->getArgument(1));
  }
  gpu::ReturnOp::create(b);
}

void KernelEmitter::emitConsumer(Value consumer, Value thread) {
  consumerIdx = consumer;
  threadInGroup = thread;
  probeStamp(ConsumerStart);
  // The rows this thread holds in the accumulator layout
  // (#flash.wgmma_accumulator): the mask's limits are per row.
  Value lane = arith::RemUIOp::create(b, threadInGroup, cI32(32));
  Value warp = arith::DivUIOp::create(b, threadInGroup, cI32(32));
  Value laneRow = arith::DivUIOp::create(b, lane, cI32(4));
  Value w16 = arith::MulIOp::create(b, warp, cI32(16));
  Value cw64 = arith::MulIOp::create(b, consumerIdx, cI32(64));
  Value rowInGroup = arith::AddIOp::create(b, w16, laneRow);
  Value rowInBlock = arith::AddIOp::create(b, rowInGroup, cw64);
  auto setRows = [&] {
    row0 = arith::AddIOp::create(b, rowInBlock, m0);
    row1 = arith::AddIOp::create(b, row0, cI32(8));
  };
  if (!spec.sw.persistent)
    setRows();
  emitDescriptors(consumerIdx);

  auto waitQ = [&] { WgRingWaitFullOp::create(b, qSlot, bar, spec.barQ()); };
  // A block that owns one tile waits for Q before the ping-pong starts, as
  // it always did; a persistent one waits per tile. Its one tile is the
  // first (position 0) of the Q buffers' ring.
  if (!spec.sw.persistent) {
    qSlot = WgRingSlotOp::create(b, qSlotType, cI32(0));
    waitQ();
  }
  probeStamp(BlockQArrived);
  if (spec.sw.pingpong) {
    // Consumer 1 lets consumer 0 issue its GEMMs first. Both consumers work
    // on the same tiles, so the turns stay paired across a persistent
    // block's tiles.
    Value isSecond = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                           consumerIdx, cI32(1));
    ifThen(isSecond,
           [&] { NVVM::BarrierArriveOp::create(b, cI32(1), cI32(256)); });
  }

  forEachTile(/*producer=*/false, [&] {
    probeStamp(TileStart);
    if (spec.sw.persistent) {
      setRows();
      selectQBuffer();
      if (!spec.sw.dynamicSchedule)
        waitQ();
    }
    emitOwnKeyRange();
    probeStamp(TileQArrived);
    // The serial schedule has no separate first tile.
    if (!spec.sw.overlap)
      probeStamp(FirstSoftmaxDone);
    SmallVector<Value> state =
        spec.sw.overlap ? emitOverlappedLoops() : emitSerialLoops();
    skipUnseenKeyTiles();
    probeStamp(KeyLoopsDone);
    releaseQIfNoKeyTiles();
    ArrayRef<Value> st(state);
    emitEpilogue(st.slice(0, 2), st.slice(2, 2), st.drop_front(4));
    probeStamp(EpilogueDone);
    writeProbeRecord();
  });
}

SmallVector<Value>
KernelEmitter::inTurn(TypeRange types,
                      function_ref<SmallVector<Value>()> body) {
  if (!spec.sw.pingpong)
    return body();
  auto turn = WgPingpongTurnOp::create(b, types, consumerIdx);
  OpBuilder::InsertionGuard guard(b);
  b.createBlock(&turn.getBody());
  WgYieldOp::create(b, body());
  return SmallVector<Value>(turn.getResults());
}

SmallVector<Value> KernelEmitter::waitedS(const Slot &s, Value j) {
  Value sAcc =
      inTurn(sType, [&] { return SmallVector<Value>{emitS(prepS(s))}; })[0];
  wgWait(0);
  SmallVector<Value> sv = sValues(sAcc);
  releaseK(s.slot);
  releaseQAfterLastS(j);
  return sv;
}

SmallVector<Value> KernelEmitter::serialStep(Value j, ValueRange state,
                                             bool masked) {
  // S_j -> softmax -> PV_j, each product waited within the iteration.
  SmallVector<Value> stateVec(state);
  ArrayRef<Value> st(stateVec);
  Slot s = slotInfo(j);
  SmallVector<Value> sv = waitedS(s, j);
  SoftmaxResult sm = softmax(sv, st.slice(0, 2), st.slice(2, 2), masked, j);
  SmallVector<Value> acc = scaleAcc(st.drop_front(4), sm.alpha, sm.moved);
  Value o = inTurn(oType, [&] {
    SmallVector<Value> vDescs = prepPV(s);
    return SmallVector<Value>{emitPV(sm.packedP, acc, vDescs)};
  })[0];
  wgWait(0);
  SmallVector<Value> acc2 = oValues(o);
  release(s.slot);
  SmallVector<Value> yielded = sm.mNew;
  llvm::append_range(yielded, sm.lNew);
  llvm::append_range(yielded, acc2);
  return yielded;
}

SmallVector<Value> KernelEmitter::emitSerialLoops() {
  Value negInf = cF32(-std::numeric_limits<float>::infinity());
  SmallVector<Value> init = {negInf, negInf, cF32(0.0f), cF32(0.0f)};
  init.append(spec.oRegs(), cF32(0.0f));
  SmallVector<Value> state =
      forLoop(cIndex(0), nFullIdx, init, [&](Value j, ValueRange it) {
        return serialStep(j, it, /*masked=*/false);
      });
  return forLoop(nFullIdx, ownHiIdx, state, [&](Value j, ValueRange it) {
    return serialStep(j, it, /*masked=*/true);
  });
}

void KernelEmitter::skipUnseenKeyTiles() {
  if (!spec.ownKeyRanges())
    return;
  // The other consumer spends one turn per tile in the overlapped loops
  // (S_j beside PV_{j-1}) and two in serial steps (S_j, then PV_j).
  const bool overlapped = spec.sw.overlap && !spec.serialMaskedTiles;
  // One block per tile: the block's nHi again, from m0 behind an empty asm.
  // Kept from the tile bounds it would be one more register through the
  // key loops (ptxas then spilled D256 causal bm128 bn80). A persistent
  // kernel keeps nHi for the next tile's ring position anyway.
  Value blockHiIdx = nHiIdx;
  if (!spec.sw.persistent) {
    Value rowsEnd =
        arith::AddIOp::create(b, fenceOperand(b, m0), cI32(spec.blockM));
    blockHiIdx =
        arith::IndexCastOp::create(b, indexTy, keyTilesSeenBelow(rowsEnd));
  }
  // Each release waits for the tile's copy first: that copy began only
  // after the slot's previous use was released by every consumer, so this
  // arrival cannot count towards that earlier phase.
  forLoop(ownHiIdx, blockHiIdx, ValueRange(), [&](Value j, ValueRange) {
    Slot s = slotInfo(j);
    waitFull(spec.barFullK(), s.slot);
    releaseK(s.slot);
    skipTurn();
    waitFull(spec.barFullV(), s.slot);
    release(s.slot);
    if (!overlapped) {
      skipTurn();
    }
    return SmallVector<Value>();
  });
  if (!overlapped || !spec.sw.pingpong)
    return;
  // Without key tiles a consumer also skipped the first S's turn.
  Value none =
      arith::CmpIOp::create(b, arith::CmpIPredicate::sle, ownHi, cI32(0));
  Value blockHas =
      arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, nHi, cI32(0));
  ifThen(arith::AndIOp::create(b, none, blockHas), [&] {
    skipTurn();
  });
}

SmallVector<Value> KernelEmitter::emitOverlappedLoops() {
  // FA3 intra-warpgroup overlap: S_j and PV_{j-1} are issued back to back
  // and softmax(S_j) runs while PV_{j-1} is still in the tensor cores. The
  // loop carries (m, l, P_{j-1} packed, acc); a prologue computes S_0 and its
  // softmax, an epilogue issues the last PV.
  const int64_t numP = spec.sRegs() / 2;
  Value negInf = cF32(-std::numeric_limits<float>::infinity());
  SmallVector<Type> stateTypes(4, f32);
  stateTypes.append(numP, i32);
  // The overlapped tiles: [0, ownHi), or [0, nFull) with serialMaskedTiles.
  const bool serialTail = spec.serialMaskedTiles;
  Value overlapHi = serialTail ? nFull : ownHi;
  Value overlapHiIdx = serialTail ? nFullIdx : ownHiIdx;
  Value hasTiles =
      arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, overlapHi, cI32(0));

  SmallVector<Value> empty = {negInf, negInf, cF32(0.0f), cF32(0.0f)};
  empty.append(numP, cI32(0));
  SmallVector<Value> st0 = ifThenElse(
      hasTiles, stateTypes,
      [&] {
        SmallVector<Value> sv = waitedS(slotInfo(cIndex(0)), cIndex(0));
        // Tile 0 needs flash.mask only if it is ragged or on the diagonal
        // (nFull = 0): the mask costs a compare and a select per score, a
        // quarter of the tiles at N = 512.
        auto softmaxOfTile0 = [&](bool masked) {
          SoftmaxResult sm =
              softmax(sv, {negInf, negInf}, {cF32(0.0f), cF32(0.0f)}, masked,
                      cIndex(0), /*firstTile=*/true);
          SmallVector<Value> out = sm.mNew;
          llvm::append_range(out, sm.lNew);
          llvm::append_range(out, sm.packedP);
          return out;
        };
        if (serialTail)
          return softmaxOfTile0(false);
        Value full =
            arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, nFull, cI32(0));
        return ifThenElse(
            full, stateTypes, [&] { return softmaxOfTile0(false); },
            [&] { return softmaxOfTile0(true); });
      },
      empty);

  auto body = [&](bool masked) {
    return [&, masked](Value j, ValueRange it) {
      SmallVector<Value> itVec(it);
      ArrayRef<Value> its(itVec);
      ArrayRef<Value> mOld = its.slice(0, 2), lOld = its.slice(2, 2),
                      pOld = its.slice(4, numP), acc = its.drop_front(4 + numP);
      Value jm1 = arith::SubIOp::create(b, j, cIndex(1));
      Slot s = slotInfo(j);
      Slot prev = slotInfo(jm1);
      // Waits and descriptors first, then one fence and both GEMMs.
      SOperands sOps = prepS(s);
      SmallVector<Value> vDescs = prepPV(prev);
      SmallVector<Value> products =
          inTurn(TypeRange{sType, oType}, [&] {
            NVVM::WgmmaFenceAlignedOp::create(b);
            Value sAcc = emitS(sOps, /*fence=*/false);
            Value o = emitPV(pOld, acc, vDescs, /*fence=*/false);
            return SmallVector<Value>{sAcc, o};
          });
      Value sAcc = products[0], o = products[1];
      wgWait(1);
      SmallVector<Value> sv = sValues(sAcc);
      releaseK(s.slot);
      releaseQAfterLastS(j);
      SoftmaxResult sm = softmax(sv, mOld, lOld, masked, j);
      wgWait(0);
      // Keep P_{j-1} live until PV_{j-1} retired, so P_j does not get its
      // registers while the wgmma still reads them (ptxas would serialise
      // the wgmma chain, C7513).
      for (Value p : pOld)
        (void)fenceOperand(b, p);
      SmallVector<Value> acc2 = oValues(o);
      release(prev.slot);
      SmallVector<Value> acc3 = scaleAcc(acc2, sm.alpha, sm.moved);
      SmallVector<Value> yielded = sm.mNew;
      llvm::append_range(yielded, sm.lNew);
      llvm::append_range(yielded, sm.packedP);
      llvm::append_range(yielded, acc3);
      return yielded;
    };
  };
  probeStamp(FirstSoftmaxDone);
  SmallVector<Value> init = st0;
  init.append(spec.oRegs(), cF32(0.0f));
  Value one = cIndex(1);
  Value firstMasked = arith::MaxUIOp::create(b, nFullIdx, one);
  SmallVector<Value> st = forLoop(one, firstMasked, init, body(false));
  if (!serialTail)
    st = forLoop(firstMasked, ownHiIdx, st, body(true));

  ArrayRef<Value> stRef(st);
  ArrayRef<Value> pLast = stRef.slice(4, numP),
                  accLast = stRef.drop_front(4 + numP);
  SmallVector<Type> accTypes(spec.oRegs(), f32);
  SmallVector<Value> accFinal = ifThenElse(
      hasTiles, accTypes,
      [&] {
        Value jl = arith::SubIOp::create(b, overlapHiIdx, cIndex(1));
        Slot s = slotInfo(jl);
        Value o = inTurn(oType, [&] {
          SmallVector<Value> vDescs = prepPV(s);
          return SmallVector<Value>{emitPV(pLast, accLast, vDescs)};
        })[0];
        wgWait(0);
        SmallVector<Value> acc = oValues(o);
        release(s.slot);
        return acc;
      },
      accLast);
  SmallVector<Value> result(stRef.take_front(4));
  llvm::append_range(result, accFinal);
  if (!serialTail)
    return result;
  return forLoop(nFullIdx, ownHiIdx, result, [&](Value j, ValueRange it) {
    return serialStep(j, it, /*masked=*/true);
  });
}

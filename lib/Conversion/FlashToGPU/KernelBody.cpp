//===- KernelBody.cpp - kernel roles and the consumer ---------------------===//
//
// The skeleton of the kernel: constants, the prologue, the split into the
// producer warpgroup (setmaxnreg dec, TMA) and the consumer warpgroups
// (setmaxnreg inc). A consumer's key loops and epilogue are the tile
// program's own: they are cloned into the consumer and rewritten by the
// patterns of KeyLoopToWarpgroup.cpp (the serial or the overlapped
// schedule) and Epilogue.cpp (lowerTileProgram). Under the causal mask each
// consumer walks only the key tiles its own 64 rows see and releases the
// block's others without a GEMM (skipUnseenKeyTiles).
//
//===----------------------------------------------------------------------===//

#include "FlashToGPU.h"
#include "../FlashWarpgroupToNVVM/RegisterUtils.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Iterators.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

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

LogicalResult KernelEmitter::emitKernel() {
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
  return status;
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
    if (failed(lowerTileProgram([&] {
          skipUnseenKeyTiles();
          probeStamp(KeyLoopsDone);
          releaseQIfNoKeyTiles();
        }))) {
      status = failure();
      return;
    }
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

KernelEmitter::ProgramClone::ProgramClone(KernelEmitter &e, StringRef role,
                                          ArrayRef<Operation *> ops)
    : e(e), role(role), block(e.b.getInsertionBlock()) {
  ImplicitLocOpBuilder &b = e.b;
  before = b.getInsertionPoint() == block->begin()
               ? nullptr
               : &*std::prev(b.getInsertionPoint());
  // What the program's ops read from the rest of it. Constants come along;
  // Q, K and V are read through their tensor maps; the rest (the Q tile, the
  // tiles' coordinates, the lengths, the bounds) has kernel-level
  // counterparts the patterns take from the emitter, so it becomes a
  // placeholder that must be left without uses.
  llvm::SmallPtrSet<Operation *, 8> program(ops.begin(), ops.end());
  auto bring = [&](Value value) {
    if (map.contains(value))
      return;
    Operation *def = value.getDefiningOp();
    if (def && program.contains(def))
      return;
    if (def && def->hasTrait<OpTrait::ConstantLike>()) {
      map.map(value, b.clone(*def)->getResult(0));
      return;
    }
    auto arg = dyn_cast<BlockArgument>(value);
    if (arg && isa<func::FuncOp>(arg.getOwner()->getParentOp()) &&
        arg.getArgNumber() < 3) {
      Value maps[] = {e.tmQ, e.tmK, e.tmV};
      map.map(value, UnrealizedConversionCastOp::create(
                         b, value.getType(), maps[arg.getArgNumber()])
                         .getResult(0));
      return;
    }
    auto placeholder =
        UnrealizedConversionCastOp::create(b, value.getType(), ValueRange());
    placeholders.push_back(placeholder);
    map.map(value, placeholder.getResult(0));
  };
  for (Operation *op : ops)
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (!op->isAncestor(operand.getParentRegion()->getParentOp()))
          bring(operand);
    });
}

Operation *KernelEmitter::ProgramClone::clone(Operation *op) {
  // A fresh mapping per clone: one that knows a block's arguments already
  // would clone the block without them.
  IRMapping cloneMap = map;
  Operation *copy = e.b.clone(*op, cloneMap);
  map.map(op->getResults(), copy->getResults());
  if (isa<scf::ForOp>(copy))
    copy->setAttr(kKeyLoopAttrName, e.b.getUnitAttr());
  copy->walk([&](Operation *nested) { worklist.push_back(nested); });
  return copy;
}

void KernelEmitter::ProgramClone::keepAlive(Value value) {
  sinks.push_back(UnrealizedConversionCastOp::create(e.b, e.b.getI1Type(),
                                                     value));
}

LogicalResult
KernelEmitter::ProgramClone::lower(FrozenRewritePatternSet patterns) {
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps)
      .enableFolding(false)
      .enableConstantCSE(false)
      .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  (void)applyOpPatternsGreedily(worklist, patterns, config);
  for (Operation *sink : sinks)
    sink->erase();
  block->walk([](scf::ForOp loop) { loop->removeAttr(kKeyTileLoopAttrName); });

  // Every program op and placeholder use must be gone.
  WalkResult left = block->walk([&](Operation *op) {
    if (op->hasAttr(kKeyLoopAttrName) ||
        isa<LoadTileOp, DotOp, MaskOp, SoftmaxUpdateOp, RescaleOp, FinalizeOp,
            StoreTileOp>(op)) {
      op->emitError("flash-to-gpu: the ")
          << role << "'s patterns left " << op->getName() << " unlowered";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (left.wasInterrupted())
    return failure();
  for (Operation *placeholder : placeholders) {
    if (!placeholder->use_empty()) {
      Operation *user = *placeholder->user_begin();
      user->emitError("flash-to-gpu: the lowering left a use of a tile "
                      "program value in ")
          << user->getName();
      return failure();
    }
    placeholder->erase();
  }

  // What the rewrite left without uses: the tiles' casts, the fragments of
  // registers, the key offsets.
  ImplicitLocOpBuilder &b = e.b;
  Operation *end = b.getInsertionPoint() == block->end()
                       ? nullptr
                       : &*b.getInsertionPoint();
  for (bool erased = true; erased;) {
    erased = false;
    Operation *op = before ? before->getNextNode() : &block->front();
    while (op != end) {
      Operation *next = op->getNextNode();
      op->walk<WalkOrder::PostOrder, ReverseIterator>([&](Operation *nested) {
        if (isOpTriviallyDead(nested)) {
          nested->erase();
          erased = true;
        }
      });
      op = next;
    }
  }
  // A tile that no pattern consumed (O's rounding without its store, say).
  WalkResult tiles = block->walk([&](UnrealizedConversionCastOp cast) {
    if (llvm::any_of(cast->getResultTypes(),
                     llvm::IsaPred<TensorType, MemRefType>)) {
      cast->emitError("flash-to-gpu: a value of the tile program was left "
                      "unlowered");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(tiles.wasInterrupted());
}

LogicalResult
KernelEmitter::lowerTileProgram(function_ref<void()> afterKeyLoops) {
  ArrayRef<Operation *> loops = spec.keyLoops;
  SmallVector<Operation *> ops(loops);
  llvm::append_range(ops, spec.epilogueOps);
  ProgramClone program(*this, "consumer", ops);

  // Each key loop starts from its predecessor's results.
  SmallVector<Operation *> clones;
  if (loops.size() == 1) {
    // The tiles before nFull need no mask: the loop once without it, then
    // once more, carrying on.
    Operation *unmasked = program.clone(loops.front());
    SmallVector<MaskOp> masks;
    unmasked->walk([&](MaskOp mask) { masks.push_back(mask); });
    for (MaskOp mask : masks) {
      llvm::erase(program.worklist, mask.getOperation());
      mask.replaceAllUsesWith(mask.getScores());
      mask.erase();
    }
    clones.push_back(unmasked);
  }
  for (Operation *loop : loops)
    clones.push_back(program.clone(loop));
  for (auto [prev, next] : llvm::zip(clones, llvm::drop_begin(clones)))
    cast<scf::ForOp>(next).getInitArgsMutable().assign(prev->getResults());

  afterKeyLoops();
  for (Operation *op : spec.epilogueOps)
    program.clone(op);

  RewritePatternSet patterns(ctx);
  populateKeyLoopToWarpgroupPatterns(patterns, *this);
  populateEpilogueToWarpgroupPatterns(patterns, *this);
  return program.lower(std::move(patterns));
}

LogicalResult KernelEmitter::lowerProducerProgram() {
  SmallVector<Operation *> ops = {spec.qLoad};
  llvm::append_range(ops, spec.keyLoops);
  ProgramClone program(*this, "producer", ops);
  for (Operation *op : ops)
    program.clone(op);
  // Nothing in the producer reads the loads' tiles or the key loops' state;
  // without a user the driver would erase them, loads and all, as dead.
  program.keepAlive(program.map.lookup(spec.qLoad->getResult(0)));
  program.keepAlive(program.map.lookup(spec.keyLoops.back()->getResult(0)));
  RewritePatternSet patterns(ctx);
  populateProducerLoadPatterns(patterns, *this);
  return program.lower(std::move(patterns));
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


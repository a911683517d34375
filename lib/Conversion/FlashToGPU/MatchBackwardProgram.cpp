//===- MatchBackwardProgram.cpp - recognise the backward tile program -----===//
//
// The backward kernels (BackwardKernels.cpp) implement the program
// `-flash-tile -flash-fuse` write for flash.attention_backward:
//
//   func @f(%q, %k, %v, %o, %do, %lse, %dq, %dk, %dv)
//       attributes {flash.config = ..., [flash.deterministic]} {
//     flash.grid %query_tiles, %batch_heads { delta, clear dQ accumulator }
//     flash.grid %key_tiles, %batch_kv_heads {
//       ... flash.mask [causal], flash.softmax_recompute, flash.softmax_grad,
//       five flash.dot, flash.store_tile ... accumulate ...
//     }
//     flash.grid %query_tiles, %batch_heads { dQ = scale x accumulator }
//   }
//
// This file reads its parameters, with an error naming the first thing the
// kernels do not implement.
//
//===----------------------------------------------------------------------===//

#include "BackwardKernels.h"

#include "Flash/FlashAttrs.h"
#include "Flash/FlashOps.h"
#include "flashc/Transforms/MaskAnalysis.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <cmath>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;

bool mlir::flash::gpu_lowering::isBackwardTileProgram(func::FuncOp func) {
  return !func.getOps<GridOp>().empty() &&
         func.walk([](SoftmaxGradOp) { return WalkResult::interrupt(); })
             .wasInterrupted();
}

FailureOr<BackwardSpec>
mlir::flash::gpu_lowering::matchBackwardTileProgram(func::FuncOp func) {
  auto fail = [&](const Twine &what) {
    return func.emitError("flash-to-gpu: the backward kernels ") << what;
  };
  BackwardSpec spec;
  spec.name = func.getSymName().str();
  // The mods' captures, the sinks and their gradient are memref arguments
  // after the nine tensors, which the kernels take whole.
  SmallVector<CaptureUse> captureUses;
  ModScoresOp mods;
  auto isArgument = [&](Value value) {
    auto arg = dyn_cast<BlockArgument>(value);
    return arg && arg.getOwner() == &func.getBody().front();
  };
  func.walk([&](Operation *op) {
    if (auto m = dyn_cast<ModScoresOp>(op)) {
      if (!mods)
        mods = m;
      for (Value capture : m.getCaptures())
        captureUses.push_back({op, capture, CaptureRole::Capture});
    }
  });
  // The sink gradient's grid loads the head's sink and stores its dsinks.
  func.walk([&](SinkGradOp sinkGrad) {
    if (auto load = sinkGrad.getSink().getDefiningOp<memref::LoadOp>())
      captureUses.push_back({sinkGrad, load.getMemRef(), CaptureRole::Sinks});
    if (auto grid = sinkGrad->getParentOfType<GridOp>())
      grid.walk([&](memref::StoreOp store) {
        if (isArgument(store.getMemRef()))
          captureUses.push_back(
              {store, store.getMemRef(), CaptureRole::SinksGrad});
      });
  });
  FailureOr<SmallVector<CaptureArg>> captures =
      collectCaptureArgs(func, captureUses);
  if (failed(captures))
    return failure();
  spec.captures = std::move(*captures);
  spec.sinkCapture = findCapture(spec.captures, CaptureRole::Sinks);
  spec.sinkGradCapture = findCapture(spec.captures, CaptureRole::SinksGrad);
  if (static_cast<bool>(spec.sinkCapture) !=
      static_cast<bool>(spec.sinkGradCapture))
    return fail("need both the sinks and their gradient, or neither");
  // Packed sequences' offsets are rank-1 integer memrefs before them.
  if (llvm::any_of(func.getArguments().drop_back(spec.captures.size()),
                   [](BlockArgument arg) {
                     auto memref = dyn_cast<MemRefType>(arg.getType());
                     return memref && memref.getRank() == 1 &&
                            isa<IntegerType>(memref.getElementType());
                   }))
    return fail("take dense batches only: packed sequences' backward runs "
                "on the CPU target so far");
  auto q = dyn_cast<MemRefType>(func.getArgument(0).getType());
  if (!q || q.getRank() != 4 || ShapedType::isDynamic(q.getDimSize(3)))
    return fail("need Q as a rank-4 memref with a static head dim");
  spec.elementType = q.getElementType();
  if (!isa<BFloat16Type, Float16Type>(spec.elementType))
    return fail("take bf16 or f16 operands");
  spec.headDim = q.getDimSize(3);
  if (spec.headDim != 64 && spec.headDim != 128)
    return fail("take head dims 64 and 128 (got ") << spec.headDim << ")";

  auto config = func->getAttrOfType<ConfigAttr>("flash.config");
  if (!config)
    return fail("need the program's flash.config (run -flash-tile)");
  spec.blockM = config.getBlockM();
  spec.blockN = config.getBlockN();
  if (spec.blockM != 64 || spec.blockN != 64)
    return fail("take 64 x 64 tiles (block_m = 64, block_n = 64; got ")
           << spec.blockM << " x " << spec.blockN << ")";

  // With sinks, -flash-tile writes a fourth grid for their gradient (the
  // pre and post kernels compute it).
  if (llvm::range_size(func.getOps<GridOp>()) != (spec.sinkCapture ? 4 : 3))
    return fail("expected the grids -flash-tile writes (three, and one for "
                "the sinks' gradient)");
  SmallVector<SoftmaxRecomputeOp> recomputes;
  func.walk([&](SoftmaxRecomputeOp op) { recomputes.push_back(op); });
  if (recomputes.empty())
    return fail("found no flash.softmax_recompute");
  float scale = recomputes.front().getScale().convertToFloat();
  spec.scale = recomputes.front().getBase2() ? scale / M_LOG2E : scale;
  if (mods) {
    // The logits are scaled in flash.mod_scores; the recompute takes them
    // as they are.
    spec.scale = mods.getScale().convertToFloat();
    if (!mods.getScoreMod().empty())
      spec.scoreMod = &mods.getScoreMod();
    if (!mods.getMaskMod().empty())
      spec.maskMod = &mods.getMaskMod();
    spec.keyWindow = keyWindowBehind(mods.getMaskMod());
    spec.keyChunk = keyChunk(mods.getMaskMod());
    spec.maskIsKeyChunk =
        spec.keyChunk && keyChunkExactly(mods.getMaskMod()) == spec.keyChunk;
    spec.keyRanges = keyRangesOf(mods, spec.captures);
  }
  spec.causal = false;
  func.walk([&](MaskOp mask) { spec.causal |= mask.getCausal(); });
  spec.deterministic = func->hasAttr("flash.deterministic");
  return spec;
}

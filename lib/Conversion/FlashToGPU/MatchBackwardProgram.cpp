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
  // Packed sequences' offsets are rank-1 integer memrefs.
  if (llvm::any_of(func.getArgumentTypes(), [](Type type) {
        auto memref = dyn_cast<MemRefType>(type);
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

  // The kernels have no sink reduction and no kernel argument for a
  // capture.
  Operation *unlowered = nullptr;
  ModScoresOp mods;
  func.walk([&](Operation *op) {
    if (auto m = dyn_cast<ModScoresOp>(op)) {
      if (!mods)
        mods = m;
      if (!m.getCaptures().empty() && !unlowered)
        unlowered = op;
    }
    if (isa<SinkGradOp>(op) && !unlowered)
      unlowered = op;
  });
  if (unlowered)
    return unlowered->emitError("flash-to-gpu: the backward kernels do not "
                                "take attention sinks or mods that read "
                                "captures yet (the CPU path runs them)");
  if (llvm::range_size(func.getOps<GridOp>()) != 3)
    return fail("expected the three grids -flash-tile writes");
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
  }
  spec.causal = false;
  func.walk([&](MaskOp mask) { spec.causal |= mask.getCausal(); });
  spec.deterministic = func->hasAttr("flash.deterministic");
  return spec;
}

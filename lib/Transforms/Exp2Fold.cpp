//===- Exp2Fold.cpp - move the online softmax to base 2 -------------------===//
//
// exp(x - m) == exp2(x * log2(e) - m * log2(e)): keeping the running max in
// base-2 units turns each exponent into one fma and one exp2 (MUFU.EX2 on
// the GPU). The running max must then be base 2 everywhere it flows, so the
// fold first proves that every max reaching a finalize has a known source.
//
//===----------------------------------------------------------------------===//

#include "FuseSteps.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/SetVector.h"

#include <cmath>

using namespace mlir;
using namespace mlir::flash;

/// True when `value` is a -inf splat: the start of a running max, which
/// means the same in either base.
static bool isNegInfStart(Value value) {
  DenseElementsAttr attr;
  if (!matchPattern(value, m_Constant(&attr)) || !attr.isSplat())
    return false;
  APFloat start = attr.getSplatValue<APFloat>();
  return start.isInfinity() && start.isNegative();
}

/// What may produce a running max: softmax updates (base 2 after the
/// fold) or split-KV's merges of splits' LSEs (natural units throughout).
enum class MaxSource { Softmax, Merge };

/// Follows a running max back through loop results and iter_args. True when
/// every source is a new max of `kind`'s op or the -inf start.
static bool hasOnlySources(Value max, MaxSource kind) {
  SmallVector<Value> worklist = {max};
  llvm::SmallPtrSet<Value, 8> seen;
  while (!worklist.empty()) {
    Value value = worklist.pop_back_val();
    if (!seen.insert(value).second)
      continue;
    if (isNegInfStart(value))
      continue;
    if (auto update = value.getDefiningOp<SoftmaxUpdateOp>()) {
      if (kind != MaxSource::Softmax || value != update.getNewMax())
        return false;
      worklist.push_back(update.getRowMax());
      continue;
    }
    if (auto merge = value.getDefiningOp<MergeSplitOp>()) {
      if (kind != MaxSource::Merge || value != merge.getNewMax())
        return false;
      worklist.push_back(merge.getRowMax());
      continue;
    }
    if (auto loop = value.getDefiningOp<scf::ForOp>()) {
      unsigned index = cast<OpResult>(value).getResultNumber();
      worklist.push_back(loop.getInitArgs()[index]);
      worklist.push_back(loop.getYieldedValues()[index]);
      continue;
    }
    auto arg = dyn_cast<BlockArgument>(value);
    auto loop = arg ? dyn_cast<scf::ForOp>(arg.getOwner()->getParentOp())
                    : scf::ForOp();
    if (!loop || arg == loop.getInductionVar())
      return false;
    unsigned index = arg.getArgNumber() - loop.getNumInductionVars();
    worklist.push_back(loop.getInitArgs()[index]);
    worklist.push_back(loop.getYieldedValues()[index]);
  }
  return true;
}

bool mlir::flash::foldScaleIntoExp2(func::FuncOp func) {
  SmallVector<SoftmaxUpdateOp> updates;
  SmallVector<FinalizeOp> finalizes;
  func.walk([&](Operation *op) {
    if (auto update = dyn_cast<SoftmaxUpdateOp>(op))
      updates.push_back(update);
    else if (auto finalize = dyn_cast<FinalizeOp>(op))
      finalizes.push_back(finalize);
  });
  for (SoftmaxUpdateOp update : updates) {
    if (!hasOnlySources(update.getRowMax(), MaxSource::Softmax))
      return false;
  }
  // Split-KV's combine finalizes splits' LSEs, natural logs: it stays as
  // it is while the softmax before it moves to base 2.
  llvm::erase_if(finalizes, [](FinalizeOp finalize) {
    return hasOnlySources(finalize.getRowMax(), MaxSource::Merge);
  });
  for (FinalizeOp finalize : finalizes) {
    if (!hasOnlySources(finalize.getRowMax(), MaxSource::Softmax))
      return false;
  }

  Builder builder(func.getContext());
  for (SoftmaxUpdateOp update : updates) {
    if (update.getBase2())
      continue;
    float scale = update.getScale().convertToFloat();
    update.setScaleAttr(
        builder.getF32FloatAttr(scale * static_cast<float>(M_LOG2E)));
    update.setBase2(true);
  }
  for (FinalizeOp finalize : finalizes)
    finalize.setBase2(true);
  return true;
}

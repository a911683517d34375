//===- SplitMaskedLoops.cpp - peel masks off the key loop -----------------===//
//
// Masking costs a compare and a select per logit; only the tiles on the
// causal diagonal and the ragged tail need it. A key loop is split at the
// first tile that some row of the query tile does not see whole: the first
// loop runs those before it with no flash.mask at all.
//
//===----------------------------------------------------------------------===//

#include "FuseSteps.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;
using namespace mlir::flash;

namespace {

/// The mask of key tile `loop`'s induction variable, if the loop is one
/// this step can split: from 0, by the key tile size, the mask directly in
/// its body with every other operand defined outside.
MaskOp findSplittableMask(scf::ForOp loop) {
  if (!matchPattern(loop.getLowerBound(), m_Zero()))
    return {};
  MaskOp found;
  for (auto mask : loop.getBody()->getOps<MaskOp>()) {
    if (found)
      return {}; // Two masks: leave the loop alone.
    found = mask;
  }
  if (!found || found.getColStart() != loop.getInductionVar())
    return {};
  for (Value operand :
       {found.getRowStart(), found.getSeqQ(), found.getSeqK()}) {
    if (!loop.isDefinedOutsideOfLoop(operand))
      return {};
  }
  auto tileType = cast<RankedTensorType>(found.getScores().getType());
  APInt step;
  if (!matchPattern(loop.getStep(), m_ConstantInt(&step)) ||
      step.getSExtValue() != tileType.getDimSize(1))
    return {};
  return found;
}

/// The first key index of the masked part, a multiple of the tile size:
/// tiles before it lie inside seq_k and the loop's range and, with a causal
/// mask, are visible to the first (and so every) row of the query tile.
Value buildSplitPoint(ImplicitLocOpBuilder &b, MaskOp mask, Value loopEnd) {
  int64_t blockN =
      cast<RankedTensorType>(mask.getScores().getType()).getDimSize(1);
  Value c0 = arith::ConstantIndexOp::create(b, 0);
  Value cBlockN = arith::ConstantIndexOp::create(b, blockN);
  auto roundDown = [&](Value keys) -> Value {
    Value tiles = arith::DivSIOp::create(b, keys, cBlockN);
    return arith::MulIOp::create(b, tiles, cBlockN);
  };
  Value split = roundDown(mask.getSeqK());
  if (mask.getCausal()) {
    // The first row sees keys j <= row + seq_k - seq_q: that many plus one.
    Value shift = arith::SubIOp::create(b, mask.getSeqK(), mask.getSeqQ());
    Value lastSeen = arith::AddIOp::create(b, mask.getRowStart(), shift);
    Value c1 = arith::ConstantIndexOp::create(b, 1);
    Value seen = arith::AddIOp::create(b, lastSeen, c1);
    Value nonNegative = arith::MaxSIOp::create(b, seen, c0);
    split = arith::MinSIOp::create(b, split, roundDown(nonNegative));
  }
  // Only whole tiles of the loop's own range may drop the mask.
  return arith::MinSIOp::create(b, split, roundDown(loopEnd));
}

void splitLoop(scf::ForOp loop, MaskOp mask) {
  ImplicitLocOpBuilder b(loop.getLoc(), loop);
  Value split = buildSplitPoint(b, mask, loop.getUpperBound());

  auto unmasked = cast<scf::ForOp>(b.clone(*loop));
  unmasked.setUpperBound(split);
  for (MaskOp clonedMask :
       llvm::make_early_inc_range(unmasked.getBody()->getOps<MaskOp>())) {
    clonedMask.replaceAllUsesWith(clonedMask.getScores());
    clonedMask.erase();
  }

  auto masked = cast<scf::ForOp>(b.clone(*loop));
  masked.setLowerBound(split);
  masked.getInitArgsMutable().assign(unmasked.getResults());
  loop.replaceAllUsesWith(masked.getResults());
  loop.erase();
}

} // namespace

void mlir::flash::splitMaskedLoops(func::FuncOp func) {
  SmallVector<std::pair<scf::ForOp, MaskOp>> candidates;
  func.walk([&](scf::ForOp loop) {
    if (MaskOp mask = findSplittableMask(loop))
      candidates.push_back({loop, mask});
  });
  for (auto [loop, mask] : candidates)
    splitLoop(loop, mask);
}

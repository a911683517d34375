//===- SplitMaskedLoops.cpp - peel masks off the key loop -----------------===//
//
// Masking costs a compare and a select per logit; only the tiles on the
// causal diagonal and the ragged tail need it. A key loop is split at the
// first tile that some row of the query tile does not see whole: the first
// loop runs those before it with no flash.mask at all. The backward pass's
// query loop (one key tile, the query tiles its induction variable) is split
// the other way round: the query tiles before the first whose every row sees
// the whole key tile keep the mask, the rest run without it.
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

/// Which tile index a loop runs over: the key tile (the forward's key
/// loop, the mask's columns) or the query tile (the backward's query loop,
/// its rows).
enum class LoopOver { Keys, Queries };

/// The mask of `loop`, if the loop is one this step can split: over the
/// mask's columns (`Keys`; from 0, or from a whole tile a mask_mod's window
/// lets it skip to) or its rows (`Queries`), by that tile size, the mask
/// directly in its body with every other operand defined outside.
MaskOp findSplittableMask(scf::ForOp loop, LoopOver over) {
  bool keys = over == LoopOver::Keys;
  MaskOp found;
  for (auto mask : loop.getBody()->getOps<MaskOp>()) {
    if (found)
      return {}; // Two masks: leave the loop alone.
    found = mask;
  }
  if (!found)
    return {};
  Value index = keys ? found.getColStart() : found.getRowStart();
  Value other = keys ? found.getRowStart() : found.getColStart();
  if (index != loop.getInductionVar())
    return {};
  Value seqQ = found.getSeqQ(), seqK = found.getSeqK();
  for (Value operand : {other, seqQ, seqK}) {
    if (!loop.isDefinedOutsideOfLoop(operand))
      return {};
  }
  auto tileType = cast<RankedTensorType>(found.getScores().getType());
  APInt step;
  if (!matchPattern(loop.getStep(), m_ConstantInt(&step)) ||
      step.getSExtValue() != tileType.getDimSize(keys ? 1 : 0))
    return {};
  return found;
}

/// The first key index of the masked part, a multiple of the tile size:
/// tiles before it lie inside seq_k and the loop's range and, with a causal
/// mask, are visible to the first (and so every) row of the query tile (of
/// a grouped tile, to query 0).
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
    // A grouped tile's rows start over at query 0 with each head, so its
    // least query is 0 whatever its first row.
    Value shift = arith::SubIOp::create(b, mask.getSeqK(), mask.getSeqQ());
    Value lastSeen =
        mask.getGroupedRows()
            ? shift
            : arith::AddIOp::create(b, mask.getRowStart(), shift).getResult();
    Value c1 = arith::ConstantIndexOp::create(b, 1);
    Value seen = arith::AddIOp::create(b, lastSeen, c1);
    Value nonNegative = arith::MaxSIOp::create(b, seen, c0);
    split = arith::MinSIOp::create(b, split, roundDown(nonNegative));
  }
  // Only whole tiles of the loop's own range may drop the mask.
  return arith::MinSIOp::create(b, split, roundDown(loopEnd));
}

/// The first query row of `loop`'s unmasked part, the start plus whole
/// tiles: past every row that does not see the whole key tile under the
/// causal mask (row i sees key j when j <= i + seq_k - seq_q), or the
/// loop's end when the key tile runs past seq_k.
Value buildRowSplitPoint(ImplicitLocOpBuilder &b, MaskOp mask,
                         scf::ForOp loop) {
  auto tileType = cast<RankedTensorType>(mask.getScores().getType());
  Value cBlockM = arith::ConstantIndexOp::create(b, tileType.getDimSize(0));
  Value cBlockN = arith::ConstantIndexOp::create(b, tileType.getDimSize(1));
  Value start = loop.getLowerBound(), end = loop.getUpperBound();
  Value split = start;
  if (mask.getCausal()) {
    // The key tile's last key, col + block_n - 1, is seen from row
    // col + block_n - 1 - (seq_k - seq_q) on.
    Value c1 = arith::ConstantIndexOp::create(b, 1);
    Value lastKey = arith::SubIOp::create(
        b, arith::AddIOp::create(b, mask.getColStart(), cBlockN), c1);
    Value shift = arith::SubIOp::create(b, mask.getSeqK(), mask.getSeqQ());
    Value firstWhole = arith::SubIOp::create(b, lastKey, shift);
    Value c0 = arith::ConstantIndexOp::create(b, 0);
    Value rows = arith::MaxSIOp::create(
        b, arith::SubIOp::create(b, firstWhole, start), c0);
    Value tiles = arith::CeilDivSIOp::create(b, rows, cBlockM);
    split = arith::AddIOp::create(b, start,
                                  arith::MulIOp::create(b, tiles, cBlockM));
    split = arith::MinSIOp::create(b, split, end);
  }
  Value keyEnd = arith::AddIOp::create(b, mask.getColStart(), cBlockN);
  Value ragged = arith::CmpIOp::create(b, arith::CmpIPredicate::sgt, keyEnd,
                                       mask.getSeqK());
  return arith::SelectOp::create(b, ragged, end, split);
}

/// Clones `loop` over [start, end), its masks dropped where `unmasked`,
/// starting from `inits`.
scf::ForOp cloneLoopPart(ImplicitLocOpBuilder &b, scf::ForOp loop, Value start,
                         Value end, ValueRange inits, bool unmasked) {
  auto part = cast<scf::ForOp>(b.clone(*loop));
  part.setLowerBound(start);
  part.setUpperBound(end);
  part.getInitArgsMutable().assign(inits);
  if (unmasked) {
    for (MaskOp clonedMask :
         llvm::make_early_inc_range(part.getBody()->getOps<MaskOp>())) {
      clonedMask.replaceAllUsesWith(clonedMask.getScores());
      clonedMask.erase();
    }
  }
  return part;
}

void splitLoop(scf::ForOp loop, MaskOp mask) {
  ImplicitLocOpBuilder b(loop.getLoc(), loop);
  Value split = buildSplitPoint(b, mask, loop.getUpperBound());
  // A loop that starts past key 0 (a window's first tile) has no unmasked
  // tiles before its start.
  if (!matchPattern(loop.getLowerBound(), m_Zero()))
    split = arith::MaxSIOp::create(b, split, loop.getLowerBound());

  scf::ForOp unmasked = cloneLoopPart(b, loop, loop.getLowerBound(), split,
                                      loop.getInitArgs(), /*unmasked=*/true);
  scf::ForOp masked =
      cloneLoopPart(b, loop, split, loop.getUpperBound(), unmasked.getResults(),
                    /*unmasked=*/false);
  loop.replaceAllUsesWith(masked.getResults());
  loop.erase();
}

/// The backward's query loop: the masked tiles first, then the rest.
void splitRowLoop(scf::ForOp loop, MaskOp mask) {
  ImplicitLocOpBuilder b(loop.getLoc(), loop);
  Value split = buildRowSplitPoint(b, mask, loop);
  scf::ForOp masked = cloneLoopPart(b, loop, loop.getLowerBound(), split,
                                    loop.getInitArgs(), /*unmasked=*/false);
  scf::ForOp unmasked =
      cloneLoopPart(b, loop, split, loop.getUpperBound(), masked.getResults(),
                    /*unmasked=*/true);
  loop.replaceAllUsesWith(unmasked.getResults());
  loop.erase();
}

} // namespace

void mlir::flash::splitMaskedLoops(func::FuncOp func) {
  SmallVector<std::pair<scf::ForOp, MaskOp>> keyLoops, rowLoops;
  func.walk([&](scf::ForOp loop) {
    if (MaskOp mask = findSplittableMask(loop, LoopOver::Keys))
      keyLoops.push_back({loop, mask});
    else if (MaskOp mask = findSplittableMask(loop, LoopOver::Queries))
      rowLoops.push_back({loop, mask});
  });
  for (auto [loop, mask] : keyLoops)
    splitLoop(loop, mask);
  for (auto [loop, mask] : rowLoops)
    splitRowLoop(loop, mask);
}

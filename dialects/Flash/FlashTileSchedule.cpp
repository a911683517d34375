//===- FlashTileSchedule.cpp - which tiles a block computes ---------------===//
//
// Verifiers of the block-level schedule ops (FlashTileSchedule.td): a tile
// loop whose region does not take a tile's coordinates, or whose claims
// or Q barriers do not fit, fails at its op.
//
//===----------------------------------------------------------------------===//

#include "Flash/FlashOps.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::flash;

/// The region of both tile loops: (query block: i32, head: index, query
/// blocks: i32, kv_base: index, q_slot: !flash.ring_slot) in, the key tiles
/// the tile used (index) out. Returns the Q slot's type.
static FailureOr<RingSlotType> verifyTileLoopBody(Operation *op,
                                                  Region &body) {
  Block &block = body.front();
  TypeRange args = block.getArgumentTypes();
  auto slot = args.size() == 5 ? dyn_cast<RingSlotType>(args[4]) : nullptr;
  if (!slot || !args[0].isInteger(32) || !args[1].isIndex() ||
      !args[2].isInteger(32) || !args[3].isIndex())
    return op->emitOpError(
        "the region takes a tile's (query_block: i32, head: index, "
        "query_blocks: i32, kv_base: index, q_slot: !flash.ring_slot)");
  // The block's n-th tile takes Q ring position n, an i32.
  if (!llvm::isPowerOf2_64(slot.getStages()))
    return op->emitOpError("the Q buffers' ring needs a power-of-two number "
                           "of stages, got ")
           << slot.getStages();
  auto yield = block.empty() ? nullptr : dyn_cast<WgYieldOp>(block.back());
  if (!yield || yield.getValues().size() != 1 ||
      !yield.getValues()[0].getType().isIndex())
    return op->emitOpError("the region must end in flash.wg.yield of the "
                           "tile's key tiles (one index)");
  return slot;
}

LogicalResult WgTileLoopOp::verify() {
  return verifyTileLoopBody(*this, getBody());
}

LogicalResult WgClaimedTileLoopOp::verify() {
  FailureOr<RingSlotType> slot = verifyTileLoopBody(*this, getBody());
  if (failed(slot))
    return failure();
  int64_t buffers = slot->getStages();
  // The claims are i32.
  if (getClaimsOffset() % 4 != 0)
    return emitOpError("claims_offset must be a multiple of 4 bytes, got ")
           << getClaimsOffset();
  if (failed(verifyRingBarriers(*this, getQFull(), buffers,
                                getBarriers().getType())))
    return failure();
  // Only the producer waits for a buffer's release.
  if (getCounter() && failed(verifyRingBarriers(*this, getQEmpty(), buffers,
                                                getBarriers().getType())))
    return failure();
  return success();
}

LogicalResult WgTileBoundsOp::verify() {
  if (getAlignToEnd() && !getCausal())
    return emitOpError("align_to_end needs the causal mask: without it every "
                       "block sees all keys and the ragged block is the last");
  return success();
}

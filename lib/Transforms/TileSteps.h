//===- TileSteps.h - the pieces of -flash-tile -------------------*- C++
//-*-===//
//
// -flash-tile rewrites the forward op (TileAttention.cpp) and the backward
// op (TileAttentionBackward.cpp); both read packed sequences the same way.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_TRANSFORMS_TILESTEPS_H
#define FLASHC_LIB_TRANSFORMS_TILESTEPS_H

#include "Flash/FlashOps.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::flash {

/// Rows [start, start + length) of one packed sequence.
struct SequenceRows {
  Value start, length;
};

/// Sequence `sequence`'s rows as the prefix sums `cuSeqlens` (rank-1 i32)
/// give them: [cu[s], cu[s + 1]).
SequenceRows loadSequenceRows(ImplicitLocOpBuilder &b, Value cuSeqlens,
                              Value sequence);

/// The batch-1 view of `rows` of `memref` (batch x heads x seq [x head
/// dim]) over its first `heads` heads: loads past the sequence's end read
/// zero and stores past it are dropped, as at the end of a dense tensor.
Value viewSequenceRows(ImplicitLocOpBuilder &b, Value memref, SequenceRows rows,
                       Value heads);

/// Replaces `op` (a flash.attention_backward) by its tile program: grids
/// over query tiles and key tiles (see TileAttentionBackward.cpp).
void tileAttentionBackward(AttentionBackwardOp op, ConfigAttr config);

} // namespace mlir::flash

#endif // FLASHC_LIB_TRANSFORMS_TILESTEPS_H

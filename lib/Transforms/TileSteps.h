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

/// The score and mask mods of a flash.attention or
/// flash.attention_backward: its regions, their captures and the logit
/// scale applied before them.
struct Mods {
  Region &scoreMod;
  Region &maskMod;
  ValueRange captures;
  float scale;
  /// flash.attention's key_ranges (null: none).
  DenseI64ArrayAttr keyRanges = {};
};

/// Where a logit tile lies: the sequence (what the mods see as the batch
/// index) and query head, its first query row and key, and the lengths.
struct TileCoordinates {
  Value sequence, head, row, col, seqQ, seqK;
  /// A grouped tile's queries per head and heads (flash.mod_scores'
  /// grouped form; null: one head's rows).
  Value rowsPerHead = {}, groupSize = {};

  /// These coordinates at key `column`.
  TileCoordinates at(Value column) const {
    TileCoordinates moved = *this;
    moved.col = column;
    return moved;
  }
};

/// `mods` on the raw logit tile `scores` at `at`, as flash.mod_scores with
/// the regions cloned: the logits scaled and modded.
Value buildModScores(ImplicitLocOpBuilder &b, const Mods &mods, Value scores,
                     const TileCoordinates &at);

/// The chunks of `chunk` positions that positions [first, first + span)
/// touch (a chunked mask_mod's, MaskAnalysis.h keyChunk): their start
/// rounded down to a multiple of `align` (where the other side's tiles
/// start), and their end.
std::pair<Value, Value> chunkBounds(ImplicitLocOpBuilder &b, Value first,
                                    int64_t span, int64_t chunk, Value align);

/// Replaces `op` (a flash.attention_backward) by its tile program: grids
/// over query tiles and key tiles (see TileAttentionBackward.cpp).
void tileAttentionBackward(AttentionBackwardOp op, ConfigAttr config);

} // namespace mlir::flash

#endif // FLASHC_LIB_TRANSFORMS_TILESTEPS_H

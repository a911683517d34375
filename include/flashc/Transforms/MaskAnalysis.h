//===- MaskAnalysis.h - key ranges a mask_mod implies -----------*- C++ -*-===//
//
// Block sparsity from a mask the compiler can read: the key tiles a
// mask_mod hides from every row of a query tile need not run. The tiling
// (-flash-tile) starts each query tile's key loop past them and the GPU
// kernel's producer and consumers skip them.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_TRANSFORMS_MASKANALYSIS_H
#define FLASHC_TRANSFORMS_MASKANALYSIS_H

#include "mlir/IR/Region.h"

#include <cstdint>
#include <optional>

namespace mlir::flash {

/// The smallest W >= 0 such that `maskMod` (flash.attention's mask_mod
/// region) holding implies kv_idx >= q_idx - W, whatever the batch, head
/// and captures: a sliding window W keys back. Read from the yielded i1 as
/// a tree of arith.andi / arith.ori over comparisons of q_idx with kv_idx
/// plus a constant (kv + W >= q, q <= kv + W, q - kv <= W, ...), through
/// index casts; nullopt when nothing in it bounds the keys from below.
std::optional<int64_t> keyWindowBehind(Region &maskMod);

/// The W such that `maskMod` is exactly kv_idx >= q_idx - W (one
/// comparison keyWindowBehind reads, with no other condition), or nullopt:
/// then a key tile every row sees from within its window needs no mask.
std::optional<int64_t> keyWindowExactly(Region &maskMod);

/// The C > 0 such that `maskMod` holding implies q_idx / C == kv_idx / C:
/// a query sees only the keys of its own chunk of C positions (chunked
/// local attention, as Llama 4's). Read from an arith.cmpi eq of the two
/// indices each divided (divui or divsi, through index casts) by the same
/// constant, in the yielded i1's tree of andi (and ori whose sides agree).
std::optional<int64_t> keyChunk(Region &maskMod);

/// The C such that `maskMod` is exactly q_idx / C == kv_idx / C (no other
/// condition), or nullopt: then a key tile within the chunk of every row
/// of a query tile needs no mask.
std::optional<int64_t> keyChunkExactly(Region &maskMod);

} // namespace mlir::flash

#endif // FLASHC_TRANSFORMS_MASKANALYSIS_H

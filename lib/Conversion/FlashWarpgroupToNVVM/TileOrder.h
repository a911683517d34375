//===- TileOrder.h - the order a persistent grid walks tiles ----*- C++ -*-===//
//
// The work items of flash.wg.tile_loop and flash.wg.claimed_tile_loop,
// where item t lies (its level and head), and how either loop runs its
// region on one tile: what both loops' patterns share.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_CONVERSION_FLASHWARPGROUPTONVVM_TILEORDER_H
#define FLASHC_LIB_CONVERSION_FLASHWARPGROUPTONVVM_TILEORDER_H

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Support/LLVM.h"
#include "mlir/Transforms/DialectConversion.h"

#include <optional>
#include <utility>

namespace mlir::flash::wg_lowering {

/// The items of a persistent grid's tiles (i32 values, built at the
/// loop): `queryBlocks` per head, `items` in all over `grid` blocks.
struct TileOrder {
  Value queryBlocks, heads, perHead, items, grid;
  /// Sections order only: heads per section and items per section.
  Value sectionHeads, sectionItems;
  /// Items are pairs of query blocks (the static causal loop).
  bool pairs = false;

  /// Builds the counts for `op`: query blocks ceil(seq_q / block_m), and
  /// with `sectionKeys` the sections of heads whose K and V hold that many
  /// keys (at least one head each).
  static TileOrder build(ImplicitLocOpBuilder &b, Operation *op, Value seqQ,
                         Value seqK, Value batch, Value heads, int64_t blockM,
                         std::optional<int64_t> sectionKeys, bool pairs);

  /// Item t's (level, head): with sections, level by level within a
  /// section of heads; without, a head's levels one after another.
  std::pair<Value, Value> locate(ImplicitLocOpBuilder &b, Value t) const;
};

/// Inlines a tile loop's region (`loop`'s `body`) at the builder's point
/// for the tile (query block: i32, head: i32, query blocks: i32, kv_base:
/// index, done: i32): the head becomes an index and Q ring position `done`
/// a slot. Returns the next tile's (kv_base, done). Each loop runs its
/// region at one place, so the region is moved, not cloned.
SmallVector<Value> inlineTile(ConversionPatternRewriter &rewriter,
                              ImplicitLocOpBuilder &b, Operation *loop,
                              Region &body, Value queryBlock, Value head,
                              Value queryBlocks, Value kvBase, Value done);

} // namespace mlir::flash::wg_lowering

#endif // FLASHC_LIB_CONVERSION_FLASHWARPGROUPTONVVM_TILEORDER_H

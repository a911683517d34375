//===- TileAttention.cpp - flash.attention -> tile program ----------------===//
//
// The -flash-tile pass: rewrites the kernel-level op into the tile program of
// DESIGN.md section 1, one program per (query tile, batch * head), and the
// backward op into its own (TileAttentionBackward.cpp).
//
//===----------------------------------------------------------------------===//

#include "TileSteps.h"
#include "flashc/Transforms/MaskAnalysis.h"
#include "flashc/Transforms/Passes.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <limits>

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHTILE
#include "flashc/Transforms/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::flash;

Value mlir::flash::buildModScores(ImplicitLocOpBuilder &b, const Mods &mods,
                                  Value scores, const TileCoordinates &at) {
  auto mod = ModScoresOp::create(b, scores.getType(), scores, at.sequence,
                                 at.head, at.row, at.col, at.seqQ, at.seqK,
                                 mods.captures, at.rowsPerHead, at.groupSize,
                                 b.getF32FloatAttr(mods.scale), mods.keyRanges);
  IRMapping mapping;
  mods.scoreMod.cloneInto(&mod.getScoreMod(), mapping);
  mods.maskMod.cloneInto(&mod.getMaskMod(), mapping);
  return mod;
}

std::pair<Value, Value> mlir::flash::chunkBounds(ImplicitLocOpBuilder &b,
                                                 Value first, int64_t span,
                                                 int64_t chunk, Value align) {
  Value cChunk = arith::ConstantIndexOp::create(b, chunk);
  Value start = arith::MulIOp::create(
      b, arith::DivUIOp::create(b, first, cChunk), cChunk);
  Value aligned =
      arith::MulIOp::create(b, arith::DivUIOp::create(b, start, align), align);
  Value last = arith::AddIOp::create(
      b, first, arith::ConstantIndexOp::create(b, span - 1));
  Value end = arith::MulIOp::create(
      b,
      arith::AddIOp::create(b, arith::DivUIOp::create(b, last, cChunk),
                            arith::ConstantIndexOp::create(b, 1)),
      cChunk);
  return {aligned, end};
}

namespace {

/// Everything the body of one program needs from outside the grid.
struct AttentionShape {
  /// Query heads, and query heads per K/V head (grouped-query attention;
  /// 1 for multi-head).
  Value heads, groupSize, seqQ, seqK;
  /// K/V heads, and the static G where known (pack_gqa's views).
  Value kvHeads;
  int64_t staticGroupSize = ShapedType::kDynamic;
};

/// The memrefs one program reads and writes: the op's, or (packed
/// sequences) views of one sequence's rows of them.
struct ProgramOperands {
  Value q, k, v, o, lse;
  /// A paged cache's page table (null: K and V are dense), and its page
  /// size (K's and V's seq dimension).
  Value pageTable = {};
  int64_t pageSize = 0;
  /// Split-KV: this program's split of `splits`, and its slices of the
  /// scratch (null: one program sees every key and writes O and LSE).
  Value split = {}, splits = {};
  Value partialOut = {}, partialLse = {};
  /// GQA packing (null: none): q, o, lse and the partials are viewed
  /// batch x H_kv x G x seq [x D] and the program's rows run through the
  /// G heads' queries; the shape gives the group.
  const AttentionShape *groupShape = nullptr;
  bool grouped() const { return groupShape != nullptr; }
};

/// The online softmax's start: acc = 0, m = -inf, l = 0.
static std::tuple<Value, Value, Value>
onlineSoftmaxStart(ImplicitLocOpBuilder &b, RankedTensorType accType,
                   RankedTensorType rowType) {
  auto splat = [&](RankedTensorType type, float value) -> Value {
    return arith::ConstantOp::create(
        b, DenseElementsAttr::get(type, b.getF32FloatAttr(value)));
  };
  return {splat(accType, 0.0f),
          splat(rowType, -std::numeric_limits<float>::infinity()),
          splat(rowType, 0.0f)};
}

/// `memory` (batch x H_q x ...) viewed as batch x H_kv x G x ...: the
/// query heads of each K/V head as one more dimension.
static Value groupHeads(ImplicitLocOpBuilder &b, Value memory,
                        const AttentionShape &shape) {
  auto type = cast<MemRefType>(memory.getType());
  const int64_t heads = type.getDimSize(1), group = shape.staticGroupSize;
  SmallVector<int64_t> resultShape = {type.getDimSize(0),
                                      ShapedType::isDynamic(heads) ||
                                              ShapedType::isDynamic(group)
                                          ? ShapedType::kDynamic
                                          : heads / group,
                                      group};
  llvm::append_range(resultShape, type.getShape().drop_front(2));
  const int64_t rank = resultShape.size();
  auto sizeOf = [&](int64_t dim, Value dynamic) -> OpFoldResult {
    if (!ShapedType::isDynamic(resultShape[dim]))
      return b.getIndexAttr(resultShape[dim]);
    if (dynamic)
      return dynamic;
    return memref::DimOp::create(b, memory, dim - 1).getResult();
  };
  SmallVector<OpFoldResult> outputShape = {
      sizeOf(0, memref::DimOp::create(b, memory, 0)), sizeOf(1, shape.kvHeads),
      sizeOf(2, shape.groupSize)};
  SmallVector<ReassociationIndices> reassociation = {{0}, {1, 2}};
  for (int64_t dim = 3; dim < rank; ++dim) {
    outputShape.push_back(sizeOf(dim, Value()));
    reassociation.push_back({dim});
  }
  if (!ShapedType::isDynamic(group))
    return memref::ExpandShapeOp::create(b, resultShape, memory, reassociation,
                                         outputShape);
  // MLIR 22's -expand-strided-metadata crashes on an expand_shape that
  // splits one dimension into two dynamic ones; this is the
  // reinterpret_cast it would lower to: the head stride times G for the
  // K/V heads, the head stride for the group.
  auto meta = memref::ExtractStridedMetadataOp::create(b, memory);
  SmallVector<OpFoldResult> strides = {
      meta.getStrides()[0],
      arith::MulIOp::create(b, meta.getStrides()[1], shape.groupSize)
          .getResult(),
      meta.getStrides()[1]};
  for (int64_t dim = 2; dim < type.getRank(); ++dim)
    strides.push_back(meta.getStrides()[dim]);
  auto layout =
      StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic,
                             SmallVector<int64_t>(rank, ShapedType::kDynamic));
  auto viewType = MemRefType::get(resultShape, type.getElementType(), layout);
  return memref::ReinterpretCastOp::create(b, viewType, meta.getBaseBuffer(),
                                           OpFoldResult(meta.getOffset()),
                                           outputShape, strides);
}

/// `memory` grouped as groupHeads does where `groupShape` is given (GQA
/// packing), else as it is; null stays null.
static Value maybeGroupHeads(ImplicitLocOpBuilder &b, Value memory,
                             const AttentionShape *groupShape) {
  return memory && groupShape ? groupHeads(b, memory, *groupShape) : memory;
}

/// Each row's sink logit for a grouped tile of K/V head `kvHead` at `row`:
/// the sinks viewed 1 x H_kv x G x seq_q with stride 0 across the batch and
/// the queries, so that a grouped load gives row r the sink of its head.
static Value groupedSinkRow(ImplicitLocOpBuilder &b, Value sinks,
                            const AttentionShape &shape, Value kvHead,
                            Value row, RankedTensorType rowType) {
  auto meta = memref::ExtractStridedMetadataOp::create(b, sinks);
  Value stride = meta.getStrides()[0];
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1), shape.kvHeads,
                                     shape.groupSize, shape.seqQ};
  SmallVector<OpFoldResult> strides = {
      b.getIndexAttr(0),
      arith::MulIOp::create(b, stride, shape.groupSize).getResult(), stride,
      b.getIndexAttr(0)};
  auto layout = StridedLayoutAttr::get(
      b.getContext(), ShapedType::kDynamic,
      {0, ShapedType::kDynamic, ShapedType::kDynamic, 0});
  auto viewType = MemRefType::get(
      {1, ShapedType::kDynamic, ShapedType::kDynamic, ShapedType::kDynamic},
      b.getF32Type(), layout);
  Value view = memref::ReinterpretCastOp::create(
      b, viewType, meta.getBaseBuffer(), OpFoldResult(meta.getOffset()), sizes,
      strides);
  Value c0 = arith::ConstantIndexOp::create(b, 0);
  return LoadTileOp::create(b, rowType, view, ValueRange{c0, kvHead, row},
                            /*grouped=*/true);
}

/// The output and LSE of the running rows `state` (acc, m, l) of query
/// head `head` at `row`, with the op's sink where it has one. A grouped
/// tile's rows have a sink each: it joins them as one more split of output
/// 0 (flash.merge_split), which keeps this finalize in natural units.
static FinalizeOp finalizeRows(ImplicitLocOpBuilder &b, AttentionOp op,
                               ValueRange state, Value head, Value row,
                               const AttentionShape *groupShape) {
  auto accType = cast<RankedTensorType>(state[0].getType());
  auto rowType = cast<RankedTensorType>(state[1].getType());
  SmallVector<Value, 4> operands(state);
  if (Value sinks = op.getSinks()) {
    if (groupShape) {
      Value sinkRow = groupedSinkRow(b, sinks, *groupShape, head, row, rowType);
      Value none = arith::ConstantOp::create(
          b, DenseElementsAttr::get(accType, b.getF32FloatAttr(0.0f)));
      auto merge = MergeSplitOp::create(b, none, sinkRow, operands[0],
                                        operands[1], operands[2]);
      operands.assign(merge.getResults().begin(), merge.getResults().end());
    } else {
      operands.push_back(memref::LoadOp::create(b, sinks, head));
    }
  }
  return FinalizeOp::create(b, TypeRange{accType, rowType}, operands,
                            ArrayRef<NamedAttribute>());
}

/// Split `split`'s slice of split-KV scratch (splits x the rest): a view
/// of the rest, as flash.load_tile and flash.store_tile take it.
static Value splitSlice(ImplicitLocOpBuilder &b, Value scratch, Value split) {
  auto type = cast<MemRefType>(scratch.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
  offsets[0] = split;
  SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1)};
  for (int64_t dim = 1; dim < rank; ++dim)
    sizes.push_back(
        type.isDynamicDim(dim)
            ? OpFoldResult(memref::DimOp::create(b, scratch, dim).getResult())
            : OpFoldResult(b.getIndexAttr(type.getDimSize(dim))));
  SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
  auto sliceType = memref::SubViewOp::inferRankReducedResultType(
      type.getShape().drop_front(), type, offsets, sizes, strides);
  return memref::SubViewOp::create(b, cast<MemRefType>(sliceType), scratch,
                                   offsets, sizes, strides);
}

/// Split `split` of `splits`' share of key tiles [begin, end): an equal
/// run of whole tiles (the last ones may get none).
static std::pair<Value, Value> splitKeyRange(ImplicitLocOpBuilder &b,
                                             Value begin, Value end,
                                             Value split, Value splits,
                                             Value cBlockN) {
  Value c0 = arith::ConstantIndexOp::create(b, 0);
  Value span =
      arith::MaxSIOp::create(b, arith::SubIOp::create(b, end, begin), c0);
  Value tiles = arith::CeilDivUIOp::create(b, span, cBlockN);
  Value share = arith::MulIOp::create(
      b, arith::CeilDivUIOp::create(b, tiles, splits), cBlockN);
  Value first =
      arith::AddIOp::create(b, begin, arith::MulIOp::create(b, split, share));
  Value last =
      arith::MinSIOp::create(b, arith::AddIOp::create(b, first, share), end);
  return {first, last};
}

/// Where keys [col, col + block_n) of a batch lie in a paged cache: the
/// page the table names (not yet clamped into a cache), the rows of it up
/// to the cache's length and the tile's first row in it, where block_n
/// divides the page size, so that the tile lies in one page.
struct PagedKeyTile {
  Value page, rows, inPage;
};

static PagedKeyTile pagedKeyTile(ImplicitLocOpBuilder &b,
                                 const ProgramOperands &mem, Value batch,
                                 Value col, Value seqK) {
  Value cPage = arith::ConstantIndexOp::create(b, mem.pageSize);
  Value slot = arith::DivUIOp::create(b, col, cPage);
  Value pageStart = arith::MulIOp::create(b, slot, cPage);
  Value entry =
      memref::LoadOp::create(b, mem.pageTable, ValueRange{batch, slot});
  return {arith::IndexCastOp::create(b, b.getIndexType(), entry),
          arith::MinSIOp::create(b, cPage,
                                 arith::SubIOp::create(b, seqK, pageStart)),
          arith::SubIOp::create(b, col, pageStart)};
}

/// The K or V tile at `at` of `cache`: its page clamped into the cache and
/// viewed up to the cache's length, so rows past it read as zero whatever
/// the page holds.
static Value loadPagedKeys(ImplicitLocOpBuilder &b, RankedTensorType type,
                           Value cache, const PagedKeyTile &at, Value kvHead) {
  Value c0 = arith::ConstantIndexOp::create(b, 0);
  Value c1 = arith::ConstantIndexOp::create(b, 1);
  Value lastPage =
      arith::SubIOp::create(b, memref::DimOp::create(b, cache, c0), c1);
  Value page = arith::MinSIOp::create(b, arith::MaxSIOp::create(b, at.page, c0),
                                      lastPage);
  auto cacheType = cast<MemRefType>(cache.getType());
  SmallVector<OpFoldResult> offsets = {page, b.getIndexAttr(0),
                                       b.getIndexAttr(0), b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {
      b.getIndexAttr(1), memref::DimOp::create(b, cache, c1).getResult(),
      at.rows, b.getIndexAttr(cacheType.getDimSize(3))};
  SmallVector<OpFoldResult> strides(4, b.getIndexAttr(1));
  Value view =
      memref::SubViewOp::create(b, cache, offsets, sizes, strides).getResult();
  return LoadTileOp::create(b, type, view, ValueRange{c0, kvHead, at.inPage});
}

/// The attention of one program at `b`'s insertion point: the query tile
/// at `row` of (batch, head), K and V of `kvHead`, over sequences of
/// `seqQ` queries and `seqK` keys. `sequence` is what the mods see as the
/// batch index.
static void buildAttention(ImplicitLocOpBuilder &b, AttentionOp op,
                           const ProgramOperands &mem, Value batch,
                           Value sequence, Value head, Value kvHead, Value row,
                           Value seqQ, Value seqK, Value c0, Value cBlockM,
                           Value cBlockN, ConfigAttr config) {
  int64_t blockM = config.getBlockM();
  int64_t blockN = config.getBlockN();
  int64_t headDim = op.getHeadDim();
  Type elementType = cast<MemRefType>(op.getQ().getType()).getElementType();
  Type f32 = b.getF32Type();
  auto accType = RankedTensorType::get({blockM, headDim}, f32);
  auto rowType = RankedTensorType::get({blockM}, f32);
  auto scoreType = RankedTensorType::get({blockM, blockN}, f32);
  auto qTileType = RankedTensorType::get({blockM, headDim}, elementType);
  auto kvTileType = RankedTensorType::get({blockN, headDim}, elementType);
  auto pType = RankedTensorType::get({blockM, blockN}, elementType);

  Value q = LoadTileOp::create(b, qTileType, mem.q,
                               ValueRange{batch, head, row}, mem.grouped());

  // With the bottom-right aligned causal mask, the last query row of this
  // tile sees keys up to row + blockM - 1 + seqK - seqQ: stop there. (A
  // grouped tile's rows reach the last query of the step.)
  Value kvEnd = seqK;
  if (op.getCausal() && !mem.grouped()) {
    Value tileEnd = arith::AddIOp::create(b, row, cBlockM);
    Value shift = arith::SubIOp::create(b, seqK, seqQ);
    Value lastVisible = arith::AddIOp::create(b, tileEnd, shift);
    Value clamped = arith::MaxSIOp::create(b, lastVisible, c0);
    kvEnd = arith::MinSIOp::create(b, clamped, seqK);
  }

  // Over a paged cache the step's queries are the cache's last positions:
  // the mods see each query at its position in the cache, q_idx +
  // max(seq_k - seq_q, 0), as a decoding step's window or chunk needs.
  // (A grouped tile's mods take the offset as seq_q's excess over its
  // rows per head.)
  Value modRow = row, modSeqQ = seqQ, offset = c0;
  if (op.hasMods() && mem.pageTable) {
    offset =
        arith::MaxSIOp::create(b, arith::SubIOp::create(b, seqK, seqQ), c0);
    if (!mem.grouped())
      modRow = arith::AddIOp::create(b, row, offset);
    modSeqQ = arith::AddIOp::create(b, seqQ, offset);
  }

  // Block sparsity: a mask_mod that hides every key more than W behind
  // its query hides the key tiles wholly before row - W from this tile (a
  // grouped tile's rows start over at each head: before its first query).
  Value kvBegin = c0;
  if (std::optional<int64_t> window = keyWindowBehind(op.getMaskMod())) {
    Value cWindow = arith::ConstantIndexOp::create(b, *window);
    Value first = arith::MaxSIOp::create(
        b, arith::SubIOp::create(b, mem.grouped() ? offset : modRow, cWindow),
        c0);
    kvBegin = arith::MulIOp::create(
        b, arith::DivUIOp::create(b, first, cBlockN), cBlockN);
  }
  // A mask_mod that keeps each query within its chunk of C positions
  // hides every key outside the chunks of the tile's first and last rows.
  std::optional<int64_t> chunk = keyChunk(op.getMaskMod());
  if (chunk && !mem.grouped()) {
    auto [start, end] = chunkBounds(b, modRow, blockM, *chunk, cBlockN);
    kvBegin = arith::MaxSIOp::create(b, kvBegin, start);
    kvEnd = arith::MinSIOp::create(b, kvEnd, end);
  }

  if (mem.split)
    std::tie(kvBegin, kvEnd) =
        splitKeyRange(b, kvBegin, kvEnd, mem.split, mem.splits, cBlockN);

  auto [accInit, maxInit, sumInit] = onlineSoftmaxStart(b, accType, rowType);
  Value scoreInit = arith::ConstantOp::create(
      b, DenseElementsAttr::get(scoreType, b.getF32FloatAttr(0.0f)));
  // With mods the logits are scaled before them (they see what
  // FlexAttention's score_mod sees), so the softmax takes them as they are.
  const bool mods = op.hasMods();
  // Where the mods see the tile: a grouped tile's rows from its group's
  // first query head on.
  TileCoordinates modsAt = {sequence, head, modRow, Value(), modSeqQ, seqK};
  if (mods && mem.grouped()) {
    modsAt.head = arith::MulIOp::create(b, head, mem.groupShape->groupSize);
    modsAt.rowsPerHead = seqQ;
    modsAt.groupSize = mem.groupShape->groupSize;
  }
  FloatAttr scale = b.getF32FloatAttr(mods ? 1.0f : op.getEffectiveScale());
  bool causal = op.getCausal();

  auto loop = scf::ForOp::create(
      b, kvBegin, kvEnd, cBlockN, ValueRange{accInit, maxInit, sumInit},
      [&](OpBuilder &nested, Location loc, Value col, ValueRange carried) {
        ImplicitLocOpBuilder lb(loc, nested);
        // Over a paged cache K and V share the tile's page lookup where
        // the tile lies in one page; a tile of several pages is read
        // through the table (load_tile's pages form).
        std::optional<PagedKeyTile> paged;
        const bool gathered = mem.pageTable && mem.pageSize < blockN;
        if (mem.pageTable && !gathered)
          paged = pagedKeyTile(lb, mem, batch, col, seqK);
        auto loadKeys = [&](Value source) -> Value {
          if (gathered)
            return LoadTileOp::create(lb, kvTileType, source,
                                      ValueRange{batch, kvHead, col},
                                      /*grouped=*/false, mem.pageTable, seqK);
          if (paged)
            return loadPagedKeys(lb, kvTileType, source, *paged, kvHead);
          return LoadTileOp::create(lb, kvTileType, source,
                                    ValueRange{batch, kvHead, col});
        };
        Value k = loadKeys(mem.k);
        Value v = loadKeys(mem.v);
        Value scores = DotOp::create(lb, q, k, scoreInit, /*transpose_b=*/true);
        if (mods)
          scores = buildModScores(lb,
                                  {op.getScoreMod(), op.getMaskMod(),
                                   op.getCaptures(), op.getEffectiveScale(),
                                   op.getKeyRangesAttr()},
                                  scores, modsAt.at(col));
        auto masked = MaskOp::create(lb, scores, row, col, seqQ, seqK, causal);
        masked.setGroupedRows(mem.grouped());
        auto update =
            SoftmaxUpdateOp::create(lb, masked, carried[1], carried[2], scale);
        Value rescaled = RescaleOp::create(lb, carried[0], update.getAlpha());
        Value p = arith::TruncFOp::create(lb, pType, update.getP());
        Value acc = DotOp::create(lb, p, v, rescaled, /*transpose_b=*/false);
        Value newMax = update.getNewMax(), newSum = update.getNewSum();
        scf::YieldOp::create(lb, ValueRange{acc, newMax, newSum});
      });

  // A split's output stays f32 and normalised over its own keys; the
  // combine step (buildCombine) weighs the splits and adds the sink.
  if (mem.split) {
    auto finalize =
        FinalizeOp::create(b, TypeRange{accType, rowType}, loop.getResults(),
                           ArrayRef<NamedAttribute>());
    StoreTileOp::create(b, finalize.getOutput(), mem.partialOut,
                        ValueRange{batch, head, row}, /*accumulate=*/false,
                        mem.grouped());
    StoreTileOp::create(b, finalize.getLse(), mem.partialLse,
                        ValueRange{batch, head, row}, /*accumulate=*/false,
                        mem.grouped());
    return;
  }

  // An attention sink joins the softmax's sum once, after the last key.
  FinalizeOp finalize =
      finalizeRows(b, op, loop.getResults(), head, row, mem.groupShape);
  Value out = arith::TruncFOp::create(
      b, RankedTensorType::get({blockM, headDim}, elementType),
      finalize.getOutput());
  StoreTileOp::create(b, out, mem.o, ValueRange{batch, head, row},
                      /*accumulate=*/false, mem.grouped());
  if (mem.lse)
    StoreTileOp::create(b, finalize.getLse(), mem.lse,
                        ValueRange{batch, head, row}, /*accumulate=*/false,
                        mem.grouped());
}

/// A paged cache's table and page size into `mem`; returns batch
/// `batch`'s cached keys, at most its table's pages' worth.
static Value pagedOperands(ImplicitLocOpBuilder &b, AttentionOp op,
                           ProgramOperands &mem, Value batch) {
  mem.pageTable = op.getPageTable();
  mem.pageSize = cast<MemRefType>(op.getK().getType()).getDimSize(2);
  Value length = arith::IndexCastOp::create(
      b, b.getIndexType(),
      memref::LoadOp::create(b, op.getCacheLens(), ValueRange{batch}));
  Value capacity = arith::MulIOp::create(
      b,
      memref::DimOp::create(b, op.getPageTable(),
                            arith::ConstantIndexOp::create(b, 1)),
      arith::ConstantIndexOp::create(b, mem.pageSize));
  Value c0 = arith::ConstantIndexOp::create(b, 0);
  return arith::MinSIOp::create(b, arith::MaxSIOp::create(b, length, c0),
                                capacity);
}

/// This program's split (grid axis 2) and its slices of the scratch into
/// `mem`, their heads grouped as mem's.
static void splitOperands(ImplicitLocOpBuilder &b, AttentionOp op,
                          ProgramOperands &mem) {
  mem.split = ProgramIdOp::create(b, 2);
  mem.splits = memref::DimOp::create(b, op.getPartialOut(), 0);
  mem.partialOut = maybeGroupHeads(
      b, splitSlice(b, op.getPartialOut(), mem.split), mem.groupShape);
  mem.partialLse = maybeGroupHeads(
      b, splitSlice(b, op.getPartialLse(), mem.split), mem.groupShape);
}

/// Emits the body of one program of the grid at `b`'s insertion point.
/// With packed sequences the program's batch index is the sequence: its
/// rows are read from cu_seqlens, the operands viewed as that sequence's
/// rows alone (so rows past its end read as zero and are not written), and
/// a query tile past the sequence's end does nothing.
void buildProgram(ImplicitLocOpBuilder &b, AttentionOp op,
                  const AttentionShape &shape, ConfigAttr config) {
  Value c0 = arith::ConstantIndexOp::create(b, 0);
  Value cBlockM = arith::ConstantIndexOp::create(b, config.getBlockM());
  Value cBlockN = arith::ConstantIndexOp::create(b, config.getBlockN());

  Value queryTile = ProgramIdOp::create(b, 0);
  Value batchHead = ProgramIdOp::create(b, 1);
  // With pack_gqa a program is a (batch, K/V head) and its G query heads'
  // rows together.
  const AttentionShape *groupShape = op.getPackGqa() ? &shape : nullptr;
  Value programHeads = groupShape ? shape.kvHeads : shape.heads;
  Value batch = arith::DivUIOp::create(b, batchHead, programHeads);
  Value head = arith::RemUIOp::create(b, batchHead, programHeads);
  if (!op.isPacked()) {
    Value kvHead =
        groupShape ? head : arith::DivUIOp::create(b, head, shape.groupSize);
    Value row = arith::MulIOp::create(b, queryTile, cBlockM);
    ProgramOperands mem = {maybeGroupHeads(b, op.getQ(), groupShape), op.getK(),
                           op.getV(), maybeGroupHeads(b, op.getO(), groupShape),
                           maybeGroupHeads(b, op.getLse(), groupShape)};
    mem.groupShape = groupShape;
    Value seqK = shape.seqK;
    if (op.isPaged())
      seqK = pagedOperands(b, op, mem, batch);
    if (op.isSplit())
      splitOperands(b, op, mem);
    buildAttention(b, op, mem, batch, batch, head, kvHead, row, shape.seqQ,
                   seqK, c0, cBlockM, cBlockN, config);
    return;
  }
  // Sequence `batch` is rows [cu[batch], cu[batch + 1]) of Q (and of K).
  SequenceRows rowsQ = loadSequenceRows(b, op.getCuSeqlensQ(), batch);
  SequenceRows rowsK = loadSequenceRows(b, op.getCuSeqlensK(), batch);
  Value seqQ = rowsQ.length, seqK = rowsK.length;
  Value kvHead = arith::DivUIOp::create(b, head, shape.groupSize);
  Value row = arith::MulIOp::create(b, queryTile, cBlockM);
  Value inSequence =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, seqQ);
  auto ifOp = scf::IfOp::create(b, inSequence, /*withElseRegion=*/false);
  b.setInsertionPointToStart(ifOp.thenBlock());
  Value kvHeads =
      memref::DimOp::create(b, op.getK(), arith::ConstantIndexOp::create(b, 1));
  ProgramOperands mem = {
      viewSequenceRows(b, op.getQ(), rowsQ, shape.heads),
      viewSequenceRows(b, op.getK(), rowsK, kvHeads),
      viewSequenceRows(b, op.getV(), rowsK, kvHeads),
      viewSequenceRows(b, op.getO(), rowsQ, shape.heads),
      op.getLse() ? viewSequenceRows(b, op.getLse(), rowsQ, shape.heads)
                  : Value()};
  buildAttention(b, op, mem, c0, batch, head, kvHead, row, seqQ, seqK, c0,
                 cBlockM, cBlockN, config);
}

/// Split-KV's combine: the program of query tile `program_id 0` and
/// (batch, head) `program_id 1` folds every split's output and LSE for
/// its rows (flash.merge_split), finalizes them with the sink where there
/// is one, and writes O and LSE.
static void buildCombine(ImplicitLocOpBuilder &b, AttentionOp op,
                         const AttentionShape &shape, ConfigAttr config) {
  int64_t blockM = config.getBlockM();
  int64_t headDim = op.getHeadDim();
  Type f32 = b.getF32Type();
  auto accType = RankedTensorType::get({blockM, headDim}, f32);
  auto rowType = RankedTensorType::get({blockM}, f32);
  Value c0 = arith::ConstantIndexOp::create(b, 0);
  Value c1 = arith::ConstantIndexOp::create(b, 1);
  Value row = arith::MulIOp::create(b, ProgramIdOp::create(b, 0),
                                    arith::ConstantIndexOp::create(b, blockM));
  // With pack_gqa the programs are (batch, K/V head)s, as the splits'.
  const AttentionShape *groupShape = op.getPackGqa() ? &shape : nullptr;
  Value heads = groupShape ? shape.kvHeads : shape.heads;
  Value batchHead = ProgramIdOp::create(b, 1);
  Value batch = arith::DivUIOp::create(b, batchHead, heads);
  Value head = arith::RemUIOp::create(b, batchHead, heads);
  Value splits = memref::DimOp::create(b, op.getPartialOut(), 0);

  auto [accInit, maxInit, sumInit] = onlineSoftmaxStart(b, accType, rowType);
  auto loop = scf::ForOp::create(
      b, c0, splits, c1, ValueRange{accInit, maxInit, sumInit},
      [&](OpBuilder &nested, Location loc, Value split, ValueRange carried) {
        ImplicitLocOpBuilder lb(loc, nested);
        auto load = [&](Type type, Value scratch) -> Value {
          Value slice =
              maybeGroupHeads(lb, splitSlice(lb, scratch, split), groupShape);
          return LoadTileOp::create(lb, type, slice,
                                    ValueRange{batch, head, row},
                                    groupShape != nullptr);
        };
        Value partial = load(accType, op.getPartialOut());
        Value partialLse = load(rowType, op.getPartialLse());
        auto merge = MergeSplitOp::create(lb, partial, partialLse, carried[0],
                                          carried[1], carried[2]);
        scf::YieldOp::create(lb, merge.getResults());
      });
  FinalizeOp finalize =
      finalizeRows(b, op, loop.getResults(), head, row, groupShape);
  Type elementType = cast<MemRefType>(op.getO().getType()).getElementType();
  Value out = arith::TruncFOp::create(
      b, RankedTensorType::get({blockM, headDim}, elementType),
      finalize.getOutput());
  StoreTileOp::create(b, out, maybeGroupHeads(b, op.getO(), groupShape),
                      ValueRange{batch, head, row}, /*accumulate=*/false,
                      groupShape != nullptr);
  if (Value lse = op.getLse())
    StoreTileOp::create(b, finalize.getLse(),
                        maybeGroupHeads(b, lse, groupShape),
                        ValueRange{batch, head, row}, /*accumulate=*/false,
                        groupShape != nullptr);
}

struct FlashTilePass : public mlir::flash::impl::FlashTileBase<FlashTilePass> {
  using Base::Base;
  // The switch options below are members of this class, not of Passes.td's
  // base, and options cannot be copied: a clone builds them afresh and
  // clonePass copies their values.
  FlashTilePass() = default;
  FlashTilePass(const FlashTilePass &other) : Base(other) {}
  FlashTilePass(const FlashTileOptions &options,
                const flashc::ScheduleOverrides &switches)
      : Base(options) {
    size_t i = 0;
#define FLASH_SCHEDULE_SWITCH(Name, field, key, flag, dflt, tune, label, summary)     \
  override##Name = switches.values[i++];
#include "flashc/Config/ScheduleSwitches.def"
  }

  // One option per schedule switch (ScheduleSwitches.def).
#define FLASH_SCHEDULE_SWITCH(Name, field, key, flag, dflt, tune, label, summary)     \
  Option<int> override##Name{                                                  \
      *this, flag,                                                             \
      llvm::cl::desc(summary ": 1 on, 0 off (-1: from the op's config or "     \
                             "default)"),                                      \
      llvm::cl::init(-1)};
#include "flashc/Config/ScheduleSwitches.def"

  flashc::ScheduleOverrides overrides() const {
    flashc::ScheduleOverrides result;
    size_t i = 0;
#define FLASH_SCHEDULE_SWITCH(Name, field, key, flag, dflt, tune, label, summary)     \
  result.values[i++] = override##Name;
#include "flashc/Config/ScheduleSwitches.def"
    return result;
  }

  LogicalResult initialize(MLIRContext *context) override {
    // A schedule switch is 1, 0 or unset (-1); anything else is a typo, not
    // "on".
    for (auto [info, value] :
         llvm::zip_equal(flashc::scheduleSwitchInfos(), overrides().values))
      if (value < -1 || value > 1)
        return emitError(UnknownLoc::get(context))
               << "-flash-tile: " << info.flag
               << " takes 1 (on) or 0 (off), got " << value;
    return success();
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    SmallVector<Operation *> ops;
    func.walk([&](Operation *op) {
      if (isa<AttentionOp, AttentionBackwardOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      if (auto forward = dyn_cast<AttentionOp>(op)) {
        FailureOr<ConfigAttr> config =
            chooseConfig(op, forward.getConfigAttr(), forward.getHeadDim());
        if (failed(config))
          return signalPassFailure();
        func->setAttr("flash.config", *config);
        if (forward.getPackGqa()) {
          // A program's rows run through several heads: the GPU lowering
          // refuses this mark by name.
          func->setAttr("flash.pack_gqa", UnitAttr::get(op->getContext()));
        }
        if (forward.isSplit()) {
          // Split-KV's two grids are not one GPU kernel; the GPU lowering
          // refuses this mark by name.
          func->setAttr("flash.split_kv", UnitAttr::get(op->getContext()));
        }
        if (forward.isPaged()) {
          // The GPU lowering reads the tile program's K and V as dense
          // tensors; it refuses this mark by name.
          func->setAttr("flash.paged", UnitAttr::get(op->getContext()));
          int64_t pageSize =
              cast<MemRefType>(forward.getK().getType()).getDimSize(2);
          int64_t blockN = config->getBlockN();
          if (pageSize % blockN != 0 && blockN % pageSize != 0) {
            op->emitOpError("-flash-tile: block_n ")
                << blockN << " and the page size " << pageSize
                << " of the paged cache divide neither the other (a key "
                   "tile lies in one page or spans whole pages); choose "
                   "another block_n in the config";
            return signalPassFailure();
          }
        }
        tile(forward, *config);
        continue;
      }
      auto backward = cast<AttentionBackwardOp>(op);
      // The backward's tiles are 64 x 64 unless the op says otherwise: a
      // key tile is one warpgroup's M in the GPU kernel.
      ConfigAttr base = backward.getConfigAttr();
      if (!base)
        base = ConfigAttr::get(op->getContext(), /*block_m=*/64,
                               /*block_n=*/64, /*stages=*/2,
                               /*warpgroups=*/1, flashc::ScheduleSwitches());
      FailureOr<ConfigAttr> config =
          chooseConfig(op, base, backward.getHeadDim());
      if (failed(config))
        return signalPassFailure();
      func->setAttr("flash.config", *config);
      // The dQ accumulation order is the GPU kernel's business; the tile
      // program's grids say nothing of it.
      if (backward.getDeterministic())
        func->setAttr("flash.deterministic", UnitAttr::get(op->getContext()));
      tileAttentionBackward(backward, *config);
    }
  }

  /// The op's config `base` (or the default for `headDim`), with the pass
  /// options on top.
  FailureOr<ConfigAttr> chooseConfig(Operation *op, ConfigAttr base,
                                     int64_t headDim) {
    if (!base)
      base = ConfigAttr::getDefault(op->getContext(), headDim);
    flashc::ScheduleOverrides switches = overrides();
    if (blockM == 0 && blockN == 0 && stages == 0 && warpgroups == 0 &&
        !switches.any())
      return base;
    auto emitError = [&] {
      return op->emitOpError("with -flash-tile options: ");
    };
    auto pick = [](int64_t override, int64_t original) {
      return override ? override : original;
    };
    ConfigAttr config = ConfigAttr::getChecked(
        emitError, op->getContext(), pick(blockM, base.getBlockM()),
        pick(blockN, base.getBlockN()), pick(stages, base.getStages()),
        pick(warpgroups, base.getWarpgroups()),
        switches.applyTo(base.getSwitches()));
    if (!config)
      return failure();
    return config;
  }

  void tile(AttentionOp op, ConfigAttr config) {
    ImplicitLocOpBuilder b(op.getLoc(), op);
    Value c0 = arith::ConstantIndexOp::create(b, 0);
    Value c1 = arith::ConstantIndexOp::create(b, 1);
    Value c2 = arith::ConstantIndexOp::create(b, 2);
    Value batch = memref::DimOp::create(b, op.getQ(), c0);
    AttentionShape shape;
    shape.heads = memref::DimOp::create(b, op.getQ(), c1);
    shape.groupSize = arith::DivUIOp::create(
        b, shape.heads, memref::DimOp::create(b, op.getK(), c1));
    shape.seqQ = memref::DimOp::create(b, op.getQ(), c2);
    shape.seqK = memref::DimOp::create(b, op.getK(), c2);
    shape.kvHeads = memref::DimOp::create(b, op.getK(), c1);
    int64_t staticHeads = cast<MemRefType>(op.getQ().getType()).getDimSize(1);
    int64_t staticKvHeads = cast<MemRefType>(op.getK().getType()).getDimSize(1);
    if (!ShapedType::isDynamic(staticHeads) &&
        !ShapedType::isDynamic(staticKvHeads))
      shape.staticGroupSize = staticHeads / staticKvHeads;
    // Packed sequences: one program row per sequence and head, as many
    // query tiles as the longest sequence needs.
    Value longestQ = shape.seqQ;
    if (op.isPacked()) {
      batch = arith::SubIOp::create(
          b, memref::DimOp::create(b, op.getCuSeqlensQ(), c0), c1);
      longestQ = op.getMaxSeqlenQ();
    }
    // GQA packing: one program row per (batch, K/V head), whose G heads'
    // queries are its rows.
    Value rows = longestQ, programHeads = shape.heads;
    if (op.getPackGqa()) {
      rows = arith::MulIOp::create(b, longestQ, shape.groupSize);
      programHeads = shape.kvHeads;
    }
    Value queryTiles = arith::CeilDivUIOp::create(
        b, rows, arith::ConstantIndexOp::create(b, config.getBlockM()));
    Value batchHeads = arith::MulIOp::create(b, batch, programHeads);

    SmallVector<Value, 3> sizes = {queryTiles, batchHeads};
    // Split-KV: a third axis over the splits, then a grid that combines them.
    if (op.isSplit())
      sizes.push_back(memref::DimOp::create(b, op.getPartialOut(), c0));
    auto grid = GridOp::create(b, sizes);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&grid.getBody().front());
      buildProgram(b, op, shape, config);
    }
    if (op.isSplit()) {
      auto combine = GridOp::create(b, ValueRange{queryTiles, batchHeads});
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&combine.getBody().front());
      buildCombine(b, op, shape, config);
    }
    op.erase();
  }
};

} // namespace

std::unique_ptr<Pass>
mlir::flash::createFlashTile(const FlashTileOptions &options,
                             const flashc::ScheduleOverrides &switches) {
  return std::make_unique<FlashTilePass>(options, switches);
}

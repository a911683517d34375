//===- FlashOps.cpp - flash dialect operations ----------------------------===//
//
// Verifiers of the flash ops. Each message names the operand and, where it
// applies, the dimension and both sizes, so a user can fix the IR from the
// diagnostic alone.
//
//===----------------------------------------------------------------------===//

#include "Flash/FlashOps.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::flash;

namespace {
/// Names of the four dimensions of an attention tensor, for diagnostics.
constexpr const char *kDimNames[] = {"batch", "heads", "seq", "head dim"};
constexpr int64_t kHeadDimIndex = 3;
constexpr int64_t kSeqIndex = 2;
constexpr int64_t kHeadsIndex = 1;
} // namespace

/// Prints a dimension size as MLIR writes it: `?` when dynamic.
static std::string formatDim(int64_t size) {
  return ShapedType::isDynamic(size) ? "?" : std::to_string(size);
}

/// Two sizes conflict only when both are known and differ.
static bool dimsConflict(int64_t lhs, int64_t rhs) {
  return !ShapedType::isDynamic(lhs) && !ShapedType::isDynamic(rhs) &&
         lhs != rhs;
}

static bool isSupportedElementType(Type type) {
  return type.isBF16() || type.isF16();
}

/// Checks that `type` is a static tile of `rank` dimensions.
static LogicalResult verifyTile(Operation *op, StringRef name,
                                RankedTensorType type, int64_t rank) {
  if (type.getRank() != rank)
    return op->emitOpError() << "'" << name << "' must be a rank-" << rank
                             << " tile, got rank " << type.getRank();
  if (!type.hasStaticShape())
    return op->emitOpError()
           << "'" << name << "' must be a tile of static shape, got " << type;
  return success();
}

/// Checks that `type` is a static f32 tile of `rank` dimensions.
static LogicalResult verifyF32Tile(Operation *op, StringRef name,
                                   RankedTensorType type, int64_t rank) {
  if (failed(verifyTile(op, name, type, rank)))
    return failure();
  if (!type.getElementType().isF32())
    return op->emitOpError()
           << "'" << name << "' must have element type f32, got "
           << type.getElementType();
  return success();
}

/// Checks a row vector (max, sum, alpha) against the rows of a 2-D tile.
static LogicalResult verifyRowVector(Operation *op, StringRef name,
                                     RankedTensorType rowType,
                                     StringRef tileName,
                                     RankedTensorType tileType) {
  if (failed(verifyF32Tile(op, name, rowType, 1)))
    return failure();
  if (rowType.getDimSize(0) != tileType.getDimSize(0))
    return op->emitOpError()
           << "'" << name << "' has " << rowType.getDimSize(0) << " rows but '"
           << tileName << "' has " << tileType.getDimSize(0);
  return success();
}

static LogicalResult verifyPositiveFiniteScale(Operation *op, float scale) {
  if (!std::isfinite(scale) || scale <= 0.0f)
    return op->emitOpError()
           << "scale must be a positive finite number, got " << scale;
  return success();
}

/// Checks the `[batch, head, row]` index list of a tile load or store.
static LogicalResult verifyTileIndices(Operation *op, ValueRange indices) {
  if (indices.size() != 3)
    return op->emitOpError()
           << "expects 3 indices [batch, head, row], got " << indices.size();
  return success();
}

namespace {
/// Whether an attention operand is shaped as Q (H_q heads, seq_q rows) or
/// as K (H_kv heads, seq_k rows).
enum class Side { Query, Key };

struct AttentionOperand {
  StringRef name;
  MemRefType type;
  Side side;
};
} // namespace

/// The checks flash.attention and flash.attention_backward share on their
/// rank-4 operands, `operands[0]` being q and `operands[1]` k: one element
/// type and a static head dim for all; batch and head dim as q's; heads
/// and seq as q's or, on the key side, as k's; H_q a multiple of H_kv.
/// With `pagedKeys` the key side's first dimension counts pages, not
/// batches: it is checked against k's.
static LogicalResult
verifyAttentionOperands(Operation *op, ArrayRef<AttentionOperand> operands,
                        bool pagedKeys = false) {
  for (const AttentionOperand &operand : operands) {
    if (operand.type.getRank() != 4)
      return op->emitOpError() << "'" << operand.name
                               << "' must be a rank-4 memref (batch x heads x "
                                  "seq x head dim), got rank "
                               << operand.type.getRank();
  }
  const AttentionOperand &q = operands[0], &k = operands[1];
  Type elementType = q.type.getElementType();
  if (!isSupportedElementType(elementType))
    return op->emitOpError() << "'q' has element type " << elementType
                             << "; supported element types are bf16 and f16";
  for (const AttentionOperand &operand : llvm::drop_begin(operands)) {
    if (operand.type.getElementType() != elementType)
      return op->emitOpError()
             << "element type mismatch: '" << operand.name << "' has "
             << operand.type.getElementType() << " but 'q' has " << elementType;
  }

  int64_t headDim = q.type.getDimSize(kHeadDimIndex);
  if (ShapedType::isDynamic(headDim))
    return op->emitOpError() << "head dim of 'q' must be static";
  if (headDim < 16 || headDim > 256 || headDim % 16 != 0)
    return op->emitOpError() << "head dim " << headDim
                             << " is not supported: it must be a multiple of "
                                "16 between 16 and 256";

  // Batch and head dim are shared by all, heads by the query side and by
  // the key side (grouped-query attention: each group of H_q / H_kv query
  // heads reads one K/V head).
  auto sideOf =
      [&](const AttentionOperand &operand) -> const AttentionOperand & {
    return operand.side == Side::Key ? k : q;
  };
  for (const AttentionOperand &operand : llvm::drop_begin(operands)) {
    for (int64_t dim : {0, 1, 3}) {
      const AttentionOperand &like =
          dim == kHeadsIndex || (dim == 0 && pagedKeys) ? sideOf(operand) : q;
      if (&like == &operand)
        continue;
      int64_t size = operand.type.getDimSize(dim);
      int64_t expected = like.type.getDimSize(dim);
      if (dimsConflict(size, expected))
        return op->emitOpError()
               << kDimNames[dim] << " mismatch: '" << operand.name << "' has "
               << formatDim(size) << " but '" << like.name << "' has "
               << formatDim(expected);
    }
  }
  int64_t queryHeads = q.type.getDimSize(kHeadsIndex);
  int64_t kvHeads = k.type.getDimSize(kHeadsIndex);
  if (!ShapedType::isDynamic(queryHeads) && !ShapedType::isDynamic(kvHeads) &&
      (kvHeads == 0 || queryHeads % kvHeads != 0))
    return op->emitOpError()
           << "'q' has " << queryHeads << " heads, not a "
           << "multiple of the " << kvHeads << " K/V heads of "
           << "'k' (grouped-query attention needs H_q = G * H_kv)";
  for (const AttentionOperand &operand : llvm::drop_begin(operands)) {
    const AttentionOperand &like = sideOf(operand);
    if (&like != &operand && dimsConflict(operand.type.getDimSize(kSeqIndex),
                                          like.type.getDimSize(kSeqIndex)))
      return op->emitOpError()
             << "seq mismatch: '" << operand.name << "' has "
             << operand.type.getDimSize(kSeqIndex) << " rows but '" << like.name
             << "' has " << like.type.getDimSize(kSeqIndex);
  }
  return success();
}

/// The row log-sum-exp: f32, batch x H_q x seq_q as q.
static LogicalResult verifyLse(Operation *op, Value lse, MemRefType qType) {
  auto lseType = cast<MemRefType>(lse.getType());
  if (lseType.getRank() != 3)
    return op->emitOpError() << "'lse' must be a rank-3 memref (batch x heads "
                                "x seq), got rank "
                             << lseType.getRank();
  if (!lseType.getElementType().isF32())
    return op->emitOpError() << "'lse' must have element type f32, got "
                             << lseType.getElementType();
  for (int64_t dim : {0, 1, 2}) {
    if (dimsConflict(lseType.getDimSize(dim), qType.getDimSize(dim)))
      return op->emitOpError() << kDimNames[dim] << " mismatch: 'lse' has "
                               << lseType.getDimSize(dim) << " but 'q' has "
                               << qType.getDimSize(dim);
  }
  return success();
}

/// Packed sequences: all of `bounds` (cu_seqlens_q, cu_seqlens_k and the
/// maximum lengths, named by `together`) or none; rank-1 i32 prefix sums of
/// one length; every operand a batch of 1.
static LogicalResult verifyPacked(Operation *op, Value cuSeqlensQ,
                                  Value cuSeqlensK, ArrayRef<Value> maxima,
                                  StringRef together,
                                  ArrayRef<AttentionOperand> operands) {
  bool any = cuSeqlensQ || cuSeqlensK ||
             llvm::any_of(maxima, [](Value v) { return bool(v); });
  if (!any)
    return success();
  if (!cuSeqlensQ || !cuSeqlensK ||
      llvm::any_of(maxima, [](Value v) { return !v; }))
    return op->emitOpError()
           << "packed sequences take " << together << " together";
  for (auto [name, value] :
       {std::pair<StringRef, Value>{"cu_seqlens_q", cuSeqlensQ},
        {"cu_seqlens_k", cuSeqlensK}}) {
    auto type = cast<MemRefType>(value.getType());
    if (type.getRank() != 1 || !type.getElementType().isSignlessInteger(32))
      return op->emitOpError() << "'" << name << "' must be a rank-1 memref "
                               << "of i32 (the prefix sums of the sequence "
                               << "lengths), got " << type;
  }
  if (dimsConflict(cast<MemRefType>(cuSeqlensQ.getType()).getDimSize(0),
                   cast<MemRefType>(cuSeqlensK.getType()).getDimSize(0)))
    return op->emitOpError("'cu_seqlens_q' and 'cu_seqlens_k' must have one "
                           "entry per sequence, plus one, each");
  for (const AttentionOperand &operand : operands)
    if (dimsConflict(operand.type.getDimSize(0), 1))
      return op->emitOpError()
             << "packed sequences lie along the seq "
             << "dimension of a batch of 1: '" << operand.name << "' has batch "
             << formatDim(operand.type.getDimSize(0));
  return success();
}

/// A paged K/V cache: the page table and the lengths together, rank-2 and
/// rank-1 i32 with q's batch; K's and V's page size (their seq dimension)
/// static; not with packed sequences.
static LogicalResult verifyPaged(Operation *op, Value pageTable,
                                 Value cacheLens, bool packed,
                                 ArrayRef<AttentionOperand> operands) {
  if (!pageTable && !cacheLens)
    return success();
  if (!pageTable || !cacheLens)
    return op->emitOpError("a paged cache takes page_table and cache_lens "
                           "together");
  if (packed)
    return op->emitOpError("a paged cache and packed sequences do not go "
                           "together (each batch's keys are its pages)");
  auto tableType = cast<MemRefType>(pageTable.getType());
  auto lensType = cast<MemRefType>(cacheLens.getType());
  if (tableType.getRank() != 2 || !tableType.getElementType().isInteger(32))
    return op->emitOpError() << "'page_table' must be a rank-2 memref of i32 "
                                "(batch x max_pages), got "
                             << tableType;
  if (lensType.getRank() != 1 || !lensType.getElementType().isInteger(32))
    return op->emitOpError() << "'cache_lens' must be a rank-1 memref of i32 "
                                "(one length per batch), got "
                             << lensType;
  int64_t batch = operands[0].type.getDimSize(0);
  for (auto [name, size] :
       {std::pair<StringRef, int64_t>{"page_table", tableType.getDimSize(0)},
        {"cache_lens", lensType.getDimSize(0)}})
    if (dimsConflict(size, batch))
      return op->emitOpError()
             << "batch mismatch: '" << name << "' has " << formatDim(size)
             << " but 'q' has " << formatDim(batch);
  for (const AttentionOperand &operand : operands)
    if (operand.side == Side::Key &&
        ShapedType::isDynamic(operand.type.getDimSize(kSeqIndex)))
      return op->emitOpError() << "the page size (the seq dimension of '"
                               << operand.name << "') must be static";
  return success();
}

/// Split-KV's scratch: f32 `partial_out` (S x batch x H_q x seq_q x D)
/// and `partial_lse` (S x batch x H_q x seq_q) with q's batch, heads,
/// rows and head dim and one S; not with packed sequences.
static LogicalResult verifySplits(Operation *op, Value partialOut,
                                  Value partialLse, bool packed,
                                  MemRefType qType) {
  if (!partialOut)
    return success();
  if (packed)
    return op->emitOpError("split-KV and packed sequences do not go "
                           "together yet");
  auto outType = cast<MemRefType>(partialOut.getType());
  auto lseType = cast<MemRefType>(partialLse.getType());
  if (outType.getRank() != 5 || !outType.getElementType().isF32())
    return op->emitOpError()
           << "'partial_out' must be a rank-5 memref of f32 (splits x batch "
              "x heads x seq x head dim), got "
           << outType;
  if (lseType.getRank() != 4 || !lseType.getElementType().isF32())
    return op->emitOpError() << "'partial_lse' must be a rank-4 memref of f32 "
                                "(splits x batch x heads x seq), got "
                             << lseType;
  if (dimsConflict(outType.getDimSize(0), lseType.getDimSize(0)))
    return op->emitOpError()
           << "splits mismatch: 'partial_out' has "
           << formatDim(outType.getDimSize(0)) << " but 'partial_lse' has "
           << formatDim(lseType.getDimSize(0));
  for (auto [name, type] :
       {std::pair<StringRef, MemRefType>{"partial_out", outType},
        {"partial_lse", lseType}})
    for (int64_t dim = 0; dim < type.getRank() - 1; ++dim) {
      int64_t size = type.getDimSize(dim + 1);
      int64_t expected = qType.getDimSize(dim);
      if (dimsConflict(size, expected))
        return op->emitOpError()
               << kDimNames[dim] << " mismatch: '" << name << "' has "
               << formatDim(size) << " but 'q' has " << formatDim(expected);
    }
  return success();
}

/// An attention sink operand (`sinks`, or the backward's `dsinks`): a
/// rank-1 f32 memref of one logit per query head.
static LogicalResult verifySinks(Operation *op, StringRef name, Value sinks,
                                 MemRefType qType) {
  auto type = cast<MemRefType>(sinks.getType());
  if (type.getRank() != 1 || !type.getElementType().isF32())
    return op->emitOpError() << "'" << name << "' must be a rank-1 memref of "
                             << "f32 (one logit per query head), got " << type;
  if (dimsConflict(type.getDimSize(0), qType.getDimSize(kHeadsIndex)))
    return op->emitOpError() << "heads mismatch: '" << name << "' has "
                             << type.getDimSize(0) << " logits but 'q' has "
                             << qType.getDimSize(kHeadsIndex) << " heads";
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionOp
//===----------------------------------------------------------------------===//

int64_t AttentionOp::getHeadDim() {
  return cast<MemRefType>(getQ().getType()).getDimSize(kHeadDimIndex);
}

float AttentionOp::getEffectiveScale() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToFloat();
  return 1.0f / std::sqrt(static_cast<float>(getHeadDim()));
}

//===----------------------------------------------------------------------===//
// Score and mask mods
//===----------------------------------------------------------------------===//

/// Checks one mod region: one block whose arguments are `leading` then the
/// captures' types, a body of arith/math ops and memref.load of a capture,
/// nothing from outside the region, ended by flash.yield of one `result`.
static LogicalResult verifyModRegion(Operation *op, Region &region,
                                     StringRef name, ArrayRef<Type> leading,
                                     StringRef leadingText, Type result,
                                     ValueRange captures) {
  if (region.empty())
    return success();
  if (!region.hasOneBlock())
    return op->emitOpError() << "'" << name << "' must have one block";
  Block &block = region.front();
  SmallVector<Type> expected(leading);
  llvm::append_range(expected, captures.getTypes());
  if (block.getArgumentTypes() != ArrayRef<Type>(expected)) {
    std::string want = leadingText.str(), got;
    llvm::raw_string_ostream wantOs(want), gotOs(got);
    for (Type type : captures.getTypes())
      wantOs << ", " << type;
    llvm::interleaveComma(block.getArgumentTypes(), gotOs);
    return op->emitOpError()
           << "'" << name << "' must take (" << want << ") ("
           << (captures.empty() ? "no captures are given"
                                : "the fixed arguments, then the captures")
           << "), got (" << got << ")";
  }
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  if (!yield)
    return op->emitOpError() << "'" << name << "' must end in flash.yield";
  if (yield.getValues().size() != 1 ||
      yield.getValues().front().getType() != result)
    return yield.emitOpError()
           << "in '" << name << "' must yield one " << result;
  for (Operation &inner : block.without_terminator()) {
    StringRef dialect = inner.getName().getDialectNamespace();
    if (auto load = dyn_cast<memref::LoadOp>(inner)) {
      auto arg = dyn_cast<BlockArgument>(load.getMemRef());
      if (!arg || arg.getOwner() != &block ||
          arg.getArgNumber() < leading.size())
        return load.emitOpError()
               << "in '" << name << "' may read only the region's captures";
    } else if (dialect != "arith" && dialect != "math") {
      return inner.emitOpError()
             << "cannot be lowered in '" << name
             << "': its body may hold only arith and math ops and "
                "memref.load of a capture";
    }
    if (inner.getNumRegions() != 0)
      return inner.emitOpError() << "in '" << name << "' may not have regions";
    for (Value operand : inner.getOperands())
      if (operand.getParentRegion() != &region &&
          !region.isAncestor(operand.getParentRegion()))
        return inner.emitOpError()
               << "in '" << name
               << "' uses a value defined outside the region (pass memrefs "
                  "as captures)";
    for (Type type : inner.getResultTypes())
      if (!type.isIntOrIndexOrFloat())
        return inner.emitOpError()
               << "in '" << name << "' must give scalars, got " << type;
  }
  for (Value operand : yield.getOperands())
    if (operand.getParentRegion() != &region)
      return yield.emitOpError()
             << "in '" << name << "' yields a value defined outside it";
  return success();
}

LogicalResult mlir::flash::verifyMods(Operation *op, Region &scoreMod,
                                      Region &maskMod, ValueRange captures) {
  for (auto [i, capture] : llvm::enumerate(captures)) {
    auto type = cast<MemRefType>(capture.getType());
    if (!type.getElementType().isIntOrIndexOrFloat())
      return op->emitOpError() << "capture #" << i
                               << " must be a memref of scalars, got " << type;
  }
  if (!captures.empty() && scoreMod.empty() && maskMod.empty())
    return op->emitOpError()
           << "has captures but no score_mod or mask_mod reads them";
  Builder b(op->getContext());
  Type index = b.getIndexType();
  if (failed(verifyModRegion(op, scoreMod, "score_mod",
                             {b.getF32Type(), index, index, index, index},
                             "f32, index, index, index, index", b.getF32Type(),
                             captures)))
    return failure();
  return verifyModRegion(op, maskMod, "mask_mod", {index, index, index, index},
                         "index, index, index, index", b.getI1Type(), captures);
}

Value mlir::flash::inlineModRegion(OpBuilder &b, Region &region,
                                   ValueRange args) {
  Block &block = region.front();
  IRMapping mapping;
  mapping.map(block.getArguments(), args);
  for (Operation &op : block.without_terminator())
    b.clone(op, mapping);
  return mapping.lookup(cast<YieldOp>(block.getTerminator()).getValues()[0]);
}

/// `key_ranges` = [c, rows]: capture c an i32 [B, blocks, 2 or 4] table.
static LogicalResult verifyKeyRanges(Operation *op,
                                     std::optional<ArrayRef<int64_t>> ranges,
                                     ValueRange captures) {
  if (!ranges)
    return success();
  if (ranges->size() != 2 || (*ranges)[1] < 1)
    return op->emitOpError("'key_ranges' must be [capture, rows] with rows "
                           ">= 1");
  int64_t index = (*ranges)[0];
  if (index < 0 || index >= int64_t(captures.size()))
    return op->emitOpError("'key_ranges' names capture #")
           << index << " but there are " << captures.size();
  auto type = cast<MemRefType>(captures[index].getType());
  if (type.getRank() != 3 ||
      (type.getDimSize(2) != 2 && type.getDimSize(2) != 4) ||
      !type.getElementType().isInteger(32))
    return op->emitOpError("'key_ranges' capture #")
           << index
           << " must be an i32 memref of [batch, query blocks, 2 or 4], got "
           << type;
  return success();
}

LogicalResult AttentionOp::verifyRegions() {
  if (failed(verifyMods(*this, getScoreMod(), getMaskMod(), getCaptures())))
    return failure();
  return verifyKeyRanges(*this, getKeyRanges(), getCaptures());
}

/// The backward's score mod must be differentiable op by op.
static LogicalResult verifyDifferentiable(Region &scoreMod) {
  if (Operation *op = findOpWithoutDerivative(scoreMod))
    return op->emitOpError()
           << "in 'score_mod' has no derivative the compiler can form for "
              "the backward pass (supported: arith's float arithmetic, "
              "min/max, select and casts; math's tanh, exp, exp2, expm1, "
              "log, log2, log1p, sqrt, rsqrt, absf, sin, cos, fma, atan, "
              "powf, floor, ceil, round, trunc)";
  return success();
}

LogicalResult AttentionBackwardOp::verifyRegions() {
  if (failed(verifyMods(*this, getScoreMod(), getMaskMod(), getCaptures())) ||
      failed(verifyKeyRanges(*this, getKeyRanges(), getCaptures())))
    return failure();
  return verifyDifferentiable(getScoreMod());
}

LogicalResult ModScoresGradOp::verifyRegions() {
  Region none;
  if (failed(verifyMods(*this, getScoreMod(), none, getCaptures())))
    return failure();
  return verifyDifferentiable(getScoreMod());
}

LogicalResult ModScoresGradOp::verify() {
  return verifyF32Tile(*this, "scores",
                       cast<RankedTensorType>(getScores().getType()), 2);
}

LogicalResult SinkGradOp::verify() {
  auto lse = cast<RankedTensorType>(getLse().getType());
  if (failed(verifyF32Tile(*this, "lse", lse, 1)))
    return failure();
  return verifyRowVector(
      *this, "delta", cast<RankedTensorType>(getDelta().getType()), "lse", lse);
}

LogicalResult ModScoresOp::verifyRegions() {
  if (failed(verifyMods(*this, getScoreMod(), getMaskMod(), getCaptures())))
    return failure();
  return verifyKeyRanges(*this, getKeyRanges(), getCaptures());
}

LogicalResult ModScoresOp::verify() {
  if (static_cast<bool>(getRowsPerHead()) != static_cast<bool>(getGroupSize()))
    return emitOpError("takes rows_per_head and group_size together");
  return verifyF32Tile(*this, "scores",
                       cast<RankedTensorType>(getScores().getType()), 2);
}

LogicalResult AttentionOp::verify() {
  auto typeOf = [](Value v) { return cast<MemRefType>(v.getType()); };
  SmallVector<AttentionOperand> operands = {{"q", typeOf(getQ()), Side::Query},
                                            {"k", typeOf(getK()), Side::Key},
                                            {"v", typeOf(getV()), Side::Key},
                                            {"o", typeOf(getO()), Side::Query}};
  if (failed(verifyAttentionOperands(*this, operands, isPaged())))
    return failure();
  if (Value lse = getLse())
    if (failed(verifyLse(*this, lse, operands[0].type)))
      return failure();
  if (failed(verifyPacked(
          *this, getCuSeqlensQ(), getCuSeqlensK(), {getMaxSeqlenQ()},
          "cu_seqlens_q, cu_seqlens_k and max_seqlen_q", operands)) ||
      failed(verifyPaged(*this, getPageTable(), getCacheLens(), isPacked(),
                         operands)) ||
      failed(verifySplits(*this, getPartialOut(), getPartialLse(), isPacked(),
                          operands[0].type)))
    return failure();
  if (Value sinks = getSinks())
    if (failed(verifySinks(*this, "sinks", sinks, operands[0].type)))
      return failure();
  if (getPackGqa() && isPacked())
    return emitOpError("pack_gqa does not go with packed sequences yet");
  if (std::optional<APFloat> scale = getScale())
    return verifyPositiveFiniteScale(*this, scale->convertToFloat());
  return success();
}

//===----------------------------------------------------------------------===//
// AttentionBackwardOp
//===----------------------------------------------------------------------===//

int64_t AttentionBackwardOp::getHeadDim() {
  return cast<MemRefType>(getQ().getType()).getDimSize(kHeadDimIndex);
}

float AttentionBackwardOp::getEffectiveScale() {
  if (std::optional<APFloat> scale = getScale())
    return scale->convertToFloat();
  return 1.0f / std::sqrt(static_cast<float>(getHeadDim()));
}

LogicalResult AttentionBackwardOp::verify() {
  auto typeOf = [](Value v) { return cast<MemRefType>(v.getType()); };
  SmallVector<AttentionOperand> operands = {
      {"q", typeOf(getQ()), Side::Query},
      {"k", typeOf(getK()), Side::Key},
      {"v", typeOf(getV()), Side::Key},
      {"o", typeOf(getO()), Side::Query},
      {"do", typeOf(getDO()), Side::Query},
      {"dq", typeOf(getDQ()), Side::Query},
      {"dk", typeOf(getDK()), Side::Key},
      {"dv", typeOf(getDV()), Side::Key}};
  if (failed(verifyAttentionOperands(*this, operands)) ||
      failed(verifyLse(*this, getLse(), operands[0].type)) ||
      failed(verifyPacked(
          *this, getCuSeqlensQ(), getCuSeqlensK(),
          {getMaxSeqlenQ(), getMaxSeqlenK()},
          "cu_seqlens_q, cu_seqlens_k, max_seqlen_q and max_seqlen_k",
          operands)))
    return failure();
  if (static_cast<bool>(getSinks()) != static_cast<bool>(getDSinks()))
    return emitOpError("takes 'sinks' and 'dsinks' together");
  if (Value sinks = getSinks())
    if (failed(verifySinks(*this, "sinks", sinks, operands[0].type)) ||
        failed(verifySinks(*this, "dsinks", getDSinks(), operands[0].type)))
      return failure();
  if (std::optional<APFloat> scale = getScale())
    return verifyPositiveFiniteScale(*this, scale->convertToFloat());
  return success();
}

//===----------------------------------------------------------------------===//
// ProgramIdOp
//===----------------------------------------------------------------------===//

LogicalResult ProgramIdOp::verify() {
  int64_t axis = getAxis();
  if (axis < 0 || axis > 2)
    return emitOpError() << "axis must be 0, 1 or 2, got " << axis;
  auto grid = (*this)->getParentOfType<GridOp>();
  if (grid && axis >= static_cast<int64_t>(grid.getSizes().size()))
    return emitOpError() << "axis " << axis << " is outside the enclosing "
                         << grid.getSizes().size() << "-d flash.grid";
  return success();
}

//===----------------------------------------------------------------------===//
// GridOp
//===----------------------------------------------------------------------===//

void GridOp::build(OpBuilder &builder, OperationState &state,
                   ValueRange sizes) {
  state.addOperands(sizes);
  Region *body = state.addRegion();
  body->push_back(new Block());
}

LogicalResult GridOp::verify() {
  size_t rank = getSizes().size();
  if (rank < 1 || rank > 3)
    return emitOpError() << "expects 1 to 3 grid sizes, got " << rank;
  if (getBody().front().getNumArguments() != 0)
    return emitOpError() << "body must take no arguments; read the "
                            "coordinates with flash.program_id";
  return success();
}

//===----------------------------------------------------------------------===//
// LoadTileOp / StoreTileOp
//===----------------------------------------------------------------------===//

/// The memref of a flash.load_tile or flash.store_tile (`role`: "source"
/// or "destination") against its tile: batch x heads x seq [x head dim]
/// for a rank-1 [rank-2] tile, with a group dimension after the heads
/// where `grouped`; the tile's columns are the head dim.
static LogicalResult verifyTileMemory(Operation *op, StringRef role,
                                      MemRefType memType, StringRef tileName,
                                      RankedTensorType tileType, bool grouped) {
  int64_t extra = grouped ? 1 : 0;
  if (memType.getRank() != 4 + extra && memType.getRank() != 3 + extra)
    return op->emitOpError()
           << role << " must be a rank-" << 4 + extra << " memref (batch x "
           << (grouped ? "heads x group" : "heads")
           << " x seq x head dim) or a rank-" << 3 + extra << " one (batch x "
           << (grouped ? "heads x group" : "heads") << " x seq), got rank "
           << memType.getRank();
  if (failed(verifyTile(op, tileName, tileType, memType.getRank() - 2 - extra)))
    return failure();
  if (tileType.getElementType() != memType.getElementType())
    return op->emitOpError()
           << tileName << " element type " << tileType.getElementType()
           << " does not match " << role << " element type "
           << memType.getElementType();
  int64_t headDim = memType.getRank() - 1;
  if (tileType.getRank() == 2 &&
      dimsConflict(tileType.getDimSize(1), memType.getDimSize(headDim)))
    return op->emitOpError()
           << "tile has " << tileType.getDimSize(1) << " columns but the "
           << role << " head dim is " << memType.getDimSize(headDim);
  return success();
}

LogicalResult LoadTileOp::verify() {
  if (failed(verifyTileIndices(*this, getIndices())))
    return failure();
  if (getPageTable() || getKeys()) {
    if (!getPageTable() || !getKeys())
      return emitOpError("pages takes a page table and a number of keys");
    if (getGrouped())
      return emitOpError("a load through pages is not grouped");
    if (cast<MemRefType>(getSource().getType()).getRank() != 4 ||
        cast<RankedTensorType>(getResult().getType()).getRank() != 2)
      return emitOpError("a load through pages reads a rank-4 cache (pages x "
                         "heads x page_size x head dim) into a 2-D tile");
  }
  return verifyTileMemory(
      *this, "source", cast<MemRefType>(getSource().getType()), "result",
      cast<RankedTensorType>(getResult().getType()), getGrouped());
}

LogicalResult StoreTileOp::verify() {
  auto destType = cast<MemRefType>(getDest().getType());
  if (failed(verifyTileIndices(*this, getIndices())) ||
      failed(verifyTileMemory(*this, "destination", destType, "value",
                              cast<RankedTensorType>(getValue().getType()),
                              getGrouped())))
    return failure();
  if (getAccumulate() && !destType.getElementType().isF32())
    return emitOpError() << "accumulates only into f32, got "
                         << destType.getElementType();
  return success();
}

//===----------------------------------------------------------------------===//
// DotOp
//===----------------------------------------------------------------------===//

LogicalResult DotOp::verify() {
  auto aType = cast<RankedTensorType>(getA().getType());
  auto bType = cast<RankedTensorType>(getB().getType());
  auto accType = cast<RankedTensorType>(getAcc().getType());
  if (failed(verifyTile(*this, "a", aType, 2)) ||
      failed(verifyTile(*this, "b", bType, 2)) ||
      failed(verifyF32Tile(*this, "acc", accType, 2)))
    return failure();

  Type elementType = aType.getElementType();
  if (!isSupportedElementType(elementType) && !elementType.isF32())
    return emitOpError() << "operand element type " << elementType
                         << " is not supported; use bf16, f16 or f32";
  if (bType.getElementType() != elementType)
    return emitOpError() << "'a' has element type " << elementType
                         << " but 'b' has " << bType.getElementType();

  int64_t m = aType.getDimSize(getTransposeA() ? 1 : 0);
  int64_t k = aType.getDimSize(getTransposeA() ? 0 : 1);
  int64_t bK = bType.getDimSize(getTransposeB() ? 1 : 0);
  int64_t n = bType.getDimSize(getTransposeB() ? 0 : 1);
  if (bK != k)
    return emitOpError() << "contraction size mismatch: 'a'"
                         << (getTransposeA() ? "^T" : "") << " is " << m << "x"
                         << k << " but 'b'" << (getTransposeB() ? "^T" : "")
                         << " has " << bK << " rows";
  if (accType.getDimSize(0) != m || accType.getDimSize(1) != n)
    return emitOpError() << "'acc' must be " << m << "x" << n << ", got "
                         << accType.getDimSize(0) << "x"
                         << accType.getDimSize(1);
  return success();
}

//===----------------------------------------------------------------------===//
// MaskOp and the online-softmax ops
//===----------------------------------------------------------------------===//

LogicalResult MaskOp::verify() {
  return verifyF32Tile(*this, "scores",
                       cast<RankedTensorType>(getScores().getType()), 2);
}

LogicalResult SoftmaxUpdateOp::verify() {
  auto scoresType = cast<RankedTensorType>(getScores().getType());
  if (failed(verifyF32Tile(*this, "scores", scoresType, 2)) ||
      failed(verifyRowVector(*this, "row_max",
                             cast<RankedTensorType>(getRowMax().getType()),
                             "scores", scoresType)))
    return failure();
  return verifyPositiveFiniteScale(*this, getScale().convertToFloat());
}

LogicalResult RescaleOp::verify() {
  auto accType = cast<RankedTensorType>(getAcc().getType());
  if (failed(verifyF32Tile(*this, "acc", accType, 2)))
    return failure();
  return verifyRowVector(*this, "alpha",
                         cast<RankedTensorType>(getAlpha().getType()), "acc",
                         accType);
}

/// An online softmax's state: an f32 accumulator tile and its row max.
static LogicalResult verifyRunningRows(Operation *op, Value acc, Value rowMax) {
  auto accType = cast<RankedTensorType>(acc.getType());
  if (failed(verifyF32Tile(op, "acc", accType, 2)))
    return failure();
  return verifyRowVector(
      op, "row_max", cast<RankedTensorType>(rowMax.getType()), "acc", accType);
}

LogicalResult FinalizeOp::verify() {
  return verifyRunningRows(*this, getAcc(), getRowMax());
}

LogicalResult MergeSplitOp::verify() {
  return verifyRunningRows(*this, getAcc(), getRowMax());
}

//===----------------------------------------------------------------------===//
// The backward pass's tile ops
//===----------------------------------------------------------------------===//

LogicalResult RowDotOp::verify() {
  auto tileType = cast<RankedTensorType>(getA().getType());
  if (failed(verifyTile(*this, "a", tileType, 2)))
    return failure();
  return verifyRowVector(*this, "result",
                         cast<RankedTensorType>(getResult().getType()), "a",
                         tileType);
}

LogicalResult SoftmaxRecomputeOp::verify() {
  auto scoresType = cast<RankedTensorType>(getScores().getType());
  if (failed(verifyF32Tile(*this, "scores", scoresType, 2)) ||
      failed(verifyRowVector(*this, "lse",
                             cast<RankedTensorType>(getLse().getType()),
                             "scores", scoresType)))
    return failure();
  return verifyPositiveFiniteScale(*this, getScale().convertToFloat());
}

LogicalResult SoftmaxGradOp::verify() {
  auto pType = cast<RankedTensorType>(getP().getType());
  if (failed(verifyF32Tile(*this, "p", pType, 2)))
    return failure();
  return verifyRowVector(
      *this, "delta", cast<RankedTensorType>(getDelta().getType()), "p", pType);
}

#define GET_OP_CLASSES
#include "Flash/FlashOps.cpp.inc"

//===- TileMemoryToLinalg.cpp - load_tile/store_tile -> linalg and scf ----===//
//
// Boundary masking on the CPU path: a load checks each row against the
// sequence length (a group's rows, grouped; a paged load's number of keys)
// and reads zero past it; a store loops over the rows that exist only.
//
//===----------------------------------------------------------------------===//

#include "Flash/FlashOps.h"
#include "LinalgBuilders.h"
#include "flashc/Conversion/Passes.h"

#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::flash;

namespace {

constexpr int64_t kSeqDim = 2;

/// The rows a tile's row index counts through in `memory`: its seq
/// dimension, or with `grouped` the group's heads' rows one after another.
Value rowsOf(ImplicitLocOpBuilder &b, Value memory, bool grouped) {
  if (!grouped)
    return memref::DimOp::create(b, memory, kSeqDim);
  return arith::MulIOp::create(b, memref::DimOp::create(b, memory, kSeqDim),
                               memref::DimOp::create(b, memory, kSeqDim + 1));
}

/// The indices of row `row` (below rowsOf) of head `head` of batch `batch`
/// in `memory`, then `column` where given.
SmallVector<Value, 5> rowIndices(OpBuilder &b, Location loc, Value memory,
                                 bool grouped, Value batch, Value head,
                                 Value row, Value column) {
  SmallVector<Value, 5> at = {batch, head};
  if (grouped) {
    Value seq = memref::DimOp::create(b, loc, memory, kSeqDim + 1);
    at.push_back(arith::DivUIOp::create(b, loc, row, seq));
    at.push_back(arith::RemUIOp::create(b, loc, row, seq));
  } else {
    at.push_back(row);
  }
  if (column)
    at.push_back(column);
  return at;
}

/// The indices of key `key` of sequence `batch`, head `head`, column
/// `column` in a paged cache (pages x heads x page_size x D): row key %
/// page_size of the page its table row names, clamped into the cache.
SmallVector<Value, 5> pagedIndices(OpBuilder &b, Location loc, Value cache,
                                   Value pageTable, Value batch, Value head,
                                   Value key, Value column) {
  ImplicitLocOpBuilder ib(loc, b);
  Value pageSize = memref::DimOp::create(ib, cache, kSeqDim);
  Value entry = memref::LoadOp::create(
      ib, pageTable,
      ValueRange{batch, arith::DivUIOp::create(ib, key, pageSize)});
  Value c0 = arith::ConstantIndexOp::create(ib, 0);
  Value last = arith::SubIOp::create(ib, memref::DimOp::create(ib, cache, 0),
                                     arith::ConstantIndexOp::create(ib, 1));
  Value page = arith::MinSIOp::create(
      ib,
      arith::MaxSIOp::create(
          ib, arith::IndexCastOp::create(ib, ib.getIndexType(), entry), c0),
      last);
  return {page, head, arith::RemUIOp::create(ib, key, pageSize), column};
}

struct LoadTileToLinalg : OpRewritePattern<LoadTileOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(LoadTileOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto tileType = cast<RankedTensorType>(op.getResult().getType());
    Value source = op.getSource();
    Value batch = op.getIndices()[0], head = op.getIndices()[1],
          rowStart = op.getIndices()[2];
    bool grouped = op.getGrouped();
    Value pageTable = op.getPageTable();
    Value rows = pageTable ? op.getKeys() : rowsOf(b, source, grouped);
    Type elementType = tileType.getElementType();
    int64_t rank = tileType.getRank();
    AffineMap identity =
        AffineMap::getMultiDimIdentityMap(rank, b.getContext());
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    Value tile = buildGeneric(
        b, ValueRange{}, buildEmpty(b, tileType), {identity}, iterators,
        [&](ImplicitLocOpBuilder &b, ValueRange) -> Value {
          Value row =
              arith::AddIOp::create(b, rowStart, linalg::IndexOp::create(b, 0));
          Value column = rank == 2 ? linalg::IndexOp::create(b, 1) : Value();
          Value inBounds =
              arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, rows);
          auto read = scf::IfOp::create(
              b, inBounds,
              [&](OpBuilder &nested, Location loc) {
                SmallVector<Value, 5> at =
                    pageTable ? pagedIndices(nested, loc, source, pageTable,
                                             batch, head, row, column)
                              : rowIndices(nested, loc, source, grouped, batch,
                                           head, row, column);
                Value value = memref::LoadOp::create(nested, loc, source, at);
                scf::YieldOp::create(nested, loc, value);
              },
              [&](OpBuilder &nested, Location loc) {
                Value zero = arith::ConstantOp::create(
                    nested, loc, nested.getFloatAttr(elementType, 0.0));
                scf::YieldOp::create(nested, loc, zero);
              });
          return read.getResult(0);
        });
    rewriter.replaceOp(op, tile);
    return success();
  }
};

struct StoreTileToLoops : OpRewritePattern<StoreTileOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(StoreTileOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto tileType = cast<RankedTensorType>(op.getValue().getType());
    Value dest = op.getDest();
    Value batch = op.getIndices()[0], head = op.getIndices()[1],
          rowStart = op.getIndices()[2];
    Value c0 = arith::ConstantIndexOp::create(b, 0);
    Value c1 = arith::ConstantIndexOp::create(b, 1);

    // Rows to write: min(tile rows, max(seq - rowStart, 0)).
    bool grouped = op.getGrouped();
    Value rows = rowsOf(b, dest, grouped);
    Value left = arith::SubIOp::create(b, rows, rowStart);
    Value available = arith::MaxSIOp::create(b, left, c0);
    Value count = arith::MinSIOp::create(
        b, available,
        arith::ConstantIndexOp::create(b, tileType.getDimSize(0)));

    Value tile = op.getValue();
    bool accumulate = op.getAccumulate();
    // The CPU runs one program at a time: a read, add and write is atomic.
    auto store = [&](OpBuilder &builder, Location loc, Value value,
                     ValueRange at) {
      if (accumulate) {
        Value old = memref::LoadOp::create(builder, loc, dest, at);
        value = arith::AddFOp::create(builder, loc, old, value);
      }
      memref::StoreOp::create(builder, loc, value, dest, at);
    };
    scf::ForOp::create(
        b, c0, count, c1, ValueRange{},
        [&](OpBuilder &nested, Location loc, Value i, ValueRange) {
          ImplicitLocOpBuilder rb(loc, nested);
          Value row = arith::AddIOp::create(rb, rowStart, i);
          if (tileType.getRank() == 1) {
            Value value = tensor::ExtractOp::create(rb, tile, i);
            store(rb, loc, value,
                  rowIndices(rb, loc, dest, grouped, batch, head, row, {}));
          } else {
            Value cols =
                arith::ConstantIndexOp::create(rb, tileType.getDimSize(1));
            scf::ForOp::create(
                rb, c0, cols, c1, ValueRange{},
                [&](OpBuilder &inner, Location loc, Value j, ValueRange) {
                  Value value = tensor::ExtractOp::create(inner, loc, tile,
                                                          ValueRange{i, j});
                  store(inner, loc, value,
                        rowIndices(inner, loc, dest, grouped, batch, head, row,
                                   j));
                  scf::YieldOp::create(inner, loc);
                });
          }
          scf::YieldOp::create(rb);
        });
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::flash::populateTileMemoryToLinalgPatterns(
    RewritePatternSet &patterns) {
  patterns.add<LoadTileToLinalg, StoreTileToLoops>(patterns.getContext());
}

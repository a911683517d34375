//===- TileAttentionBackward.cpp - flash.attention_backward -> tiles ------===//
//
// The backward pass of DESIGN.md section 1 as three grids run in order:
//   1. per (query tile, batch * head): delta = rowsum(dO * O) into an f32
//      workspace, and the tile's rows of an f32 dQ accumulator cleared;
//   2. per (key tile, batch * K/V head): the K and V tiles stay while every
//      query tile of every query head of the K/V head's group passes, in
//      order: S and P are recomputed from Q, K and the forward's LSE (no
//      N x N matrix is ever stored), dV and dK accumulate in the program
//      and are stored once, and dQ's share of this key tile is added into
//      the accumulator;
//   3. per (query tile, batch * head): dQ = scale * accumulator, rounded;
//   4. (attention sinks only) per query head: the sink's gradient, summed
//      over the batch and the rows in order from the LSE and the deltas.
// Score and mask mods are applied to the recomputed logits as in the
// forward, and dS is carried back through the score mod's derivative.
// A program owns its K/V head's whole group, so dK and dV are reduced
// across heads without atomics; only dQ's rows receive from many programs.
//
//===----------------------------------------------------------------------===//

#include "TileSteps.h"
#include "flashc/Transforms/MaskAnalysis.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

#include <optional>

using namespace mlir;
using namespace mlir::flash;

namespace {

/// The memrefs a program reads and writes: the op's operands and the two
/// workspaces, or (packed sequences) views of one sequence's rows of them.
struct BackwardOperands {
  Value q, k, v, o, dO, lse, dQ, dK, dV, delta, dQAccumulator;
};

/// One program's problem: its batch index and sequence lengths, and
/// (packed sequences) its sequence's rows.
struct ProgramProblem {
  Value batch, seqQ, seqK;
  std::optional<SequenceRows> rowsQ, rowsK;
  /// What the mods see as the batch index: the batch, or the sequence.
  Value sequence;
};

/// Where a program of a grid over (tiles, batch * heads) works: its tile's
/// first row (or key), its head and its problem.
struct ProgramTile {
  Value start, head;
  ProgramProblem problem;
};

class BackwardTiler {
public:
  BackwardTiler(AttentionBackwardOp op, ConfigAttr config)
      : op(op), blockM(config.getBlockM()), blockN(config.getBlockN()),
        headDim(op.getHeadDim()),
        element(cast<MemRefType>(op.getQ().getType()).getElementType()),
        scale(op.getEffectiveScale()) {}

  void run();

private:
  Value constantTile(ImplicitLocOpBuilder &b, ArrayRef<int64_t> shape,
                     float value) {
    auto type = RankedTensorType::get(shape, b.getF32Type());
    return arith::ConstantOp::create(
        b, DenseElementsAttr::get(type, b.getF32FloatAttr(value)));
  }
  Value round(ImplicitLocOpBuilder &b, Value tile) {
    auto type = cast<RankedTensorType>(tile.getType());
    return arith::TruncFOp::create(
        b, RankedTensorType::get(type.getShape(), element), tile);
  }
  /// The problem of the program whose batch (or, packed, sequence) index is
  /// `batch`.
  ProgramProblem problemOf(ImplicitLocOpBuilder &b, Value batch);
  /// The memrefs `problem` reads and writes: the op's and the workspaces,
  /// or views of its sequence's rows of them.
  BackwardOperands operandsOf(ImplicitLocOpBuilder &b,
                              const ProgramProblem &problem);
  /// Runs `body` only where `start` lies inside `length` (packed
  /// sequences: a tile past its sequence's end does nothing).
  void ifInside(ImplicitLocOpBuilder &b, Value start, Value length,
                function_ref<void()> body);

  /// This program's tile of `block` rows and its head among `headCount`
  /// heads per batch, from its grid coordinates.
  ProgramTile programTile(ImplicitLocOpBuilder &b, int64_t block,
                          Value headCount);
  /// A program of a grid over (query tiles, batch * heads): `body` gets
  /// the tile's operands and its [batch, head, row]; a tile past a packed
  /// sequence's end does nothing.
  void buildQueryTileProgram(
      ImplicitLocOpBuilder &b,
      function_ref<void(const BackwardOperands &, ValueRange)> body);
  void buildDeltaProgram(ImplicitLocOpBuilder &b);
  void buildKeyTileProgram(ImplicitLocOpBuilder &b);
  void buildDQProgram(ImplicitLocOpBuilder &b);
  void buildSinkGradProgram(ImplicitLocOpBuilder &b, Value batches);
  /// dS (the modded logits' gradient) carried back through the score mod:
  /// the scaled logits' gradient.
  Value buildModScoresGrad(ImplicitLocOpBuilder &b, Value dS, Value scores,
                           const TileCoordinates &at);

  AttentionBackwardOp op;
  int64_t blockM, blockN, headDim;
  Type element;
  float scale;
  Value c0, c1, heads, kvHeads, groupSize, seqQ, seqK;
  Value delta, dQAccumulator;
};

ProgramProblem BackwardTiler::problemOf(ImplicitLocOpBuilder &b, Value batch) {
  if (!op.isPacked())
    return {batch, seqQ, seqK, std::nullopt, std::nullopt, batch};
  SequenceRows rowsQ = loadSequenceRows(b, op.getCuSeqlensQ(), batch);
  SequenceRows rowsK = loadSequenceRows(b, op.getCuSeqlensK(), batch);
  return {c0, rowsQ.length, rowsK.length, rowsQ, rowsK, batch};
}

BackwardOperands BackwardTiler::operandsOf(ImplicitLocOpBuilder &b,
                                           const ProgramProblem &problem) {
  BackwardOperands all = {op.getQ(),  op.getK(),   op.getV(),    op.getO(),
                          op.getDO(), op.getLse(), op.getDQ(),   op.getDK(),
                          op.getDV(), delta,       dQAccumulator};
  if (!problem.rowsQ)
    return all;
  auto queries = [&](Value m) {
    return viewSequenceRows(b, m, *problem.rowsQ, heads);
  };
  auto keys = [&](Value m) {
    return viewSequenceRows(b, m, *problem.rowsK, kvHeads);
  };
  return {queries(all.q),
          keys(all.k),
          keys(all.v),
          queries(all.o),
          queries(all.dO),
          queries(all.lse),
          queries(all.dQ),
          keys(all.dK),
          keys(all.dV),
          queries(all.delta),
          queries(all.dQAccumulator)};
}

void BackwardTiler::ifInside(ImplicitLocOpBuilder &b, Value start, Value length,
                             function_ref<void()> body) {
  if (!op.isPacked())
    return body();
  Value inside =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, start, length);
  auto ifOp = scf::IfOp::create(b, inside, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(ifOp.thenBlock());
  body();
}

ProgramTile BackwardTiler::programTile(ImplicitLocOpBuilder &b,
                                       int64_t block, Value headCount) {
  Value start = arith::MulIOp::create(
      b, ProgramIdOp::create(b, 0), arith::ConstantIndexOp::create(b, block));
  Value batchHead = ProgramIdOp::create(b, 1);
  Value head = arith::RemUIOp::create(b, batchHead, headCount);
  Value batch = arith::DivUIOp::create(b, batchHead, headCount);
  return {start, head, problemOf(b, batch)};
}

void BackwardTiler::buildQueryTileProgram(
    ImplicitLocOpBuilder &b,
    function_ref<void(const BackwardOperands &, ValueRange)> body) {
  ProgramTile tile = programTile(b, blockM, heads);
  ifInside(b, tile.start, tile.problem.seqQ, [&] {
    BackwardOperands mem = operandsOf(b, tile.problem);
    SmallVector<Value, 3> at = {tile.problem.batch, tile.head, tile.start};
    body(mem, at);
  });
}

void BackwardTiler::buildDeltaProgram(ImplicitLocOpBuilder &b) {
  buildQueryTileProgram(b, [&](const BackwardOperands &mem, ValueRange at) {
    auto tileType = RankedTensorType::get({blockM, headDim}, element);
    Value o = LoadTileOp::create(b, tileType, mem.o, at);
    Value dO = LoadTileOp::create(b, tileType, mem.dO, at);
    auto rowType = RankedTensorType::get({blockM}, b.getF32Type());
    Value rowDelta = RowDotOp::create(b, rowType, dO, o);
    StoreTileOp::create(b, rowDelta, mem.delta, at);
    StoreTileOp::create(b, constantTile(b, {blockM, headDim}, 0.0f),
                        mem.dQAccumulator, at);
  });
}

void BackwardTiler::buildKeyTileProgram(ImplicitLocOpBuilder &b) {
  Value cBlockM = arith::ConstantIndexOp::create(b, blockM);
  ProgramTile tile = programTile(b, blockN, kvHeads);
  Value col = tile.start, kvHead = tile.head;
  const ProgramProblem &problem = tile.problem;
  ifInside(b, col, problem.seqK, [&] {
    BackwardOperands mem = operandsOf(b, problem);
    Value tileSeqQ = problem.seqQ, tileSeqK = problem.seqK;
    auto kvTileType = RankedTensorType::get({blockN, headDim}, element);
    Value k = LoadTileOp::create(b, kvTileType, mem.k,
                                 ValueRange{problem.batch, kvHead, col});
    Value v = LoadTileOp::create(b, kvTileType, mem.v,
                                 ValueRange{problem.batch, kvHead, col});

    // With the bottom-right aligned causal mask, query row i sees key j
    // when j <= i + seq_k - seq_q: the first query tile with a row that
    // sees key `col` holds row max(col - (seq_k - seq_q), 0).
    Value firstRow = c0;
    if (op.getCausal()) {
      Value shift = arith::SubIOp::create(b, tileSeqK, tileSeqQ);
      Value first = arith::SubIOp::create(b, col, shift);
      Value clamped = arith::MaxSIOp::create(b, first, c0);
      firstRow = arith::MulIOp::create(
          b, arith::DivUIOp::create(b, clamped, cBlockM), cBlockM);
    }

    // Block sparsity: a mask_mod that hides every key more than W behind
    // its query hides this key tile from the rows past col + block_n - 1 +
    // W.
    Value rowEnd = tileSeqQ;
    if (std::optional<int64_t> window = keyWindowBehind(op.getMaskMod())) {
      Value last = arith::AddIOp::create(
          b, col, arith::ConstantIndexOp::create(b, blockN + *window));
      rowEnd = arith::MinSIOp::create(b, last, tileSeqQ);
    }
    // A mask_mod that keeps each query within its chunk of C positions
    // hides this key tile from the rows outside its first and last keys'
    // chunks.
    if (std::optional<int64_t> chunk = keyChunk(op.getMaskMod())) {
      auto [start, end] = chunkBounds(b, col, blockN, *chunk, cBlockM);
      firstRow = arith::MaxSIOp::create(b, firstRow, start);
      rowEnd = arith::MinSIOp::create(b, rowEnd, end);
    }

    Value gradInit = constantTile(b, {blockN, headDim}, 0.0f);
    Value scoreInit = constantTile(b, {blockM, blockN}, 0.0f);
    Value rowGradInit = constantTile(b, {blockM, headDim}, 0.0f);
    auto qTileType = RankedTensorType::get({blockM, headDim}, element);
    auto rowType = RankedTensorType::get({blockM}, b.getF32Type());
    auto pType = RankedTensorType::get({blockM, blockN}, b.getF32Type());
    // With mods the recomputed logits are scaled before them, as in the
    // forward, so the softmax takes them as they are.
    const bool mods = op.hasMods();
    FloatAttr scaleAttr = b.getF32FloatAttr(mods ? 1.0f : scale);
    bool causal = op.getCausal();

    // Every query head of the group, then every query tile, in order.
    auto headLoop = scf::ForOp::create(
        b, c0, groupSize, c1, ValueRange{gradInit, gradInit},
        [&](OpBuilder &nested, Location loc, Value member,
            ValueRange headGrads) {
          ImplicitLocOpBuilder hb(loc, nested);
          Value head = arith::AddIOp::create(
              hb, arith::MulIOp::create(hb, kvHead, groupSize), member);
          auto rowLoop = scf::ForOp::create(
              hb, firstRow, rowEnd, cBlockM, headGrads,
              [&](OpBuilder &inner, Location loc, Value row, ValueRange grads) {
                ImplicitLocOpBuilder lb(loc, inner);
                SmallVector<Value, 3> at = {problem.batch, head, row};
                Value q = LoadTileOp::create(lb, qTileType, mem.q, at);
                Value dO = LoadTileOp::create(lb, qTileType, mem.dO, at);
                Value lse = LoadTileOp::create(lb, rowType, mem.lse, at);
                Value rowDelta = LoadTileOp::create(lb, rowType, mem.delta, at);
                Value scores =
                    DotOp::create(lb, q, k, scoreInit, /*transpose_b=*/true);
                TileCoordinates tileAt = {problem.sequence, head,    row, col,
                                          tileSeqQ,         tileSeqK};
                Value modded = scores;
                if (mods)
                  modded = buildModScores(lb,
                                          {op.getScoreMod(), op.getMaskMod(),
                                           op.getCaptures(), scale,
                                           op.getKeyRangesAttr()},
                                          scores, tileAt);
                Value masked = MaskOp::create(lb, modded, row, col, tileSeqQ,
                                              tileSeqK, causal);
                Value p = SoftmaxRecomputeOp::create(lb, pType, masked, lse,
                                                     scaleAttr,
                                                     /*base2=*/UnitAttr());
                Value dV = DotOp::create(lb, round(lb, p), dO, grads[1],
                                         /*transpose_a=*/true,
                                         /*transpose_b=*/false);
                Value dP =
                    DotOp::create(lb, dO, v, scoreInit, /*transpose_b=*/true);
                Value dS = SoftmaxGradOp::create(lb, pType, p, dP, rowDelta);
                if (!op.getScoreMod().empty())
                  dS = buildModScoresGrad(lb, dS, scores, tileAt);
                dS = round(lb, dS);
                Value dK = DotOp::create(lb, dS, q, grads[0],
                                         /*transpose_a=*/true,
                                         /*transpose_b=*/false);
                Value dQ = DotOp::create(lb, dS, k, rowGradInit,
                                         /*transpose_b=*/false);
                StoreTileOp::create(lb, dQ, mem.dQAccumulator, at,
                                    /*accumulate=*/true);
                scf::YieldOp::create(lb, ValueRange{dK, dV});
              });
          scf::YieldOp::create(hb, rowLoop.getResults());
        });

    // dS is the gradient of the scaled logits; the keys' is scale times it.
    Value dK = arith::MulFOp::create(b, headLoop.getResult(0),
                                     constantTile(b, {blockN, headDim}, scale));
    SmallVector<Value, 3> at = {problem.batch, kvHead, col};
    StoreTileOp::create(b, round(b, dK), mem.dK, at);
    StoreTileOp::create(b, round(b, headLoop.getResult(1)), mem.dV, at);
  });
}

Value BackwardTiler::buildModScoresGrad(ImplicitLocOpBuilder &b, Value dS,
                                        Value scores,
                                        const TileCoordinates &at) {
  auto grad = ModScoresGradOp::create(
      b, dS.getType(), dS, scores, at.sequence, at.head, at.row, at.col,
      at.seqQ, at.seqK, op.getCaptures(), b.getF32FloatAttr(scale));
  IRMapping mapping;
  op.getScoreMod().cloneInto(&grad.getScoreMod(), mapping);
  return grad;
}

void BackwardTiler::buildSinkGradProgram(ImplicitLocOpBuilder &b,
                                         Value batches) {
  Value head = ProgramIdOp::create(b, 0);
  Value sink = memref::LoadOp::create(b, op.getSinks(), head);
  Value cBlockM = arith::ConstantIndexOp::create(b, blockM);
  auto rowType = RankedTensorType::get({blockM}, b.getF32Type());
  Value zero = arith::ConstantOp::create(b, b.getF32FloatAttr(0.0f));
  // Every batch (or sequence), then every query tile, in order: the sum is
  // the same on every run.
  auto batchLoop = scf::ForOp::create(
      b, c0, batches, c1, ValueRange{zero},
      [&](OpBuilder &nested, Location loc, Value batch, ValueRange total) {
        ImplicitLocOpBuilder bb(loc, nested);
        ProgramProblem problem = problemOf(bb, batch);
        BackwardOperands mem = operandsOf(bb, problem);
        auto rowLoop = scf::ForOp::create(
            bb, c0, problem.seqQ, cBlockM, total,
            [&](OpBuilder &inner, Location loc, Value row, ValueRange sum) {
              ImplicitLocOpBuilder lb(loc, inner);
              SmallVector<Value, 3> at = {problem.batch, head, row};
              Value lse = LoadTileOp::create(lb, rowType, mem.lse, at);
              Value delta = LoadTileOp::create(lb, rowType, mem.delta, at);
              Value share = SinkGradOp::create(lb, lb.getF32Type(), lse, delta,
                                               sink, row, problem.seqQ);
              scf::YieldOp::create(
                  lb, ValueRange{arith::AddFOp::create(lb, sum[0], share)});
            });
        scf::YieldOp::create(bb, rowLoop.getResults());
      });
  memref::StoreOp::create(b, batchLoop.getResult(0), op.getDSinks(), head);
}

void BackwardTiler::buildDQProgram(ImplicitLocOpBuilder &b) {
  buildQueryTileProgram(b, [&](const BackwardOperands &mem, ValueRange at) {
    auto accType = RankedTensorType::get({blockM, headDim}, b.getF32Type());
    Value acc = LoadTileOp::create(b, accType, mem.dQAccumulator, at);
    Value dQ = arith::MulFOp::create(b, acc,
                                     constantTile(b, {blockM, headDim}, scale));
    StoreTileOp::create(b, round(b, dQ), mem.dQ, at);
  });
}

void BackwardTiler::run() {
  ImplicitLocOpBuilder b(op.getLoc(), op);
  c0 = arith::ConstantIndexOp::create(b, 0);
  c1 = arith::ConstantIndexOp::create(b, 1);
  Value c2 = arith::ConstantIndexOp::create(b, 2);
  Value batch = memref::DimOp::create(b, op.getQ(), c0);
  heads = memref::DimOp::create(b, op.getQ(), c1);
  kvHeads = memref::DimOp::create(b, op.getK(), c1);
  groupSize = arith::DivUIOp::create(b, heads, kvHeads);
  seqQ = memref::DimOp::create(b, op.getQ(), c2);
  seqK = memref::DimOp::create(b, op.getK(), c2);

  // The workspaces, Q's rows in f32: the row deltas and the dQ sums.
  Type f32 = b.getF32Type();
  delta = memref::AllocOp::create(
      b,
      MemRefType::get(
          {ShapedType::kDynamic, ShapedType::kDynamic, ShapedType::kDynamic},
          f32),
      ValueRange{batch, heads, seqQ});
  dQAccumulator = memref::AllocOp::create(
      b,
      MemRefType::get({ShapedType::kDynamic, ShapedType::kDynamic,
                       ShapedType::kDynamic, headDim},
                      f32),
      ValueRange{batch, heads, seqQ});

  // Packed sequences: one program row per sequence and head, as many tiles
  // as the longest sequence needs.
  Value longestQ = seqQ, longestK = seqK;
  if (op.isPacked()) {
    batch = arith::SubIOp::create(
        b, memref::DimOp::create(b, op.getCuSeqlensQ(), c0), c1);
    longestQ = op.getMaxSeqlenQ();
    longestK = op.getMaxSeqlenK();
  }
  auto tiles = [&](Value rows, int64_t block) -> Value {
    return arith::CeilDivUIOp::create(b, rows,
                                      arith::ConstantIndexOp::create(b, block));
  };
  Value queryTiles = tiles(longestQ, blockM);
  Value batchHeads = arith::MulIOp::create(b, batch, heads);
  Value batchKvHeads = arith::MulIOp::create(b, batch, kvHeads);

  auto emitGrid = [&](ValueRange sizes,
                      void (BackwardTiler::*program)(ImplicitLocOpBuilder &)) {
    auto grid = GridOp::create(b, sizes);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&grid.getBody().front());
    (this->*program)(b);
  };
  emitGrid({queryTiles, batchHeads}, &BackwardTiler::buildDeltaProgram);
  emitGrid({tiles(longestK, blockN), batchKvHeads},
           &BackwardTiler::buildKeyTileProgram);
  emitGrid({queryTiles, batchHeads}, &BackwardTiler::buildDQProgram);
  if (op.getSinks()) {
    auto grid = GridOp::create(b, ValueRange{heads});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&grid.getBody().front());
    buildSinkGradProgram(b, batch);
  }
  op.erase();
}

} // namespace

void mlir::flash::tileAttentionBackward(AttentionBackwardOp op,
                                        ConfigAttr config) {
  BackwardTiler(op, config).run();
}

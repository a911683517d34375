//===- Softmax.cpp - the online softmax on the wgmma accumulator layout ---===//
//
// The softmax steps of one S tile held in registers, which the key loop
// patterns (KeyLoopToWarpgroup.cpp) build for flash.mask,
// flash.softmax_update (base2) and flash.rescale: flash.wg.mask_keys on the
// thread's query rows, flash.wg.softmax_update with the running-max rule the
// schedule chose (lag_max, speculative), and flash.wg.scale_rows, guarded by
// the update's `moved` where the rule lets rows keep their reference, and
// flash.wg.mod_scores for flash.mod_scores (the score and mask mods). Their
// lowering is lib/Conversion/FlashWarpgroupToNVVM/SoftmaxUpdateToRowOps.cpp.
// The statistics are row vectors: m, in log2 units, a #flash.wgmma_rows
// vector, l a #flash.wgmma_row_partials one (quad-reduced once, in the
// epilogue).
//
//===----------------------------------------------------------------------===//

#include "FlashToGPU.h"
#include "../FlashWarpgroupToNVVM/RegisterUtils.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/IRMapping.h"

#include <cmath>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;

std::pair<Value, Value> ConsumerRole::firstKeyAndRows(Value j) {
  Value j32 = arith::IndexCastOp::create(b, k.i32, j);
  Value first = arith::MulIOp::create(b, j32, cI32(spec.blockN));
  Value rows =
      WgFragmentFromValuesOp::create(b, k.rowsI32Type, ValueRange{row0, row1});
  return {first, rows};
}

Value ConsumerRole::maskKeys(Value scores, Value j, bool causal) {
  auto [first, rows] = firstKeyAndRows(j);
  return WgMaskKeysOp::create(b, k.sType, scores, rows, first, k.seqQ, k.seqK,
                              causal);
}

Value ConsumerRole::modScores(Value scores, Value j, ModScoresOp op) {
  auto [first, rows] = firstKeyAndRows(j);
  auto [batch, head] = k.batchAndHead(tile.blockY);
  // The rows as the mods see them: a decoding step's queries are the
  // cache's last positions (flash.mod_scores's seq_q - R offset), and a
  // packed row is of head `head * G + r / seq_q`, the group's last for the
  // tile's rows past G x seq_q (their scores are never stored).
  Value row0 = this->row0, row1 = this->row1, seqQ = k.seqQ, heads;
  if (spec.decode) {
    Value offset = tile.firstQuery;
    row0 = arith::AddIOp::create(b, row0, offset);
    row1 = arith::AddIOp::create(b, row1, offset);
    seqQ = arith::AddIOp::create(b, seqQ, offset);
    rows = WgFragmentFromValuesOp::create(b, k.rowsI32Type,
                                          ValueRange{row0, row1});
  }
  if (spec.packGqa) {
    Value firstHead = arith::MulIOp::create(
        b, arith::IndexCastOp::create(b, k.i32, head), k.kvGroup);
    Value lastInGroup = arith::SubIOp::create(b, k.kvGroup, cI32(1));
    auto headOf = [&](Value groupRow) -> Value {
      Value inGroup = arith::DivUIOp::create(b, groupRow, k.seqQ);
      return arith::AddIOp::create(
          b, firstHead, arith::MinUIOp::create(b, inGroup, lastInGroup));
    };
    heads = WgFragmentFromValuesOp::create(
        b, k.rowsI32Type, ValueRange{headOf(groupRow0), headOf(groupRow1)});
  }
  // The scale the runtime passes (scale_log2) back in natural units, so
  // that kernel.json's scale stays the one the mods see.
  Value scale =
      arith::MulFOp::create(b, k.scaleLog2, cF32(static_cast<float>(M_LN2)));
  // Inside a sliding window that is the whole mask, a thread's keys are
  // all seen once the tile's first key is within the window of its later
  // row: first + W >= max(row0, row1). That holds on every tile but the
  // window's first, so the mask_mod runs there alone.
  Value whole;
  if (spec.maskIsKeyWindow) {
    Value reach = arith::AddIOp::create(b, first, cI32(*spec.keyWindow));
    whole = arith::CmpIOp::create(b, arith::CmpIPredicate::sge, reach,
                                  arith::MaxSIOp::create(b, row0, row1));
  }
  // Inside a chunk that is the whole mask, a thread's keys are all seen
  // when the tile's first and last keys lie in the chunk of both its rows.
  if (spec.maskIsKeyChunk) {
    Value chunk = cI32(*spec.keyChunk);
    auto chunkOf = [&](Value x) -> Value {
      return arith::DivUIOp::create(b, arith::MaxSIOp::create(b, x, cI32(0)),
                                    chunk);
    };
    Value c = chunkOf(first);
    auto same = [&](Value x) -> Value {
      return arith::CmpIOp::create(b, arith::CmpIPredicate::eq, chunkOf(x), c);
    };
    Value inside = arith::AndIOp::create(
        b,
        arith::AndIOp::create(
            b, same(arith::AddIOp::create(b, first, cI32(spec.blockN - 1))),
            same(row0)),
        same(row1));
    whole = whole ? arith::OrIOp::create(b, whole, inside).getResult() : inside;
  }
  // A key tile inside the block's full range (key_ranges): every row keeps
  // every key of it.
  if (tile.fullLo) {
    Value inside = arith::AndIOp::create(
        b,
        arith::CmpIOp::create(b, arith::CmpIPredicate::sge, first, tile.fullLo),
        arith::CmpIOp::create(
            b, arith::CmpIPredicate::sle,
            arith::AddIOp::create(b, first, cI32(spec.blockN)), tile.fullHi));
    whole = whole ? arith::OrIOp::create(b, whole, inside).getResult() : inside;
  }
  auto mod =
      WgModScoresOp::create(b, k.sType, scores, rows, first, seqQ, k.seqK,
                            arith::IndexCastOp::create(b, k.i32, batch),
                            arith::IndexCastOp::create(b, k.i32, head), scale,
                            whole, heads, op.getCaptures());
  IRMapping mapping;
  op.getScoreMod().cloneInto(&mod.getScoreMod(), mapping);
  op.getMaskMod().cloneInto(&mod.getMaskMod(), mapping);
  return mod;
}

WgSoftmaxUpdateOp ConsumerRole::softmaxUpdate(Value scores, Value m, Value l,
                                              bool firstTile) {
  // A tile program's first key tile starts from the literal -inf, so there
  // is nothing to speculate on.
  const bool speculative = spec.sw.speculativeExp && !firstTile;
  const bool lagMax = spec.lagMax && !speculative;
  auto pType = FragmentType::get(k.ctx, {64, spec.blockN}, spec.elementType,
                                 WgmmaOperandALayoutAttr::get(k.ctx));
  // With mods the logits arrive scaled (modScores).
  Value scaleLog2 = spec.mods ? cF32(static_cast<float>(M_LOG2E)) : k.scaleLog2;
  return WgSoftmaxUpdateOp::create(b, pType, k.rowsF32Type, k.rowPartialsType,
                                   k.rowsF32Type, k.i1, scores, m, l, scaleLog2,
                                   lagMax, speculative);
}

Value ConsumerRole::scaleRows(Value o, Value alpha, Value moved) {
  return WgScaleRowsOp::create(b, k.oType, o, alpha, moved);
}

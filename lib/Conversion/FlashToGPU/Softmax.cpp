//===- Softmax.cpp - the online softmax on the wgmma accumulator layout ---===//
//
// flash.mask, flash.softmax_update (base2) and flash.rescale for one S tile
// held in registers: flash.wg.mask_keys on the thread's query rows, then
// flash.wg.softmax_update with the running-max rule the schedule chose
// (lag_max, speculative) and flash.wg.scale_rows, guarded by the update's
// `moved` where the rule lets rows keep their reference. Their lowering is
// lib/Conversion/FlashWarpgroupToNVVM/SoftmaxUpdateToRowOps.cpp. The key
// loops carry the statistics as the registers of their row vectors: m, in
// log2 units, a #flash.wgmma_rows vector, l a #flash.wgmma_row_partials one
// (quad-reduced once, in the epilogue).
//
//===----------------------------------------------------------------------===//

#include "FlashToGPU.h"
#include "../FlashWarpgroupToNVVM/RegisterUtils.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;

KernelEmitter::SoftmaxResult KernelEmitter::softmax(SmallVector<Value> s,
                                                    ArrayRef<Value> mOld,
                                                    ArrayRef<Value> lOld,
                                                    bool masked, Value j,
                                                    bool firstTile) {
  Value scores = WgFragmentFromValuesOp::create(b, sType, s);
  if (masked) {
    // flash.mask: the tile's first key and the thread's two query rows.
    Value j32 = arith::IndexCastOp::create(b, i32, j);
    Value first = arith::MulIOp::create(b, j32, cI32(spec.blockN));
    Value rows = WgFragmentFromValuesOp::create(b, rowsI32Type,
                                                ValueRange{row0, row1});
    scores = WgMaskKeysOp::create(b, sType, scores, rows, first, seqQ, seqK,
                                  spec.causal);
  }
  // A tile program's first key tile starts from the literal -inf, so there
  // is nothing to speculate on.
  const bool speculative = spec.sw.speculativeExp && !firstTile;
  const bool lagMax = spec.lagMax && !speculative;
  auto pType = FragmentType::get(ctx, {64, spec.blockN}, spec.elementType,
                                 WgmmaOperandALayoutAttr::get(ctx));
  auto update = WgSoftmaxUpdateOp::create(
      b, pType, rowsF32Type, rowPartialsType, rowsF32Type, i1, scores,
      WgFragmentFromValuesOp::create(b, rowsF32Type, mOld),
      WgFragmentFromValuesOp::create(b, rowPartialsType, lOld), scaleLog2,
      lagMax, speculative);
  SoftmaxResult res;
  res.packedP = wg_lowering::fragmentValues(b, update.getP());
  res.mNew = wg_lowering::fragmentValues(b, update.getMNew());
  res.lNew = wg_lowering::fragmentValues(b, update.getLNew());
  res.alpha = wg_lowering::fragmentValues(b, update.getAlpha());
  if (lagMax || speculative)
    res.moved = update.getMoved();
  return res;
}

SmallVector<Value> KernelEmitter::scaleAcc(ArrayRef<Value> acc,
                                           ArrayRef<Value> alpha, Value moved) {
  Value o = WgFragmentFromValuesOp::create(b, oType, acc);
  Value factor = WgFragmentFromValuesOp::create(b, rowsF32Type, alpha);
  return wg_lowering::fragmentValues(
      b, WgScaleRowsOp::create(b, oType, o, factor, moved));
}

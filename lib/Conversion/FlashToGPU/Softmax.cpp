//===- Softmax.cpp - the online softmax on the wgmma accumulator layout ---===//
//
// The softmax steps of one S tile held in registers, which the key loop
// patterns (KeyLoopToWarpgroup.cpp) build for flash.mask,
// flash.softmax_update (base2) and flash.rescale: flash.wg.mask_keys on the
// thread's query rows, flash.wg.softmax_update with the running-max rule the
// schedule chose (lag_max, speculative), and flash.wg.scale_rows, guarded by
// the update's `moved` where the rule lets rows keep their reference. Their
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

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;

Value ConsumerRole::maskKeys(Value scores, Value j, bool causal) {
  // The tile's first key and the thread's two query rows.
  Value j32 = arith::IndexCastOp::create(b, k.i32, j);
  Value first = arith::MulIOp::create(b, j32, cI32(spec.blockN));
  Value rows =
      WgFragmentFromValuesOp::create(b, k.rowsI32Type, ValueRange{row0, row1});
  return WgMaskKeysOp::create(b, k.sType, scores, rows, first, k.seqQ, k.seqK,
                              causal);
}

WgSoftmaxUpdateOp ConsumerRole::softmaxUpdate(Value scores, Value m, Value l,
                                              bool firstTile) {
  // A tile program's first key tile starts from the literal -inf, so there
  // is nothing to speculate on.
  const bool speculative = spec.sw.speculativeExp && !firstTile;
  const bool lagMax = spec.lagMax && !speculative;
  auto pType = FragmentType::get(k.ctx, {64, spec.blockN}, spec.elementType,
                                 WgmmaOperandALayoutAttr::get(k.ctx));
  return WgSoftmaxUpdateOp::create(b, pType, k.rowsF32Type, k.rowPartialsType,
                                   k.rowsF32Type, k.i1, scores, m, l,
                                   k.scaleLog2, lagMax, speculative);
}

Value ConsumerRole::scaleRows(Value o, Value alpha, Value moved) {
  return WgScaleRowsOp::create(b, k.oType, o, alpha, moved);
}

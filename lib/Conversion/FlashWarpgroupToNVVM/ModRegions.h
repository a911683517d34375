//===- ModRegions.h - score and mask mods inlined in GPU code ---*- C++ -*-===//
//
// The forward's flash.wg.mod_scores lowering and the backward kernels both
// inline the regions of a score or mask mod into per-register code; these
// give the regions' ops the GPU's forms (ModScoresToLLVM.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_CONVERSION_FLASHWARPGROUPTONVVM_MODREGIONS_H
#define FLASHC_LIB_CONVERSION_FLASHWARPGROUPTONVVM_MODREGIONS_H

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/Region.h"

namespace mlir::flash::wg_lowering {

/// clamp(x, 0, limit - 1) of an i32 as an index: the row or key a mod
/// region sees for an element that may lie past the sequence (whose result
/// is masked or never stored). `zero` and `one` are i32 constants.
Value clampedIndex(ImplicitLocOpBuilder &b, Value x, Value limit, Value zero,
                   Value one);

/// The mod region's ops inlined at `b` with `args` (inlineModRegion), with
/// the GPU's forms: math.tanh as one tanh.approx, arith.divf allowed the
/// reciprocal (arcp), as Triton's default division is.
Value inlineModRegionForGpu(ImplicitLocOpBuilder &b, Region &region,
                            ValueRange args);

/// d score_mod / d score at `args` (inlineScoreModDerivative), in the same
/// forms; `*value` (when given) receives the score mod's value.
Value inlineScoreModDerivativeForGpu(ImplicitLocOpBuilder &b, Region &scoreMod,
                                     ValueRange args, Value *value = nullptr);

} // namespace mlir::flash::wg_lowering

#endif // FLASHC_LIB_CONVERSION_FLASHWARPGROUPTONVVM_MODREGIONS_H

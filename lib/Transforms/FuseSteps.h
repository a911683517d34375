//===- FuseSteps.h - the rewrites -flash-fuse is made of --------*- C++ -*-===//
//
// Each step is a function on one func so it can be tested and reused on its
// own; FlashFuse.cpp runs them in order.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_TRANSFORMS_FUSESTEPS_H
#define FLASHC_LIB_TRANSFORMS_FUSESTEPS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::flash {

/// Moves the online softmax of `func` to base 2 (see FlashFuse in
/// Passes.td). Returns false, changing nothing, when a running max has a
/// source other than a softmax update or the -inf start value.
bool foldScaleIntoExp2(func::FuncOp func);

/// Splits each masked key loop of `func` into an unmasked and a masked part.
void splitMaskedLoops(func::FuncOp func);

} // namespace mlir::flash

#endif // FLASHC_LIB_TRANSFORMS_FUSESTEPS_H

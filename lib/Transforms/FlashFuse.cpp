//===- FlashFuse.cpp - the -flash-fuse pass -------------------------------===//
//
// Runs the steps of FuseSteps.h on each function.
//
//===----------------------------------------------------------------------===//

#include "FuseSteps.h"
#include "flashc/Transforms/Passes.h"

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHFUSE
#include "flashc/Transforms/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::flash;

namespace {

struct FlashFusePass : public mlir::flash::impl::FlashFuseBase<FlashFusePass> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    // A function whose max has foreign sources keeps base e; it is still
    // correct, only slower, so this is not an error.
    (void)foldScaleIntoExp2(func);
    splitMaskedLoops(func);
  }
};

} // namespace

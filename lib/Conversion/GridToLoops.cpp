//===- GridToLoops.cpp - flash.grid -> scf.for nest -----------------------===//
//
// The CPU reference path's launcher (-convert-flash-grid-to-loops).
//
//===----------------------------------------------------------------------===//

#include "Flash/FlashOps.h"
#include "flashc/Conversion/Passes.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::flash {
#define GEN_PASS_DEF_CONVERTFLASHGRIDTOLOOPS
#include "flashc/Conversion/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::flash;

namespace {

void lowerGrid(GridOp grid) {
  ImplicitLocOpBuilder b(grid.getLoc(), grid);
  Value c0 = arith::ConstantIndexOp::create(b, 0);
  Value c1 = arith::ConstantIndexOp::create(b, 1);
  SmallVector<Value> ivs;
  for (Value size : grid.getSizes()) {
    auto loop = scf::ForOp::create(b, c0, size, c1);
    ivs.push_back(loop.getInductionVar());
    b.setInsertionPoint(loop.getBody()->getTerminator());
  }
  // Program ids of nested grids belong to those grids, so only direct
  // children of this body's regions are replaced: walk, skipping grids.
  Block &body = grid.getBody().front();
  body.walk<WalkOrder::PreOrder>([&](Operation *op) {
    if (isa<GridOp>(op))
      return WalkResult::skip();
    if (auto pid = dyn_cast<ProgramIdOp>(op))
      pid.replaceAllUsesWith(ivs[pid.getAxis()]);
    return WalkResult::advance();
  });
  Operation *insertBefore = b.getInsertionBlock()->getTerminator();
  insertBefore->getBlock()->getOperations().splice(insertBefore->getIterator(),
                                                   body.getOperations());
  grid.erase();
}

struct ConvertFlashGridToLoopsPass
    : public mlir::flash::impl::ConvertFlashGridToLoopsBase<
          ConvertFlashGridToLoopsPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<GridOp> grids;
    getOperation()->walk([&](GridOp grid) { grids.push_back(grid); });
    // Post-order walk: inner grids come first, so each is lowered before
    // its parent moves it.
    for (GridOp grid : grids)
      lowerGrid(grid);
    getOperation()->walk([](ProgramIdOp pid) {
      if (pid->use_empty())
        pid.erase();
    });
  }
};

} // namespace

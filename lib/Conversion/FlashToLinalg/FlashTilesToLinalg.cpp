//===- FlashTilesToLinalg.cpp - the -convert-flash-tiles-to-linalg pass ---===//
//
// Gathers the tile-op pattern families of this folder into one pass of the
// CPU reference path.
//
//===----------------------------------------------------------------------===//

#include "Flash/FlashOps.h"
#include "flashc/Conversion/Passes.h"

#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::flash {
#define GEN_PASS_DEF_CONVERTFLASHTILESTOLINALG
#include "flashc/Conversion/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::flash;

namespace {

struct ConvertFlashTilesToLinalgPass
    : public mlir::flash::impl::ConvertFlashTilesToLinalgBase<
          ConvertFlashTilesToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateTileMemoryToLinalgPatterns(patterns);
    populateDotToLinalgPatterns(patterns);
    populateSoftmaxToLinalgPatterns(patterns);
    populateModScoresToLinalgPatterns(patterns);
    populateBackwardToLinalgPatterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();

    // Anything left would reach the LLVM lowering and fail far from here.
    WalkResult leftover = getOperation()->walk([](Operation *op) {
      if (isa<LoadTileOp, StoreTileOp, DotOp, MaskOp, ModScoresOp,
              ModScoresGradOp, SoftmaxUpdateOp, RescaleOp, FinalizeOp, RowDotOp,
              SoftmaxRecomputeOp, SoftmaxGradOp, SinkGradOp>(op)) {
        op->emitOpError("was not lowered to linalg");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (leftover.wasInterrupted())
      signalPassFailure();
  }
};

} // namespace

//===- ProgramPatterns.h - patterns over a role's tile ops ------*- C++ -*-===//
//
// What the patterns that rewrite the tile program's ops inside the producer
// or a consumer warpgroup (ProducerLoads.cpp, KeyLoopToWarpgroup.cpp,
// Epilogue.cpp) share. While they run a tile stands for its fragment
// through an unrealized_conversion_cast (fragment -> tensor); the casts
// cancel once every op is rewritten. The role's context (descriptors,
// rings, bounds, rows, turns) is the ConsumerRole or ProducerRole the
// patterns were made with, whose builder a pattern points at the op it
// rewrites.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_CONVERSION_FLASHTOGPU_PROGRAMPATTERNS_H
#define FLASHC_LIB_CONVERSION_FLASHTOGPU_PROGRAMPATTERNS_H

#include "FlashToGPU.h"
#include "../FlashWarpgroupToNVVM/RegisterUtils.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::flash::gpu_lowering {

/// The fragment a tile stands for while its ops are rewritten, or null.
inline Value fragmentOf(Value tile) {
  auto cast = tile.getDefiningOp<UnrealizedConversionCastOp>();
  if (!cast || cast->getNumOperands() != 1 ||
      !isa<FragmentType>(cast->getOperand(0).getType()))
    return {};
  return cast->getOperand(0);
}

/// A tile standing for `fragment`.
inline Value asTile(OpBuilder &b, Location loc, Value fragment,
                    Type tileType) {
  return UnrealizedConversionCastOp::create(b, loc, tileType, fragment)
      .getResult(0);
}

/// The registers of `fragment`: the values it was built from, if it was.
inline SmallVector<Value> registersOf(ImplicitLocOpBuilder &b,
                                      Value fragment) {
  if (auto from = fragment.getDefiningOp<WgFragmentFromValuesOp>())
    return SmallVector<Value>(from.getValues());
  return wg_lowering::fragmentValues(b, fragment);
}

/// Points a role's builder at `op` for one rewrite, reporting what it
/// creates to the rewriter's driver.
class BuilderAt {
public:
  BuilderAt(ImplicitLocOpBuilder &b, PatternRewriter &rewriter, Operation *op)
      : b(b), guard(b), listener(b.getListener()), loc(b.getLoc()) {
    b.setInsertionPoint(op);
    b.setListener(rewriter.getListener());
    b.setLoc(op->getLoc());
  }
  ~BuilderAt() {
    b.setListener(listener);
    b.setLoc(loc);
  }

private:
  ImplicitLocOpBuilder &b;
  OpBuilder::InsertionGuard guard;
  OpBuilder::Listener *listener;
  Location loc;
};

/// A pattern with its role (ConsumerRole or ProducerRole) as its context.
template <typename OpTy, typename Role>
struct RolePattern : OpRewritePattern<OpTy> {
  RolePattern(MLIRContext *ctx, Role &role)
      : OpRewritePattern<OpTy>(ctx), role(role) {}
  Role &role;
};

} // namespace mlir::flash::gpu_lowering

#endif // FLASHC_LIB_CONVERSION_FLASHTOGPU_PROGRAMPATTERNS_H

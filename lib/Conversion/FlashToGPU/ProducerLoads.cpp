//===- ProducerLoads.cpp - the program's loads on the producer ------------===//
//
// The producer warpgroup's share of the tile program is its loads. Cloned
// into the producer for each tile, they are rewritten by these patterns:
//
//   flash.load_tile of Q    -> once this tile's Q buffer is free (a
//                              persistent block's buffers are reused), the
//                              TMA load of the Q tile into it
//   the key loops           -> one loop over the block's key tiles [0, nHi),
//                              filling ring position kvBase + j with the
//                              loops' K and V loads once the consumers
//                              released the slot: both after one wait, or
//                              with split release K and V each after its
//                              own (K runs ahead of V)
//
// The rest of the key loops (the products, the softmax) is the consumers'
// and goes. Which tensor a load reads is its tensor map's: the program's Q,
// K and V memrefs are read through them.
//
//===----------------------------------------------------------------------===//

#include "ProgramPatterns.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;

namespace {

/// The tensor map a tile program memref stands for.
Value tensorMapOf(Value memref) {
  // A decoding program reads a page of K or V through a view of it.
  if (auto view = memref.getDefiningOp<memref::SubViewOp>())
    memref = view.getSource();
  auto cast = memref.getDefiningOp<UnrealizedConversionCastOp>();
  if (!cast || cast->getNumOperands() != 1)
    return {};
  return cast->getOperand(0);
}

bool inKeyLoop(Operation *op) {
  auto loop = op->getParentOfType<scf::ForOp>();
  return loop && loop->hasAttr(kKeyLoopAttrName);
}

struct QueryLoadToTma : RolePattern<LoadTileOp, ProducerRole> {
  using RolePattern::RolePattern;

  LogicalResult matchAndRewrite(LoadTileOp load,
                                PatternRewriter &rewriter) const override {
    if (inKeyLoop(load) || tensorMapOf(load.getSource()) != role.k.tmQ)
      return failure();
    BuilderAt at(role.b, rewriter, load);
    // With dynamicSchedule the claim loop waited already.
    if (role.spec.sw.persistent && !role.spec.sw.dynamicSchedule)
      role.waitQBufferFree();
    role.issueQ();
    // The tile itself is no value the producer has: what still reads it
    // (the consumers' products in the key loops) goes with the loops.
    rewriter.replaceOp(load, UnrealizedConversionCastOp::create(
                                 rewriter, load.getLoc(), load.getType(),
                                 ValueRange()));
    return success();
  }
};

struct KeyLoadsToRingFills : RolePattern<scf::ForOp, ProducerRole> {
  using RolePattern::RolePattern;

  LogicalResult matchAndRewrite(scf::ForOp loop,
                                PatternRewriter &rewriter) const override {
    if (!loop->hasAttr(kKeyLoopAttrName) ||
        llvm::any_of(loop.getInitArgs(), [](Value init) {
          return init.getDefiningOp<scf::ForOp>();
        }))
      return failure();
    // The K and V loads of a key tile, in the program's order.
    SmallVector<ProducerRole::KV> loads;
    for (LoadTileOp load : loop.getBody()->getOps<LoadTileOp>()) {
      Value map = tensorMapOf(load.getSource());
      if (map != role.k.tmK && map != role.k.tmV)
        return failure();
      loads.push_back(map == role.k.tmK ? ProducerRole::KV::K
                                        : ProducerRole::KV::V);
    }
    if (loads.empty())
      return failure();
    BuilderAt at(role.b, rewriter, loop);
    const bool both = loads.size() == 2 && loads[0] != loads[1];
    role.k.forLoop(role.k.cIndex(0), role.tile.nHiIdx, ValueRange(),
                   [&](Value j, ValueRange) {
                     Value pos = role.tile.ringPosition(role.b, j);
                     if (!role.spec.sw.splitRelease && both) {
                       role.waitEmpty(pos, role.spec.barEmpty());
                       role.issueKV(j, ProducerRole::KV::Both,
                                    role.keyTileAt(j));
                       return SmallVector<Value>();
                     }
                     // K of tile j may load once S of tile j - stages retired,
                     // V once its P V did.
                     std::optional<ProducerRole::KeyTile> at;
                     for (ProducerRole::KV which : loads) {
                       const bool early = which == ProducerRole::KV::K &&
                                          role.spec.sw.splitRelease;
                       role.waitEmpty(pos, early ? role.spec.barEmptyK()
                                                 : role.spec.barEmpty());
                       if (!at)
                         at = role.keyTileAt(j);
                       role.issueKV(j, which, *at);
                     }
                     return SmallVector<Value>();
                   });
    // The key loops after this one are walked by the same loop; what they
    // compute is the consumers', so their state passes through unchanged.
    SmallVector<scf::ForOp> loops = {loop};
    for (Operation *op = loop->getNextNode(); op; op = op->getNextNode())
      if (op->hasAttr(kKeyLoopAttrName))
        loops.push_back(cast<scf::ForOp>(op));
    for (scf::ForOp done : llvm::reverse(loops))
      rewriter.replaceOp(done, done.getInitArgs());
    return success();
  }
};

} // namespace

void mlir::flash::gpu_lowering::populateProducerLoadPatterns(
    RewritePatternSet &patterns, ProducerRole &producer) {
  patterns.add<QueryLoadToTma, KeyLoadsToRingFills>(patterns.getContext(),
                                                    producer);
}

//===- ProgramClone.cpp - a role's copy of the tile program ---------------===//
//
// Each role lowers its share of the tile program from a copy: the ops are
// cloned where the role's body is being built, and what they read from the
// rest of the program maps to the kernel's values or to placeholders the
// role's patterns must leave unused. After the greedy driver ran, a program
// op, a placeholder use or a tile left over is a located error.
//
//===----------------------------------------------------------------------===//

#include "FlashToGPU.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Iterators.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;

ProgramClone::ProgramClone(KernelContext &k, StringRef role,
                           ArrayRef<Operation *> ops)
    : k(k), role(role), block(k.b.getInsertionBlock()) {
  ImplicitLocOpBuilder &b = k.b;
  before = b.getInsertionPoint() == block->begin()
               ? nullptr
               : &*std::prev(b.getInsertionPoint());
  // What the program's ops read from the rest of it. Constants come along;
  // Q, K and V are read through their tensor maps; the rest (the Q tile, the
  // tiles' coordinates, the lengths, the bounds) has kernel-level
  // counterparts the patterns take from their role, so it becomes a
  // placeholder that must be left without uses. The captures are kernel
  // arguments too.
  llvm::SmallPtrSet<Operation *, 8> program(ops.begin(), ops.end());
  auto bring = [&](Value value) {
    if (map.contains(value))
      return;
    Operation *def = value.getDefiningOp();
    if (def && program.contains(def))
      return;
    if (def && def->hasTrait<OpTrait::ConstantLike>()) {
      map.map(value, b.clone(*def)->getResult(0));
      return;
    }
    // A packed sequence's view of Q, K or V reads its tensor map too (the
    // roles add the sequence's first row), as do a decoding program's
    // views of a group of heads or a page.
    Value tensor = value;
    if (auto view = value.getDefiningOp<memref::SubViewOp>())
      tensor = view.getSource();
    if (k.spec.decode)
      tensor = viewedMemref(value);
    auto arg = dyn_cast<BlockArgument>(tensor);
    if (arg && isa<func::FuncOp>(arg.getOwner()->getParentOp()) &&
        arg.getArgNumber() < 3) {
      Value maps[] = {k.tmQ, k.tmK, k.tmV};
      map.map(value, UnrealizedConversionCastOp::create(
                         b, value.getType(), maps[arg.getArgNumber()])
                         .getResult(0));
      return;
    }
    // A capture is the kernel's own memref argument.
    if (arg && isa<func::FuncOp>(arg.getOwner()->getParentOp()))
      if (std::optional<unsigned> i = captureIndexOf(k.spec.captures, arg)) {
        map.map(value, k.captures[*i]);
        return;
      }
    auto placeholder =
        UnrealizedConversionCastOp::create(b, value.getType(), ValueRange());
    placeholders.push_back(placeholder);
    map.map(value, placeholder.getResult(0));
  };
  for (Operation *op : ops)
    op->walk([&](Operation *nested) {
      for (Value operand : nested->getOperands())
        if (!op->isAncestor(operand.getParentRegion()->getParentOp()))
          bring(operand);
    });
}

Operation *ProgramClone::clone(Operation *op) {
  // A fresh mapping per clone: one that knows a block's arguments already
  // would clone the block without them.
  IRMapping cloneMap = map;
  Operation *copy = k.b.clone(*op, cloneMap);
  map.map(op->getResults(), copy->getResults());
  if (isa<scf::ForOp>(copy))
    copy->setAttr(kKeyLoopAttrName, k.b.getUnitAttr());
  copy->walk([&](Operation *nested) { worklist.push_back(nested); });
  return copy;
}

void ProgramClone::keepAlive(Value value) {
  sinks.push_back(
      UnrealizedConversionCastOp::create(k.b, k.b.getI1Type(), value));
}

LogicalResult ProgramClone::lower(FrozenRewritePatternSet patterns) {
  GreedyRewriteConfig config;
  config.setStrictness(GreedyRewriteStrictness::ExistingAndNewOps)
      .enableFolding(false)
      .enableConstantCSE(false)
      .setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
  (void)applyOpPatternsGreedily(worklist, patterns, config);
  for (Operation *sink : sinks)
    sink->erase();
  block->walk([](scf::ForOp loop) { loop->removeAttr(kKeyTileLoopAttrName); });

  // What the rewrite left without uses: the tiles' casts, the fragments of
  // registers, the key offsets, a decoding program's reads of its page
  // table (placeholders aside, which are checked next).
  llvm::SmallPtrSet<Operation *, 8> kept(placeholders.begin(),
                                         placeholders.end());
  ImplicitLocOpBuilder &b = k.b;
  Operation *end =
      b.getInsertionPoint() == block->end() ? nullptr : &*b.getInsertionPoint();
  auto eraseDead = [&] {
    for (bool erased = true; erased;) {
      erased = false;
      Operation *op = before ? before->getNextNode() : &block->front();
      while (op != end) {
        Operation *next = op->getNextNode();
        op->walk<WalkOrder::PostOrder, ReverseIterator>([&](Operation *nested) {
          if (!kept.contains(nested) && isOpTriviallyDead(nested)) {
            nested->erase();
            erased = true;
          }
        });
        op = next;
      }
    }
  };

  // Every program op and placeholder use must be gone.
  WalkResult left = block->walk([&](Operation *op) {
    if (op->hasAttr(kKeyLoopAttrName) ||
        isa<LoadTileOp, DotOp, MaskOp, SoftmaxUpdateOp, RescaleOp, FinalizeOp,
            StoreTileOp>(op)) {
      op->emitError("flash-to-gpu: the ")
          << role << "'s patterns left " << op->getName() << " unlowered";
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (left.wasInterrupted())
    return failure();
  eraseDead();
  for (Operation *placeholder : placeholders) {
    if (!placeholder->use_empty()) {
      Operation *user = *placeholder->user_begin();
      user->emitError("flash-to-gpu: the lowering left a use of a tile "
                      "program value in ")
          << user->getName();
      return failure();
    }
    placeholder->erase();
  }
  kept.clear();
  eraseDead();
  // A tile that no pattern consumed (O's rounding without its store, say).
  WalkResult tiles = block->walk([&](UnrealizedConversionCastOp cast) {
    if (llvm::any_of(cast->getResultTypes(),
                     llvm::IsaPred<TensorType, MemRefType>)) {
      cast->emitError("flash-to-gpu: a value of the tile program was left "
                      "unlowered");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(tiles.wasInterrupted());
}

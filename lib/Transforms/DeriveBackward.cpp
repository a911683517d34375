//===- DeriveBackward.cpp - the backward function of a forward one -------===//
//
// The -flash-derive-backward pass (Passes.td): from a function holding one
// flash.attention, the function holding its flash.attention_backward with
// the same attributes, captures, sinks and regions.
//
//===----------------------------------------------------------------------===//

#include "flashc/Transforms/Passes.h"

#include "Flash/FlashOps.h"

#include "mlir/IR/IRMapping.h"

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHDERIVEBACKWARD
#include "flashc/Transforms/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::flash;

namespace {

/// The forward op of `func` when its body is that op and the return.
AttentionOp forwardOf(func::FuncOp func) {
  if (func.isExternal() || !func.getBody().hasOneBlock())
    return {};
  Block &body = func.getBody().front();
  if (body.getOperations().size() != 2)
    return {};
  return dyn_cast<AttentionOp>(body.front());
}

LogicalResult addBackward(OpBuilder &b, func::FuncOp func, AttentionOp fwd) {
  if (!fwd.getLse())
    return fwd.emitOpError("-flash-derive-backward: the forward must write "
                           "the LSE (the backward recomputes P from it)");
  if (fwd.isPacked())
    return fwd.emitOpError("-flash-derive-backward: packed sequences' "
                           "backward takes max_seqlen_k, which the forward "
                           "does not have; write it by hand");
  if (fwd.isPaged())
    return fwd.emitOpError("-flash-derive-backward: a paged K/V cache is "
                           "read by decoding, which has no backward pass");
  Type qType = fwd.getQ().getType(), kType = fwd.getK().getType(),
       vType = fwd.getV().getType(), oType = fwd.getO().getType();
  SmallVector<Type> types = {qType, kType, vType,
                             oType, oType, fwd.getLse().getType(),
                             qType, kType, vType};
  llvm::append_range(types, fwd.getCaptures().getTypes());
  if (Value sinks = fwd.getSinks())
    types.append({sinks.getType(), sinks.getType()});

  std::string name = (func.getSymName() + "_backward").str();
  auto module = func->getParentOfType<ModuleOp>();
  if (module.lookupSymbol(name))
    return func.emitOpError("-flash-derive-backward: @")
           << name << " exists already";
  b.setInsertionPointAfter(func);
  auto backward =
      func::FuncOp::create(b, fwd.getLoc(), name, b.getFunctionType(types, {}));
  // The forward's function attributes (the C interface, say) are the
  // caller's business for the backward too.
  for (NamedAttribute attr : func->getDiscardableAttrs())
    backward->setAttr(attr.getName(), attr.getValue());
  Block *entry = backward.addEntryBlock();
  b.setInsertionPointToStart(entry);
  auto arg = [&](unsigned i) { return entry->getArgument(i); };
  unsigned numCaptures = fwd.getCaptures().size();
  ValueRange captures = entry->getArguments().slice(9, numCaptures);
  Value sinks, dSinks;
  if (fwd.getSinks()) {
    sinks = arg(9 + numCaptures);
    dSinks = arg(10 + numCaptures);
  }
  auto op = AttentionBackwardOp::create(
      b, fwd.getLoc(), arg(0), arg(1), arg(2), arg(3), arg(4), arg(5), arg(6),
      arg(7), arg(8), /*cuSeqlensQ=*/Value(), /*cuSeqlensK=*/Value(),
      /*maxSeqlenQ=*/Value(), /*maxSeqlenK=*/Value(), captures, sinks, dSinks,
      fwd.getScaleAttr(), fwd.getCausalAttr(), /*deterministic=*/UnitAttr(),
      /*config=*/ConfigAttr(), fwd.getKeyRangesAttr());
  IRMapping mapping;
  fwd.getScoreMod().cloneInto(&op.getScoreMod(), mapping);
  fwd.getMaskMod().cloneInto(&op.getMaskMod(), mapping);
  func::ReturnOp::create(b, fwd.getLoc());
  return success();
}

struct FlashDeriveBackwardPass
    : public mlir::flash::impl::FlashDeriveBackwardBase<
          FlashDeriveBackwardPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    OpBuilder b(module.getContext());
    SmallVector<std::pair<func::FuncOp, AttentionOp>> forwards;
    for (auto func : module.getOps<func::FuncOp>())
      if (AttentionOp fwd = forwardOf(func))
        forwards.push_back({func, fwd});
    if (replace && forwards.empty()) {
      module.emitError("-flash-derive-backward: no function holds one "
                       "flash.attention (and the return) to derive the "
                       "backward of");
      return signalPassFailure();
    }
    for (auto [func, fwd] : forwards)
      if (failed(addBackward(b, func, fwd)))
        return signalPassFailure();
    if (replace)
      for (auto [func, fwd] : forwards)
        func.erase();
  }
};

} // namespace

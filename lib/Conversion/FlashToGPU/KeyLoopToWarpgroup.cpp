//===- KeyLoopToWarpgroup.cpp - the program's key loops on a consumer -----===//
//
// A consumer's key loops are the tile program's own scf.for loops (the
// unmasked tiles', then the masked ones'), cloned into the consumer
// warpgroup and rewritten by these patterns. The serial schedule rewrites
// each loop op by op:
//
//   scf.for over key offsets, carrying (O, m, l) tiles
//     -> scf.for over key tiles j, carrying (m, l, O) registers; its K and V
//        loads become the slot of ring position kvBase + j
//   flash.dot Q K^T        -> S = Q K_j^T as flash.wg.mma steps in this
//                             consumer's turn, waited for; K (and after the
//                             last tile Q) released
//   flash.mask             -> flash.wg.mask_keys on the thread's rows
//   flash.mod_scores       -> flash.wg.mod_scores on the thread's rows
//   flash.softmax_update   -> flash.wg.softmax_update (the schedule's rule
//                             for the running max)
//   flash.rescale          -> flash.wg.scale_rows, guarded by `moved`
//   arith.truncf of P      -> nothing: the update's P is in the 16-bit
//                             A-operand layout already (the same pattern
//                             rounds O in the epilogue)
//   flash.dot P V          -> O += P V_j in this consumer's turn, waited
//                             for; the slot released
//
// The overlapped schedule (`overlap`) rewrites the pair of loops into one
// software pipeline (S_j issued beside PV_{j-1}); the mask, the update and
// the rescale in it are the program's ops, cloned into the pipeline and
// rewritten by the same patterns.
//
// While a loop is rewritten a tile stands for its fragment through an
// unrealized_conversion_cast (fragment -> tensor; a K or V tile: its ring
// slot and descriptor offset -> tensor); the casts cancel once every op is
// rewritten. The loops carry registers, not fragments. The consumer's
// context (descriptors, ring, bounds, rows, ping-pong turns) is the
// ConsumerRole the patterns are made with.
//
//===----------------------------------------------------------------------===//

#include "ProgramPatterns.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"

#include <cmath>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;

FailureOr<KeyLoopRoles>
mlir::flash::gpu_lowering::keyLoopRoles(scf::ForOp loop) {
  Block *body = loop.getBody();
  auto updates = llvm::to_vector(body->getOps<SoftmaxUpdateOp>());
  auto rescales = llvm::to_vector(body->getOps<RescaleOp>());
  auto iterArgIndex = [&](Value value) -> std::optional<unsigned> {
    auto arg = dyn_cast<BlockArgument>(value);
    if (!arg || arg.getOwner() != body || arg.getArgNumber() == 0)
      return std::nullopt;
    return arg.getArgNumber() - 1;
  };
  if (updates.size() == 1 && rescales.size() == 1 &&
      loop.getNumRegionIterArgs() == 3) {
    std::optional<unsigned> o = iterArgIndex(rescales[0].getAcc());
    std::optional<unsigned> m = iterArgIndex(updates[0].getRowMax());
    std::optional<unsigned> l = iterArgIndex(updates[0].getRowSum());
    auto yield = cast<scf::YieldOp>(body->getTerminator());
    if (o && m && l && *o != *m && *o != *l && *m != *l &&
        yield.getOperand(*m) == updates[0].getNewMax() &&
        yield.getOperand(*l) == updates[0].getNewSum())
      return KeyLoopRoles{*o, *m, *l};
  }
  return loop.emitError("flash-to-gpu: a key loop must carry O through "
                        "flash.rescale and the running max and sums through "
                        "one flash.softmax_update");
}

/// The key loop state's registers (m[2], l[2], O's) as `loop`'s three
/// carried tiles, in its order.
static SmallVector<Value> stateTiles(ConsumerRole &role, scf::ForOp loop,
                                     const KeyLoopRoles &roles,
                                     ArrayRef<Value> m, ArrayRef<Value> l,
                                     ArrayRef<Value> o) {
  SmallVector<Value> tiles(3);
  auto tile = [&](unsigned index, Type type, ArrayRef<Value> regs) {
    tiles[index] = asTile(role.b, loop.getLoc(),
                          WgFragmentFromValuesOp::create(role.b, type, regs),
                          loop.getResult(index).getType());
  };
  tile(roles.m, role.k.rowsF32Type, m);
  tile(roles.l, role.k.rowPartialsType, l);
  tile(roles.o, role.k.oType, o);
  return tiles;
}

namespace {

/// The ring slot (and descriptor offset) a K or V tile landed in.
std::optional<ConsumerRole::Slot> slotOf(Value tile) {
  auto cast = tile.getDefiningOp<UnrealizedConversionCastOp>();
  if (!cast || cast->getNumOperands() != 2 ||
      !isa<RingSlotType>(cast->getOperand(0).getType()))
    return std::nullopt;
  return ConsumerRole::Slot{cast->getOperand(0), cast->getOperand(1)};
}

/// The key tile index of the rewritten key loop around `op`.
Value keyTileIndex(Operation *op) {
  auto loop = op->getParentOfType<scf::ForOp>();
  if (!loop || !loop->hasAttr(kKeyTileLoopAttrName))
    return {};
  return loop.getInductionVar();
}

/// The value of a tile that is a splat float constant.
std::optional<APFloat> splatOf(Value tile) {
  DenseElementsAttr splat;
  if (!matchPattern(tile, m_Constant(&splat)) || !splat.isSplat() ||
      !isa<FloatType>(splat.getElementType()))
    return std::nullopt;
  return splat.getSplatValue<APFloat>();
}

bool isSplatZero(Value value) {
  std::optional<APFloat> splat = splatOf(value);
  return splat && splat->isPosZero();
}

/// The registers a key loop starts from (m, l, O): those of its initial
/// tiles' fragments or splat constants; empty while one is not rewritten.
SmallVector<Value> initialRegisters(ConsumerRole &role, ValueRange inits,
                                    const KeyLoopRoles &roles) {
  SmallVector<Value> regs;
  auto add = [&](Value init, int64_t count) {
    if (std::optional<APFloat> splat = splatOf(init)) {
      regs.append(count, role.cF32(splat->convertToFloat()));
      return true;
    }
    Value fragment = fragmentOf(init);
    if (!fragment)
      return false;
    llvm::append_range(regs, registersOf(role.b, fragment));
    return true;
  };
  if (add(inits[roles.m], 2) && add(inits[roles.l], 2) &&
      add(inits[roles.o], role.spec.oRegs()))
    return regs;
  return {};
}

/// The key loop over key offsets becomes a loop over key tiles j in the
/// consumer's range for it: [0, nFull) without the mask, [nFull, ownHi)
/// with it. Its K and V loads become the slot of ring position kvBase + j,
/// taken once at the top; it carries (m, l, O) registers.
struct KeyLoopToRingLoop : RolePattern<scf::ForOp, ConsumerRole> {
  using RolePattern::RolePattern;

  LogicalResult matchAndRewrite(scf::ForOp loop,
                                PatternRewriter &rewriter) const override {
    if (!loop->hasAttr(kKeyLoopAttrName))
      return failure();
    FailureOr<KeyLoopRoles> roles = keyLoopRoles(loop);
    if (failed(roles))
      return failure();
    Block *body = loop.getBody();
    const bool masked = !body->getOps<MaskOp>().empty();
    // Under overlap only the masked tiles of serialMaskedTiles run serially.
    if (role.spec.sw.overlap && !(masked && role.spec.serialMaskedTiles))
      return failure();
    ValueRange inits = loop.getInitArgs();
    BuilderAt at(role.b, rewriter, loop);
    SmallVector<Value> state = initialRegisters(role, inits, *roles);
    if (state.empty())
      return rewriter.notifyMatchFailure(loop, "initial state not lowered");

    Value lo = masked ? role.tile.nFullIdx : role.cIndex(0);
    Value hi = masked ? role.ownHiIdx : role.tile.nFullIdx;
    auto tiles = scf::ForOp::create(role.b, lo, hi, role.cIndex(1), state);
    tiles->setAttr(kKeyTileLoopAttrName, rewriter.getUnitAttr());
    Block *tileBody = tiles.getBody();
    role.b.setInsertionPointToStart(tileBody);
    Value j = tiles.getInductionVar();
    ConsumerRole::Slot slot = role.slotInfo(j);
    ValueRange regs = tiles.getRegionIterArgs();
    SmallVector<Value> replacements(body->getNumArguments());
    replacements[0] =
        role.tile.firstKey(role.b, j, role.cIndex(role.spec.blockN));
    SmallVector<Value> regVec(regs);
    ArrayRef<Value> r(regVec);
    llvm::copy(stateTiles(role, loop, *roles, r.slice(0, 2), r.slice(2, 2),
                          r.drop_front(4)),
               replacements.begin() + 1);

    for (LoadTileOp load : llvm::make_early_inc_range(body->getOps<LoadTileOp>())) {
      rewriter.setInsertionPoint(load);
      rewriter.replaceOp(load,
                         UnrealizedConversionCastOp::create(
                             rewriter, load.getLoc(), load.getType(),
                             ValueRange{slot.slot, slot.descOffset}));
    }
    rewriter.inlineBlockBefore(body, tileBody, tileBody->end(), replacements);

    // The yield hands on the registers once the body's ops are rewritten.
    auto yield = cast<scf::YieldOp>(tileBody->getTerminator());
    rewriter.setInsertionPoint(yield);
    auto next = UnrealizedConversionCastOp::create(
        rewriter, yield.getLoc(), TypeRange(regs),
        ValueRange{yield.getOperand(roles->m), yield.getOperand(roles->l),
                   yield.getOperand(roles->o)});
    rewriter.replaceOpWithNewOp<scf::YieldOp>(yield, next.getResults());

    role.b.setInsertionPointAfter(tiles);
    SmallVector<Value> outVec(tiles.getResults());
    ArrayRef<Value> out(outVec);
    rewriter.replaceOp(loop, stateTiles(role, loop, *roles, out.slice(0, 2),
                                        out.slice(2, 2), out.drop_front(4)));
    return success();
  }
};

/// The carried state's tiles, once rewritten, as the registers of their
/// fragments (at the yield of a key loop or of a peeled tile).
struct KeyLoopStateToRegisters
    : OpRewritePattern<UnrealizedConversionCastOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(UnrealizedConversionCastOp cast,
                                PatternRewriter &rewriter) const override {
    if (cast->use_empty() ||
        !llvm::all_of(cast->getUsers(), llvm::IsaPred<scf::YieldOp>))
      return failure();
    SmallVector<Value> fragments;
    for (Value tile : cast->getOperands()) {
      Value fragment = fragmentOf(tile);
      if (!fragment)
        return failure();
      fragments.push_back(fragment);
    }
    ImplicitLocOpBuilder b(cast.getLoc(), rewriter);
    b.setInsertionPoint(cast);
    SmallVector<Value> regs;
    for (Value fragment : fragments)
      llvm::append_range(regs, registersOf(b, fragment));
    if (regs.size() != cast->getNumResults())
      return failure();
    rewriter.replaceOp(cast, regs);
    return success();
  }
};

/// S = Q K_j^T: the wgmma steps in this consumer's turn, waited for, K (and
/// after the tile's last S, Q) released.
struct ScoresDotToWgMma : RolePattern<DotOp, ConsumerRole> {
  using RolePattern::RolePattern;

  LogicalResult matchAndRewrite(DotOp dot,
                                PatternRewriter &rewriter) const override {
    Value j = keyTileIndex(dot);
    std::optional<ConsumerRole::Slot> slot = slotOf(dot.getB());
    if (!j || !slot || !dot.getTransposeB() || !isSplatZero(dot.getAcc()))
      return failure();
    BuilderAt at(role.b, rewriter, dot);
    SmallVector<Value> scores = role.waitedS(*slot, j);
    Value fragment =
        WgFragmentFromValuesOp::create(role.b, role.k.sType, scores);
    rewriter.replaceOp(dot,
                       asTile(role.b, dot.getLoc(), fragment, dot.getType()));
    return success();
  }
};

/// The key tile j of a scores op's first key, which the loop patterns give
/// as j * block_n; null where it is not that.
static Value keyTileOf(Value firstKey, const KernelSpec &spec) {
  auto offset = firstKey.getDefiningOp<arith::MulIOp>();
  APInt blockN;
  if (!offset || !matchPattern(offset.getRhs(), m_ConstantInt(&blockN)) ||
      blockN != spec.blockN)
    return Value();
  return offset.getLhs();
}

/// flash.mask on key tile j's scores.
struct MaskToMaskKeys : RolePattern<MaskOp, ConsumerRole> {
  using RolePattern::RolePattern;

  LogicalResult matchAndRewrite(MaskOp mask,
                                PatternRewriter &rewriter) const override {
    Value scores = fragmentOf(mask.getScores());
    Value j = keyTileOf(mask.getColStart(), role.spec);
    if (!scores || !j)
      return failure();
    BuilderAt at(role.b, rewriter, mask);
    Value masked = role.maskKeys(scores, j, mask.getCausal());
    rewriter.replaceOp(mask,
                       asTile(role.b, mask.getLoc(), masked, mask.getType()));
    return success();
  }
};

/// flash.mod_scores on key tile j's scores; the row, batch and head
/// operands are the program's and give way to this consumer's.
struct ModScoresToWg : RolePattern<ModScoresOp, ConsumerRole> {
  using RolePattern::RolePattern;

  LogicalResult matchAndRewrite(ModScoresOp op,
                                PatternRewriter &rewriter) const override {
    Value scores = fragmentOf(op.getScores());
    Value j = keyTileOf(op.getColStart(), role.spec);
    if (!scores || !j)
      return failure();
    BuilderAt at(role.b, rewriter, op);
    Value modded = role.modScores(scores, j, op);
    rewriter.replaceOp(op, asTile(role.b, op.getLoc(), modded, op.getType()));
    return success();
  }
};

/// The update of one key tile. A tile program's first key tile starts from
/// the literal -inf (and zero sums): the registers of those constants, and
/// no speculation on a max that is not there.
struct SoftmaxUpdateToWg : RolePattern<SoftmaxUpdateOp, ConsumerRole> {
  using RolePattern::RolePattern;

  LogicalResult matchAndRewrite(SoftmaxUpdateOp op,
                                PatternRewriter &rewriter) const override {
    Value scores = fragmentOf(op.getScores());
    if (!scores || !op.getBase2())
      return failure();
    BuilderAt at(role.b, rewriter, op);
    std::optional<APFloat> mOld = splatOf(op.getRowMax());
    const bool firstTile = mOld && mOld->convertToFloat() == -INFINITY;
    Value m = fragmentOrSplat(op.getRowMax(), role.k.rowsF32Type);
    Value l = fragmentOrSplat(op.getRowSum(), role.k.rowPartialsType);
    if (!m || !l)
      return failure();
    WgSoftmaxUpdateOp update = role.softmaxUpdate(scores, m, l, firstTile);
    Location loc = op.getLoc();
    rewriter.replaceOp(
        op, {asTile(role.b, loc, update.getP(), op.getP().getType()),
             asTile(role.b, loc, update.getMNew(), op.getNewMax().getType()),
             asTile(role.b, loc, update.getLNew(), op.getNewSum().getType()),
             asTile(role.b, loc, update.getAlpha(), op.getAlpha().getType())});
    return success();
  }

  /// A row vector's fragment, or one built from its splat constant.
  Value fragmentOrSplat(Value tile, FragmentType type) const {
    if (Value fragment = fragmentOf(tile))
      return fragment;
    std::optional<APFloat> splat = splatOf(tile);
    if (!splat)
      return {};
    Value value = role.cF32(splat->convertToFloat());
    return WgFragmentFromValuesOp::create(role.b, type,
                                          ValueRange{value, value});
  }
};

struct RescaleToScaleRows : RolePattern<RescaleOp, ConsumerRole> {
  using RolePattern::RolePattern;

  LogicalResult matchAndRewrite(RescaleOp op,
                                PatternRewriter &rewriter) const override {
    Value acc = fragmentOf(op.getAcc());
    Value alpha = fragmentOf(op.getAlpha());
    if (!acc || !alpha)
      return failure();
    // Where the running max may keep its reference, rows whose max did not
    // move skip the multiplies.
    Value moved;
    if (auto update = alpha.getDefiningOp<WgSoftmaxUpdateOp>())
      if (update.getLagMax() || update.getSpeculative())
        moved = update.getMoved();
    BuilderAt at(role.b, rewriter, op);
    Value scaled = role.scaleRows(acc, alpha, moved);
    rewriter.replaceOp(op, asTile(role.b, op.getLoc(), scaled, op.getType()));
    return success();
  }
};

/// arith.truncf of a tile into the 16-bit pairs of the A-operand layout:
/// O in the epilogue (flash.wg.truncf), or nothing where the fragment is in
/// that layout already (P, from flash.wg.softmax_update).
struct TileTruncFToWg : OpRewritePattern<arith::TruncFOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(arith::TruncFOp op,
                                PatternRewriter &rewriter) const override {
    Value in = fragmentOf(op.getIn());
    auto type = in ? dyn_cast<FragmentType>(in.getType()) : FragmentType();
    auto tile = dyn_cast<RankedTensorType>(op.getType());
    if (!type || !tile)
      return failure();
    Value out = in;
    if (isa<WgmmaAccumulatorLayoutAttr>(type.getLayout())) {
      MLIRContext *ctx = op.getContext();
      auto outType = FragmentType::get(ctx, type.getShape(),
                                       tile.getElementType(),
                                       WgmmaOperandALayoutAttr::get(ctx));
      out = WgTruncFOp::create(rewriter, op.getLoc(), outType, in);
    } else if (!isa<WgmmaOperandALayoutAttr>(type.getLayout()) ||
               type.getElementType() != tile.getElementType()) {
      return failure();
    }
    rewriter.replaceOp(op, asTile(rewriter, op.getLoc(), out, tile));
    return success();
  }
};

/// O += P V_j in this consumer's turn, waited for; the slot released.
struct OutputDotToWgMma : RolePattern<DotOp, ConsumerRole> {
  using RolePattern::RolePattern;

  LogicalResult matchAndRewrite(DotOp dot,
                                PatternRewriter &rewriter) const override {
    Value p = fragmentOf(dot.getA());
    Value acc = fragmentOf(dot.getAcc());
    std::optional<ConsumerRole::Slot> slot = slotOf(dot.getB());
    Value j = keyTileIndex(dot);
    if (!j || dot.getTransposeB() || !p || !acc || !slot)
      return failure();
    BuilderAt at(role.b, rewriter, dot);
    SmallVector<Value> packedP = registersOf(role.b, p);
    SmallVector<Value> accRegs = registersOf(role.b, acc);
    Value o = role.inTurn(role.k.oType, [&] {
      SmallVector<Value> vDescs = role.prepPV(*slot, j);
      return SmallVector<Value>{role.emitPV(packedP, accRegs, vDescs)};
    })[0];
    role.wgWait(0);
    SmallVector<Value> out = role.oValues(o);
    role.release(slot->slot);
    Value fragment = WgFragmentFromValuesOp::create(role.b, role.k.oType, out);
    rewriter.replaceOp(dot,
                       asTile(role.b, dot.getLoc(), fragment, dot.getType()));
    return success();
  }
};

/// FA3's intra-warpgroup overlap (#flash.schedule's `overlap`): the unmasked
/// key loop and the masked one after it as one software pipeline. S_0 and
/// its softmax are peeled (the unmasked softmax where tile 0 is full, else
/// the masked one); in the loops S_j is issued beside PV_{j-1} in one turn,
/// the softmax of S_j runs while PV_{j-1} is in the tensor cores, then O is
/// rescaled; the last PV is peeled. The loops carry (m, l, P_{j-1}, O). The
/// mask, the update and the rescale are the program's own ops, cloned into
/// the pipeline and rewritten by the patterns above. With
/// serialMaskedTiles only the unmasked tiles are pipelined and the masked
/// loop is left to the serial pattern.
struct KeyLoopsToOverlappedRingLoops : RolePattern<scf::ForOp, ConsumerRole> {
  using RolePattern::RolePattern;

  LogicalResult matchAndRewrite(scf::ForOp unmasked,
                                PatternRewriter &rewriter) const override {
    if (!role.spec.sw.overlap || !unmasked->hasAttr(kKeyLoopAttrName) ||
        !unmasked.getBody()->getOps<MaskOp>().empty() || unmasked->use_empty())
      return failure();
    auto masked = dyn_cast<scf::ForOp>(*unmasked->user_begin());
    if (!masked || !masked->hasAttr(kKeyLoopAttrName) ||
        masked.getInitArgs() != unmasked.getResults())
      return failure();
    FailureOr<KeyLoopRoles> roles = keyLoopRoles(unmasked);
    FailureOr<KeyLoopRoles> maskedRoles = keyLoopRoles(masked);
    if (failed(roles) || failed(maskedRoles))
      return failure();
    BuilderAt at(role.b, rewriter, unmasked);
    SmallVector<Value> init =
        initialRegisters(role, unmasked.getInitArgs(), *roles);
    if (init.empty())
      return rewriter.notifyMatchFailure(unmasked, "initial state");

    const KernelSpec &spec = role.spec;
    const int64_t numP = spec.sRegs() / 2;
    const bool serialTail = spec.serialMaskedTiles;
    SmallVector<Type> stateTypes(4, role.k.f32);
    stateTypes.append(numP, role.k.i32);
    // The pipelined tiles: [0, ownHi), or [0, nFull) with serialMaskedTiles.
    Value overlapHi = serialTail ? role.tile.nFull : role.ownHi;
    Value overlapHiIdx = serialTail ? role.tile.nFullIdx : role.ownHiIdx;
    Value hasTiles = arith::CmpIOp::create(role.b, arith::CmpIPredicate::sgt,
                                           overlapHi, role.cI32(0));
    Value negInf = role.cF32(-INFINITY);
    SmallVector<Value> empty = {negInf, negInf, role.cF32(0.0f),
                                role.cF32(0.0f)};
    empty.append(numP, role.cI32(0));
    ValueRange initTiles = unmasked.getInitArgs();
    SmallVector<Value> st0 = role.k.ifThenElse(
        hasTiles, stateTypes,
        [&] {
          Value zero = role.cIndex(0);
          Value s =
              scoresTile(role.waitedS(role.slotInfo(zero), zero), unmasked);
          // Tile 0 needs flash.mask only if it is ragged or on the diagonal
          // (nFull = 0): the mask costs a compare and a select per score.
          auto tile0 = [&](scf::ForOp loop, const KeyLoopRoles &r) {
            IRMapping map;
            SoftmaxUpdateOp update =
                cloneSoftmax(loop, r, s, initTiles[roles->m],
                             initTiles[roles->l], zero, map);
            return stateRegisters({map.lookup(update.getNewMax()),
                                   map.lookup(update.getNewSum()),
                                   map.lookup(update.getP())},
                                  stateTypes);
          };
          if (serialTail)
            return tile0(unmasked, *roles);
          Value full = arith::CmpIOp::create(role.b, arith::CmpIPredicate::sgt,
                                             role.tile.nFull, role.cI32(0));
          return role.k.ifThenElse(
              full, stateTypes, [&] { return tile0(unmasked, *roles); },
              [&] { return tile0(masked, *maskedRoles); });
        },
        empty);
    role.k.probeStamp(KernelContext::FirstSoftmaxDone);

    SmallVector<Value> state = st0;
    state.append(ArrayRef<Value>(init).drop_front(4).begin(),
                 ArrayRef<Value>(init).drop_front(4).end());
    Value one = role.cIndex(1);
    Value firstMasked = arith::MaxUIOp::create(role.b, role.tile.nFullIdx, one);
    state = pipelinedLoop(unmasked, *roles, one, firstMasked, state);
    if (!serialTail)
      state = pipelinedLoop(masked, *maskedRoles, firstMasked, role.ownHiIdx,
                            state);

    ArrayRef<Value> st(state);
    ArrayRef<Value> pLast = st.slice(4, numP), accLast = st.drop_front(4 + numP);
    SmallVector<Type> accTypes(spec.oRegs(), role.k.f32);
    SmallVector<Value> accFinal = role.k.ifThenElse(
        hasTiles, accTypes,
        [&] {
          Value last = arith::SubIOp::create(role.b, overlapHiIdx, one);
          ConsumerRole::Slot s = role.slotInfo(last);
          Value o = role.inTurn(role.k.oType, [&] {
            SmallVector<Value> vDescs = role.prepPV(s, last);
            return SmallVector<Value>{role.emitPV(pLast, accLast, vDescs)};
          })[0];
          role.wgWait(0);
          SmallVector<Value> acc = role.oValues(o);
          role.release(s.slot);
          return acc;
        },
        accLast);

    // The pipeline's result stands for the loop it ends with.
    scf::ForOp end = serialTail ? unmasked : masked;
    const KeyLoopRoles &endRoles = serialTail ? *roles : *maskedRoles;
    rewriter.replaceOp(end, stateTiles(role, end, endRoles, st.slice(0, 2),
                                       st.slice(2, 2), accFinal));
    if (!serialTail)
      rewriter.eraseOp(unmasked);
    return success();
  }

private:
  /// S's registers as the tile of `loop`'s S = Q K^T.
  Value scoresTile(ArrayRef<Value> scores, scf::ForOp loop) const {
    Type type;
    for (DotOp dot : loop.getBody()->getOps<DotOp>())
      if (dot.getTransposeB())
        type = dot.getType();
    Value fragment =
        WgFragmentFromValuesOp::create(role.b, role.k.sType, scores);
    return asTile(role.b, loop.getLoc(), fragment, type);
  }

  /// Clones `loop`'s softmax (what its body computes from S besides the
  /// products and the rescale: the mask, the update, their arithmetic) at
  /// the role's insertion point, for the scores `s`, the carried max and
  /// sums `m` and `l`, and key tile j. Returns the program's update op;
  /// `map` gives its clone's values. The role's builder reports the
  /// clones to the driver, whose patterns rewrite them.
  SoftmaxUpdateOp cloneSoftmax(scf::ForOp loop, const KeyLoopRoles &roles,
                               Value s, Value m, Value l, Value j,
                               IRMapping &map) const {
    Block *body = loop.getBody();
    map.map(loop.getInductionVar(),
            role.tile.firstKey(role.b, j, role.cIndex(role.spec.blockN)));
    map.map(body->getArgument(1 + roles.m), m);
    map.map(body->getArgument(1 + roles.l), l);
    SoftmaxUpdateOp update;
    for (Operation &op : body->without_terminator()) {
      if (auto dot = dyn_cast<DotOp>(op)) {
        if (dot.getTransposeB())
          map.map(dot.getResult(), s);
        continue;
      }
      if (isa<LoadTileOp, RescaleOp>(op))
        continue;
      if (auto trunc = dyn_cast<arith::TruncFOp>(op))
        if (isa<RankedTensorType>(trunc.getType()))
          continue;
      role.b.clone(op, map);
      if (auto u = dyn_cast<SoftmaxUpdateOp>(op))
        update = u;
    }
    return update;
  }

  /// Registers of the state tiles, for a yield.
  SmallVector<Value> stateRegisters(ValueRange tiles, TypeRange types) const {
    auto cast = UnrealizedConversionCastOp::create(role.b, types, tiles);
    return SmallVector<Value>(cast.getResults());
  }

  /// Key tiles [lo, hi) of `loop`, S_j beside PV_{j-1}: state (m[2], l[2],
  /// P_{j-1}, O) in, the same out.
  SmallVector<Value> pipelinedLoop(scf::ForOp loop, const KeyLoopRoles &roles,
                                   Value lo, Value hi,
                                   ArrayRef<Value> init) const {
    const int64_t numP = role.spec.sRegs() / 2;
    // The loop is in place before its body is built, so the driver sees
    // the ops cloned into it.
    auto loopOverTiles =
        scf::ForOp::create(role.b, lo, hi, role.cIndex(1), init);
    OpBuilder::InsertionGuard guard(role.b);
    role.b.setInsertionPointToStart(loopOverTiles.getBody());
    Value j = loopOverTiles.getInductionVar();
    SmallVector<Value> itVec(loopOverTiles.getRegionIterArgs());
    ArrayRef<Value> its(itVec);
    SmallVector<Value> pOld(its.slice(4, numP));
    SmallVector<Value> acc(its.drop_front(4 + numP));
    Value jm1 = arith::SubIOp::create(role.b, j, role.cIndex(1));
    ConsumerRole::Slot s = role.slotInfo(j);
    ConsumerRole::Slot prev = role.slotInfo(jm1);
    // Waits and descriptors first, then one fence and both GEMMs.
    ConsumerRole::SOperands sOps = role.prepS(s);
    SmallVector<Value> vDescs = role.prepPV(prev, jm1);
    SmallVector<Value> products =
        role.inTurn(TypeRange{role.k.sType, role.k.oType}, [&] {
          NVVM::WgmmaFenceAlignedOp::create(role.b);
          Value sAcc = role.emitS(sOps, /*fence=*/false);
          Value o = role.emitPV(pOld, acc, vDescs, /*fence=*/false);
          return SmallVector<Value>{sAcc, o};
        });
    role.wgWait(1);
    SmallVector<Value> scores = role.sValues(products[0]);
    role.releaseK(s.slot);
    role.releaseQAfterLastS(j);
    Value sTile = scoresTile(scores, loop);
    Location loc = loop.getLoc();
    auto carried = [&](Type type, ArrayRef<Value> regs, Type tileType) {
      return asTile(role.b, loc,
                    WgFragmentFromValuesOp::create(role.b, type, regs),
                    tileType);
    };
    ValueRange tiles = loop.getRegionIterArgs();
    IRMapping map;
    SoftmaxUpdateOp update = cloneSoftmax(
        loop, roles, sTile,
        carried(role.k.rowsF32Type, its.slice(0, 2), tiles[roles.m].getType()),
        carried(role.k.rowPartialsType, its.slice(2, 2),
                tiles[roles.l].getType()),
        j, map);
    role.wgWait(0);
    // Keep P_{j-1} live until PV_{j-1} retired, so P_j does not get its
    // registers while the wgmma still reads them (ptxas would serialise
    // the wgmma chain, C7513).
    for (Value p : pOld)
      (void)fenceOperand(role.b, p);
    SmallVector<Value> o = role.oValues(products[1]);
    role.release(prev.slot);
    // O *= alpha_j: the program's rescale on PV_{j-1}'s result.
    map.map(loop.getBody()->getArgument(1 + roles.o),
            carried(role.k.oType, o, tiles[roles.o].getType()));
    Value rescaled;
    for (RescaleOp rescale : loop.getBody()->getOps<RescaleOp>())
      rescaled = role.b.clone(*rescale, map)->getResult(0);
    scf::YieldOp::create(role.b,
                         stateRegisters({map.lookup(update.getNewMax()),
                                         map.lookup(update.getNewSum()),
                                         map.lookup(update.getP()), rescaled},
                                        loopOverTiles.getResultTypes()));
    return SmallVector<Value>(loopOverTiles.getResults());
  }
};

} // namespace

void mlir::flash::gpu_lowering::populateKeyLoopToWarpgroupPatterns(
    RewritePatternSet &patterns, ConsumerRole &consumer) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<KeyLoopToRingLoop, KeyLoopsToOverlappedRingLoops,
               ScoresDotToWgMma, MaskToMaskKeys, ModScoresToWg,
               SoftmaxUpdateToWg, RescaleToScaleRows, OutputDotToWgMma>(
      ctx, consumer);
  patterns.add<KeyLoopStateToRegisters, TileTruncFToWg>(ctx);
}

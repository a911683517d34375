//===- MaskAnalysis.cpp - key ranges a mask_mod implies -------------------===//
//
// Reads a mask_mod's yielded i1 as a formula over linear forms
// a * q_idx + b * kv_idx + c (a, b in {-1, 0, 1}) and finds the window
// behind the query it implies. Only what is proven is used: a comparison
// the reader does not know bounds nothing, so the kernel then walks every
// key tile (and still applies the mask).
//
//===----------------------------------------------------------------------===//

#include "flashc/Transforms/MaskAnalysis.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/Matchers.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::flash;

namespace {

/// a * q + b * kv + c.
struct Linear {
  int64_t q = 0, kv = 0, c = 0;
};

/// The region's q_idx and kv_idx block arguments.
struct Indices {
  Value q, kv;
};

std::optional<Linear> linearForm(Value v, const Indices &idx, int depth = 0) {
  if (depth > 16)
    return std::nullopt;
  if (v == idx.q)
    return Linear{1, 0, 0};
  if (v == idx.kv)
    return Linear{0, 1, 0};
  APInt constant;
  if (matchPattern(v, m_ConstantInt(&constant)))
    return Linear{0, 0, constant.getSExtValue()};
  Operation *op = v.getDefiningOp();
  if (!op)
    return std::nullopt;
  if (isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp>(op))
    return linearForm(op->getOperand(0), idx, depth + 1);
  if (isa<arith::AddIOp, arith::SubIOp>(op)) {
    auto lhs = linearForm(op->getOperand(0), idx, depth + 1);
    auto rhs = linearForm(op->getOperand(1), idx, depth + 1);
    if (!lhs || !rhs)
      return std::nullopt;
    int64_t sign = isa<arith::SubIOp>(op) ? -1 : 1;
    return Linear{lhs->q + sign * rhs->q, lhs->kv + sign * rhs->kv,
                  lhs->c + sign * rhs->c};
  }
  return std::nullopt;
}

/// The W of `cmp => kv >= q - W`, if it proves one (a comparison of q_idx
/// with kv_idx plus a constant); `*exact` (when given) is cleared when it
/// hides more than that.
std::optional<int64_t> windowOfComparison(arith::CmpIOp cmp, const Indices &idx,
                                          bool *exact) {
  auto lhs = linearForm(cmp.getLhs(), idx);
  auto rhs = linearForm(cmp.getRhs(), idx);
  if (!lhs || !rhs)
    return std::nullopt;
  // lhs P rhs as d = lhs - rhs compared with 0, flipped to d >= 0 or
  // d > 0 (greater forms) where possible.
  Linear d{lhs->q - rhs->q, lhs->kv - rhs->kv, lhs->c - rhs->c};
  using P = arith::CmpIPredicate;
  P pred = cmp.getPredicate();
  bool strict;
  switch (pred) {
  case P::sge:
  case P::uge:
    strict = false;
    break;
  case P::sgt:
  case P::ugt:
    strict = true;
    break;
  case P::sle:
  case P::ule:
    d = Linear{-d.q, -d.kv, -d.c};
    strict = false;
    break;
  case P::slt:
  case P::ult:
    d = Linear{-d.q, -d.kv, -d.c};
    strict = true;
    break;
  default:
    return std::nullopt;
  }
  // Unsigned compares of a difference that can wrap (q - kv with kv > q)
  // would make the bound unsound for the values past the wrap; accept an
  // unsigned form only where no index is subtracted, i.e. kv + c >= q
  // written with both sides non-negative sums.
  bool isUnsigned =
      pred == P::uge || pred == P::ugt || pred == P::ule || pred == P::ult;
  if (isUnsigned && (lhs->q < 0 || lhs->kv < 0 || rhs->q < 0 || rhs->kv < 0 ||
                     lhs->c < 0 || rhs->c < 0)) {
    // q - kv <(=) C unsigned: false whenever kv > q (the difference
    // wraps), else q - kv <(=) C: still kv >= q - C.
    bool differenceBelow = (pred == P::ult || pred == P::ule) && lhs->q == 1 &&
                           lhs->kv == -1 && lhs->c == 0 && rhs->q == 0 &&
                           rhs->kv == 0 && rhs->c >= 0;
    if (!differenceBelow)
      return std::nullopt;
    // That form hides the keys after the query too.
    if (exact)
      *exact = false;
  }
  // d = kv - q + c {>=, >} 0, i.e. kv >= q - c (+1 if strict).
  if (d.kv != 1 || d.q != -1)
    return std::nullopt;
  int64_t window = strict ? d.c - 1 : d.c;
  if (window < 0)
    return std::nullopt;
  return window;
}

/// `v` as index / C with C a positive constant that fits the kernels' i32
/// positions (arith.divui or divsi of q_idx or kv_idx, through index
/// casts): the index and C.
std::optional<std::pair<Value, int64_t>> chunkIndexOf(Value v,
                                                      const Indices &idx) {
  auto stripCasts = [](Value x) {
    while (Operation *op = x.getDefiningOp()) {
      if (!isa<arith::IndexCastOp, arith::IndexCastUIOp, arith::ExtSIOp,
               arith::ExtUIOp>(op))
        break;
      x = op->getOperand(0);
    }
    return x;
  };
  v = stripCasts(v);
  Operation *op = v.getDefiningOp();
  if (!op || !isa<arith::DivUIOp, arith::DivSIOp>(op))
    return std::nullopt;
  APInt divisor;
  Value index = stripCasts(op->getOperand(0));
  if ((index != idx.q && index != idx.kv) ||
      !matchPattern(op->getOperand(1), m_ConstantInt(&divisor)) ||
      !divisor.isStrictlyPositive() || divisor.getSignificantBits() > 32)
    return std::nullopt;
  return std::make_pair(index, divisor.getSExtValue());
}

/// The C of `cmp => q / C == kv / C`, if it is that comparison.
std::optional<int64_t> chunkOfComparison(arith::CmpIOp cmp,
                                         const Indices &idx) {
  if (cmp.getPredicate() != arith::CmpIPredicate::eq)
    return std::nullopt;
  auto lhs = chunkIndexOf(cmp.getLhs(), idx);
  auto rhs = chunkIndexOf(cmp.getRhs(), idx);
  if (!lhs || !rhs || lhs->second != rhs->second || lhs->first == rhs->first)
    return std::nullopt;
  return lhs->second;
}

using Bound = std::optional<int64_t>;

/// How one analysis reads a comparison and joins the bounds of an andi's
/// and an ori's two sides.
struct BoundRules {
  function_ref<Bound(arith::CmpIOp, bool *exact)> compare;
  function_ref<Bound(Bound, Bound)> both, either;
};

/// `cond` read as a tree of andi / ori over comparisons by `rules`;
/// `*exact` (when given) is cleared unless `cond` is one comparison that
/// `rules.compare` reads exactly.
Bound boundOf(Value cond, const BoundRules &rules, int depth = 0,
              bool *exact = nullptr) {
  if (depth > 16)
    return std::nullopt;
  Operation *op = cond.getDefiningOp();
  if (!op)
    return std::nullopt;
  if (exact && !isa<arith::CmpIOp>(op))
    *exact = false;
  if (isa<arith::AndIOp, arith::OrIOp>(op)) {
    Bound lhs = boundOf(op->getOperand(0), rules, depth + 1);
    Bound rhs = boundOf(op->getOperand(1), rules, depth + 1);
    return isa<arith::AndIOp>(op) ? rules.both(lhs, rhs)
                                  : rules.either(lhs, rhs);
  }
  auto cmp = dyn_cast<arith::CmpIOp>(op);
  return cmp ? rules.compare(cmp, exact) : std::nullopt;
}

/// The window W behind the query that `cond` proves: an andi's sides the
/// tighter, an ori's the looser (both needed).
Bound windowOf(Value cond, const Indices &idx, bool *exact = nullptr) {
  auto compare = [&](arith::CmpIOp cmp, bool *e) {
    return windowOfComparison(cmp, idx, e);
  };
  auto both = [](Bound lhs, Bound rhs) -> Bound {
    if (lhs && rhs)
      return std::min(*lhs, *rhs);
    return lhs ? lhs : rhs;
  };
  auto either = [](Bound lhs, Bound rhs) -> Bound {
    if (lhs && rhs)
      return std::max(*lhs, *rhs);
    return std::nullopt;
  };
  return boundOf(cond, {compare, both, either}, /*depth=*/0, exact);
}

/// The chunk C that `cond` proves: either side of an andi, an ori whose
/// sides agree.
Bound chunkOf(Value cond, const Indices &idx, bool *exact = nullptr) {
  auto compare = [&](arith::CmpIOp cmp, bool *) {
    return chunkOfComparison(cmp, idx);
  };
  auto both = [](Bound lhs, Bound rhs) { return lhs ? lhs : rhs; };
  auto either = [](Bound lhs, Bound rhs) {
    return lhs && lhs == rhs ? lhs : std::nullopt;
  };
  return boundOf(cond, {compare, both, either}, /*depth=*/0, exact);
}

/// The mask_mod's block and its yielded i1, when it has that form.
std::optional<std::pair<Indices, Value>> maskCondition(Region &maskMod) {
  if (maskMod.empty())
    return std::nullopt;
  Block &block = maskMod.front();
  if (block.empty() || block.getNumArguments() < 4)
    return std::nullopt;
  auto yield = dyn_cast<YieldOp>(block.back());
  if (!yield || yield.getValues().size() != 1)
    return std::nullopt;
  return std::make_pair(Indices{block.getArgument(2), block.getArgument(3)},
                        yield.getValues()[0]);
}

} // namespace

namespace {
/// `analysis` of `maskMod`'s yielded i1; with `exactly`, only when the
/// mask is that one comparison and nothing more.
Bound readMask(Region &maskMod,
               function_ref<Bound(Value, const Indices &, bool *)> analysis,
               bool exactly) {
  auto mask = maskCondition(maskMod);
  if (!mask)
    return std::nullopt;
  bool exact = true;
  Bound bound = analysis(mask->second, mask->first, exactly ? &exact : nullptr);
  return exact ? bound : std::nullopt;
}
} // namespace

std::optional<int64_t> mlir::flash::keyChunk(Region &maskMod) {
  return readMask(maskMod, chunkOf, /*exactly=*/false);
}

std::optional<int64_t> mlir::flash::keyChunkExactly(Region &maskMod) {
  return readMask(maskMod, chunkOf, /*exactly=*/true);
}

std::optional<int64_t> mlir::flash::keyWindowBehind(Region &maskMod) {
  return readMask(maskMod, windowOf, /*exactly=*/false);
}

std::optional<int64_t> mlir::flash::keyWindowExactly(Region &maskMod) {
  return readMask(maskMod, windowOf, /*exactly=*/true);
}

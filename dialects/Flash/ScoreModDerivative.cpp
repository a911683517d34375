//===- ScoreModDerivative.cpp - a score mod's derivative by the chain rule ===//
//
// The backward pass needs d score_mod(x, ...) / dx for a region the user
// wrote. The body is straight-line arith and math ops (FlashOps.td), so
// forward-mode differentiation op by op gives it exactly: each float value
// that depends on the score carries a tangent, seeded with 1 on the score,
// and each op's rule forms its result's tangent from its operands' values
// and tangents. Values that do not depend on the score (indices, captures,
// constants) carry none, so any op may compute them.
//
//===----------------------------------------------------------------------===//

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"

#include <cmath>

using namespace mlir;
using namespace mlir::flash;

/// Whether the tangent rules below cover `op` (given that one of its float
/// operands depends on the score).
static bool hasDerivativeRule(Operation *op) {
  return isa<arith::AddFOp, arith::SubFOp, arith::MulFOp, arith::DivFOp,
             arith::NegFOp, arith::MaximumFOp, arith::MinimumFOp,
             arith::MaxNumFOp, arith::MinNumFOp, arith::SelectOp, arith::ExtFOp,
             arith::TruncFOp, arith::CmpFOp, arith::FPToSIOp, arith::FPToUIOp,
             math::TanhOp, math::ExpOp, math::Exp2Op, math::ExpM1Op,
             math::LogOp, math::Log2Op, math::Log1pOp, math::SqrtOp,
             math::RsqrtOp, math::AbsFOp, math::SinOp, math::CosOp, math::FmaOp,
             math::AtanOp, math::PowFOp, math::FloorOp, math::CeilOp,
             math::RoundOp, math::TruncOp>(op);
}

Operation *mlir::flash::findOpWithoutDerivative(Region &scoreMod) {
  if (scoreMod.empty())
    return nullptr;
  Block &block = scoreMod.front();
  llvm::DenseSet<Value> dependent = {block.getArgument(0)};
  for (Operation &op : block.without_terminator()) {
    if (llvm::none_of(op.getOperands(),
                      [&](Value v) { return dependent.contains(v); }))
      continue;
    if (!hasDerivativeRule(&op))
      return &op;
    for (Value result : op.getResults())
      if (isa<FloatType>(result.getType()))
        dependent.insert(result);
  }
  return nullptr;
}

namespace {

/// Builds the tangents of one inlined body; a null tangent is zero.
class TangentBuilder {
public:
  TangentBuilder(OpBuilder &b, Location loc) : b(b), loc(loc) {}

  Value tangentOf(Value primal) const { return tangents.lookup(primal); }
  void seed(Value primal) {
    tangents[primal] = constant(primal.getType(), 1.0);
  }

  /// Forms the tangent of `clone`'s result from the tangents of `original`'s
  /// operands (mapped to `clone`'s).
  void differentiate(Operation *clone) {
    if (clone->getNumResults() != 1 ||
        !isa<FloatType>(clone->getResult(0).getType()))
      return;
    SmallVector<Value> dx;
    bool any = false;
    for (Value operand : clone->getOperands()) {
      dx.push_back(tangentOf(operand));
      any |= static_cast<bool>(dx.back());
    }
    if (!any)
      return;
    Value y = clone->getResult(0);
    Value t = rule(clone, y, dx);
    if (t)
      tangents[y] = t;
  }

private:
  Value constant(Type type, double value) {
    return arith::ConstantOp::create(b, loc, type, b.getFloatAttr(type, value));
  }
  Value orZero(Value tangent, Type type) {
    return tangent ? tangent : constant(type, 0.0);
  }
  Value mul(Value a, Value c) { return arith::MulFOp::create(b, loc, a, c); }
  Value add(Value a, Value c) { return arith::AddFOp::create(b, loc, a, c); }
  Value sub(Value a, Value c) { return arith::SubFOp::create(b, loc, a, c); }
  Value div(Value a, Value c) { return arith::DivFOp::create(b, loc, a, c); }
  /// `dx * factor`, or null when dx is zero.
  Value scaled(Value dx, Value factor) {
    return dx ? mul(dx, factor) : Value();
  }
  /// The sum of the non-null terms, or null.
  Value sum(ArrayRef<Value> terms) {
    Value total;
    for (Value term : terms)
      if (term)
        total = total ? add(total, term) : term;
    return total;
  }
  Value select(Value condition, Value a, Value c, Type type) {
    return arith::SelectOp::create(b, loc, condition, orZero(a, type),
                                   orZero(c, type));
  }

  Value rule(Operation *op, Value y, ArrayRef<Value> dx) {
    Type type = y.getType();
    auto operand = [&](unsigned i) { return op->getOperand(i); };
    if (isa<arith::AddFOp>(op))
      return sum({dx[0], dx[1]});
    if (isa<arith::SubFOp>(op)) {
      Value negated =
          dx[1] ? Value(arith::NegFOp::create(b, loc, dx[1])) : Value();
      return sum({dx[0], negated});
    }
    if (isa<arith::MulFOp>(op))
      return sum({scaled(dx[0], operand(1)), scaled(dx[1], operand(0))});
    if (isa<arith::DivFOp>(op)) {
      // d(a / c) = da / c - (a / c) dc / c.
      Value first = dx[0] ? div(dx[0], operand(1)) : Value();
      Value second = dx[1] ? div(mul(dx[1], y), operand(1)) : Value();
      if (!second)
        return first;
      return first ? sub(first, second)
                   : Value(arith::NegFOp::create(b, loc, second));
    }
    if (isa<arith::NegFOp>(op))
      return arith::NegFOp::create(b, loc, dx[0]);
    if (isa<arith::MaximumFOp, arith::MaxNumFOp, arith::MinimumFOp,
            arith::MinNumFOp>(op)) {
      // The derivative of the operand that was chosen.
      bool max = isa<arith::MaximumFOp, arith::MaxNumFOp>(op);
      Value first = arith::CmpFOp::create(
          b, loc, max ? arith::CmpFPredicate::OGE : arith::CmpFPredicate::OLE,
          operand(0), operand(1));
      return select(first, dx[0], dx[1], type);
    }
    if (isa<arith::SelectOp>(op))
      return select(operand(0), dx[1], dx[2], type);
    if (isa<arith::ExtFOp>(op))
      return arith::ExtFOp::create(b, loc, type, dx[0]);
    if (isa<arith::TruncFOp>(op))
      return arith::TruncFOp::create(b, loc, type, dx[0]);
    if (isa<math::TanhOp>(op)) // 1 - tanh^2
      return mul(dx[0], sub(constant(type, 1.0), mul(y, y)));
    if (isa<math::ExpOp>(op))
      return mul(dx[0], y);
    if (isa<math::Exp2Op>(op))
      return mul(dx[0], mul(y, constant(type, M_LN2)));
    if (isa<math::ExpM1Op>(op))
      return mul(dx[0], add(y, constant(type, 1.0)));
    if (isa<math::LogOp>(op))
      return div(dx[0], operand(0));
    if (isa<math::Log2Op>(op))
      return div(dx[0], mul(operand(0), constant(type, M_LN2)));
    if (isa<math::Log1pOp>(op))
      return div(dx[0], add(operand(0), constant(type, 1.0)));
    if (isa<math::SqrtOp>(op)) // 1 / (2 sqrt(a))
      return div(dx[0], mul(y, constant(type, 2.0)));
    if (isa<math::RsqrtOp>(op)) // -rsqrt(a) / (2 a)
      return mul(dx[0], div(y, mul(operand(0), constant(type, -2.0))));
    if (isa<math::AbsFOp>(op)) {
      Value negative = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT,
                                             operand(0), constant(type, 0.0));
      return arith::SelectOp::create(
          b, loc, negative, arith::NegFOp::create(b, loc, dx[0]), dx[0]);
    }
    if (isa<math::SinOp>(op))
      return mul(dx[0], math::CosOp::create(b, loc, operand(0)));
    if (isa<math::CosOp>(op))
      return mul(dx[0], arith::NegFOp::create(
                            b, loc, math::SinOp::create(b, loc, operand(0))));
    if (isa<math::FmaOp>(op)) // a * c + e
      return sum({scaled(dx[0], operand(1)), scaled(dx[1], operand(0)), dx[2]});
    if (isa<math::AtanOp>(op)) // 1 / (1 + a^2)
      return div(dx[0], add(constant(type, 1.0), mul(operand(0), operand(0))));
    if (isa<math::PowFOp>(op)) {
      // d(a^c) = c a^(c-1) da + a^c log(a) dc.
      Value first;
      if (dx[0])
        first = mul(dx[0], div(mul(operand(1), y), operand(0)));
      Value second;
      if (dx[1])
        second = mul(dx[1], mul(y, math::LogOp::create(b, loc, operand(0))));
      return sum({first, second});
    }
    // floor, ceil, round, trunc: piecewise constant.
    return Value();
  }

  OpBuilder &b;
  Location loc;
  llvm::DenseMap<Value, Value> tangents;
};

} // namespace

Value mlir::flash::inlineScoreModDerivative(OpBuilder &b, Region &scoreMod,
                                            ValueRange args, Value *value) {
  Block &block = scoreMod.front();
  IRMapping mapping;
  mapping.map(block.getArguments(), args);
  Location loc = block.getTerminator()->getLoc();
  TangentBuilder tangents(b, loc);
  tangents.seed(args[0]);
  for (Operation &op : block.without_terminator())
    tangents.differentiate(b.clone(op, mapping));
  Value yielded =
      mapping.lookup(cast<YieldOp>(block.getTerminator()).getValues()[0]);
  if (value)
    *value = yielded;
  if (Value derivative = tangents.tangentOf(yielded))
    return derivative;
  // A score mod that ignores the score.
  return arith::ConstantOp::create(b, loc, yielded.getType(),
                                   b.getFloatAttr(yielded.getType(), 0.0));
}

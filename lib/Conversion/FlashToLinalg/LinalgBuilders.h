//===- LinalgBuilders.h - small builders for linalg.generic -----*- C++ -*-===//
//
// The tile-to-linalg patterns build many generics of the same few shapes
// (elementwise over a tile, per-row reduction, row broadcast); these helpers
// keep each pattern to its arithmetic.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_CONVERSION_FLASHTOLINALG_LINALGBUILDERS_H
#define FLASHC_LIB_CONVERSION_FLASHTOLINALG_LINALGBUILDERS_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace mlir::flash {

using GenericBody =
    function_ref<Value(ImplicitLocOpBuilder &b, ValueRange args)>;

/// `value` as f32: extended where it is bf16 or f16, as the tensor cores
/// read their operands.
inline Value widenToF32(ImplicitLocOpBuilder &b, Value value) {
  if (value.getType().isF32())
    return value;
  return arith::ExtFOp::create(b, b.getF32Type(), value);
}

/// `acc + a * b` with a and b widened to f32: the body of a contraction
/// whose arguments are (a, b, acc). One statement per op: argument
/// evaluation order is unspecified and the IR must not depend on the
/// compiler.
inline Value buildMultiplyAdd(ImplicitLocOpBuilder &b, ValueRange args) {
  Value lhs = widenToF32(b, args[0]);
  Value rhs = widenToF32(b, args[1]);
  Value product = arith::MulFOp::create(b, lhs, rhs);
  return arith::AddFOp::create(b, args[2], product);
}

/// A tensor.empty of a static `type`.
inline Value buildEmpty(ImplicitLocOpBuilder &b, RankedTensorType type) {
  return tensor::EmptyOp::create(b, type.getShape(), type.getElementType());
}

/// A tensor of `type` filled with the f32 `value`.
inline Value buildFilled(ImplicitLocOpBuilder &b, RankedTensorType type,
                         float value) {
  Value scalar = arith::ConstantOp::create(b, b.getF32FloatAttr(value));
  return linalg::FillOp::create(b, scalar, buildEmpty(b, type)).getResult(0);
}

/// A linalg.generic writing `init` (whose current values are passed to the
/// body last) from `inputs` through `maps` (inputs' maps, then init's).
/// The body returns the new value of the output element.
inline Value buildGeneric(ImplicitLocOpBuilder &b, ValueRange inputs,
                          Value init, ArrayRef<AffineMap> maps,
                          ArrayRef<utils::IteratorType> iterators,
                          GenericBody body) {
  auto generic = linalg::GenericOp::create(
      b, TypeRange{init.getType()}, inputs, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nested, Location loc, ValueRange args) {
        ImplicitLocOpBuilder inner(loc, nested);
        linalg::YieldOp::create(inner, body(inner, args));
      });
  return generic.getResult(0);
}

/// Elementwise over a 2-D tile: `inputs` are tiles (identity map) or row
/// vectors (broadcast along the columns) in any order; the result is a new
/// tile of `resultType`.
inline Value buildTileElementwise(ImplicitLocOpBuilder &b,
                                  RankedTensorType resultType,
                                  ValueRange inputs, GenericBody body) {
  MLIRContext *ctx = b.getContext();
  AffineMap tileMap = AffineMap::getMultiDimIdentityMap(2, ctx);
  AffineMap rowMap = AffineMap::get(2, 0, {b.getAffineDimExpr(0)}, ctx);
  SmallVector<AffineMap> maps;
  for (Value input : inputs)
    maps.push_back(cast<RankedTensorType>(input.getType()).getRank() == 2
                       ? tileMap
                       : rowMap);
  maps.push_back(tileMap);
  return buildGeneric(
      b, inputs, buildEmpty(b, resultType), maps,
      {utils::IteratorType::parallel, utils::IteratorType::parallel}, body);
}

/// In a tile generic's body: the query row (rowStart + i) and key
/// (colStart + j) of the element.
inline std::pair<Value, Value>
elementQueryAndKey(ImplicitLocOpBuilder &b, Value rowStart, Value colStart) {
  Value query =
      arith::AddIOp::create(b, rowStart, linalg::IndexOp::create(b, 0));
  Value key = arith::AddIOp::create(b, colStart, linalg::IndexOp::create(b, 1));
  return {query, key};
}

/// Elementwise over row vectors of `resultType`.
inline Value buildRowElementwise(ImplicitLocOpBuilder &b,
                                 RankedTensorType resultType, ValueRange inputs,
                                 GenericBody body) {
  AffineMap map = AffineMap::getMultiDimIdentityMap(1, b.getContext());
  SmallVector<AffineMap> maps(inputs.size() + 1, map);
  return buildGeneric(b, inputs, buildEmpty(b, resultType), maps,
                      {utils::IteratorType::parallel}, body);
}

/// Reduces each row of a 2-D `tile` into a row vector that starts at
/// `initValue`; the body combines (element, running value).
inline Value buildRowReduction(ImplicitLocOpBuilder &b, Value tile,
                               float initValue, GenericBody body) {
  auto tileType = cast<RankedTensorType>(tile.getType());
  auto rowType = RankedTensorType::get({tileType.getDimSize(0)},
                                       tileType.getElementType());
  MLIRContext *ctx = b.getContext();
  SmallVector<AffineMap> maps = {
      AffineMap::getMultiDimIdentityMap(2, ctx),
      AffineMap::get(2, 0, {b.getAffineDimExpr(0)}, ctx)};
  return buildGeneric(
      b, tile, buildFilled(b, rowType, initValue), maps,
      {utils::IteratorType::parallel, utils::IteratorType::reduction}, body);
}

} // namespace mlir::flash

#endif // FLASHC_LIB_CONVERSION_FLASHTOLINALG_LINALGBUILDERS_H

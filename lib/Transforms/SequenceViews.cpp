//===- SequenceViews.cpp - one packed sequence's rows ---------------------===//
//
// A program of a packed (varlen) problem reads its sequence's bounds from
// cu_seqlens and works on batch-1 views of those rows alone, so the tile
// ops' boundary masking at the end of a tensor is also the sequence's.
//
//===----------------------------------------------------------------------===//

#include "TileSteps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::flash;

SequenceRows mlir::flash::loadSequenceRows(ImplicitLocOpBuilder &b,
                                           Value cuSeqlens, Value sequence) {
  auto at = [&](Value i) {
    Value v = memref::LoadOp::create(b, cuSeqlens, ValueRange{i});
    return arith::IndexCastOp::create(b, b.getIndexType(), v).getResult();
  };
  Value next =
      arith::AddIOp::create(b, sequence, arith::ConstantIndexOp::create(b, 1));
  Value start = at(sequence);
  return {start, arith::SubIOp::create(b, at(next), start)};
}

Value mlir::flash::viewSequenceRows(ImplicitLocOpBuilder &b, Value memref,
                                    SequenceRows rows, Value heads) {
  auto type = cast<MemRefType>(memref.getType());
  OpFoldResult one = b.getIndexAttr(1), zero = b.getIndexAttr(0);
  SmallVector<OpFoldResult> offsets = {zero, zero, rows.start};
  SmallVector<OpFoldResult> sizes = {one, heads, rows.length};
  if (type.getRank() == 4) {
    offsets.push_back(zero);
    sizes.push_back(b.getIndexAttr(type.getDimSize(3)));
  }
  SmallVector<OpFoldResult> strides(type.getRank(), one);
  return memref::SubViewOp::create(b, memref, offsets, sizes, strides)
      .getResult();
}

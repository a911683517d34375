//===- RegisterUtils.h - helpers of the flash.wg patterns -------*- C++ -*-===//
//
// Where a thread's registers sit, and the constants the patterns use. The
// m64nNk16 accumulator layout (#flash.wgmma_accumulator) as the patterns
// of this folder address it: register i of a thread belongs to row half
// (i/2)%2 (row lane/4 or lane/4 + 8 of its warp's 16) and column
// 8(i/4) + i%2 + 2(lane%4). A #flash.wgmma_rows vector holds the thread's
// two rows in that order, so register i of an accumulator pairs with row
// register rowHalf(i).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_CONVERSION_FLASHWARPGROUPTONVVM_REGISTERUTILS_H
#define FLASHC_LIB_CONVERSION_FLASHWARPGROUPTONVVM_REGISTERUTILS_H

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Support/LLVM.h"

namespace mlir::flash::wg_lowering {

/// The constant `attr` from the entry block of the function (or kernel)
/// around `op`, created there if it has none: the kernel keeps one of each
/// constant in its entry block, so what the patterns write reads as the
/// rest of it and needs no canonicalisation to be compared.
Value entryConstant(OpBuilder &builder, Operation *op, TypedAttr attr);

/// The values of a fragment's registers (flash.wg.fragment_values).
SmallVector<Value> fragmentValues(ImplicitLocOpBuilder &b, Value fragment);

/// scf.if `cond` whose two branches yield what `thenFn` and `elseFn`
/// build (of `types`); its results.
SmallVector<Value> ifThenElse(OpBuilder &b, Location loc, Value cond,
                              TypeRange types,
                              function_ref<SmallVector<Value>()> thenFn,
                              function_ref<SmallVector<Value>()> elseFn);

/// Which of the thread's two rows register i of an accumulator is in.
inline int64_t rowHalf(int64_t i) { return (i / 2) % 2; }
/// Register i's column, less the thread's offset 2 (lane % 4).
inline int64_t columnInGroup(int64_t i) { return 8 * (i / 4) + i % 2; }

/// The f32 registers of an accumulator struct, in layout order.
SmallVector<Value> accumulatorRegisters(ImplicitLocOpBuilder &b,
                                        Value accumulator);
/// The accumulator struct of `structType` holding `registers`.
Value accumulatorFromRegisters(ImplicitLocOpBuilder &b, Type structType,
                               ValueRange registers);
/// The registers of row half `r` (see rowHalf) in order.
SmallVector<Value> rowRegisters(ArrayRef<Value> registers, int64_t r);
/// 2 (lane % 4): the column of this thread's register 0 (i32), for `op`.
Value threadColumnOffset(ImplicitLocOpBuilder &b, Operation *op);
/// Where this thread's registers sit in a warpgroup fragment: its first
/// row (16 warp + lane / 4; the second is 8 below), lane / 4 (the row's
/// position in its 8-row swizzle period) and lane % 4 (its column pair).
struct ThreadPosition {
  Value rowInFragment, laneRow, quad;
};
ThreadPosition threadPosition(ImplicitLocOpBuilder &b, Operation *op);
/// Two f32 -> one i32 holding two 16-bit floats of `elementType`, `lo` in
/// the low half: one cvt.rn.{bf16,f16}x2.f32, for `op`.
Value packHalfPair(ImplicitLocOpBuilder &b, Operation *op, Type elementType,
                   Value lo, Value hi);

} // namespace mlir::flash::wg_lowering

#endif // FLASHC_LIB_CONVERSION_FLASHWARPGROUPTONVVM_REGISTERUTILS_H

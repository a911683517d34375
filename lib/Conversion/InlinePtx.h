//===- InlinePtx.h - every inline PTX use of flashc's lowerings -*- C++ -*-===//
//
// The only `llvm.inline_asm` flashc emits, and the one NVVM intrinsic it
// calls by name, in one place (InlinePtx.cpp): the GPU kernel's emitter and
// the warpgroup patterns both call these. Everything else is an upstream
// op.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_CONVERSION_INLINEPTX_H
#define FLASHC_LIB_CONVERSION_INLINEPTX_H

#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/Support/LLVM.h"

namespace mlir::flash {

/// wgmma.mma_async m64n{N}k16 with A from registers (4 x b32) and B from a
/// shared-memory descriptor, accumulating into `accIn` (returned as a
/// struct of `accType`); `transposeB` for an MN-major B, `scaleD` an i32
/// constant (0: ignore `accIn`).
Value createWgmmaRegA(ImplicitLocOpBuilder &b, Type accType, Type elementType,
                      int64_t n, ArrayRef<Value> aRegs, Value descB,
                      bool transposeB, ValueRange accIn, Value scaleD);
/// 2^x as one MUFU.EX2 (llvm.nvvm.ex2.approx.ftz.f32, which upstream has
/// no op for). math.exp2 becomes `ex2.approx.f32`, which ptxas wraps in a
/// denormal guard (compare, two predicated multiplies); the softmax's
/// flushed inputs lie below 2^-126 of the row max and add nothing to a row
/// sum.
Value exp2FlushDenormals(ImplicitLocOpBuilder &b, Value x);
/// tanh(x) as one MUFU.TANH (`tanh.approx.f32`, sm_75+; relative error
/// about 2^-11, below bf16's rounding of P): what a score mod's math.tanh
/// (soft-capping) becomes on the GPU.
Value tanhApprox(ImplicitLocOpBuilder &b, Value x);
/// CUTLASS's warpgroup_fence_operand: an empty asm that pins `v` in a
/// register at this point.
Value fenceOperand(ImplicitLocOpBuilder &b, Value v);
/// ld.acquire.gpu of the global i32 at `ptr`: a turn counter another block
/// releases (the deterministic backward's dQ order).
Value loadAcquireGpu(ImplicitLocOpBuilder &b, Value ptr);
/// st.release.gpu of the i32 `value` to the global `ptr`.
void storeReleaseGpu(ImplicitLocOpBuilder &b, Value ptr, Value value);
/// fence.acq_rel.gpu: this thread's global writes before it are seen by any
/// thread that acquires what this thread (or, after a block barrier, its
/// block) releases after it.
void fenceAcqRelGpu(ImplicitLocOpBuilder &b);

} // namespace mlir::flash

#endif // FLASHC_LIB_CONVERSION_INLINEPTX_H

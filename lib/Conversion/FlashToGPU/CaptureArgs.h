//===- CaptureArgs.h - memref arguments a kernel takes whole ----*- C++ -*-===//
//
// The score and mask mods' captures and the attention sinks (with, in the
// backward pass, the sinks' gradient) are memref arguments of the source
// function after its tensors. Each becomes one memref parameter of the
// kernel (MLIR's expanded descriptor) and one entry of kernel.json's
// "captures", in argument order, so the runtime can check and pass them
// (docs/kernel-metadata.md).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_CONVERSION_FLASHTOGPU_CAPTUREARGS_H
#define FLASHC_LIB_CONVERSION_FLASHTOGPU_CAPTUREARGS_H

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace mlir::flash::gpu_lowering {

/// What a capture argument holds, as kernel.json's "role" names it.
enum class CaptureRole { Capture, Sinks, SinksGrad };

struct CaptureArg {
  unsigned argNumber; ///< in the source function
  MemRefType type;
  CaptureRole role;
};

/// One use of a function argument as a capture: `user` is where an error
/// about it points.
struct CaptureUse {
  Operation *user;
  Value value;
  CaptureRole role;
};

/// The distinct arguments `uses` name, in argument order. Each must be an
/// argument of `func` and a row-major memref of rank 1 to 4 of f32, i32,
/// bf16 or f16 (what the runtime passes); the sinks and their gradient
/// rank-1 f32. Together they must be the function's last arguments.
/// Errors are located at the offending use.
FailureOr<SmallVector<CaptureArg>>
collectCaptureArgs(func::FuncOp func, ArrayRef<CaptureUse> uses);

/// Index in `captures` of the function argument `arg`, if it is one.
std::optional<unsigned> captureIndexOf(ArrayRef<CaptureArg> captures,
                                       BlockArgument arg);

/// kernel.json's "captures": one {"role", "dtype", "rank", "shape"} per
/// argument (shape: the static sizes, -1 where dynamic).
ArrayAttr capturesAttr(Builder &b, ArrayRef<CaptureArg> captures);

/// The parameter of capture `index`: {"kind": "memref", "capture": index,
/// "rank": rank}.
DictionaryAttr captureParamAttr(Builder &b, unsigned index,
                                const CaptureArg &capture);

/// flash.attention's key_ranges, as flash.mod_scores carries them: the
/// capture holding [lo, hi) keys per block of `rows` query rows and, with
/// 4 columns (`full`), the [full_lo, full_hi) keys the mask_mod keeps for
/// every row of the block.
struct KeyRanges {
  unsigned capture; ///< index into the kernel's captures
  int64_t rows;
  bool full;
};

/// `mods`' key_ranges with its table found in `captures` (collected from
/// `mods`' captures among others), or nullopt when it has none.
std::optional<KeyRanges> keyRangesOf(ModScoresOp mods,
                                     ArrayRef<CaptureArg> captures);

/// Index of the capture with `role` (the first), if any.
std::optional<unsigned> findCapture(ArrayRef<CaptureArg> captures,
                                    CaptureRole role);

} // namespace mlir::flash::gpu_lowering

#endif // FLASHC_LIB_CONVERSION_FLASHTOGPU_CAPTUREARGS_H

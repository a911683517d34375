//===- Passes.h - flashc conversions ----------------------------*- C++ -*-===//
//
// Declarations and registration of the passes of Passes.td, and the pattern
// families they are made of.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_CONVERSION_PASSES_H
#define FLASHC_CONVERSION_PASSES_H

#include "Flash/FlashDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::flash {

#define GEN_PASS_DECL
#include "flashc/Conversion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "flashc/Conversion/Passes.h.inc"

/// load_tile and store_tile to bounds-checked linalg/scf on tensors.
void populateTileMemoryToLinalgPatterns(RewritePatternSet &patterns);
/// flash.dot to a linalg.generic contraction accumulating in f32.
void populateDotToLinalgPatterns(RewritePatternSet &patterns);
/// mask, softmax_update, rescale and finalize to linalg.generic.
void populateSoftmaxToLinalgPatterns(RewritePatternSet &patterns);
/// flash.mod_scores (score and mask mods) -> linalg.generic.
void populateModScoresToLinalgPatterns(RewritePatternSet &patterns);
/// row_dot, softmax_recompute and softmax_grad (the backward pass's tile
/// ops) to linalg.generic.
void populateBackwardToLinalgPatterns(RewritePatternSet &patterns);

/// The LLVM types of the warp-specialised level's types: an accumulator
/// fragment to a struct of f32, a register A fragment 1:N to its i32, a
/// shared-memory descriptor to i64, a ring slot 1:N to its index and phase
/// (index, i1); any other type unchanged.
void populateFlashWarpgroupTypeConversions(TypeConverter &converter);
/// The patterns of every flash.wg op (lib/Conversion/FlashWarpgroupToNVVM/).
void populateFlashWarpgroupToNVVMPatterns(const TypeConverter &converter,
                                          RewritePatternSet &patterns);
/// Lowers every flash.wg op under `root` (-convert-flash-wg-to-nvvm).
LogicalResult lowerFlashWarpgroupOps(Operation *root);

} // namespace mlir::flash

#endif // FLASHC_CONVERSION_PASSES_H

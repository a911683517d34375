//===- Passes.td - flashc conversions -----------------------*- tablegen -*-===//
//
// Passes that leave the flash dialect: the tile program to loops and linalg
// (the CPU reference path) and, later, to the GPU dialect and NVVM.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_CONVERSION_PASSES_TD
#define FLASHC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertFlashGridToLoops : Pass<"convert-flash-grid-to-loops"> {
  let summary = "Run every flash.grid as a sequential scf.for loop nest";
  let description = [{
    The CPU reference path's launcher: each `flash.grid` becomes one
    `scf.for` per axis (axis 0 outermost) and each `flash.program_id` the
    induction variable of its axis. Programs do not communicate, so running
    them in order computes what the GPU computes.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def ConvertFlashTilesToLinalg : Pass<"convert-flash-tiles-to-linalg"> {
  let summary = "Lower the tile ops to linalg, tensor and scf on tensors";
  let description = [{
    The CPU reference path: every tile op becomes `linalg.generic` ops on
    tensors (load_tile reads with a bounds check per row, store_tile writes
    the rows that exist, dot and the online-softmax ops become parallel and
    reduction generics). One-shot bufferization and upstream lowering take it
    from there to LLVM. The math is the op's definition, with natural exp
    and log; nothing here is tuned for speed.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"
  ];
}

#endif // FLASHC_CONVERSION_PASSES_TD

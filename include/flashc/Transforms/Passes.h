//===- Passes.h - flashc transforms -----------------------------*- C++ -*-===//
//
// Declarations and registration of the passes of Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_TRANSFORMS_PASSES_H
#define FLASHC_TRANSFORMS_PASSES_H

#include "Flash/FlashDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Pass/Pass.h"

#include "flashc/Config/ScheduleSwitches.h"

namespace mlir::flash {

#define GEN_PASS_DECL
#include "flashc/Transforms/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "flashc/Transforms/Passes.h.inc"

/// -flash-tile with its schedule-switch options (declared from
/// ScheduleSwitches.def in the pass, not in Passes.td) set too.
std::unique_ptr<Pass> createFlashTile(const FlashTileOptions &options,
                                      const flashc::ScheduleOverrides &switches);

} // namespace mlir::flash

#endif // FLASHC_TRANSFORMS_PASSES_H

//===- FlashAttrs.h - flash dialect attributes ------------------*- C++ -*-===//
//
// The `#flash.config` tile configuration and `#flash.schedule` GPU schedule
// attributes, and the fragment layouts of the warp-specialised level
// (`#flash.wgmma_accumulator`, `#flash.wgmma_operand_a`).
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_FLASHATTRS_H
#define FLASH_FLASHATTRS_H

#include "Flash/FlashDialect.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

#include "flashc/Config/ScheduleSwitches.h"

namespace mlir::flash {
/// How a kernel's blocks map onto its tiles (#flash.schedule's `grid`).
enum class GridKind { Tiles, Sections, Persistent, Packed };
/// Where -flash-gpu-schedule records a program's #flash.schedule (on its
/// function) and the lowering keeps it (on the kernel's gpu.func).
constexpr llvm::StringLiteral kScheduleAttrName = "flash.schedule";
llvm::StringRef stringifyGridKind(GridKind kind);
} // namespace mlir::flash

#define GET_ATTRDEF_CLASSES
#include "Flash/FlashAttrs.h.inc"

#endif // FLASH_FLASHATTRS_H

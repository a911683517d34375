//===- FlashAttrs.h - flash dialect attributes ------------------*- C++ -*-===//
//
// The `#flash.config` tile configuration attribute.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_FLASHATTRS_H
#define FLASH_FLASHATTRS_H

#include "Flash/FlashDialect.h"
#include "mlir/IR/Attributes.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/DialectImplementation.h"

namespace mlir::flash {
/// Parses a `#flash.config` schedule switch: `true` or `false`.
FailureOr<bool> parseScheduleFlag(AsmParser &parser);
} // namespace mlir::flash

#define GET_ATTRDEF_CLASSES
#include "Flash/FlashAttrs.h.inc"

#endif // FLASH_FLASHATTRS_H

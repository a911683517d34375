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

#define GET_ATTRDEF_CLASSES
#include "Flash/FlashAttrs.h.inc"

#endif // FLASH_FLASHATTRS_H

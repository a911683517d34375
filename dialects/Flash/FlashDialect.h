//===- FlashDialect.h - the flash dialect -----------------------*- C++ -*-===//
//
// Declares the flash dialect class; ops and attributes have headers of their
// own.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_FLASHDIALECT_H
#define FLASH_FLASHDIALECT_H

#include "mlir/IR/Dialect.h"

#include "Flash/FlashDialect.h.inc"

#endif // FLASH_FLASHDIALECT_H

//===- FlashOps.h - flash dialect operations --------------------*- C++ -*-===//
//
// Kernel-level, tile-level and warp-specialised operations of the flash
// dialect.
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_FLASHOPS_H
#define FLASH_FLASHOPS_H

#include "Flash/FlashAttrs.h"
#include "Flash/FlashDialect.h"
#include "Flash/FlashTypes.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "Flash/FlashOps.h.inc"

#endif // FLASH_FLASHOPS_H

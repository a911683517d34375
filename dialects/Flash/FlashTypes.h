//===- FlashTypes.h - flash dialect types -----------------------*- C++ -*-===//
//
// The warp-specialised level's `!flash.fragment` and
// `!flash.smem_descriptor` (FlashWarpgroup.td) and `!flash.ring_slot`
// (FlashPipeline.td).
//
//===----------------------------------------------------------------------===//

#ifndef FLASH_FLASHTYPES_H
#define FLASH_FLASHTYPES_H

#include "Flash/FlashAttrs.h"
#include "Flash/FlashDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Types.h"

#define GET_TYPEDEF_CLASSES
#include "Flash/FlashTypes.h.inc"

#endif // FLASH_FLASHTYPES_H

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
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMTypes.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::flash {
class WgTmaLoadTileOp;
/// The custom<TileStart> syntax of flash.wg.tma_load_tile's destination
/// (FlashPipeline.cpp).
ParseResult
parseTileStart(OpAsmParser &parser, OpAsmParser::UnresolvedOperand &window,
               std::optional<OpAsmParser::UnresolvedOperand> &offset,
               std::optional<OpAsmParser::UnresolvedOperand> &buffer,
               IntegerAttr &offsetBytes, IntegerAttr &bufferBytes);
void printTileStart(OpAsmPrinter &printer, WgTmaLoadTileOp op, Value window,
                    Value offset, Value buffer, IntegerAttr offsetBytes,
                    IntegerAttr bufferBytes);
/// A ring's barriers, `base .. base + stages`, must lie in the group
/// (FlashPipeline.cpp; the tile loops' Q barriers too).
LogicalResult verifyRingBarriers(Operation *op, int64_t base, int64_t stages,
                                 nvgpu::MBarrierGroupType barriers);
} // namespace mlir::flash

#define GET_OP_CLASSES
#include "Flash/FlashOps.h.inc"

namespace mlir::flash {
/// Clones the body of a score or mask mod region (FlashOps.td) at `b`'s
/// insertion point with its block arguments bound to `args` (the fixed
/// arguments, then the captures), and gives the value it yields. Every
/// lowering of the mods, CPU and GPU, inlines them through this.
Value inlineModRegion(OpBuilder &b, Region &region, ValueRange args);
/// Verifies `op`'s score and mask mod regions against `captures`
/// (FlashOps.td's signatures, bodies and terminator).
LogicalResult verifyMods(Operation *op, Region &scoreMod, Region &maskMod,
                         ValueRange captures);
/// The first op of a score mod's body whose derivative with respect to the
/// score the compiler cannot form (ScoreModDerivative.cpp), or null.
Operation *findOpWithoutDerivative(Region &scoreMod);
/// Clones a score mod's body at `b`'s insertion point, as inlineModRegion,
/// and gives the derivative of the value it yields with respect to its
/// first argument (the score), formed op by op by the chain rule; `*value`
/// (when given) receives the yielded value itself.
Value inlineScoreModDerivative(OpBuilder &b, Region &scoreMod, ValueRange args,
                               Value *value = nullptr);
} // namespace mlir::flash

#endif // FLASH_FLASHOPS_H

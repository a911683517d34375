//===- FlashPipeline.cpp - TMA tiles and mbarrier rings -------------------===//
//
// Verifiers of the producer's ops (FlashPipeline.td): a tile whose boxes
// the tensor map cannot copy, or a ring that runs past the kernel's
// barrier group, fails at its op rather than as a hang or a fault on the
// GPU.
//
//===----------------------------------------------------------------------===//

#include "Flash/FlashOps.h"

#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace mlir::flash;

LogicalResult RingSlotType::verify(function_ref<InFlightDiagnostic()> emitError,
                                   int64_t stages) {
  if (stages < 1)
    return emitError() << "a ring needs at least one stage, got " << stages;
  return success();
}

LogicalResult
mlir::flash::verifyRingBarriers(Operation *op, int64_t base, int64_t stages,
                                nvgpu::MBarrierGroupType barriers) {
  if (base < 0)
    return op->emitOpError("barrier base must be non-negative, got ") << base;
  if (base + stages > int64_t(barriers.getNumBarriers()))
    return op->emitOpError("ring barriers [")
           << base << ", " << base + stages << ") exceed the group's "
           << barriers.getNumBarriers() << " barriers";
  return success();
}

//===----------------------------------------------------------------------===//
// WgTmaLoadTileOp
//===----------------------------------------------------------------------===//

/// `%window`, `%window + %offset + N` or `%window + %buffer * N`.
ParseResult mlir::flash::parseTileStart(
    OpAsmParser &parser, OpAsmParser::UnresolvedOperand &window,
    std::optional<OpAsmParser::UnresolvedOperand> &offset,
    std::optional<OpAsmParser::UnresolvedOperand> &buffer,
    IntegerAttr &offsetBytes, IntegerAttr &bufferBytes) {
  if (parser.parseOperand(window))
    return failure();
  if (failed(parser.parseOptionalPlus()))
    return success();
  OpAsmParser::UnresolvedOperand term;
  int64_t bytes = 0;
  if (parser.parseOperand(term))
    return failure();
  Type i64 = parser.getBuilder().getI64Type();
  if (succeeded(parser.parseOptionalPlus())) {
    if (parser.parseInteger(bytes))
      return failure();
    offset = term;
    offsetBytes = IntegerAttr::get(i64, bytes);
    return success();
  }
  if (parser.parseStar() || parser.parseInteger(bytes))
    return failure();
  buffer = term;
  bufferBytes = IntegerAttr::get(i64, bytes);
  return success();
}

void mlir::flash::printTileStart(OpAsmPrinter &printer, WgTmaLoadTileOp,
                                 Value window, Value offset, Value buffer,
                                 IntegerAttr offsetBytes,
                                 IntegerAttr bufferBytes) {
  printer << window;
  if (offset)
    printer << " + " << offset << " + " << offsetBytes.getInt();
  if (buffer)
    printer << " + " << buffer << " * " << bufferBytes.getInt();
}

MemRefType WgTmaLoadTileOp::getBoxType() {
  return getTensorMap().getType().getTensor();
}

int64_t WgTmaLoadTileOp::getNumBoxes() {
  MemRefType box = getBoxType();
  return int64_t(getColumns()) / box.getDimSize(box.getRank() - 1);
}

int64_t WgTmaLoadTileOp::getBoxBytes() {
  MemRefType box = getBoxType();
  return box.getNumElements() * box.getElementTypeBitWidth() / 8;
}

LogicalResult WgSharedWindowOp::verify() {
  int64_t align = getAlign();
  if (align < 16 || align > 1024 || !llvm::isPowerOf2_64(align))
    return emitOpError("align must be a power of two from 16 to 1024, got ")
           << align;
  auto window = cast<MemRefType>(getWindow().getType());
  auto space =
      dyn_cast_or_null<gpu::AddressSpaceAttr>(window.getMemorySpace());
  if (!window.isDynamicDim(0) || !space ||
      space.getValue() != gpu::AddressSpace::Workgroup)
    return emitOpError("window must be a memref<?xi8> in workgroup memory, "
                       "got ")
           << window;
  return success();
}

LogicalResult WgInitBarriersOp::verify() {
  auto group = cast<nvgpu::MBarrierGroupType>(getBarriers().getType());
  ArrayRef<int64_t> counts = getCounts();
  if (int64_t(counts.size()) != group.getNumBarriers())
    return emitOpError("has ") << counts.size() << " arrival count(s) for "
                               << group.getNumBarriers() << " barrier(s)";
  for (auto [i, count] : llvm::enumerate(counts))
    if (count < 1 || count >= (int64_t(1) << 20))
      return emitOpError("barrier ")
             << i << "'s arrival count must be from 1 to 2^20 - 1, got "
             << count;
  return success();
}

LogicalResult WgTmaLoadTileOp::verify() {
  nvgpu::TensorMapDescriptorType map = getTensorMap().getType();
  MemRefType box = map.getTensor();
  // The 128-byte swizzle spans one box row: 64 elements of 16 bits, which
  // is also what the wgmma descriptors of these tiles assume.
  int64_t rank = box.getRank();
  bool unitPlanes = rank >= 3 && llvm::all_of(box.getShape().drop_back(2),
                                              [](int64_t d) { return d == 1; });
  if ((rank != 3 && rank != 4) || !box.hasStaticShape() || !unitPlanes ||
      box.getDimSize(rank - 1) != 64 || box.getElementTypeBitWidth() != 16)
    return emitOpError("tensor map box must be 1 x rows x 64 or 1 x 1 x rows "
                       "x 64 of a 16-bit type, got ")
           << box;
  if (int64_t(getPlanes().size()) != rank - 2)
    return emitOpError("a rank-")
           << rank << " tensor map takes " << rank - 2
           << " plane coordinate(s) after the row, got " << getPlanes().size();
  if (getGather().size() % (rank - 1) != 0)
    return emitOpError("gather takes a row and ")
           << rank - 2 << " plane coordinate(s) per chunk, got "
           << getGather().size() << " values";
  if (!getGather().empty() && getRows() % 8 != 0)
    return emitOpError("gathered chunks must be multiples of 8 rows (the "
                       "128-byte swizzle's period), got ")
           << getRows();
  if (map.getSwizzle() != nvgpu::TensorMapSwizzleKind::SWIZZLE_128B)
    return emitOpError("tensor map must use the 128-byte swizzle, got ")
           << nvgpu::stringifyTensorMapSwizzleKind(map.getSwizzle());
  // I64Attr reads back unsigned; a negative count is an error, not 2^64 - n.
  int64_t columns = getColumns();
  if (columns <= 0 || columns % 64 != 0)
    return emitOpError("columns must be a positive multiple of 64 (the box "
                       "width), got ")
           << columns;
  auto space = dyn_cast_or_null<gpu::AddressSpaceAttr>(
      getSmem().getType().getMemorySpace());
  if (!space || space.getValue() != gpu::AddressSpace::Workgroup)
    return emitOpError("destination must be workgroup (shared) memory, got ")
           << getSmem().getType();
  if (bool(getBuffer()) != bool(getBufferBytes()))
    return emitOpError("a buffer index and bufferBytes go together");
  if (bool(getOffset()) != bool(getOffsetBytes()))
    return emitOpError("an offset and offsetBytes go together");
  if (getBuffer() && getOffset())
    return emitOpError("a tile has an offset or a buffer index, not both");
  if (getBufferBytes() && int64_t(*getBufferBytes()) <= 0)
    return emitOpError("buffer size must be positive, got ")
           << int64_t(*getBufferBytes());
  if (getOffsetBytes() && int64_t(*getOffsetBytes()) < 0)
    return emitOpError("constant offset must be non-negative, got ")
           << int64_t(*getOffsetBytes());
  return success();
}

//===----------------------------------------------------------------------===//
// Ring ops
//===----------------------------------------------------------------------===//

LogicalResult WgRingSlotOp::verify() {
  int64_t stages = getSlot().getType().getStages();
  if (getPosition().getType().isInteger(32) && !llvm::isPowerOf2_64(stages))
    return emitOpError("an i32 position needs a power-of-two number of "
                       "stages, got ")
           << stages;
  return success();
}

LogicalResult WgRingWaitFullOp::verify() {
  return verifyRingBarriers(*this, int64_t(getBase()),
                            getSlot().getType().getStages(),
                            getBarriers().getType());
}

LogicalResult WgRingReleaseOp::verify() {
  return verifyRingBarriers(*this, int64_t(getBase()),
                            getSlot().getType().getStages(),
                            getBarriers().getType());
}

LogicalResult WgRingWaitReleasedOp::verify() {
  return verifyRingBarriers(*this, int64_t(getBase()),
                            getSlot().getType().getStages(),
                            getBarriers().getType());
}

LogicalResult WgRingWaitEmptyOp::verify() {
  return verifyRingBarriers(*this, int64_t(getBase()), getStages(),
                            getBarriers().getType());
}

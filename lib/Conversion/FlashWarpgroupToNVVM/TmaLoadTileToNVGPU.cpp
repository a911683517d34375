//===- TmaLoadTileToNVGPU.cpp - flash.wg.tma_load_tile --------------------===//
//
// A tile is D/64 boxes of the tensor map (per chunk of rows, gathered), each
// its own nvgpu.tma.async.load into a view of shared memory, all completing
// on one mbarrier that first expects the whole tile's bytes. The expect comes
// first: a box that lands before the barrier knows of it would complete the
// phase early.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "RegisterUtils.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"

using namespace mlir;
using namespace mlir::flash;

namespace {

struct TmaLoadTileOpLowering : public OpConversionPattern<WgTmaLoadTileOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgTmaLoadTileOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto index = [&](int64_t v) -> Value {
      return wg_lowering::entryConstant(rewriter, op, rewriter.getIndexAttr(v));
    };
    Value barriers = adaptor.getBarriers();
    Value barrier = adaptor.getBarrier();
    nvgpu::MBarrierArriveExpectTxOp::create(
        rewriter, loc, barriers, index(op.getTileBytes()), barrier, Value());
    // Each box's offset is computed after the expect, beside its load, with
    // the terms in the order of the op's form (see the op's description).
    Value window = adaptor.getWindow();
    Value bufferStart;
    if (Value buffer = adaptor.getBuffer()) {
      Value bufferOffset = arith::MulIOp::create(
          rewriter, loc, buffer, index(int64_t(*op.getBufferBytes())));
      bufferStart = arith::AddIOp::create(rewriter, loc, window, bufferOffset);
    }
    auto boxOffset = [&](int64_t bytes) -> Value {
      if (Value offset = adaptor.getOffset()) {
        Value inWindow =
            arith::AddIOp::create(rewriter, loc, offset,
                                  index(int64_t(*op.getOffsetBytes()) + bytes));
        return arith::AddIOp::create(rewriter, loc, inWindow, window);
      }
      Value start = bufferStart ? bufferStart : window;
      if (bytes == 0)
        return start;
      return arith::AddIOp::create(rewriter, loc, start, index(bytes));
    };
    MemRefType boxType = op.getBoxType();
    int64_t boxColumns = boxType.getDimSize(boxType.getRank() - 1);
    // Chunk i's row and planes: the op's own, then gather's groups.
    int64_t perChunk = boxType.getRank() - 1;
    ValueRange gather = adaptor.getGather();
    auto chunkAt = [&](int64_t i) -> std::pair<Value, ValueRange> {
      if (i == 0)
        return {adaptor.getRow(), adaptor.getPlanes()};
      ValueRange group = gather.slice((i - 1) * perChunk, perChunk);
      return {group.front(), group.drop_front()};
    };
    int64_t chunks = op.getNumChunks();
    for (int64_t c = 0; c < op.getNumBoxes(); ++c) {
      for (int64_t i = 0; i < chunks; ++i) {
        Value offset = boxOffset((c * chunks + i) * op.getBoxBytes());
        Value box = memref::ViewOp::create(
            rewriter, loc, boxType, adaptor.getSmem(), offset, ValueRange());
        auto [row, planes] = chunkAt(i);
        SmallVector<Value, 4> coordinates = {index(c * boxColumns), row};
        llvm::append_range(coordinates, planes);
        nvgpu::TmaAsyncLoadOp::create(rewriter, loc, box, barriers,
                                      adaptor.getTensorMap(), coordinates,
                                      barrier, Value(), Value());
      }
    }
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::flash::wg_lowering::populateTmaLoadTilePatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<TmaLoadTileOpLowering>(converter, patterns.getContext());
}

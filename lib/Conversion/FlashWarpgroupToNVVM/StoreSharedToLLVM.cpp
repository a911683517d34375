//===- StoreSharedToLLVM.cpp - flash.wg.store_shared ----------------------===//
//
// TMA's 128-byte swizzle puts the 16-byte chunk c of a box row r at chunk
// c ^ (r % 8), and a thread's rows are r = 16 warp + lane / 4 (+ 8), so
// r % 8 = lane / 4 for both: the chunk of column group g is
// (lane / 4) ^ (g % 8), computed once per g. The words go through an i32
// view of the buffer at `offset`.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "RegisterUtils.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::wg_lowering;

namespace {

struct StoreSharedLowering : public OpConversionPattern<WgStoreSharedOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgStoreSharedOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto type = cast<FragmentType>(op.getValue().getType());
    auto c32 = [&](int64_t v) {
      return entryConstant(b, op, b.getI32IntegerAttr(v));
    };
    const int64_t columns = type.getShape()[1];
    const int64_t boxStride = op.getBoxStride();
    Value buffer = adaptor.getBuffer().front();
    auto bufferType = cast<MemRefType>(buffer.getType());
    // Every word the fragment writes: the last box's 64 rows of 128 bytes.
    const int64_t words = ((columns / 64 - 1) * boxStride + 64 * 128) / 4;
    auto wordsType = MemRefType::get({words}, b.getI32Type(), AffineMap(),
                                     bufferType.getMemorySpace());
    Value view = memref::ViewOp::create(
        b, wordsType, buffer, adaptor.getOffset().front(), ValueRange());
    ValueRange registers = adaptor.getValue();
    ThreadPosition at = threadPosition(b, op);
    SmallVector<Value, 8> chunkWords;
    for (int64_t chunk = 0; chunk < 8; ++chunk) {
      Value swizzled = arith::XOrIOp::create(b, at.laneRow, c32(chunk));
      chunkWords.push_back(arith::MulIOp::create(b, swizzled, c32(4)));
    }
    for (int64_t r = 0; r < 2; ++r) {
      Value row = arith::AddIOp::create(b, at.rowInFragment, c32(8 * r));
      Value rowWords = arith::MulIOp::create(b, row, c32(128 / 4));
      Value rowStart = arith::AddIOp::create(b, rowWords, at.quad);
      for (int64_t g = 0; g < columns / 8; ++g) {
        Value box = c32(g / 8 * boxStride / 4);
        Value word = arith::AddIOp::create(
            b, arith::AddIOp::create(b, rowStart, box), chunkWords[g % 8]);
        memref::StoreOp::create(
            b, registers[2 * g + r], view,
            ValueRange{arith::IndexCastOp::create(b, b.getIndexType(), word)});
      }
    }
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::flash::wg_lowering::populateStoreSharedPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<StoreSharedLowering>(converter, patterns.getContext());
}

//===- SharedWindowToGPU.cpp - flash.wg.shared_window ---------------------===//
//
// The dynamic window and the arithmetic of its first aligned byte:
// shift = (align - address % align) % align, and the descriptor field of
// address + shift. The address is the window's aligned pointer as an index
// (its shared-memory offset: shared addresses fit the field's 18 bits).
//
//===----------------------------------------------------------------------===//

#include "RegisterUtils.h"
#include "Patterns.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::wg_lowering;

namespace {

struct SharedWindowToGPU : public OpRewritePattern<WgSharedWindowOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(WgSharedWindowOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto constant = [&](TypedAttr attr) { return entryConstant(b, op, attr); };
    Value align = constant(b.getIndexAttr(op.getAlign()));
    Value window = gpu::DynamicSharedMemoryOp::create(
        b, cast<MemRefType>(op.getWindow().getType()));
    Value address = memref::ExtractAlignedPointerAsIndexOp::create(b, window);
    Value misalignment = arith::RemUIOp::create(b, address, align);
    Value toNext = arith::SubIOp::create(b, align, misalignment);
    Value shift = arith::RemUIOp::create(b, toNext, align);
    Value base = arith::AddIOp::create(b, address, shift);
    Value base64 = arith::IndexCastOp::create(b, b.getI64Type(), base);
    Value low = arith::AndIOp::create(b, base64,
                                      constant(b.getI64IntegerAttr(0x3FFFF)));
    Value field =
        arith::ShRUIOp::create(b, low, constant(b.getI64IntegerAttr(4)));
    rewriter.replaceOp(op, {window, shift, field});
    return success();
  }
};

} // namespace

void mlir::flash::wg_lowering::populateSharedWindowPatterns(
    const TypeConverter &, RewritePatternSet &patterns) {
  patterns.add<SharedWindowToGPU>(patterns.getContext());
}

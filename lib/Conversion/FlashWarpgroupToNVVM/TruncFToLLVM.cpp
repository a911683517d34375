//===- TruncFToLLVM.cpp - flash.wg.truncf ---------------------------------===//
//
// Registers 2k and 2k+1 of an accumulator are neighbouring columns of one
// row, which is what one b32 of the A operand layout holds: the pair is one
// cvt.rn.{bf16,f16}x2.f32 and the result is its list of i32 (1:N, as every
// A operand converts).
//
//===----------------------------------------------------------------------===//

#include "RegisterUtils.h"
#include "Patterns.h"

#include "Flash/FlashOps.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::wg_lowering;

namespace {

struct TruncFLowering : public OpConversionPattern<WgTruncFOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgTruncFOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Type elementType =
        cast<FragmentType>(op.getResult().getType()).getElementType();
    SmallVector<Value> registers =
        accumulatorRegisters(b, adaptor.getInput().front());
    SmallVector<Value> packed;
    for (size_t i = 0; i + 1 < registers.size(); i += 2)
      packed.push_back(
          packHalfPair(b, op, elementType, registers[i], registers[i + 1]));
    rewriter.replaceOpWithMultiple(op, {packed});
    return success();
  }
};

} // namespace

void mlir::flash::wg_lowering::populateTruncFPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<TruncFLowering>(converter, patterns.getContext());
}

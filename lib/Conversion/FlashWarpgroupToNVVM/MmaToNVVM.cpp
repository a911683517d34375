//===- MmaToNVVM.cpp - flash.wg.mma to wgmma.mma_async --------------------===//
//
// A in shared memory: upstream `nvvm.wgmma.mma_async`, the transpositions
// from the descriptors' majorness (row-major A and column-major B are the
// K-major, untransposed operands). A in registers: the inline PTX of
// InlinePtx.cpp, as MLIR 22's wgmma op takes A only as a descriptor. An MMA
// without C scales D by 0, so its accumulator input is undefined.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "RegisterUtils.h"

#include "../InlinePtx.h"
#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::wg_lowering;

namespace {

struct MmaOpLowering : public OpConversionPattern<WgMmaOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgMmaOp op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    auto dType = cast<FragmentType>(op.getD().getType());
    auto bType = cast<SmemDescriptorType>(op.getB().getType());
    Type accType = getTypeConverter()->convertType(dType);
    if (!accType)
      return rewriter.notifyMatchFailure(op, "accumulator not convertible");
    Location loc = op.getLoc();
    Value descB = adaptor.getB().front();
    bool hasC = !adaptor.getC().empty();

    if (auto aType = dyn_cast<SmemDescriptorType>(op.getA().getType())) {
      Value acc = hasC ? adaptor.getC().front()
                       : LLVM::UndefOp::create(rewriter, loc, accType);
      NVVM::WGMMATypes inType = isa<BFloat16Type>(bType.getElementType())
                                    ? NVVM::WGMMATypes::bf16
                                    : NVVM::WGMMATypes::f16;
      auto shape = NVVM::MMAShapeAttr::get(rewriter.getContext(), 64,
                                           dType.getShape()[1], 16);
      Value d = NVVM::WgmmaMmaAsyncOp::create(
          rewriter, loc, accType, acc, adaptor.getA().front(), descB, shape,
          inType, inType, NVVM::WGMMATypes::f32,
          hasC ? NVVM::WGMMAScaleOut::one : NVVM::WGMMAScaleOut::zero,
          NVVM::WGMMAScaleIn::one, NVVM::WGMMAScaleIn::one,
          aType.getMnMajor() ? NVVM::MMALayout::col : NVVM::MMALayout::row,
          bType.getMnMajor() ? NVVM::MMALayout::row : NVVM::MMALayout::col,
          /*satfinite=*/NVVM::MMAIntOverflowAttr());
      rewriter.replaceOp(op, d);
      return success();
    }

    ImplicitLocOpBuilder b(loc, rewriter);
    SmallVector<Value> accIn;
    if (hasC) {
      accIn = accumulatorRegisters(b, adaptor.getC().front());
    } else {
      accIn.assign(dType.getNumRegisters(),
                   LLVM::UndefOp::create(b, b.getF32Type()));
    }
    Value scaleD =
        entryConstant(rewriter, op, rewriter.getI32IntegerAttr(hasC ? 1 : 0));
    SmallVector<Value> aRegs(adaptor.getA());
    Value d =
        createWgmmaRegA(b, accType, bType.getElementType(), dType.getShape()[1],
                        aRegs, descB, bType.getMnMajor(), accIn, scaleD);
    rewriter.replaceOp(op, d);
    return success();
  }
};

} // namespace

void mlir::flash::wg_lowering::populateMmaPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<MmaOpLowering>(converter, patterns.getContext());
}

//===- WarpSpecializeToSCF.cpp - flash.wg.warp_specialize -----------------===//
//
// The roles become one scf.if on the thread's warpgroup: warpgroup 0 takes
// the producer region after setmaxnreg.dec, the others the consumer region
// after setmaxnreg.inc. The branch is warpgroup-uniform, so each role's
// .aligned instructions (setmaxnreg, wgmma) see whole warpgroups.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "RegisterUtils.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::wg_lowering;

namespace {

struct WarpSpecializeLowering
    : public OpConversionPattern<WgWarpSpecializeOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgWarpSpecializeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto c32 = [&](int64_t v) {
      return entryConstant(b, op, b.getI32IntegerAttr(v));
    };
    Value tid = arith::IndexCastOp::create(
        b, b.getI32Type(), gpu::ThreadIdOp::create(b, gpu::Dimension::x));
    Value warpgroup = arith::DivUIOp::create(b, tid, c32(128));
    Value thread = arith::RemUIOp::create(b, tid, c32(128));
    Value isProducer = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                             warpgroup, c32(0));
    auto roles =
        scf::IfOp::create(b, TypeRange(), isProducer, /*withElse=*/true);

    auto inlineRole = [&](Region &region, Block *into,
                          NVVM::SetMaxRegisterAction action, int64_t regs,
                          function_ref<SmallVector<Value>()> arguments) {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(into->getTerminator());
      NVVM::SetMaxRegisterOp::create(b, regs, action);
      SmallVector<Value> args = arguments();
      Block &body = region.front();
      rewriter.eraseOp(body.getTerminator());
      rewriter.inlineBlockBefore(&body, into->getTerminator(), args);
    };
    inlineRole(op.getProducer(), roles.thenBlock(),
               NVVM::SetMaxRegisterAction::decrease, op.getProducerRegs(),
               [&] { return SmallVector<Value>{thread}; });
    inlineRole(op.getConsumer(), roles.elseBlock(),
               NVVM::SetMaxRegisterAction::increase, op.getConsumerRegs(),
               [&] {
                 Value consumer = arith::SubIOp::create(b, warpgroup, c32(1));
                 return SmallVector<Value>{consumer, thread};
               });
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

void mlir::flash::wg_lowering::populateWarpSpecializePatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<WarpSpecializeLowering>(converter, patterns.getContext());
}

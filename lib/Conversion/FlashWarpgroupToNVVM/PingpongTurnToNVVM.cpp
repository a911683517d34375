//===- PingpongTurnToNVVM.cpp - flash.wg.pingpong_turn --------------------===//
//
// A turn is the region between two named barriers of the two consumers'
// 256 threads: wait on 1 + consumer (the other consumer arrived there when
// its turn ended, or consumer 1 before its first turn), then arrive on
// 2 - consumer to hand the turn over. The region is inlined between them.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "RegisterUtils.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::wg_lowering;

namespace {

struct PingpongTurnLowering : public OpConversionPattern<WgPingpongTurnOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgPingpongTurnOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto c32 = [&](int64_t v) {
      return entryConstant(b, op, b.getI32IntegerAttr(v));
    };
    Value consumer = adaptor.getConsumer();
    Value mine = arith::AddIOp::create(b, consumer, c32(1));
    NVVM::BarrierOp::create(b, Type(), mine, c32(256),
                            NVVM::BarrierReductionAttr(), Value());
    Block &body = op.getBody().front();
    Operation *yield = body.getTerminator();
    SmallVector<Value> results(yield->getOperands());
    rewriter.eraseOp(yield);
    rewriter.inlineBlockBefore(&body, op);
    Value other = arith::SubIOp::create(b, c32(2), consumer);
    NVVM::BarrierArriveOp::create(b, other, c32(256));
    rewriter.replaceOp(op, results);
    return success();
  }
};

} // namespace

void mlir::flash::wg_lowering::populatePingpongTurnPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<PingpongTurnLowering>(converter, patterns.getContext());
}

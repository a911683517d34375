//===- InitBarriersToNVGPU.cpp - flash.wg.init_barriers -------------------===//
//
// The group (nvgpu.mbarrier.create), thread 0's nvgpu.mbarrier.init of each
// barrier with its count, then a block barrier (gpu.barrier) so no thread
// uses a barrier before it is initialised.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "RegisterUtils.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::wg_lowering;

namespace {

struct InitBarriersToNVGPU : public OpRewritePattern<WgInitBarriersOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(WgInitBarriersOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto constant = [&](int64_t v) {
      return entryConstant(b, op, b.getIndexAttr(v));
    };
    auto group = cast<nvgpu::MBarrierGroupType>(op.getBarriers().getType());
    Value barriers = nvgpu::MBarrierCreateOp::create(b, group);
    Value thread = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
    Value first =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, thread, constant(0));
    auto init = scf::IfOp::create(b, TypeRange(), first, /*withElse=*/false);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(init.thenBlock()->getTerminator());
      for (auto [i, count] : llvm::enumerate(op.getCounts()))
        nvgpu::MBarrierInitOp::create(b, barriers, constant(count), constant(i),
                                      Value());
    }
    gpu::BarrierOp::create(b);
    rewriter.replaceOp(op, barriers);
    return success();
  }
};

} // namespace

void mlir::flash::wg_lowering::populateInitBarriersPatterns(
    const TypeConverter &, RewritePatternSet &patterns) {
  patterns.add<InitBarriersToNVGPU>(patterns.getContext());
}

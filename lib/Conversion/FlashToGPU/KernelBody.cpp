//===- KernelBody.cpp - the kernel's skeleton: the block and its roles ----===//
//
// The kernel a tile program becomes: the block's shared memory, mbarriers
// and (one tile per block) its tile, then flash.wg.warp_specialize with the
// producer warpgroup (setmaxnreg dec, TMA; Producer.cpp) and the consumer
// warpgroups (setmaxnreg inc; Consumer.cpp). Each role lowers its share of
// the tile program with patterns, with itself as their context.
//
//===----------------------------------------------------------------------===//

#include "FlashToGPU.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <optional>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;

LogicalResult mlir::flash::gpu_lowering::emitKernel(KernelContext &k) {
  ImplicitLocOpBuilder &b = k.b;
  const KernelSpec &spec = k.spec;
  k.emitSharedMemoryAndBarriers();
  // A packed grid's blocks past their sequence's query blocks do nothing.
  std::optional<OpBuilder::InsertionGuard> inSequence;
  if (spec.packed) {
    auto ifOp = scf::IfOp::create(b, TypeRange(), k.blockTile.inSequence,
                                  /*withElse=*/false);
    inSequence.emplace(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
  }
  if (!spec.sw.persistent)
    k.emitTileBounds(k.blockTile);

  // The roles (flash.wg.warp_specialize): warpgroup 0 produces, the others
  // consume, each with the registers the schedule gave it.
  auto roles = WgWarpSpecializeOp::create(
      b, b.getI64IntegerAttr(spec.warpgroups),
      b.getI64IntegerAttr(spec.producerRegs()),
      b.getI64IntegerAttr(spec.consumerRegs()));
  auto roleBody = [&](Region &region, unsigned numArgs) {
    Block *block = b.createBlock(&region);
    for (unsigned i = 0; i < numArgs; ++i)
      block->addArgument(k.i32, b.getLoc());
    WgYieldOp::create(b);
    b.setInsertionPointToStart(block);
    return block;
  };
  {
    OpBuilder::InsertionGuard guard(b);
    roleBody(roles.getProducer(), 1);
    ProducerRole(k).emit();
    Block *consumer = roleBody(roles.getConsumer(), 2);
    ConsumerRole(k, consumer->getArgument(0), consumer->getArgument(1)).emit();
  }
  inSequence.reset();
  gpu::ReturnOp::create(b);
  return k.result();
}

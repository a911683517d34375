//===- RowReduceToNVVM.cpp - flash.wg.row_max and flash.wg.row_sum --------===//
//
// A row of an accumulator is spread over the four threads of a quad, each
// holding a quarter of its columns: the reduction is a pairwise tree over
// the thread's registers of the row, then (for a #flash.wgmma_rows result)
// two butterfly shuffles across the quad, after which every thread of the
// quad holds the row's value.
//
//===----------------------------------------------------------------------===//

#include "RegisterUtils.h"
#include "Patterns.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::wg_lowering;

/// Pairwise tree reduction of `xs`, level by level in place: (x0 op x1),
/// (x2 op x3), ..., an odd last element carried up. The tree (not a chain)
/// keeps the dependent depth at log2 of the registers.
template <typename CombineOp>
static Value treeReduce(ImplicitLocOpBuilder &b, SmallVector<Value> xs) {
  assert(!xs.empty() && "a row holds at least one accumulator register");
  for (size_t width = xs.size(); width > 1; width = (width + 1) / 2) {
    for (size_t a = 0; a < width / 2; ++a)
      xs[a] = CombineOp::create(b, xs[2 * a], xs[2 * a + 1]);
    if (width % 2)
      xs[width / 2] = xs[width - 1];
  }
  return xs.front();
}

/// Combines `x` over the four threads of its quad (lanes differing in their
/// two low bits).
template <typename CombineOp>
static Value quadReduce(ImplicitLocOpBuilder &b, Operation *op, Value x) {
  auto c = [&](int64_t v) {
    return entryConstant(b, op, b.getI32IntegerAttr(v));
  };
  for (int64_t offset : {1, 2}) {
    Value other =
        NVVM::ShflOp::create(b, x.getType(), c(-1), x, c(offset), c(31),
                             NVVM::ShflKind::bfly, UnitAttr());
    x = CombineOp::create(b, x, other);
  }
  return x;
}

namespace {

template <typename OpTy, typename CombineOp>
struct RowReduceLowering : public OpConversionPattern<OpTy> {
  using OpConversionPattern<OpTy>::OpConversionPattern;
  using OneToNOpAdaptor = typename OpConversionPattern<OpTy>::OneToNOpAdaptor;

  LogicalResult
  matchAndRewrite(OpTy op, OneToNOpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    auto input = cast<FragmentType>(op.getInput().getType());
    auto result = cast<FragmentType>(op.getResult().getType());
    const bool acrossQuad = isa<WgmmaRowsLayoutAttr>(result.getLayout());
    SmallVector<Value, 2> rows;
    if (input.isAccumulator()) {
      SmallVector<Value> registers =
          accumulatorRegisters(b, adaptor.getInput().front());
      for (int64_t r = 0; r < 2; ++r) {
        Value x = treeReduce<CombineOp>(b, rowRegisters(registers, r));
        rows.push_back(acrossQuad ? quadReduce<CombineOp>(b, op, x) : x);
      }
    } else {
      // Row partials: each thread already reduced its own columns.
      for (Value x : adaptor.getInput())
        rows.push_back(quadReduce<CombineOp>(b, op, x));
    }
    rewriter.replaceOpWithMultiple(op, {rows});
    return success();
  }
};

} // namespace

void mlir::flash::wg_lowering::populateRowReducePatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<RowReduceLowering<WgRowMaxOp, arith::MaxNumFOp>,
               RowReduceLowering<WgRowSumOp, arith::AddFOp>>(
      converter, patterns.getContext());
}

//===- MaskKeysToMaskColumns.cpp - flash.wg.mask_keys ---------------------===//
//
// Both bounds of flash.mask are one limit per row, the first key the row
// may not see: seq_k, or under the causal mask min(seq_k, row + seq_k -
// seq_q + 1). So the op is each of the thread's two rows' limit and one
// flash.wg.mask_columns, whose pattern compares every register's column
// with it.
//
//===----------------------------------------------------------------------===//

#include "RegisterUtils.h"
#include "Patterns.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::wg_lowering;

namespace {

struct MaskKeysToMaskColumns : public OpRewritePattern<WgMaskKeysOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(WgMaskKeysOp op,
                                PatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value seqK = op.getSeqK();
    // The diagonal's offset seq_k - seq_q, once for both rows.
    Value diag = op.getCausal()
                     ? arith::SubIOp::create(b, seqK, op.getSeqQ()).getResult()
                     : Value();
    SmallVector<Value, 2> limits;
    for (Value row : WgFragmentValuesOp::create(b, op.getRows()).getValues()) {
      Value limit = seqK;
      if (diag) {
        Value onDiagonal = arith::AddIOp::create(b, row, diag);
        Value past = arith::AddIOp::create(
            b, onDiagonal, entryConstant(b, op, b.getI32IntegerAttr(1)));
        limit = arith::MinSIOp::create(b, past, seqK);
      }
      limits.push_back(limit);
    }
    Value limitRows =
        WgFragmentFromValuesOp::create(b, op.getRows().getType(), limits);
    rewriter.replaceOpWithNewOp<WgMaskColumnsOp>(
        op, op.getType(), op.getScores(), limitRows, op.getFirstKey());
    return success();
  }
};

} // namespace

void mlir::flash::wg_lowering::populateMaskKeysPatterns(
    const TypeConverter &, RewritePatternSet &patterns) {
  patterns.add<MaskKeysToMaskColumns>(patterns.getContext());
}

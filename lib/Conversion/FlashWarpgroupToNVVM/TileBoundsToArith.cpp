//===- TileBoundsToArith.cpp - flash.wg.tile_bounds and key_tiles_seen ----===//
//
// The key-tile bounds as i32 arithmetic on the kernel's seq_q and seq_k.
// Under the causal mask row i sees keys up to i + seq_k - seq_q (aligned
// bottom-right, as FlashAttention-2 and PyTorch's SDPA for seq_q != seq_k
// with is_causal), so rows below r see ceil(clamp(r + seq_k - seq_q, 0,
// seq_k) / block_n) key tiles.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "RegisterUtils.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::wg_lowering;

namespace {

/// The causal bounds' arithmetic for one op.
struct KeyTiles {
  ImplicitLocOpBuilder &b;
  Operation *op;
  Value seqK, diag;
  int64_t blockN;

  Value c32(int64_t v) { return entryConstant(b, op, b.getI32IntegerAttr(v)); }
  /// A key count clamped to [0, seq_k].
  Value clampToKeys(Value keys) {
    Value upper = arith::MinSIOp::create(b, keys, seqK);
    return arith::MaxSIOp::create(b, upper, c32(0));
  }
  /// ceil(keys / block_n).
  Value covering(Value keys) {
    Value up = arith::AddIOp::create(b, keys, c32(blockN - 1));
    return arith::DivSIOp::create(b, up, c32(blockN));
  }
  /// The key tiles rows below `rowsEnd` see.
  Value seenBelow(Value rowsEnd) {
    return covering(clampToKeys(arith::AddIOp::create(b, rowsEnd, diag)));
  }
};

struct TileBoundsLowering : public OpConversionPattern<WgTileBoundsOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgTileBoundsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value seqQ = adaptor.getSeqQ(), seqK = adaptor.getSeqK();
    const int64_t blockM = op.getBlockM(), blockN = op.getBlockN();
    KeyTiles tiles{b, op, seqK, Value(), blockN};
    Value m0;
    if (op.getAlignToEnd()) {
      Value fromEnd = arith::SubIOp::create(b, adaptor.getQueryBlocks(),
                                            adaptor.getQueryBlock());
      m0 = arith::SubIOp::create(
          b, seqQ, arith::MulIOp::create(b, fromEnd, tiles.c32(blockM)));
    } else {
      m0 = arith::MulIOp::create(b, adaptor.getQueryBlock(),
                                 tiles.c32(blockM));
    }
    Value nFull, nHi;
    if (op.getCausal()) {
      tiles.diag = arith::SubIOp::create(b, seqK, seqQ);
      nHi = tiles.seenBelow(
          arith::AddIOp::create(b, m0, tiles.c32(blockM)));
      // The tiles wholly at or before the first row's last key need no
      // mask.
      Value firstRowLastKey = arith::AddIOp::create(b, m0, tiles.diag);
      Value firstRowKeys = tiles.clampToKeys(
          arith::AddIOp::create(b, firstRowLastKey, tiles.c32(1)));
      nFull = arith::DivSIOp::create(b, firstRowKeys, tiles.c32(blockN));
    } else {
      nHi = tiles.covering(seqK);
      nFull = arith::DivSIOp::create(b, seqK, tiles.c32(blockN));
    }
    rewriter.replaceOp(op, {m0, nFull, nHi});
    return success();
  }
};

struct KeyTilesSeenLowering : public OpConversionPattern<WgKeyTilesSeenOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgKeyTilesSeenOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Value diag =
        arith::SubIOp::create(b, adaptor.getSeqK(), adaptor.getSeqQ());
    KeyTiles tiles{b, op, adaptor.getSeqK(), diag, int64_t(op.getBlockN())};
    rewriter.replaceOp(op, tiles.seenBelow(adaptor.getRowsEnd()));
    return success();
  }
};

} // namespace

void mlir::flash::wg_lowering::populateTileBoundsPatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<TileBoundsLowering, KeyTilesSeenLowering>(
      converter, patterns.getContext());
}

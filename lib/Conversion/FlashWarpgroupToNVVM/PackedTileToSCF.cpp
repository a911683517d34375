//===- PackedTileToSCF.cpp - flash.wg.packed_tile -------------------------===//
//
// A block of a packed-sequences grid reads its sequence's rows from
// cu_seqlens. The grid's y order is by rank: where the batch is small
// enough, the block ranks the sequences by query length (every thread one
// sequence, a loop over the batch each) and takes the one of its rank, so
// the hardware's x-then-y block order starts the longest sequences first
// and the last blocks are short ones, not a long sequence's tail.
//
//===----------------------------------------------------------------------===//

#include "Patterns.h"
#include "RegisterUtils.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::wg_lowering;

namespace {

struct PackedTileLowering : public OpConversionPattern<WgPackedTileOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WgPackedTileOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ImplicitLocOpBuilder b(op.getLoc(), rewriter);
    Type i32 = b.getI32Type();
    auto c32 = [&](int64_t v) {
      return entryConstant(b, op, b.getI32IntegerAttr(v));
    };
    auto toI32 = [&](Value index) {
      return arith::IndexCastOp::create(b, i32, index).getResult();
    };
    // cu[i] as i32.
    auto load = [&](Value cu, Value i) {
      Value i64 = arith::ExtUIOp::create(b, b.getI64Type(), i);
      Value ptr =
          LLVM::GEPOp::create(b, cu.getType(), i32, cu, ValueRange{i64});
      return LLVM::LoadOp::create(b, i32, ptr, /*alignment=*/4).getResult();
    };
    auto lengthOf = [&](Value cu, Value s) {
      return arith::SubIOp::create(
          b, load(cu, arith::AddIOp::create(b, s, c32(1))), load(cu, s));
    };
    Value heads = adaptor.getHeads();
    Value x = toI32(gpu::BlockIdOp::create(b, gpu::Dimension::x));
    Value y = toI32(gpu::BlockIdOp::create(b, gpu::Dimension::y));
    Value sequences = arith::DivUIOp::create(
        b, toI32(gpu::GridDimOp::create(b, gpu::Dimension::y)), heads);
    Value rank = arith::DivUIOp::create(b, y, heads);
    Value head = arith::RemUIOp::create(b, y, heads);
    Value cuQ = adaptor.getCuSeqlensQ(), cuK = adaptor.getCuSeqlensK();

    Value sequence = rank;
    if (int64_t limit = op.getLongFirstLimit()) {
      auto slotType = MemRefType::get(
          {1}, i32, AffineMap(),
          cast<MemRefType>(adaptor.getSmem().getType()).getMemorySpace());
      Value slot = memref::ViewOp::create(b, slotType, adaptor.getSmem(),
                                          adaptor.getOffset(), ValueRange());
      Value c0Index = entryConstant(b, op, b.getIndexAttr(0));
      Value ranked = arith::CmpIOp::create(b, arith::CmpIPredicate::ule,
                                           sequences, c32(limit));
      // The batch size is the block's, so every thread takes the same
      // branch and reaches the barrier.
      sequence = ifThenElse(
          b, b.getLoc(), ranked, TypeRange{i32},
          [&]() -> SmallVector<Value> {
            Value t = toI32(gpu::ThreadIdOp::create(b, gpu::Dimension::x));
            Value mine = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, t,
                                               sequences);
            auto ifMine = scf::IfOp::create(b, TypeRange(), mine, false);
            {
              OpBuilder::InsertionGuard guard(b);
              b.setInsertionPoint(ifMine.thenBlock()->getTerminator());
              Value length = lengthOf(cuQ, t);
              // Sequences ahead of t: longer, or as long and before it.
              auto count = scf::ForOp::create(
                  b, c32(0), sequences, c32(1), ValueRange{c32(0)},
                  [&](OpBuilder &nb, Location loc, Value u, ValueRange acc) {
                    OpBuilder::InsertionGuard inner(b);
                    b.setInsertionPoint(nb.getInsertionBlock(),
                                        nb.getInsertionPoint());
                    Value other = lengthOf(cuQ, u);
                    Value longer = arith::CmpIOp::create(
                        b, arith::CmpIPredicate::sgt, other, length);
                    Value tie = arith::AndIOp::create(
                        b,
                        arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                              other, length),
                        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, u,
                                              t));
                    Value ahead = arith::ExtUIOp::create(
                        b, i32, arith::OrIOp::create(b, longer, tie));
                    scf::YieldOp::create(
                        b, ValueRange{arith::AddIOp::create(b, acc[0], ahead)});
                  });
              Value isThisRank = arith::CmpIOp::create(
                  b, arith::CmpIPredicate::eq, count.getResult(0), rank);
              auto ifRank =
                  scf::IfOp::create(b, TypeRange(), isThisRank, false);
              b.setInsertionPoint(ifRank.thenBlock()->getTerminator());
              memref::StoreOp::create(b, t, slot, ValueRange{c0Index});
            }
            gpu::BarrierOp::create(b);
            return {memref::LoadOp::create(b, slot, ValueRange{c0Index})};
          },
          [&]() -> SmallVector<Value> { return {rank}; })[0];
    }

    // The sequence's rows, clamped into the packed tensors.
    auto rows = [&](Value cu, Value total) -> std::pair<Value, Value> {
      Value start = arith::MinSIOp::create(
          b, arith::MaxSIOp::create(b, load(cu, sequence), c32(0)), total);
      Value end = arith::MinSIOp::create(
          b,
          arith::MaxSIOp::create(
              b, load(cu, arith::AddIOp::create(b, sequence, c32(1))), start),
          total);
      return {start, arith::SubIOp::create(b, end, start)};
    };
    auto [qStart, lenQ] = rows(cuQ, adaptor.getTotalQ());
    auto [kStart, lenK] = rows(cuK, adaptor.getTotalK());
    Value blockM = c32(op.getBlockM());
    Value queryBlocks = arith::DivUIOp::create(
        b, arith::AddIOp::create(b, lenQ, c32(op.getBlockM() - 1)), blockM);
    // From the sequence's last query block: under a causal mask the longest
    // tiles first.
    Value queryBlock = arith::SubIOp::create(
        b, arith::SubIOp::create(b, queryBlocks, c32(1)), x);
    Value headIndex = arith::IndexCastOp::create(b, b.getIndexType(), head);
    rewriter.replaceOp(
        op, {queryBlock, headIndex, queryBlocks, qStart, kStart, lenQ, lenK});
    return success();
  }
};

} // namespace

void mlir::flash::wg_lowering::populatePackedTilePatterns(
    const TypeConverter &converter, RewritePatternSet &patterns) {
  patterns.add<PackedTileLowering>(converter, patterns.getContext());
}

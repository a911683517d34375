//===- Epilogue.cpp - flash.finalize and the O / LSE stores ---------------===//
//
// The tile program's epilogue on a consumer, rewritten by patterns after its
// key loops: flash.finalize quad-reduces the row sums (flash.wg.row_sum) and
// gives O = acc / l (0 when l = 0; flash.wg.scale_rows) and
// LSE = (m + log2 l) * ln 2 (-inf when l = 0) as a row vector, with an
// attention sink in l (its head's, loaded here); O's
// arith.truncf rounds it to 16-bit pairs (flash.wg.truncf, by the truncf
// pattern of KeyLoopToWarpgroup.cpp); flash.store_tile stores from the
// registers with a row bound check (flash.wg.store_global: the op's "rows
// past the end are not written"; a causal first block also has rows before
// row 0, see emitTileBounds). O is [B, H, seq_q, D] contiguous, LSE
// [B, H, seq_q]. With KernelSpec::tmaStoreO, O goes through the
// warpgroup's rows of the Q buffer (flash.wg.store_shared) and a TMA store
// instead (TMA clips the rows past the end).
//
//===----------------------------------------------------------------------===//

#include "ProgramPatterns.h"

#include "Flash/FlashOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;

namespace {

struct FinalizeToRowOps : RolePattern<FinalizeOp, ConsumerRole> {
  using RolePattern::RolePattern;

  LogicalResult matchAndRewrite(FinalizeOp op,
                                PatternRewriter &rewriter) const override {
    Value acc = fragmentOf(op.getAcc());
    Value m = fragmentOf(op.getRowMax());
    Value l = fragmentOf(op.getRowSum());
    if (!op.getBase2() || !acc || !m || !l)
      return failure();
    BuilderAt at(role.b, rewriter, op);
    ImplicitLocOpBuilder &b = role.b;
    const bool wantLse = !op.getLse().use_empty();
    SmallVector<Value> mRegs = registersOf(b, m);
    Value negInf = role.cF32(-std::numeric_limits<float>::infinity());
    Value sums = WgRowSumOp::create(b, role.k.rowsF32Type, l);
    // The head's sink in base 2 (the program's load of it is a placeholder
    // here: the kernel loads it for its own head).
    Value sink2;
    if (op.getSink()) {
      auto [batch, head] = role.k.batchAndHead(role.tile.blockY);
      Value sink = memref::LoadOp::create(
          b, role.k.captures[*role.spec.sinkCapture], ValueRange{head});
      sink2 = arith::MulFOp::create(b, sink, role.cF32(float(M_LOG2E)));
    }
    SmallVector<Value, 2> inv, lse;
    for (auto [r, rowSum] :
         llvm::enumerate(WgFragmentValuesOp::create(b, sums).getValues())) {
      // With a sink, the denominator is l 2^(m - top) + 2^(sink - top) and
      // acc is scaled by 2^(m - top), top = max(m, sink): a row that saw no
      // key (m = -inf, l = 0) gets O = 0 and the LSE below the sink.
      Value sum = rowSum, top = mRegs[r], numerator;
      if (sink2) {
        top = arith::MaximumFOp::create(b, mRegs[r], sink2);
        numerator =
            math::Exp2Op::create(b, arith::SubFOp::create(b, mRegs[r], top));
        sum = arith::AddFOp::create(
            b, arith::MulFOp::create(b, rowSum, numerator),
            math::Exp2Op::create(b, arith::SubFOp::create(b, sink2, top)));
      }
      Value empty = arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, rowSum,
                                          role.cF32(0.0f));
      Value rcp = arith::DivFOp::create(
          b, numerator ? numerator : role.cF32(1.0f), sum);
      inv.push_back(arith::SelectOp::create(b, empty, role.cF32(0.0f), rcp));
      // The LSE is -inf where the sum is 0 or, a sink of -inf on a row that
      // saw no key, NaN.
      if (sink2)
        empty = arith::CmpFOp::create(b, arith::CmpFPredicate::UEQ, sum,
                                      role.cF32(0.0f));
      if (!wantLse)
        continue;
      Value lg = math::Log2Op::create(b, sum);
      Value t = arith::AddFOp::create(b, top, lg);
      Value t2 = arith::MulFOp::create(b, t, role.cF32(float(std::log(2.0))));
      lse.push_back(arith::SelectOp::create(b, empty, negInf, t2));
    }
    Value normalised = WgScaleRowsOp::create(
        b, role.k.oType, acc,
        WgFragmentFromValuesOp::create(b, role.k.rowsF32Type, inv),
        /*moved=*/Value());
    Value lseRows =
        wantLse ? WgFragmentFromValuesOp::create(b, role.k.rowsF32Type, lse)
                : sums;
    rewriter.replaceOp(
        op, {asTile(b, op.getLoc(), normalised, op.getOutput().getType()),
             asTile(b, op.getLoc(), lseRows, op.getLse().getType())});
    return success();
  }
};

/// The tile's flash.store_tile ops, of O (16-bit, A-operand layout) and of
/// LSE (a row vector): this warpgroup's 64 rows from the block's first,
/// taken once, at the first store, for all of them.
struct StoreTilesToWg : RolePattern<StoreTileOp, ConsumerRole> {
  using RolePattern::RolePattern;

  LogicalResult matchAndRewrite(StoreTileOp first,
                                PatternRewriter &rewriter) const override {
    for (Operation *op = first->getPrevNode(); op; op = op->getPrevNode())
      if (isa<StoreTileOp>(op))
        return failure();
    SmallVector<std::pair<StoreTileOp, Value>> stores;
    for (Operation *op = first; op; op = op->getNextNode()) {
      auto store = dyn_cast<StoreTileOp>(op);
      if (!store)
        continue;
      Value value = fragmentOf(store.getValue());
      auto type = value ? dyn_cast<FragmentType>(value.getType())
                        : FragmentType();
      if (!type || !(isa<WgmmaRowsLayoutAttr, WgmmaOperandALayoutAttr>(
                         type.getLayout()) ||
                     (role.spec.decode &&
                      isa<WgmmaAccumulatorLayoutAttr>(type.getLayout()))))
        return failure();
      stores.push_back({store, value});
    }
    BuilderAt at(role.b, rewriter, first);
    ImplicitLocOpBuilder &b = role.b;
    // A decoding split's O (f32, normalised) and LSE go to its block of
    // the partial scratch, the program's rows each.
    if (role.spec.decode) {
      KernelContext &k = role.k;
      for (auto [store, value] : stores) {
        b.setInsertionPoint(store);
        const bool rows = isa<WgmmaRowsLayoutAttr>(
            cast<FragmentType>(value.getType()).getLayout());
        WgStoreGlobalOp::create(b, value, rows ? k.partialLse : k.partialOut,
                                role.tile.partialBlock, role.tile.m0,
                                k.programRows);
        rewriter.eraseOp(store);
      }
      return success();
    }
    Value head = arith::IndexCastOp::create(b, role.k.i32, role.tile.blockY);
    Value firstRow = arith::AddIOp::create(
        b, role.tile.m0,
        arith::MulIOp::create(b, role.consumerIdx, role.cI32(64)));
    for (auto [store, value] : stores) {
      b.setInsertionPoint(store);
      const bool rows = isa<WgmmaRowsLayoutAttr>(
          cast<FragmentType>(value.getType()).getLayout());
      if (!rows && role.spec.packed && role.spec.sw.tmaStoreO)
        storePackedO(b, value, head, firstRow);
      else if (!rows && role.spec.sw.tmaStoreO)
        role.storeOViaTma(value);
      else if (role.spec.packed)
        storePackedRows(b, value, rows, head, firstRow);
      else if (!rows || !role.spec.probeStamps)
        // Under probeStamps the LSE buffer holds the probe's records.
        WgStoreGlobalOp::create(b, value, rows ? role.k.lsePtr : role.k.outPtr,
                                head, firstRow, role.k.seqQ);
      rewriter.eraseOp(store);
    }
    return success();
  }

  /// A packed sequence's O: this warpgroup's 64 rows by TMA where they lie
  /// inside the sequence (a box past its end would overwrite the next
  /// one's rows), else row by row. The condition is the warpgroup's, so
  /// the TMA store's warpgroup barriers see all of it.
  void storePackedO(ImplicitLocOpBuilder &b, Value o16, Value head,
                    Value firstRow) const {
    KernelContext &k = role.k;
    Value fromStart = arith::CmpIOp::create(b, arith::CmpIPredicate::sge,
                                            firstRow, k.cI32(0));
    Value toEnd = arith::CmpIOp::create(
        b, arith::CmpIPredicate::sle,
        arith::AddIOp::create(b, firstRow, k.cI32(64)), k.seqQ);
    Value inside = arith::AndIOp::create(b, fromStart, toEnd);
    auto ifOp = scf::IfOp::create(b, TypeRange(), inside, /*withElse=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    role.storeOViaTma(o16);
    b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
    storePackedRows(b, o16, /*rows=*/false, head, firstRow);
  }

  /// A packed sequence's rows: O into its [T, H, D] rows with O's strides,
  /// LSE into its [H, T] rows.
  void storePackedRows(ImplicitLocOpBuilder &b, Value value, bool rows,
                       Value head, Value firstRow) const {
    KernelContext &k = role.k;
    Value rowBase = arith::IndexCastOp::create(b, k.i32, role.tile.qRow0);
    Value headStride =
        rows ? arith::ExtUIOp::create(b, k.i64, k.totalQ).getResult()
             : k.oStrideH;
    Value rowStride = rows ? k.cI64(1) : k.oStrideN;
    WgStoreGlobalOp::create(b, value, rows ? k.lsePtr : k.outPtr, head,
                            firstRow, k.seqQ, headStride, rowStride, rowBase);
  }
};

} // namespace

void mlir::flash::gpu_lowering::populateEpilogueToWarpgroupPatterns(
    RewritePatternSet &patterns, ConsumerRole &consumer) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<FinalizeToRowOps, StoreTilesToWg>(ctx, consumer);
}

void ConsumerRole::storeOViaTma(Value o16) {
  // The rows about to be overwritten are the A operand of this warpgroup's
  // S wgmmas, and each warp has only waited for its own wgmma.wait_group:
  // once all 128 threads are here, no warp's S of the tile is in flight.
  Value barrierId = arith::AddIOp::create(b, consumerIdx, cI32(3));
  auto warpgroupBarrier = [&] {
    NVVM::BarrierOp::create(b, Type(), barrierId, cI32(128),
                            NVVM::BarrierReductionAttr(), Value());
  };
  warpgroupBarrier();
  // This warpgroup's rows start oBoxBytes per consumer into the Q buffer,
  // whose boxes are the TMA boxes of Q (and of O, 64 rows of each).
  Value buffer = k.qBufferStart(tile);
  Value rowsStart = arith::AddIOp::create(
      b, buffer,
      arith::IndexCastOp::create(
          b, k.indexTy,
          arith::MulIOp::create(b, consumerIdx, cI32(spec.oBoxBytes()))));
  WgStoreSharedOp::create(b, o16, k.smem, rowsStart,
                          b.getI64IntegerAttr(spec.qBoxBytes()));
  // The TMA engine reads through the async proxy: make the generic stores
  // visible to it, then let one thread store once the warpgroup wrote.
  NVVM::FenceProxyOp::create(
      b, NVVM::ProxyKind::async_shared,
      NVVM::SharedSpaceAttr::get(k.ctx, NVVM::SharedSpace::shared_cta));
  warpgroupBarrier();
  Value elected = arith::CmpIOp::create(b, arith::CmpIPredicate::eq,
                                        threadInGroup, cI32(0));
  k.ifThen(elected, [&] {
    Value rowOff = arith::IndexCastOp::create(
        b, k.indexTy, arith::MulIOp::create(b, consumerIdx, cI32(64)));
    Value firstRow = arith::AddIOp::create(b, tile.m0Idx, rowOff);
    if (tile.qRow0)
      firstRow = arith::AddIOp::create(b, tile.qRow0, firstRow);
    // O's map is over [B, H, N, D] with O's own strides.
    auto [batch, head] = k.batchAndHead(tile.blockY);
    for (int64_t c = 0; c < spec.boxesPerRow(); ++c) {
      Value off =
          arith::AddIOp::create(b, rowsStart, cIndex(c * spec.qBoxBytes()));
      Value view =
          memref::ViewOp::create(b, k.oBoxType, k.smem, off, ValueRange());
      nvgpu::TmaAsyncStoreOp::create(
          b, view, k.tmO, ValueRange{cIndex(64 * c), firstRow, head, batch},
          Value());
    }
    NVVM::CpAsyncBulkCommitGroupOp::create(b);
    // Wait until the store has read the buffer: only then may the block
    // exit (one tile) or the producer load a later Q into it (persistent).
    NVVM::CpAsyncBulkWaitGroupOp::create(b, b.getI32IntegerAttr(0),
                                         b.getUnitAttr());
    if (spec.sw.persistent)
      WgRingReleaseOp::create(b, tile.qSlot, k.bar, spec.barQEmpty());
  });
}

//===- BackwardKernels.cpp - the backward tile program as three kernels ---===//
//
// BackwardKernels.h says what each kernel does. The main kernel is one
// warpgroup per block, keyed by (key tile, batch x K/V head), built from
// the forward's warpgroup parts (flash.wg: TMA tiles and rings, wgmma with
// either operand transposed, truncf into A operands, the swizzled shared
// store, the bound-checked global store). Its shared memory, from the
// window's 1 KiB-aligned start: K and V (64 x D each), two slots of Q and
// of dO, and dS^T (64 x 64); every tile is D/64 boxes of 64 rows of 128
// bytes with the 128-byte swizzle, so:
//
//   S^T  = K Q^T   A = K (K-major), B = Q (K-major): k-steps along D
//   dP^T = V dO^T  A = V (K-major), B = dO (K-major)
//   dV  += P^T dO  A = P^T (registers), B = dO (MN-major): k-steps of 16
//                  queries, 16 rows (2048 B) apart
//   dK  += dS^T Q  A = dS^T (registers), B = Q (MN-major)
//   dQ_j = dS K    A = dS read from dS^T (MN-major), B = K (MN-major):
//                  k-steps of 16 keys
//
// In the accumulators of S^T and dP^T the rows are keys and the columns
// queries, so the LSE and delta a score needs are its column's: each thread
// loads the 16 of its columns per query tile.
//
//===----------------------------------------------------------------------===//

#include "BackwardKernels.h"
#include "FlashToGPU.h"

#include "../FlashWarpgroupToNVVM/ModRegions.h"
#include "../FlashWarpgroupToNVVM/RegisterUtils.h"
#include "../InlinePtx.h"
#include "Flash/FlashOps.h"
#include "flashc/Config/LaunchAttr.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;

namespace {

constexpr int64_t kThreads = 128;

/// What the three kernels share: types, constants and a few control-flow
/// and address helpers over `b`.
class BackwardBuilder {
public:
  BackwardBuilder(ImplicitLocOpBuilder &b, const BackwardSpec &spec)
      : b(b), spec(spec), ctx(b.getContext()) {
    f32 = b.getF32Type();
    i32 = b.getI32Type();
    i64 = b.getI64Type();
    indexTy = b.getIndexType();
    genericPtr = LLVM::LLVMPointerType::get(ctx);
    globalPtr = LLVM::LLVMPointerType::get(ctx, 1);
  }

  void emitPre(gpu::GPUFuncOp func);
  void emitMain(gpu::GPUFuncOp func);
  void emitPost(gpu::GPUFuncOp func);

  /// The kernels' parameters, in launch order, as kernel.json lists them
  /// (docs/kernel-metadata.md); each gives the gpu.func argument types.
  struct Param {
    DictionaryAttr attr;
    Type type;
  };
  SmallVector<Param> preParams(), mainParams(), postParams();

private:
  /// Starts a kernel's body: its constants go to the top of `entry`, one
  /// per value, where the warpgroup patterns look for theirs
  /// (wg_lowering::entryConstant).
  void beginKernel(Block *entry) {
    constants.clear();
    b.setInsertionPointToStart(entry);
    // The body is empty: the first constant anchors the others before it.
    auto zero = arith::ConstantOp::create(b, b.getIndexAttr(0));
    constants[zero.getValue()] = zero;
    constantsAt.setInsertionPoint(zero);
  }
  Value constant(TypedAttr attr) {
    Value &slot = constants[attr];
    if (!slot)
      slot = arith::ConstantOp::create(constantsAt, b.getLoc(), attr);
    return slot;
  }
  Value cI32(int64_t v) { return constant(b.getI32IntegerAttr(v)); }
  Value cI64(int64_t v) { return constant(b.getI64IntegerAttr(v)); }
  Value cIndex(int64_t v) { return constant(b.getIndexAttr(v)); }
  Value cF32(float v) { return constant(b.getF32FloatAttr(v)); }
  Value index(Value v) { return arith::IndexCastOp::create(b, indexTy, v); }
  Value toI64(Value v) {
    if (v.getType().isInteger(64))
      return v;
    return v.getType().isIndex()
               ? arith::IndexCastOp::create(b, i64, v).getResult()
               : arith::ExtSIOp::create(b, i64, v).getResult();
  }
  Value add(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value mul(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  Value cmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, p, x, y);
  }
  Value gep(Value ptr, Type element, Value offset) {
    return LLVM::GEPOp::create(b, globalPtr, element, ptr,
                               ValueRange{toI64(offset)});
  }
  void ifThen(Value cond, function_ref<void()> then) {
    auto ifOp = scf::IfOp::create(b, TypeRange(), cond, /*withElse=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    then();
  }
  /// The element offset of row `row` of (batch, head) in a strided tensor.
  Value rowOffset(Value batch, Value head, Value row, ValueRange strides) {
    Value off = mul(toI64(batch), strides[0]);
    off = add(off, mul(toI64(head), strides[1]));
    return add(off, mul(toI64(row), strides[2]));
  }
  /// The row (of 64 x D) and column layout the SIMT kernels walk: 8
  /// contiguous elements a thread, D/8 threads a row.
  int64_t threadsPerRow() const { return spec.headDim / 8; }
  int64_t rowsPerPass() const { return kThreads / threadsPerRow(); }
  /// Sums `v` over each aligned group of `lanes` lanes (a power of two up
  /// to 32) by a butterfly, which gives every lane of a group the same
  /// bits: the threadsPerRow() lanes that share a row, or the warp.
  Value butterflySum(Value v, int64_t lanes);
  /// key_ranges (`table`, an i32 [B, entries, 2 or 4] memref): the query
  /// rows [first, end) from the first entry of `batch` whose [lo, hi)
  /// reaches keys [k0, k0 + 64) to the last, (0, 0) when none does. Every
  /// warp scans the entries itself and reduces with redux.sync, so the
  /// block needs no shared memory or barrier for it.
  std::pair<Value, Value> keyTileQueryRows(Value table, Value batch, Value k0,
                                           Value seqQ, Value lane);
  /// key_ranges with full ranges: whether every row of [q0, q0 + 64) keeps
  /// every key of [k0, k0 + 64) by the entries' [full_lo, full_hi).
  Value keyTileWhole(Value table, Value batch, Value q0, Value k0, Value seqQ);
  /// `x` (index) clamped into [0, dim `dim` of `table`).
  Value clampInto(Value table, int64_t dim, Value x) {
    Value last = arith::SubIOp::create(b, memref::DimOp::create(b, table, dim),
                                       cIndex(1));
    return arith::MinSIOp::create(b, arith::MaxSIOp::create(b, x, cIndex(0)),
                                  last);
  }
  /// The gpu.func arguments from `next` on: the captures a kernel's
  /// parameters end with.
  SmallVector<Value> captureArgs(Block *entry, unsigned next) {
    return SmallVector<Value>(llvm::map_range(
        llvm::seq<unsigned>(next, entry->getNumArguments()),
        [&](unsigned i) -> Value { return entry->getArgument(i); }));
  }
  /// A SIMT kernel's block, (query tile, batch x head), and the first of
  /// this thread's 8 columns.
  struct TileRows {
    Value tile, bh, batch, head, tid, col;
  };
  /// dsinks[h] = the sum of `partials` (the pre kernel's, per batch, query
  /// tile and warp) of head h, in a fixed order, by the first warp of the
  /// post kernel's block (0, h) (`rows`: the block's).
  void emitSinkGradSum(const TileRows &rows, Value partials, Value dsinks,
                       Value seqQ, Value heads);
  /// Calls `row(t, q)` for each of this thread's rows q of the block's 64
  /// (rows past seq_q included: `row` checks q).
  TileRows forEachTileRow(Value heads,
                          function_ref<void(const TileRows &, Value)> row);

  FragmentType accumulatorType(int64_t n) {
    return FragmentType::get(ctx, {64, n}, f32,
                             WgmmaAccumulatorLayoutAttr::get(ctx));
  }
  FragmentType operandAType(int64_t n) {
    return FragmentType::get(ctx, {64, n}, spec.elementType,
                             WgmmaOperandALayoutAttr::get(ctx));
  }
  Value advance(Value base, Value units, int64_t bytes) {
    return WgAdvanceDescriptorOp::create(b, base.getType(), base, units,
                                         b.getI64IntegerAttr(bytes));
  }
  /// D = sum over k steps of A_s B_s (the first step without C).
  Value mmaChain(FragmentType type, ArrayRef<Value> a, ArrayRef<Value> bs,
                 Value acc) {
    for (auto [aStep, bStep] : llvm::zip_equal(a, bs))
      acc = WgMmaOp::create(b, type, aStep, bStep, acc);
    return acc;
  }
  /// The 64 x 16 k-steps of a rounded 64 x 64 A operand in registers.
  SmallVector<Value> aSteps(Value a16) {
    SmallVector<Value> regs = wg_lowering::fragmentValues(b, a16);
    SmallVector<Value> steps;
    for (size_t kk = 0; kk < regs.size() / 4; ++kk)
      steps.push_back(WgFragmentFromValuesOp::create(
          b, operandAType(16), ArrayRef<Value>(regs).slice(4 * kk, 4)));
    return steps;
  }

  ImplicitLocOpBuilder &b;
  const BackwardSpec &spec;
  MLIRContext *ctx;
  Type f32, i32, i64, indexTy, genericPtr, globalPtr;
  OpBuilder constantsAt{static_cast<MLIRContext *>(nullptr)};

  DenseMap<Attribute, Value> constants;
};

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

class ParamList {
public:
  ParamList(MLIRContext *ctx) : b(ctx) {}
  ParamList &tensor(StringRef name, Type type) {
    return add({{"kind", "ptr"}, {"tensor", name}}, type);
  }
  ParamList &workspace(StringRef name, Type type) {
    return add({{"kind", "workspace"}, {"name", name}}, type);
  }
  ParamList &scalar(StringRef kind, StringRef value, Type type) {
    return add({{"kind", kind}, {"value", value}}, type);
  }
  ParamList &strides(StringRef tensor, Type i64) {
    for (StringRef dim : {"b", "h", "n"})
      scalar("i64", ("stride_" + tensor + "_" + dim).str(), i64);
    return *this;
  }
  /// A CUtensorMap by value over [B, H, N, D] with the tensor's strides,
  /// boxes of 64 rows x 64 columns.
  ParamList &tensorMap(StringRef name, Type type) {
    SmallVector<NamedAttribute> attrs = {
        b.getNamedAttr("kind", b.getStringAttr("tma")),
        b.getNamedAttr("tensor", b.getStringAttr(name)),
        b.getNamedAttr("box", b.getDenseI64ArrayAttr({64, 64})),
        b.getNamedAttr("swizzle", b.getI64IntegerAttr(128)),
        b.getNamedAttr("rank", b.getI64IntegerAttr(4))};
    params.push_back({b.getDictionaryAttr(attrs), type});
    return *this;
  }
  /// Capture `index` of `captures`, a memref (MLIR's expanded
  /// descriptor).
  ParamList &capture(ArrayRef<CaptureArg> captures, unsigned index) {
    params.push_back(
        {captureParamAttr(b, index, captures[index]), captures[index].type});
    return *this;
  }
  SmallVector<BackwardBuilder::Param> take() { return std::move(params); }

private:
  ParamList &add(ArrayRef<std::pair<StringRef, StringRef>> entries, Type type) {
    SmallVector<NamedAttribute> attrs;
    for (auto [key, value] : entries)
      attrs.push_back(b.getNamedAttr(key, b.getStringAttr(value)));
    params.push_back({b.getDictionaryAttr(attrs), type});
    return *this;
  }
  Builder b;
  SmallVector<BackwardBuilder::Param> params;
};

SmallVector<BackwardBuilder::Param> BackwardBuilder::preParams() {
  ParamList list(ctx);
  list.tensor("o", globalPtr)
      .tensor("do", globalPtr)
      .workspace("delta", globalPtr)
      .workspace("dq_accum", globalPtr);
  if (spec.deterministic)
    list.workspace("dq_turns", globalPtr);
  list.scalar("i32", "seq_q", i32)
      .scalar("i32", "heads", i32)
      .strides("o", i64)
      .strides("do", i64);
  if (spec.sinkCapture)
    list.tensor("lse", globalPtr)
        .workspace("sink_partials", globalPtr)
        .capture(spec.captures, *spec.sinkCapture);
  return list.take();
}

SmallVector<BackwardBuilder::Param> BackwardBuilder::mainParams() {
  ParamList list(ctx);
  list.tensorMap("q", genericPtr)
      .tensorMap("k", genericPtr)
      .tensorMap("v", genericPtr)
      .tensorMap("do", genericPtr)
      .tensor("lse", globalPtr)
      .workspace("delta", globalPtr)
      .workspace("dq_accum", globalPtr)
      .tensor("dk", globalPtr)
      .tensor("dv", globalPtr);
  if (spec.deterministic)
    list.workspace("dq_turns", globalPtr);
  list.scalar("i32", "seq_q", i32)
      .scalar("i32", "seq_k", i32)
      .scalar("f32", "scale_log2", f32)
      .scalar("i32", "kv_group", i32)
      .scalar("i32", "heads", i32)
      .strides("dk", i64)
      .strides("dv", i64);
  for (auto [i, capture] : llvm::enumerate(spec.captures))
    if (capture.role == CaptureRole::Capture)
      list.capture(spec.captures, i);
  return list.take();
}

SmallVector<BackwardBuilder::Param> BackwardBuilder::postParams() {
  ParamList list(ctx);
  list.workspace("dq_accum", globalPtr)
      .tensor("dq", globalPtr)
      .scalar("i32", "seq_q", i32)
      .scalar("i32", "heads", i32)
      .scalar("f32", "scale", f32)
      .strides("dq", i64);
  if (spec.sinkGradCapture)
    list.workspace("sink_partials", globalPtr)
        .capture(spec.captures, *spec.sinkGradCapture);
  return list.take();
}

//===----------------------------------------------------------------------===//
// The SIMT kernels: delta and the cleared accumulator, dQ's rounding
//===----------------------------------------------------------------------===//

BackwardBuilder::TileRows BackwardBuilder::forEachTileRow(
    Value heads, function_ref<void(const TileRows &, Value)> row) {
  TileRows t;
  t.tile = arith::IndexCastOp::create(
      b, i32, gpu::BlockIdOp::create(b, gpu::Dimension::x));
  t.bh = arith::IndexCastOp::create(
      b, i32, gpu::BlockIdOp::create(b, gpu::Dimension::y));
  t.batch = arith::DivUIOp::create(b, t.bh, heads);
  t.head = arith::RemUIOp::create(b, t.bh, heads);
  t.tid = arith::IndexCastOp::create(
      b, i32, gpu::ThreadIdOp::create(b, gpu::Dimension::x));
  Value rowInPass = arith::DivUIOp::create(b, t.tid, cI32(threadsPerRow()));
  t.col = mul(arith::RemUIOp::create(b, t.tid, cI32(threadsPerRow())), cI32(8));
  for (int64_t pass = 0; pass < 64 / rowsPerPass(); ++pass)
    row(t,
        add(add(mul(t.tile, cI32(64)), cI32(pass * rowsPerPass())), rowInPass));
  return t;
}

Value BackwardBuilder::butterflySum(Value v, int64_t lanes) {
  return warpButterfly(b, v, lanes, [&](Value x, Value y) {
    return arith::AddFOp::create(b, x, y).getResult();
  });
}

std::pair<Value, Value> BackwardBuilder::keyTileQueryRows(Value table,
                                                          Value batch, Value k0,
                                                          Value seqQ,
                                                          Value lane) {
  const int64_t rows = spec.keyRanges->rows;
  Value entries = arith::MinSIOp::create(
      b, memref::DimOp::create(b, table, 1),
      index(arith::CeilDivUIOp::create(b, seqQ, cI32(rows))));
  Value tableBatch = clampInto(table, 0, index(batch));
  Value kEnd = add(k0, cI32(64));
  const int32_t none = std::numeric_limits<int32_t>::max();
  auto scan = scf::ForOp::create(
      b, index(lane), entries, cIndex(32), ValueRange{cI32(none), cI32(-1)},
      [&](OpBuilder &nb, Location, Value e, ValueRange found) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        auto field = [&](int64_t i) -> Value {
          return memref::LoadOp::create(b, table,
                                        ValueRange{tableBatch, e, cIndex(i)});
        };
        Value reaches = arith::AndIOp::create(
            b, cmp(arith::CmpIPredicate::slt, field(0), kEnd),
            cmp(arith::CmpIPredicate::sgt, field(1), k0));
        Value at = arith::IndexCastOp::create(b, i32, e);
        scf::YieldOp::create(
            b,
            ValueRange{arith::SelectOp::create(
                           b, reaches, arith::MinSIOp::create(b, found[0], at),
                           found[0]),
                       arith::SelectOp::create(
                           b, reaches, arith::MaxSIOp::create(b, found[1], at),
                           found[1])});
      });
  auto warpReduce = [&](Value v, NVVM::ReduxKind kind) -> Value {
    return NVVM::ReduxOp::create(b, i32, v, kind, cI32(-1));
  };
  Value first = warpReduce(scan.getResult(0), NVVM::ReduxKind::MIN);
  Value last = warpReduce(scan.getResult(1), NVVM::ReduxKind::MAX);
  Value any = cmp(arith::CmpIPredicate::sge, last, cI32(0));
  Value begin =
      mul(arith::SelectOp::create(b, any, first, cI32(0)), cI32(rows));
  Value end =
      arith::MinSIOp::create(b, mul(add(last, cI32(1)), cI32(rows)), seqQ);
  return {begin, end};
}

Value BackwardBuilder::keyTileWhole(Value table, Value batch, Value q0,
                                    Value k0, Value seqQ) {
  const int64_t rows = spec.keyRanges->rows;
  Value tableBatch = clampInto(table, 0, index(batch));
  Value end = arith::MinSIOp::create(b, add(q0, cI32(64)), seqQ);
  Value e0 = index(arith::DivUIOp::create(b, q0, cI32(rows)));
  Value e1 = index(arith::CeilDivUIOp::create(
      b, arith::MaxSIOp::create(b, end, cI32(0)), cI32(rows)));
  const int32_t none = std::numeric_limits<int32_t>::max();
  // The keys every covering entry's rows keep: the intersection.
  auto full = scf::ForOp::create(
      b, e0, e1, cIndex(1), ValueRange{cI32(0), cI32(none)},
      [&](OpBuilder &nb, Location, Value e, ValueRange range) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        Value entry = clampInto(table, 1, e);
        auto field = [&](int64_t i) -> Value {
          return memref::LoadOp::create(
              b, table, ValueRange{tableBatch, entry, cIndex(i)});
        };
        scf::YieldOp::create(
            b, ValueRange{arith::MaxSIOp::create(b, range[0], field(2)),
                          arith::MinSIOp::create(b, range[1], field(3))});
      });
  return arith::AndIOp::create(
      b, cmp(arith::CmpIPredicate::sge, k0, full.getResult(0)),
      cmp(arith::CmpIPredicate::sle, add(k0, cI32(64)), full.getResult(1)));
}

void BackwardBuilder::emitPre(gpu::GPUFuncOp func) {
  Block *entry = &func.getBody().front();
  beginKernel(entry);
  auto arg = [&](unsigned i) { return entry->getArgument(i); };
  unsigned next = 0;
  Value out = arg(next++), dOut = arg(next++), delta = arg(next++),
        accum = arg(next++);
  Value turns = spec.deterministic ? arg(next++) : Value();
  Value seqQ = arg(next++), heads = arg(next++);
  SmallVector<Value> oStrides = {arg(next), arg(next + 1), arg(next + 2)};
  SmallVector<Value> doStrides = {arg(next + 3), arg(next + 4), arg(next + 5)};
  next += 6;
  Value lse, sinkPartials, sinks;
  if (spec.sinkCapture) {
    lse = arg(next++);
    sinkPartials = arg(next++);
    sinks = arg(next++);
  }

  auto vecType = VectorType::get({8}, spec.elementType);
  auto quadF32 = VectorType::get({4}, f32);
  // With sinks, this thread's rows' share of dsinks[head]:
  // -sum exp(sink - lse) delta, from the lanes that hold a row's delta.
  Value sink2, sinkShare = spec.sinkCapture ? cF32(0.0f) : Value();
  TileRows rows = forEachTileRow(heads, [&](const TileRows &t, Value q) {
    Value batch = t.batch, head = t.head, col = t.col, bh = t.bh;
    Value inside = cmp(arith::CmpIPredicate::slt, q, seqQ);
    // Rows past seq_q add 0; every lane takes part in the shuffles.
    Value partial =
        wg_lowering::ifThenElse(
            b, b.getLoc(), inside, TypeRange{f32},
            [&]() -> SmallVector<Value> {
              auto load = [&](Value base, ValueRange strides) {
                Value off = add(rowOffset(batch, head, q, strides), toI64(col));
                return LLVM::LoadOp::create(b, vecType,
                                            gep(base, spec.elementType, off),
                                            /*alignment=*/16);
              };
              Value o = load(out, oStrides);
              Value d = load(dOut, doStrides);
              Value sum = cF32(0.0f);
              for (int64_t e = 0; e < 8; ++e) {
                auto elem = [&](Value vec) -> Value {
                  Value x = LLVM::ExtractElementOp::create(b, vec, cI32(e));
                  return arith::ExtFOp::create(b, f32, x);
                };
                sum = LLVM::FMAOp::create(b, elem(o), elem(d), sum);
              }
              return {sum};
            },
            [&]() -> SmallVector<Value> { return {cF32(0.0f)}; })
            .front();
    Value rowSum = butterflySum(partial, threadsPerRow());
    if (sinkShare) {
      if (!sink2)
        sink2 = arith::MulFOp::create(
            b, memref::LoadOp::create(b, sinks, ValueRange{index(head)}),
            cF32(float(M_LOG2E)));
      Value holds = arith::AndIOp::create(
          b, inside, cmp(arith::CmpIPredicate::eq, col, cI32(0)));
      Value share =
          wg_lowering::ifThenElse(
              b, b.getLoc(), holds, TypeRange{f32},
              [&]() -> SmallVector<Value> {
                Value row = add(mul(toI64(bh), toI64(seqQ)), toI64(q));
                Value l = LLVM::LoadOp::create(b, f32, gep(lse, f32, row), 4);
                Value x =
                    LLVM::FMAOp::create(b, l, cF32(-float(M_LOG2E)), sink2);
                return {
                    arith::MulFOp::create(b, exp2FlushDenormals(b, x), rowSum)};
              },
              [&]() -> SmallVector<Value> { return {cF32(0.0f)}; })
              .front();
      sinkShare = arith::SubFOp::create(b, sinkShare, share);
    }
    ifThen(inside, [&] {
      Value row = add(mul(toI64(bh), toI64(seqQ)), toI64(q));
      Value first = cmp(arith::CmpIPredicate::eq, col, cI32(0));
      ifThen(first, [&] {
        LLVM::StoreOp::create(b, rowSum, gep(delta, f32, row), 4);
      });
      Value zeros = LLVM::ZeroOp::create(b, quadF32);
      Value at = add(mul(row, cI64(spec.headDim)), toI64(col));
      LLVM::StoreOp::create(b, zeros, gep(accum, f32, at), 16);
      LLVM::StoreOp::create(b, zeros, gep(accum, f32, add(at, cI64(4))), 16);
    });
  });
  if (turns) {
    // The key tiles take turns on each query tile's dQ rows from 0.
    Value tiles = arith::CeilDivUIOp::create(b, seqQ, cI32(64));
    ifThen(cmp(arith::CmpIPredicate::eq, rows.tid, cI32(0)), [&] {
      Value at = add(mul(toI64(rows.bh), toI64(tiles)), toI64(rows.tile));
      LLVM::StoreOp::create(b, cI32(0), gep(turns, i32, at), 4);
    });
  }
  if (sinkShare) {
    // One partial per warp: [B x H][query tile][warp].
    Value warpSum = butterflySum(sinkShare, 32);
    Value lane = arith::RemUIOp::create(b, rows.tid, cI32(32));
    ifThen(cmp(arith::CmpIPredicate::eq, lane, cI32(0)), [&] {
      Value tiles = arith::CeilDivUIOp::create(b, seqQ, cI32(64));
      Value at =
          add(mul(add(mul(toI64(rows.bh), toI64(tiles)), toI64(rows.tile)),
                  cI64(kThreads / 32)),
              toI64(arith::DivUIOp::create(b, rows.tid, cI32(32))));
      LLVM::StoreOp::create(b, warpSum, gep(sinkPartials, f32, at), 4);
    });
  }
  gpu::ReturnOp::create(b);
}

void BackwardBuilder::emitPost(gpu::GPUFuncOp func) {
  Block *entry = &func.getBody().front();
  beginKernel(entry);
  auto arg = [&](unsigned i) { return entry->getArgument(i); };
  Value accum = arg(0), dq = arg(1), seqQ = arg(2), heads = arg(3),
        scale = arg(4);
  SmallVector<Value> strides = {arg(5), arg(6), arg(7)};

  auto quadF32 = VectorType::get({4}, f32);
  auto vecType = VectorType::get({8}, spec.elementType);
  TileRows rows = forEachTileRow(heads, [&](const TileRows &t, Value q) {
    Value batch = t.batch, head = t.head, col = t.col, bh = t.bh;
    ifThen(cmp(arith::CmpIPredicate::slt, q, seqQ), [&] {
      Value row = add(mul(toI64(bh), toI64(seqQ)), toI64(q));
      Value at = add(mul(row, cI64(spec.headDim)), toI64(col));
      Value rounded = LLVM::UndefOp::create(b, vecType);
      for (int64_t half = 0; half < 2; ++half) {
        Value quad = LLVM::LoadOp::create(
            b, quadF32, gep(accum, f32, add(at, cI64(4 * half))), 16);
        for (int64_t e = 0; e < 4; ++e) {
          Value x = LLVM::ExtractElementOp::create(b, quad, cI32(e));
          x = arith::MulFOp::create(b, x, scale);
          x = arith::TruncFOp::create(b, spec.elementType, x);
          rounded =
              LLVM::InsertElementOp::create(b, rounded, x, cI32(4 * half + e));
        }
      }
      Value off = add(rowOffset(batch, head, q, strides), toI64(col));
      LLVM::StoreOp::create(b, rounded, gep(dq, spec.elementType, off), 16);
    });
  });
  if (spec.sinkGradCapture)
    emitSinkGradSum(rows, arg(8), arg(9), seqQ, heads);
  gpu::ReturnOp::create(b);
}

void BackwardBuilder::emitSinkGradSum(const TileRows &rows, Value partials,
                                      Value dsinks, Value seqQ, Value heads) {
  Value tile = rows.tile, bh = rows.bh, tid = rows.tid;
  Value first = arith::AndIOp::create(
      b,
      arith::AndIOp::create(b, cmp(arith::CmpIPredicate::eq, tile, cI32(0)),
                            cmp(arith::CmpIPredicate::ult, bh, heads)),
      cmp(arith::CmpIPredicate::ult, tid, cI32(32)));
  ifThen(first, [&] {
    // Block y = batch x heads + head: the batches are the grid's y / heads.
    Value batches = arith::DivUIOp::create(
        b,
        arith::IndexCastOp::create(
            b, i32, gpu::GridDimOp::create(b, gpu::Dimension::y)),
        heads);
    Value perBatch =
        mul(arith::CeilDivUIOp::create(b, seqQ, cI32(64)), cI32(kThreads / 32));
    Value count = mul(batches, perBatch);
    // Lane l adds partials l, l + 32, ... of the head in order; the warp's
    // butterfly then sums the lanes the same way every run.
    auto loop = scf::ForOp::create(b, index(tid), index(count), cIndex(32),
                                   ValueRange{cF32(0.0f)});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(loop.getBody());
      Value i = arith::IndexCastOp::create(b, i32, loop.getInductionVar());
      Value batch = arith::DivUIOp::create(b, i, perBatch);
      Value within = arith::RemUIOp::create(b, i, perBatch);
      Value at = add(mul(toI64(add(mul(batch, heads), bh)), toI64(perBatch)),
                     toI64(within));
      Value x = LLVM::LoadOp::create(b, f32, gep(partials, f32, at), 4);
      scf::YieldOp::create(b, ValueRange{arith::AddFOp::create(
                                  b, loop.getRegionIterArgs().front(), x)});
    }
    Value sum = butterflySum(loop.getResult(0), 32);
    ifThen(cmp(arith::CmpIPredicate::eq, tid, cI32(0)), [&] {
      memref::StoreOp::create(b, sum, dsinks, ValueRange{index(bh)});
    });
  });
}

//===----------------------------------------------------------------------===//
// The main kernel
//===----------------------------------------------------------------------===//

void BackwardBuilder::emitMain(gpu::GPUFuncOp func) {
  Block *entry = &func.getBody().front();
  beginKernel(entry);
  auto arg = [&](unsigned i) { return entry->getArgument(i); };
  auto workgroup =
      gpu::AddressSpaceAttr::get(ctx, gpu::AddressSpace::Workgroup);
  auto boxType =
      MemRefType::get({1, 1, 64, 64}, spec.elementType, AffineMap(), workgroup);
  auto mapType = nvgpu::TensorMapDescriptorType::get(
      ctx, boxType, nvgpu::TensorMapSwizzleKind::SWIZZLE_128B,
      nvgpu::TensorMapL2PromoKind::L2PROMO_256B,
      nvgpu::TensorMapOOBKind::OOB_ZERO,
      nvgpu::TensorMapInterleaveKind::INTERLEAVE_NONE);
  // The maps arrive as pointers to the by-value parameters (see
  // KernelContext: a descriptor-typed gpu.func argument does not legalize).
  auto map = [&](unsigned i) {
    return UnrealizedConversionCastOp::create(b, mapType, arg(i)).getResult(0);
  };
  Value tmQ = map(0), tmK = map(1), tmV = map(2), tmDO = map(3);
  unsigned next = 4;
  Value lse = arg(next++), delta = arg(next++), accum = arg(next++),
        dkOut = arg(next++), dvOut = arg(next++);
  Value turns = spec.deterministic ? arg(next++) : Value();
  Value seqQ = arg(next++), seqK = arg(next++), scaleLog2 = arg(next++),
        group = arg(next++), heads = arg(next++);
  SmallVector<Value> dkStrides = {arg(next), arg(next + 1), arg(next + 2)};
  SmallVector<Value> dvStrides = {arg(next + 3), arg(next + 4), arg(next + 5)};
  // The mods' captures, the last parameters.
  SmallVector<Value> captures = captureArgs(entry, next + 6);

  auto smemType = MemRefType::get({ShapedType::kDynamic}, b.getI8Type(),
                                  AffineMap(), workgroup);
  auto window = WgSharedWindowOp::create(b, smemType, indexTy, i64,
                                         b.getI64IntegerAttr(1024));
  Value smem = window.getWindow(), shift = window.getShift();
  // The barriers' initialisation reuses the kernel's thread index.
  Value tidIdx = gpu::ThreadIdOp::create(b, gpu::Dimension::x);
  auto barType =
      nvgpu::MBarrierGroupType::get(ctx, workgroup, BackwardSpec::kNumBarriers);
  Value bar = WgInitBarriersOp::create(
      b, barType, SmallVector<int64_t>(BackwardSpec::kNumBarriers, 1));

  Value tid = arith::IndexCastOp::create(b, i32, tidIdx);
  Value isThread0 = cmp(arith::CmpIPredicate::eq, tid, cI32(0));
  // Deterministic: the grid runs heads fastest (x = B x H_kv, y = key
  // tiles), so the blocks resident at once take their turns on many heads'
  // query tiles in parallel rather than queueing down one head's chain of
  // key tiles; otherwise key tiles fastest, whose blocks share one head's
  // Q and dO in L2.
  auto blockIndex = [&](gpu::Dimension d) -> Value {
    return arith::IndexCastOp::create(b, i32, gpu::BlockIdOp::create(b, d));
  };
  Value keyTile =
      blockIndex(spec.deterministic ? gpu::Dimension::y : gpu::Dimension::x);
  Value bhkv =
      blockIndex(spec.deterministic ? gpu::Dimension::x : gpu::Dimension::y);
  Value kvHeads = arith::DivUIOp::create(b, heads, group);
  Value batch = arith::DivUIOp::create(b, bhkv, kvHeads);
  Value kvHead = arith::RemUIOp::create(b, bhkv, kvHeads);
  Value k0 = mul(keyTile, cI32(64));
  Value queryTiles = arith::CeilDivUIOp::create(b, seqQ, cI32(64));
  // The causal mask is aligned to the sequences' ends: key c is seen by
  // query rows r with c <= r + (seq_k - seq_q). The first query tile with
  // such a row, and the tiles of each head of the group from there.
  Value diagonal = arith::SubIOp::create(b, seqK, seqQ);
  Value firstTile = cI32(0);
  if (spec.causal) {
    Value firstRow = arith::MaxSIOp::create(
        b, arith::SubIOp::create(b, k0, diagonal), cI32(0));
    firstTile = arith::DivUIOp::create(b, firstRow, cI32(64));
  }
  // A window the mask_mod proves ends the key tile's query tiles at its
  // last key + W. (Not under `deterministic`: its dQ turns count every key
  // tile from the first, and the window's query tiles do not see them all.)
  Value lastQueryTile = queryTiles;
  if (spec.keyWindow && !spec.deterministic) {
    Value end =
        arith::MinSIOp::create(b, add(k0, cI32(64 + *spec.keyWindow)), seqQ);
    lastQueryTile = arith::CeilDivUIOp::create(b, end, cI32(64));
  }
  // Query rows [begin, end) (both >= 0) bound the rows that see this key
  // tile: its query tiles from begin's to end's. (Not under
  // `deterministic`, as for the window.)
  auto narrowQueryTiles = [&](Value begin, Value end) {
    firstTile = arith::MaxSIOp::create(
        b, firstTile, arith::DivUIOp::create(b, begin, cI32(64)));
    lastQueryTile = arith::MinSIOp::create(
        b, lastQueryTile, arith::CeilDivUIOp::create(b, end, cI32(64)));
  };
  // Chunked: the chunks of the key tile's first and last keys.
  if (spec.keyChunk && !spec.deterministic) {
    Value chunk = cI32(*spec.keyChunk);
    Value begin = mul(arith::DivUIOp::create(b, k0, chunk), chunk);
    Value end = arith::MinSIOp::create(
        b,
        mul(add(arith::DivUIOp::create(b, add(k0, cI32(63)), chunk), cI32(1)),
            chunk),
        seqQ);
    narrowQueryTiles(begin, end);
  }
  // key_ranges: the rows of the entries that reach this key tile.
  Value rangesTable =
      spec.keyRanges ? captures[spec.keyRanges->capture] : Value();
  if (spec.keyRanges && !spec.deterministic) {
    auto [begin, end] = keyTileQueryRows(
        rangesTable, batch, k0, seqQ, arith::RemUIOp::create(b, tid, cI32(32)));
    narrowQueryTiles(begin, end);
  }
  Value perHead = arith::MaxSIOp::create(
      b, arith::SubIOp::create(b, lastQueryTile, firstTile), cI32(0));
  Value passes = mul(perHead, group);

  // Pass t of the block: head member t / perHead, query tile
  // firstTile + t % perHead.
  auto passTile = [&](Value t) {
    Value member = arith::DivUIOp::create(b, t, perHead);
    Value qTile = add(firstTile, arith::RemUIOp::create(b, t, perHead));
    Value head = add(mul(kvHead, group), member);
    return std::make_pair(head, qTile);
  };
  Value batchIdx = index(batch);
  auto issueQdO = [&](Value t) {
    Value head, qTile;
    std::tie(head, qTile) = passTile(t);
    Value slot = arith::RemUIOp::create(b, index(t), cIndex(2));
    Value slotBytes = mul(slot, cIndex(spec.tileBytes()));
    Value row = index(mul(qTile, cI32(64)));
    for (auto [tm, offset, barrier] :
         {std::tuple{tmQ, spec.offQ(), BackwardSpec::kBarQ},
          std::tuple{tmDO, spec.offDO(), BackwardSpec::kBarDO}})
      WgTmaLoadTileOp::create(b, tm, row, ValueRange{index(head), batchIdx},
                              /*gather=*/ValueRange(), smem, shift, slotBytes,
                              /*buffer=*/Value(), bar,
                              add(slot, cIndex(barrier)), spec.headDim,
                              b.getI64IntegerAttr(offset),
                              /*bufferBytes=*/IntegerAttr());
  };
  ifThen(isThread0, [&] {
    Value row = index(k0);
    for (auto [tm, offset, barrier] :
         {std::tuple{tmK, spec.offK(), BackwardSpec::kBarK},
          std::tuple{tmV, spec.offV(), BackwardSpec::kBarV}})
      WgTmaLoadTileOp::create(
          b, tm, row, ValueRange{index(kvHead), batchIdx},
          /*gather=*/ValueRange(), smem, shift, /*offset=*/cIndex(0),
          /*buffer=*/Value(), bar, cIndex(barrier), spec.headDim,
          b.getI64IntegerAttr(offset), IntegerAttr());
    ifThen(cmp(arith::CmpIPredicate::sgt, passes, cI32(0)),
           [&] { issueQdO(cI32(0)); });
  });
  // K and V land once: phase 0 of their barriers.
  auto onceType = RingSlotType::get(ctx, 1);
  Value once = WgRingSlotOp::create(b, onceType, cIndex(0));
  WgRingWaitFullOp::create(b, once, bar, BackwardSpec::kBarK);
  WgRingWaitFullOp::create(b, once, bar, BackwardSpec::kBarV);

  // Descriptors. K-major: LBO 16 B, SBO 1024 B (8 rows of 128 B); a k-step
  // of 16 columns is +32 B, the next box +8 KiB. MN-major: LBO one box
  // (the next 64 columns of N, or of M for dS), SBO 1024 B; a k-step of 16
  // rows is +2048 B.
  auto kMajor = SmemDescriptorType::get(ctx, spec.elementType,
                                        /*mnMajor=*/false, 128, 16, 1024);
  auto mnMajor =
      SmemDescriptorType::get(ctx, spec.elementType,
                              /*mnMajor=*/true, 128, spec.boxBytes(), 1024);
  Value kBase = WgMakeDescriptorOp::create(b, kMajor, window.getField());
  Value mnBase = WgMakeDescriptorOp::create(b, mnMajor, window.getField());
  const int64_t dSteps = spec.headDim / 16;
  auto alongD = [&](Value base, Value units, int64_t offset) {
    SmallVector<Value> steps;
    for (int64_t s = 0; s < dSteps; ++s)
      steps.push_back(advance(
          base, units, offset + (s / 4) * spec.boxBytes() + (s % 4) * 32));
    return steps;
  };
  auto alongRows = [&](Value base, Value units, int64_t offset) {
    SmallVector<Value> steps;
    for (int64_t s = 0; s < 4; ++s)
      steps.push_back(advance(base, units, offset + s * 16 * 128));
    return steps;
  };
  SmallVector<Value> kA = alongD(kBase, Value(), spec.offK());
  SmallVector<Value> vA = alongD(kBase, Value(), spec.offV());
  SmallVector<Value> kB = alongRows(mnBase, Value(), spec.offK());
  SmallVector<Value> dsA = alongRows(mnBase, Value(), spec.offDS());

  // Where this thread's accumulator registers sit: rows 16 warp + lane / 4
  // (+ 8), columns 2 (lane % 4) + columnInGroup(i).
  Value warp = arith::DivUIOp::create(b, tid, cI32(32));
  Value lane = arith::RemUIOp::create(b, tid, cI32(32));
  Value rowBase =
      add(mul(warp, cI32(16)), arith::DivUIOp::create(b, lane, cI32(4)));
  Value colBase = mul(arith::RemUIOp::create(b, lane, cI32(4)), cI32(2));
  auto regRow = [&](int64_t i) {
    return add(rowBase, cI32(8 * wg_lowering::rowHalf(i)));
  };
  auto regCol = [&](int64_t i) {
    return add(colBase, cI32(wg_lowering::columnInGroup(i)));
  };
  // A thread's columns of a 64-column accumulator, in register order of
  // one row half: 2 per group of 8.
  auto columnSlot = [](int64_t i) { return 2 * (i / 4) + i % 2; };

  FragmentType sType = accumulatorType(64),
               gradType = accumulatorType(spec.headDim);
  auto slotType = RingSlotType::get(ctx, 2);
  Value log2e = cF32(float(M_LOG2E));
  // With mods: the natural scale the runtime's scale_log2 stands for, and
  // the element indices the regions take (index, clamped to the last row).
  Value modScale = arith::MulFOp::create(b, scaleLog2, cF32(float(M_LN2)));
  auto clampedIndex = [&](Value x, Value limit) {
    return wg_lowering::clampedIndex(b, x, limit, cI32(0), cI32(1));
  };
  Value inf = cF32(std::numeric_limits<float>::infinity());
  Value negInf = cF32(-std::numeric_limits<float>::infinity());
  Value zero = cF32(0.0f);

  // The loop carries dK's and dV's registers (a fragment is no loop
  // value the warpgroup lowering converts).
  const int64_t gradRegs = spec.headDim / 2;
  SmallVector<Value> inits(2 * gradRegs, zero);
  auto loop = scf::ForOp::create(
      b, cIndex(0), index(passes), cIndex(1), inits,
      [&](OpBuilder &nb, Location, Value tIdx, ValueRange carried) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        Value acc[2] = {WgFragmentFromValuesOp::create(
                            b, gradType, carried.take_front(gradRegs)),
                        WgFragmentFromValuesOp::create(
                            b, gradType, carried.drop_front(gradRegs))};
        Value t = arith::IndexCastOp::create(b, i32, tIdx);
        Value head, qTile;
        std::tie(head, qTile) = passTile(t);
        Value q0 = mul(qTile, cI32(64));
        // The next pass's Q and dO go into the other slot, which the whole
        // block left at the end of the previous pass.
        Value nextT = add(t, cI32(1));
        ifThen(arith::AndIOp::create(
                   b, isThread0, cmp(arith::CmpIPredicate::slt, nextT, passes)),
               [&] { issueQdO(nextT); });

        // LSE (in log2 units; +inf where the row saw no key or lies past
        // seq_q, so that p = 0) and delta of this thread's 16 columns.
        Value headRow = mul(toI64(add(mul(batch, heads), head)), toI64(seqQ));
        SmallVector<Value> lse2(16), deltas(16);
        Value lastRow = arith::SubIOp::create(b, seqQ, cI32(1));
        for (int64_t i = 0; i < 32; i += 2 * 2) {
          for (int64_t e = 0; e < 2; ++e) {
            int64_t reg = i + e;
            Value q = add(q0, regCol(reg));
            Value inside = cmp(arith::CmpIPredicate::slt, q, seqQ);
            Value at =
                add(headRow, toI64(arith::MinSIOp::create(b, q, lastRow)));
            Value l = LLVM::LoadOp::create(b, f32, gep(lse, f32, at), 4);
            Value d = LLVM::LoadOp::create(b, f32, gep(delta, f32, at), 4);
            Value seen = arith::AndIOp::create(
                b, inside,
                arith::CmpFOp::create(b, arith::CmpFPredicate::ONE, l, negInf));
            lse2[columnSlot(reg)] = arith::SelectOp::create(
                b, seen, arith::MulFOp::create(b, l, log2e), inf);
            deltas[columnSlot(reg)] =
                arith::SelectOp::create(b, inside, d, zero);
          }
        }

        Value ring = WgRingSlotOp::create(b, slotType, tIdx);
        WgRingWaitFullOp::create(b, ring, bar, BackwardSpec::kBarQ);
        WgRingWaitFullOp::create(b, ring, bar, BackwardSpec::kBarDO);
        Value slot = WgRingSlotIndexOp::create(b, ring);
        Value units = toI64(mul(slot, cIndex(spec.tileBytes() / 16)));
        SmallVector<Value> qB = alongD(kBase, units, spec.offQ());
        SmallVector<Value> doB = alongD(kBase, units, spec.offDO());
        SmallVector<Value> qMn = alongRows(mnBase, units, spec.offQ());
        SmallVector<Value> doMn = alongRows(mnBase, units, spec.offDO());

        // S^T = K Q^T and dP^T = V dO^T.
        NVVM::WgmmaFenceAlignedOp::create(b);
        Value s = mmaChain(sType, kA, qB, Value());
        Value dp = mmaChain(sType, vA, doB, Value());
        NVVM::WgmmaGroupSyncAlignedOp::create(b);
        NVVM::WgmmaWaitGroupSyncOp::create(b, 0);

        // P^T and dS^T = P^T (dP^T - delta), masked keys (past seq_k, or
        // after the query under the causal mask) at 0.
        SmallVector<Value> sv = wg_lowering::fragmentValues(b, s);
        SmallVector<Value> dpv = wg_lowering::fragmentValues(b, dp);
        SmallVector<Value> p(32), ds(32);
        auto elementAt = [&](Value key, Value q) {
          SmallVector<Value> at = {batchIdx, index(head), clampedIndex(q, seqQ),
                                   clampedIndex(key, seqK)};
          llvm::append_range(at, captures);
          return at;
        };
        // Where the tile pair is known kept whole (inside the query rows'
        // full key range, or one chunk) the mask_mod does not run: its
        // results for the thread's 32 elements, all kept there.
        SmallVector<Value> maskKept;
        Value whole;
        if (spec.maskMod && spec.keyRanges && spec.keyRanges->full)
          whole = keyTileWhole(rangesTable, batch, q0, k0, seqQ);
        // A chunk that is the whole mask keeps the pair when the query and
        // key tiles lie in one chunk.
        if (spec.maskIsKeyChunk) {
          Value chunk = cI32(*spec.keyChunk);
          Value c = arith::DivUIOp::create(b, k0, chunk);
          auto same = [&](Value x) {
            return cmp(arith::CmpIPredicate::eq,
                       arith::DivUIOp::create(b, x, chunk), c);
          };
          Value inside = arith::AndIOp::create(
              b, arith::AndIOp::create(b, same(add(k0, cI32(63))), same(q0)),
              same(add(q0, cI32(63))));
          whole = whole ? arith::OrIOp::create(b, whole, inside).getResult()
                        : inside;
        }
        if (whole) {
          auto kept = scf::IfOp::create(b, SmallVector<Type>(32, b.getI1Type()),
                                        whole, /*withElseRegion=*/true);
          OpBuilder::InsertionGuard guard(b);
          b.setInsertionPointToStart(kept.thenBlock());
          scf::YieldOp::create(
              b, SmallVector<Value>(
                     32, arith::ConstantOp::create(b, b.getBoolAttr(true))));
          b.setInsertionPointToStart(kept.elseBlock());
          SmallVector<Value> each;
          for (int64_t i = 0; i < 32; ++i)
            each.push_back(wg_lowering::inlineModRegionForGpu(
                b, *spec.maskMod,
                elementAt(add(k0, regRow(i)), add(q0, regCol(i)))));
          scf::YieldOp::create(b, each);
          maskKept.assign(kept.getResults().begin(), kept.getResults().end());
        }
        for (int64_t i = 0; i < 32; ++i) {
          Value key = add(k0, regRow(i));
          Value q = add(q0, regCol(i));
          Value hidden = cmp(arith::CmpIPredicate::sge, key, seqK);
          if (spec.causal)
            hidden = arith::OrIOp::create(
                b, hidden,
                cmp(arith::CmpIPredicate::sgt, key, add(q, diagonal)));
          Value x, slope;
          if (spec.scoreMod || spec.maskMod) {
            // The mods see the scaled logit and the element's indices
            // (clamped into the sequences: past them the element is
            // hidden above); the softmax then takes their logit.
            Value y = arith::MulFOp::create(b, sv[i], modScale);
            SmallVector<Value> at = elementAt(key, q);
            Value modded = y;
            if (spec.scoreMod) {
              SmallVector<Value> args = {y};
              llvm::append_range(args, at);
              slope = wg_lowering::inlineScoreModDerivativeForGpu(
                  b, *spec.scoreMod, args, &modded);
            }
            if (spec.maskMod)
              hidden = arith::OrIOp::create(
                  b, hidden,
                  arith::XOrIOp::create(
                      b,
                      maskKept.empty() ? wg_lowering::inlineModRegionForGpu(
                                             b, *spec.maskMod, at)
                                       : maskKept[i],
                      arith::ConstantOp::create(b, b.getBoolAttr(true))));
            x = LLVM::FMAOp::create(
                b, modded, log2e,
                arith::NegFOp::create(b, lse2[columnSlot(i)]));
          } else {
            x = LLVM::FMAOp::create(
                b, sv[i], scaleLog2,
                arith::NegFOp::create(b, lse2[columnSlot(i)]));
          }
          p[i] = arith::SelectOp::create(b, hidden, zero,
                                         exp2FlushDenormals(b, x));
          ds[i] = arith::MulFOp::create(
              b, p[i], arith::SubFOp::create(b, dpv[i], deltas[columnSlot(i)]));
          // dS of the modded logit, carried back to the scaled one.
          if (slope)
            ds[i] = arith::MulFOp::create(b, ds[i], slope);
        }
        Value p16 = WgTruncFOp::create(
            b, operandAType(64), WgFragmentFromValuesOp::create(b, sType, p));
        Value ds16 = WgTruncFOp::create(
            b, operandAType(64), WgFragmentFromValuesOp::create(b, sType, ds));

        // dV += P^T dO, dK += dS^T Q.
        NVVM::WgmmaFenceAlignedOp::create(b);
        Value dv = mmaChain(gradType, aSteps(p16), doMn, acc[1]);
        Value dk = mmaChain(gradType, aSteps(ds16), qMn, acc[0]);
        NVVM::WgmmaGroupSyncAlignedOp::create(b);

        // dS^T through shared memory, read back as dS (MN-major A).
        WgStoreSharedOp::create(b, ds16, smem, add(shift, cIndex(spec.offDS())),
                                b.getI64IntegerAttr(spec.boxBytes()));
        NVVM::FenceProxyOp::create(
            b, NVVM::ProxyKind::async_shared,
            NVVM::SharedSpaceAttr::get(ctx, NVVM::SharedSpace::shared_cta));
        gpu::BarrierOp::create(b);
        NVVM::WgmmaFenceAlignedOp::create(b);
        Value dq = mmaChain(gradType, dsA, kB, Value());
        NVVM::WgmmaGroupSyncAlignedOp::create(b);
        NVVM::WgmmaWaitGroupSyncOp::create(b, 0);

        // dQ's partial into the accumulator, under `deterministic` in key
        // tile order: this block's turn on the query tile comes when the
        // previous key tile's block has added.
        Value turn;
        if (turns) {
          Value turnAt =
              add(mul(toI64(add(mul(batch, heads), head)), toI64(queryTiles)),
                  toI64(qTile));
          turn = gep(turns, i32, turnAt);
          ifThen(isThread0, [&] {
            scf::WhileOp::create(
                b, TypeRange(), ValueRange(),
                [&](OpBuilder &wb, Location, ValueRange) {
                  OpBuilder::InsertionGuard g(b);
                  b.setInsertionPoint(wb.getInsertionBlock(),
                                      wb.getInsertionPoint());
                  Value seen = loadAcquireGpu(b, turn);
                  scf::ConditionOp::create(
                      b, cmp(arith::CmpIPredicate::ne, seen, keyTile),
                      ValueRange());
                },
                [&](OpBuilder &wb, Location, ValueRange) {
                  OpBuilder::InsertionGuard g(b);
                  b.setInsertionPoint(wb.getInsertionBlock(),
                                      wb.getInsertionPoint());
                  scf::YieldOp::create(b);
                });
          });
          gpu::BarrierOp::create(b);
        }
        SmallVector<Value> dqv = wg_lowering::fragmentValues(b, dq);
        for (int64_t half = 0; half < 2; ++half) {
          Value q = add(q0, add(rowBase, cI32(8 * half)));
          ifThen(cmp(arith::CmpIPredicate::slt, q, seqQ), [&] {
            Value rowAt = mul(add(headRow, toI64(q)), cI64(spec.headDim));
            for (int64_t i = 0; i < int64_t(dqv.size()); ++i) {
              if (wg_lowering::rowHalf(i) != half)
                continue;
              Value ptr = gep(accum, f32, add(rowAt, toI64(regCol(i))));
              LLVM::AtomicRMWOp::create(b, LLVM::AtomicBinOp::fadd, ptr, dqv[i],
                                        LLVM::AtomicOrdering::monotonic);
            }
          });
        }
        if (turns) {
          fenceAcqRelGpu(b);
          gpu::BarrierOp::create(b);
          ifThen(isThread0,
                 [&] { storeReleaseGpu(b, turn, add(keyTile, cI32(1))); });
        }
        // Every thread is done with this pass's slot and dS^T.
        gpu::BarrierOp::create(b);
        SmallVector<Value> yielded = wg_lowering::fragmentValues(b, dk);
        llvm::append_range(yielded, wg_lowering::fragmentValues(b, dv));
        scf::YieldOp::create(b, yielded);
      });

  // dK = scale dS^T Q and dV, rounded, into this key tile's rows.
  auto store = [&](ValueRange grad, Value out, ValueRange strides,
                   bool scaled) {
    SmallVector<Value> regs(grad);
    if (scaled) {
      Value scale = cF32(float(spec.scale));
      for (Value &r : regs)
        r = arith::MulFOp::create(b, r, scale);
    }
    Value rounded =
        WgTruncFOp::create(b, operandAType(spec.headDim),
                           WgFragmentFromValuesOp::create(b, gradType, regs));
    Value base = gep(out, spec.elementType, mul(toI64(batch), strides[0]));
    WgStoreGlobalOp::create(b, rounded, base, kvHead, k0, seqK, strides[1],
                            strides[2], Value());
  };
  store(loop.getResults().take_front(gradRegs), dkOut, dkStrides,
        /*scaled=*/true);
  store(loop.getResults().drop_front(gradRegs), dvOut, dvStrides,
        /*scaled=*/false);
  gpu::ReturnOp::create(b);
}

//===----------------------------------------------------------------------===//
// The module and the kernels' launch contracts
//===----------------------------------------------------------------------===//

DictionaryAttr launchAttr(MLIRContext *ctx, const BackwardSpec &spec,
                          StringRef role, DictionaryAttr grid,
                          int64_t sharedMemory,
                          ArrayRef<BackwardBuilder::Param> params) {
  Builder b(ctx);
  SmallVector<Attribute> paramAttrs;
  for (const BackwardBuilder::Param &p : params)
    paramAttrs.push_back(p.attr);
  SmallVector<NamedAttribute> entries = {
      b.getNamedAttr("pass", b.getStringAttr("backward")),
      b.getNamedAttr("role", b.getStringAttr(role)),
      b.getNamedAttr("dtype",
                     b.getStringAttr(
                         isa<BFloat16Type>(spec.elementType) ? "bf16" : "f16")),
      b.getNamedAttr("head_dim", b.getI64IntegerAttr(spec.headDim)),
      b.getNamedAttr("causal", b.getBoolAttr(spec.causal)),
      b.getNamedAttr("deterministic", b.getBoolAttr(spec.deterministic)),
      b.getNamedAttr("scale", b.getF64FloatAttr(spec.scale)),
      b.getNamedAttr("has_lse", b.getBoolAttr(true)),
      b.getNamedAttr("block", b.getDenseI64ArrayAttr({kThreads, 1, 1})),
      b.getNamedAttr("cluster", b.getDenseI64ArrayAttr({1, 1, 1})),
      b.getNamedAttr("shared_memory_bytes", b.getI64IntegerAttr(sharedMemory)),
      b.getNamedAttr("grid", grid),
      b.getNamedAttr(
          "config",
          b.getDictionaryAttr(
              {b.getNamedAttr("block_m", b.getI64IntegerAttr(spec.blockM)),
               b.getNamedAttr("block_n", b.getI64IntegerAttr(spec.blockN))})),
      b.getNamedAttr("params", b.getArrayAttr(paramAttrs))};
  if (!spec.captures.empty())
    entries.push_back(
        b.getNamedAttr("captures", capturesAttr(b, spec.captures)));
  return b.getDictionaryAttr(entries);
}

} // namespace

FailureOr<gpu::GPUModuleOp>
mlir::flash::gpu_lowering::buildBackwardKernelModule(func::FuncOp func,
                                                     const BackwardSpec &spec) {
  MLIRContext *ctx = func.getContext();
  ImplicitLocOpBuilder b(func.getLoc(), func);
  auto module =
      gpu::GPUModuleOp::create(b, b.getStringAttr(spec.name + "_kernels"));
  b.setInsertionPointToStart(module.getBody());
  BackwardBuilder builder(b, spec);
  Builder attrs(ctx);
  auto grid = [&](StringRef kind, StringRef sizeKey, int64_t size,
                  bool headsFastest = false) {
    SmallVector<NamedAttribute> entries = {
        attrs.getNamedAttr("kind", attrs.getStringAttr(kind)),
        attrs.getNamedAttr(sizeKey, attrs.getI64IntegerAttr(size))};
    if (headsFastest)
      entries.push_back(
          attrs.getNamedAttr("heads_fastest", attrs.getBoolAttr(true)));
    return attrs.getDictionaryAttr(entries);
  };

  struct Kernel {
    std::string name;
    StringRef role;
    SmallVector<BackwardBuilder::Param> params;
    DictionaryAttr grid;
    int64_t sharedMemory;
    void (BackwardBuilder::*emit)(gpu::GPUFuncOp);
  };
  Kernel kernels[] = {
      {spec.name + "_pre", "pre", builder.preParams(),
       grid("tiles", "block_m", 64), 0, &BackwardBuilder::emitPre},
      {spec.name, "main", builder.mainParams(),
       grid("key_tiles", "block_n", spec.blockN, spec.deterministic),
       spec.sharedMemoryBytes(), &BackwardBuilder::emitMain},
      {spec.name + "_post", "post", builder.postParams(),
       grid("tiles", "block_m", 64), 0, &BackwardBuilder::emitPost}};
  for (Kernel &kernel : kernels) {
    OpBuilder::InsertionGuard guard(b);
    SmallVector<Type> types;
    for (const BackwardBuilder::Param &p : kernel.params)
      types.push_back(p.type);
    auto fn =
        gpu::GPUFuncOp::create(b, kernel.name, b.getFunctionType(types, {}));
    fn->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
    fn->setAttr(NVVM::NVVMDialect::getMaxntidAttrName(),
                b.getDenseI32ArrayAttr({int32_t(kThreads), 1, 1}));
    fn->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                b.getI32IntegerAttr(1));
    fn->setAttr(flashc::kLaunchAttrName,
                launchAttr(ctx, spec, kernel.role, kernel.grid,
                           kernel.sharedMemory, kernel.params));
    (builder.*kernel.emit)(fn);
  }
  return module;
}

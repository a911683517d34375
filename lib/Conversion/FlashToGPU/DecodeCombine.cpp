//===- DecodeCombine.cpp - the split-KV combine kernel --------------------===//
//
// A decoding program's second grid (flash.merge_split over the splits, one
// flash.finalize, the stores of O and LSE; matchCombineGrid) as a kernel of
// its own. It reads what the split kernel wrote: per split, each row's
// normalised O (f32) and LSE in the scratch [S, B, Hx, rows, D] and
// [S, B, Hx, rows]. For a row, with m = max_s LSE_s and w_s = exp(LSE_s - m)
// (0 for a split that saw no key), O = sum_s w_s O_s / sum_s w_s and
// LSE = m + log(sum_s w_s); a row no split saw gets O = 0 and LSE = -inf,
// as flash.finalize gives it. A sink (the row's head's) joins m and the
// weights' sum as one more split with no value: such a row's LSE is then
// the sink. The work is a few loads per output element,
// so the kernel is plain SIMT code whose time is the latency of those
// loads: a block of 4 warps takes 64 rows of one (batch, program head),
// warp w the rows w, w + 4, ... (a decoding step's few rows, G x seq_q
// with packing, spread over the warps), each lane D / 32 adjacent columns.
// For a row, the lanes read the splits' LSEs side by side and reduce their
// max by shuffles; the weighted sum walks the splits eight at a time, so
// that eight splits' loads (a vector load of the lane's columns each) are
// in flight together. O is written with its own strides, row r of a packed
// program being query r % seq_q of head r / seq_q of the group. The kernel
// is launched as the split kernel's programmatic dependent: its launch
// and prologue overlap the splits' last blocks, and it waits
// (griddepcontrol.wait) before reading their scratch.
//
//===----------------------------------------------------------------------===//

#include "FlashToGPU.h"

#include "flashc/Config/LaunchAttr.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;

SmallVector<Type>
mlir::flash::gpu_lowering::combineKernelArgs(MLIRContext *ctx,
                                             const KernelSpec &spec) {
  Builder b(ctx);
  auto global = LLVM::LLVMPointerType::get(ctx, 1);
  // partial_out, partial_lse, o[, lse], seq_q, kv_group, heads, num_splits,
  // O's strides (b, h, n)[, the sinks].
  SmallVector<Type> args = {global, global, global};
  if (spec.hasLse)
    args.push_back(global);
  args.append(4, b.getI32Type());
  args.append(3, b.getI64Type());
  if (spec.sinkCapture)
    args.push_back(spec.captures[*spec.sinkCapture].type);
  return args;
}

DictionaryAttr
mlir::flash::gpu_lowering::buildCombineLaunchAttr(MLIRContext *ctx,
                                                  const KernelSpec &spec) {
  Builder b(ctx);
  auto dict = [&](ArrayRef<std::pair<StringRef, Attribute>> entries) {
    return launchDict(b, entries);
  };
  auto str = [&](StringRef s) { return b.getStringAttr(s); };
  auto value = [&](StringRef kind, StringRef name) {
    return dict({{"kind", str(kind)}, {"value", str(name)}});
  };
  SmallVector<Attribute> params = {
      dict({{"kind", str("workspace")}, {"name", str("partial_out")}}),
      dict({{"kind", str("workspace")}, {"name", str("partial_lse")}}),
      dict({{"kind", str("ptr")}, {"tensor", str("o")}})};
  if (spec.hasLse)
    params.push_back(dict({{"kind", str("ptr")}, {"tensor", str("lse")}}));
  for (StringRef name : {"seq_q", "kv_group", "heads", "num_splits"})
    params.push_back(value("i32", name));
  for (StringRef name : {"stride_o_b", "stride_o_h", "stride_o_n"})
    params.push_back(value("i64", name));
  if (spec.sinkCapture)
    params.push_back(captureParamAttr(b, *spec.sinkCapture,
                                      spec.captures[*spec.sinkCapture]));
  return dict({{"pass", str("decode")},
               {"role", str("combine")},
               {"block", b.getDenseI64ArrayAttr({kCombineThreads, 1, 1})},
               {"shared_memory_bytes", b.getI64IntegerAttr(0)},
               {"programmatic", b.getBoolAttr(true)},
               {"grid", dict({{"kind", str("decode")},
                              {"block_m", b.getI64IntegerAttr(spec.blockM)},
                              {"splits", b.getBoolAttr(false)}})},
               {"params", b.getArrayAttr(params)}});
}

Value mlir::flash::gpu_lowering::warpButterfly(
    ImplicitLocOpBuilder &b, Value v, int64_t lanes,
    function_ref<Value(Value, Value)> combine) {
  for (int64_t mask = 1; mask < lanes; mask *= 2) {
    Value offset = arith::ConstantIntOp::create(b, mask, 32);
    Value width = arith::ConstantIntOp::create(b, 32, 32);
    v = combine(
        v, gpu::ShuffleOp::create(b, v, offset, width, gpu::ShuffleMode::XOR)
               .getShuffleResult());
  }
  return v;
}

namespace {

/// The combine kernel's body, built at `b`'s insertion point.
struct CombineBuilder {
  ImplicitLocOpBuilder &b;
  const KernelSpec &spec;
  Type f32, i32, i64, indexTy, global;

  CombineBuilder(ImplicitLocOpBuilder &b, const KernelSpec &spec)
      : b(b), spec(spec), f32(b.getF32Type()), i32(b.getI32Type()),
        i64(b.getI64Type()), indexTy(b.getIndexType()),
        global(LLVM::LLVMPointerType::get(b.getContext(), 1)) {}

  Value c32(int64_t v) { return arith::ConstantIntOp::create(b, v, 32); }
  Value c64(int64_t v) { return arith::ConstantIntOp::create(b, v, 64); }
  Value cF32(float v) {
    return arith::ConstantOp::create(b, b.getF32FloatAttr(v));
  }
  Value cIndex(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  Value toI32(Value index) { return arith::IndexCastOp::create(b, i32, index); }
  Value wide(Value v) { return arith::ExtUIOp::create(b, i64, v); }

  Value load(Type type, Value base, Value index) {
    Value at = LLVM::GEPOp::create(b, global, type, base, ValueRange{index});
    return LLVM::LoadOp::create(b, type, at, /*alignment=*/4);
  }
  void store(Value value, Value base, Value index) {
    Value at = LLVM::GEPOp::create(b, global, value.getType(), base,
                                   ValueRange{index});
    LLVM::StoreOp::create(b, value, at, /*alignment=*/2);
  }

  void emit(Block *entry) {
    unsigned next = 0;
    auto arg = [&] { return entry->getArgument(next++); };
    Value partialOut = arg(), partialLse = arg(), out = arg();
    Value lseOut = spec.hasLse ? arg() : Value();
    Value seqQ = arg(), kvGroup = arg(), heads = arg(), splits = arg();
    Value strideB = arg(), strideH = arg(), strideN = arg();
    Value sinks = spec.sinkCapture ? arg() : Value();

    auto [rows, programHeads] =
        decodeProgramShape(b, spec, seqQ, heads, kvGroup);
    Value tid = toI32(gpu::ThreadIdOp::create(b, gpu::Dimension::x));
    Value warp = arith::DivUIOp::create(b, tid, c32(32));
    Value lane = arith::RemUIOp::create(b, tid, c32(32));
    Value program = toI32(gpu::BlockIdOp::create(b, gpu::Dimension::y));
    Value programs = toI32(gpu::GridDimOp::create(b, gpu::Dimension::y));
    Value batch = arith::DivUIOp::create(b, program, programHeads);
    Value head = arith::RemUIOp::create(b, program, programHeads);
    Value firstRow = arith::AddIOp::create(
        b,
        arith::MulIOp::create(
            b, toI32(gpu::BlockIdOp::create(b, gpu::Dimension::x)),
            c32(spec.blockM)),
        warp);
    // A split's block of rows in the scratch.
    Value splitRows = wide(arith::MulIOp::create(b, programs, rows));
    const int64_t perLane = spec.headDim / 32;
    Value laneColumn = wide(arith::MulIOp::create(b, lane, c32(perLane)));
    Value negInf = cF32(-std::numeric_limits<float>::infinity());

    // Launched as the split kernel's programmatic dependent (kernel.json's
    // "programmatic"), the block may start before the splits finish: what
    // they wrote is read only after this wait.
    NVVM::GriddepcontrolOp::create(b, NVVM::GridDepActionKind::wait);
    auto rowLoop = scf::ForOp::create(b, cIndex(0), cIndex(16), cIndex(1));
    OpBuilder::InsertionGuard loopGuard(b);
    b.setInsertionPointToStart(rowLoop.getBody());
    Value row = arith::AddIOp::create(
        b, firstRow,
        arith::MulIOp::create(b, toI32(rowLoop.getInductionVar()),
                              c32(kCombineThreads / 32)));
    auto inRows = scf::IfOp::create(
        b, TypeRange(),
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, rows),
        /*withElse=*/false);
    b.setInsertionPoint(inRows.thenBlock()->getTerminator());
    Value rowIndex = wide(
        arith::AddIOp::create(b, arith::MulIOp::create(b, program, rows), row));
    Value splitsIdx = arith::IndexCastOp::create(b, indexTy, splits);
    // The row's head and query.
    Value outHead = head, query = row;
    if (spec.packGqa) {
      outHead =
          arith::AddIOp::create(b, arith::MulIOp::create(b, head, kvGroup),
                                arith::DivUIOp::create(b, row, seqQ));
      query = arith::RemUIOp::create(b, row, seqQ);
    }
    // The head's sink, clamped into the sinks as the split kernel's
    // capture loads are.
    Value sink;
    if (sinks) {
      Value last = arith::SubIOp::create(b, memref::DimOp::create(b, sinks, 0),
                                         cIndex(1));
      Value at = arith::MinSIOp::create(
          b, arith::IndexCastOp::create(b, indexTy, outHead), last);
      sink = memref::LoadOp::create(b, sinks, ValueRange{at});
    }
    auto splitRow = [&](Value s) {
      return arith::AddIOp::create(
          b,
          arith::MulIOp::create(b, arith::IndexCastOp::create(b, i64, s),
                                splitRows),
          rowIndex);
    };

    // The largest LSE over the splits (and the sink): lane l reads splits
    // l, l + 32, ..., then the warp's lanes exchange their maxima. The row
    // is the warp's, so every lane takes part.
    auto maxLoop = scf::ForOp::create(
        b, arith::IndexCastOp::create(b, indexTy, lane), splitsIdx, cIndex(32),
        ValueRange{sink ? sink : negInf});
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(maxLoop.getBody());
      Value lse = load(f32, partialLse, splitRow(maxLoop.getInductionVar()));
      scf::YieldOp::create(b, ValueRange{arith::MaximumFOp::create(
                                  b, maxLoop.getRegionIterArgs()[0], lse)});
    }
    Value m = warpButterfly(b, maxLoop.getResult(0), 32, [&](Value x, Value y) {
      return arith::MaximumFOp::create(b, x, y).getResult();
    });

    // The splits' outputs weighted by exp(LSE_s - m), and the weights' sum
    // (from the sink's weight).
    auto weightOf = [&](Value lse) -> Value {
      // A split that saw no key weighs 0 (and m - m would be NaN where no
      // split saw one).
      Value none =
          arith::CmpFOp::create(b, arith::CmpFPredicate::OEQ, lse, negInf);
      return arith::SelectOp::create(
          b, none, cF32(0.0f),
          math::Exp2Op::create(
              b, arith::MulFOp::create(b, arith::SubFOp::create(b, lse, m),
                                       cF32(float(M_LOG2E)))));
    };
    SmallVector<Value> inits(perLane + 1, cF32(0.0f));
    if (sink)
      inits.back() = weightOf(sink);
    // Eight splits a step, each past the last weighing 0 (and reading the
    // step's first), their loads independent of each other: a step's
    // loads are in flight together, the combine's time its steps' round
    // trips.
    constexpr int64_t kSplitsPerStep = 8;
    auto sumLoop = scf::ForOp::create(b, cIndex(0), splitsIdx,
                                      cIndex(kSplitsPerStep), inits);
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(sumLoop.getBody());
      SmallVector<Value> acc(sumLoop.getRegionIterArgs());
      Value first = sumLoop.getInductionVar();
      for (int64_t k = 0; k < kSplitsPerStep; ++k) {
        Value split = arith::AddIOp::create(b, first, cIndex(k));
        Value inSplits = arith::CmpIOp::create(b, arith::CmpIPredicate::ult,
                                               split, splitsIdx);
        Value at = splitRow(
            k ? arith::SelectOp::create(b, inSplits, split, first).getResult()
              : first);
        Value w = weightOf(load(f32, partialLse, at));
        if (k)
          w = arith::SelectOp::create(b, inSplits, w, cF32(0.0f));
        Value base = arith::AddIOp::create(
            b, arith::MulIOp::create(b, at, c64(spec.headDim)), laneColumn);
        // The lane's columns of the split's row in one vector load: a row
        // is D x 4 bytes into a 256-byte aligned workspace.
        auto vecType = VectorType::get({perLane}, f32);
        Value vec = LLVM::LoadOp::create(
            b, vecType,
            LLVM::GEPOp::create(b, global, f32, partialOut, ValueRange{base}),
            /*alignment=*/unsigned(4 * perLane));
        for (int64_t c = 0; c < perLane; ++c) {
          Value o = LLVM::ExtractElementOp::create(b, vec, c32(c));
          acc[c] =
              arith::AddFOp::create(b, acc[c], arith::MulFOp::create(b, w, o));
        }
        acc[perLane] = arith::AddFOp::create(b, acc[perLane], w);
      }
      scf::YieldOp::create(b, acc);
    }
    Value sum = sumLoop.getResult(perLane);
    Value seen =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, sum, cF32(0.0f));
    Value inv = arith::SelectOp::create(
        b, seen, arith::DivFOp::create(b, cF32(1.0f), sum), cF32(0.0f));

    Value outIndex = arith::AddIOp::create(
        b,
        arith::AddIOp::create(
            b,
            arith::AddIOp::create(
                b, arith::MulIOp::create(b, wide(batch), strideB),
                arith::MulIOp::create(b, wide(outHead), strideH)),
            arith::MulIOp::create(b, wide(query), strideN)),
        laneColumn);
    for (int64_t c = 0; c < perLane; ++c) {
      Value o = arith::MulFOp::create(b, sumLoop.getResult(c), inv);
      store(arith::TruncFOp::create(b, spec.elementType, o), out,
            arith::AddIOp::create(b, outIndex, c64(c)));
    }
    if (!lseOut)
      return;
    // LSE (natural log), dense B x H x seq_q, by the row's first lane.
    Value lse = arith::SelectOp::create(
        b, seen,
        arith::AddFOp::create(
            b, m,
            arith::MulFOp::create(b, math::Log2Op::create(b, sum),
                                  cF32(float(std::log(2.0))))),
        negInf);
    Value first =
        arith::CmpIOp::create(b, arith::CmpIPredicate::eq, lane, c32(0));
    auto ifFirst = scf::IfOp::create(b, TypeRange(), first, /*withElse=*/false);
    b.setInsertionPoint(ifFirst.thenBlock()->getTerminator());
    Value lseIndex = wide(arith::AddIOp::create(
        b,
        arith::MulIOp::create(
            b,
            arith::AddIOp::create(b, arith::MulIOp::create(b, batch, heads),
                                  outHead),
            seqQ),
        query));
    Value at =
        LLVM::GEPOp::create(b, global, f32, lseOut, ValueRange{lseIndex});
    LLVM::StoreOp::create(b, lse, at, /*alignment=*/4);
  }
};

} // namespace

void mlir::flash::gpu_lowering::emitCombineKernel(ImplicitLocOpBuilder &b,
                                                  const KernelSpec &spec,
                                                  Block *entry) {
  b.setInsertionPointToStart(entry);
  CombineBuilder(b, spec).emit(entry);
  b.setInsertionPointToEnd(entry);
  gpu::ReturnOp::create(b);
}

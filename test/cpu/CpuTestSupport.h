//===- CpuTestSupport.h - host tensors and the JIT for CPU numerics -*- C++
//-*-===//
//
// What the CPU numerics tests share: a problem case, random host tensors in
// B x H x N x D or B x N x H x D storage with their memref descriptors, and
// the CPU reference pipeline into MLIR's execution engine.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_TEST_CPU_CPUTESTSUPPORT_H
#define FLASHC_TEST_CPU_CPUTESTSUPPORT_H

#include "flashc/InitAll.h"
#include "flashc/Pipeline/Pipelines.h"
#include "flashc/Reference/HostData.h"
#include "flashc/Reference/Reference.h"

#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "llvm/Support/TargetSelect.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <ostream>
#include <random>
#include <string>

namespace flashc::cputest {

using flashc::rt::DType;

struct Case {
  const char *name;
  int64_t batch, heads, seqQ, seqK, headDim;
  bool causal;
  DType dtype;
  /// Every third query row is multiplied by this, to push logits to ~1e3.
  float hotRowFactor = 1.0f;
  int64_t blockM = 64, blockN = 32;
  /// K/V heads (grouped-query attention); 0: as many as Q's.
  int64_t kvHeads = 0;
  /// q, k, v and o stored B x S x H x D and passed as strided B x H x S x D
  /// views (the kernel's memref types are strided).
  bool bshd = false;

  int64_t keyValueHeads() const { return kvHeads ? kvHeads : heads; }
};

inline std::ostream &operator<<(std::ostream &os, const Case &c) {
  return os << c.name;
}

/// Host copy of a B x H x N x D tensor: the bits the kernel sees and the
/// same values widened to double for the reference.
struct HostTensor {
  std::vector<uint16_t> bits;
  std::vector<double> values;
};

inline HostTensor randomTensor(std::mt19937 &rng, const Case &c, int64_t heads,
                               int64_t rows, float hotRowFactor) {
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  HostTensor t;
  int64_t count = c.batch * heads * rows * c.headDim;
  t.bits.resize(count);
  t.values.resize(count);
  for (int64_t i = 0; i < count; ++i) {
    int64_t row = (i / c.headDim) % rows;
    float x = uniform(rng);
    if (row % 3 == 0)
      x *= hotRowFactor;
    t.bits[i] = flashc::ref::floatToHalfBits(x, c.dtype);
    t.values[i] = flashc::ref::halfBitsToFloat(t.bits[i], c.dtype);
  }
  return t;
}

/// Element (b, h, n, d) of a B x H x N x D tensor: its index in B x H x N
/// x D storage, or with `bshd` in B x N x H x D storage.
inline int64_t elementIndex(const Case &c, int64_t heads, int64_t rows,
                            int64_t b, int64_t h, int64_t n, int64_t d) {
  if (c.bshd)
    return ((b * rows + n) * heads + h) * c.headDim + d;
  return ((b * heads + h) * rows + n) * c.headDim + d;
}

/// `bits` (B x H x N x D order) in the case's storage order.
inline std::vector<uint16_t> stored(const std::vector<uint16_t> &bits,
                                    const Case &c, int64_t heads,
                                    int64_t rows) {
  std::vector<uint16_t> out(bits.size());
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t n = 0; n < rows; ++n)
        for (int64_t d = 0; d < c.headDim; ++d)
          out[elementIndex(c, heads, rows, b, h, n, d)] =
              bits[((b * heads + h) * rows + n) * c.headDim + d];
  return out;
}

/// The B x H x N x D view of a buffer in the case's storage order.
inline StridedMemRefType<uint16_t, 4>
view4(std::vector<uint16_t> &data, const Case &c, int64_t heads, int64_t rows) {
  StridedMemRefType<uint16_t, 4> m;
  m.basePtr = m.data = data.data();
  m.offset = 0;
  int64_t sizes[4] = {c.batch, heads, rows, c.headDim};
  for (int i = 0; i < 4; ++i)
    m.sizes[i] = sizes[i];
  m.strides[3] = 1;
  if (c.bshd) {
    m.strides[1] = c.headDim;
    m.strides[2] = heads * c.headDim;
    m.strides[0] = rows * heads * c.headDim;
  } else {
    m.strides[2] = c.headDim;
    m.strides[1] = rows * c.headDim;
    m.strides[0] = heads * rows * c.headDim;
  }
  return m;
}

inline StridedMemRefType<float, 3> view3(std::vector<float> &data,
                                         const Case &c) {
  StridedMemRefType<float, 3> m;
  m.basePtr = m.data = data.data();
  m.offset = 0;
  m.sizes[0] = c.batch;
  m.sizes[1] = c.heads;
  m.sizes[2] = c.seqQ;
  m.strides[0] = c.heads * c.seqQ;
  m.strides[1] = c.seqQ;
  m.strides[2] = 1;
  return m;
}

/// The prefix sums [0, l0, l0 + l1, ...] of packed sequences' lengths
/// (cu_seqlens).
inline std::vector<int32_t> prefixSums(const std::vector<int32_t> &lengths) {
  std::vector<int32_t> sums = {0};
  for (int32_t n : lengths)
    sums.push_back(sums.back() + n);
  return sums;
}

/// The rank-1 descriptor of `values`.
inline StridedMemRefType<int32_t, 1> view1(std::vector<int32_t> &values) {
  StridedMemRefType<int32_t, 1> m;
  m.basePtr = m.data = values.data();
  m.offset = 0;
  m.sizes[0] = static_cast<int64_t>(values.size());
  m.strides[0] = 1;
  return m;
}

/// compiler-rt's f32 -> bf16 conversion. LLVM 22 lowers `arith.truncf` to
/// bf16 on x86 without AVX512-BF16 to a call to it, and Debian 12's libgcc
/// (GCC 12) does not have it, so the JIT would find no definition. The
/// x86-64 ABI returns a 16-bit float in xmm0: _Float16 carries the bf16
/// bits there, rounded as the host reference rounds them.
inline _Float16 truncSfBf2(float x) {
  uint16_t out = flashc::ref::floatToHalfBits(x, DType::BF16);
  _Float16 result;
  std::memcpy(&result, &out, sizeof(out));
  return result;
}

/// How far O and LSE of a dense case are from the float64 reference.
struct ForwardErrors {
  double relErr = 0, lseRelErr = 0;
  /// The largest relative error of one row of O: a mask off by a few keys
  /// moves a few rows a lot and the whole tensor little.
  double worstRowErr = 0;
  /// Where the worst row is.
  std::string worstRow;
  int64_t maskedRows = 0;
  /// The first thing that is plainly wrong (a NaN, a masked row that is not
  /// O = 0 and LSE = -inf), or empty.
  std::string problem;
};

/// Compares the kernel's O (case storage order) and LSE with
/// flashc::ref::referenceRow for every row, with the score and mask mods
/// `modsOf(b, h)` gives (none when empty).
inline ForwardErrors compareForward(
    const Case &c, const HostTensor &q, const HostTensor &k,
    const HostTensor &v, const std::vector<uint16_t> &o,
    const std::vector<float> &lse,
    const std::function<flashc::ref::RowMods(int64_t, int64_t)> &modsOf = {}) {
  ForwardErrors e;
  const int64_t kvHeads = c.keyValueHeads();
  const int64_t group = c.heads / kvHeads;
  double scale = 1.0 / std::sqrt(static_cast<double>(c.headDim));
  double errSq = 0, refSq = 0, lseErrSq = 0, lseRefSq = 0;
  std::vector<double> expected(c.headDim), scratch;
  auto fail = [&](std::string what) {
    if (e.problem.empty())
      e.problem = std::move(what);
  };
  for (int64_t bh = 0; bh < c.batch * c.heads; ++bh) {
    int64_t b = bh / c.heads, h = bh % c.heads;
    // Query head h of batch b reads K/V head h / G of the same batch.
    int64_t kvSlice = b * kvHeads + h / group;
    flashc::ref::HeadView head{q.values.data() + bh * c.seqQ * c.headDim,
                               k.values.data() + kvSlice * c.seqK * c.headDim,
                               v.values.data() + kvSlice * c.seqK * c.headDim};
    flashc::ref::RowMods mods = modsOf ? modsOf(b, h) : flashc::ref::RowMods();
    for (int64_t i = 0; i < c.seqQ; ++i) {
      double expectedLse =
          flashc::ref::referenceRow(head, i, c.seqQ, c.seqK, c.headDim, scale,
                                    c.causal, expected.data(), scratch, mods);
      float gotLse = lse[bh * c.seqQ + i];
      const uint16_t *row =
          o.data() + elementIndex(c, c.heads, c.seqQ, b, h, i, 0);
      std::string where = "b " + std::to_string(b) + " h " + std::to_string(h) +
                          " row " + std::to_string(i);
      if (std::isinf(expectedLse)) {
        ++e.maskedRows;
        if (!(std::isinf(gotLse) && gotLse < 0))
          fail("fully masked " + where + " has LSE " + std::to_string(gotLse));
        for (int64_t d = 0; d < c.headDim; ++d)
          if (flashc::ref::halfBitsToFloat(row[d], c.dtype) != 0.0f)
            fail("fully masked " + where + " has a nonzero O");
        continue;
      }
      if (!std::isfinite(gotLse))
        fail(where + " has LSE " + std::to_string(gotLse));
      lseErrSq += (gotLse - expectedLse) * (gotLse - expectedLse);
      lseRefSq += expectedLse * expectedLse;
      double rowErrSq = 0, rowRefSq = 0;
      for (int64_t d = 0; d < c.headDim; ++d) {
        float got = flashc::ref::halfBitsToFloat(row[d], c.dtype);
        if (!std::isfinite(got))
          fail(where + " column " + std::to_string(d) + " is " +
               std::to_string(got));
        rowErrSq += (got - expected[d]) * (got - expected[d]);
        rowRefSq += expected[d] * expected[d];
      }
      errSq += rowErrSq;
      refSq += rowRefSq;
      // A row whose output lies near f32's smallest normals (an attention
      // sink that takes all but e^-700 of its weight) has no relative
      // precision in any 16- or 32-bit float; the tensor's error still
      // counts it.
      const double representable = 1e-30;
      if (std::sqrt(rowRefSq) > representable &&
          std::sqrt(rowErrSq / rowRefSq) > e.worstRowErr) {
        e.worstRowErr = std::sqrt(rowErrSq / rowRefSq);
        e.worstRow = where + " (reference norm " +
                     std::to_string(std::sqrt(rowRefSq)) + ")";
      }
    }
  }
  e.relErr = refSq > 0 ? std::sqrt(errSq / refSq) : 0.0;
  e.lseRelErr = lseRefSq > 0 ? std::sqrt(lseErrSq / lseRefSq) : 0.0;
  return e;
}

/// Relative error (Frobenius) of `got` (kernel bits, the case's storage
/// order) against `expected` (B x H x N x D doubles); fails on a non-finite
/// element.
inline double relativeError(const std::vector<uint16_t> &got,
                            const std::vector<double> &expected, const Case &c,
                            int64_t heads, int64_t rows, const char *name) {
  double errSq = 0, refSq = 0;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t n = 0; n < rows; ++n)
        for (int64_t d = 0; d < c.headDim; ++d) {
          double want = expected[((b * heads + h) * rows + n) * c.headDim + d];
          float value = flashc::ref::halfBitsToFloat(
              got[elementIndex(c, heads, rows, b, h, n, d)], c.dtype);
          EXPECT_TRUE(std::isfinite(value))
              << name << "[" << b << ", " << h << ", " << n << ", " << d
              << "] is " << value;
          if (!std::isfinite(value))
            return INFINITY;
          errSq += (value - want) * (value - want);
          refSq += want * want;
        }
  return refSq > 0 ? std::sqrt(errSq / refSq) : std::sqrt(errSq);
}

/// A context with every dialect flashc uses and their LLVM translations.
inline std::unique_ptr<mlir::MLIRContext> jitContext() {
  mlir::DialectRegistry registry;
  flashc::registerAllDialects(registry);
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  return std::make_unique<mlir::MLIRContext>(registry);
}

/// `module` through the CPU reference pipeline (with `overrides`) into the
/// execution engine, bf16 rounding resolved to truncSfBf2: a func @f with
/// llvm.emit_c_interface is the engine's _mlir_ciface_f.
inline llvm::Expected<std::unique_ptr<mlir::ExecutionEngine>>
jitCompileModule(mlir::ModuleOp module,
                 const flashc::TileOverrides &overrides = {}) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  mlir::PassManager pm(module.getContext());
  flashc::buildCpuReferencePipeline(pm, overrides);
  if (mlir::failed(pm.run(module)))
    return llvm::createStringError("the CPU reference pipeline failed");
  mlir::ExecutionEngineOptions options;
  options.transformer = mlir::makeOptimizingTransformer(2, 0, nullptr);
  auto engine = mlir::ExecutionEngine::create(module, options);
  if (!engine)
    return engine.takeError();
  (*engine)->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    symbols[interner("__truncsfbf2")] = {
        llvm::orc::ExecutorAddr::fromPtr(&truncSfBf2),
        llvm::JITSymbolFlags::Exported};
    return symbols;
  });
  return std::move(*engine);
}

/// `source` (a func @attention with llvm.emit_c_interface) through
/// jitCompileModule: the kernel is the engine's _mlir_ciface_attention.
inline llvm::Expected<std::unique_ptr<mlir::ExecutionEngine>>
jitCompile(mlir::MLIRContext &context, llvm::StringRef source) {
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  if (!module)
    return llvm::createStringError("the kernel's source does not parse");
  return jitCompileModule(*module);
}

} // namespace flashc::cputest

#endif // FLASHC_TEST_CPU_CPUTESTSUPPORT_H

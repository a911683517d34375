//===- CpuModsTest.cpp - the shipped score and mask mods on the CPU -------===//
//
// Compiles each shipped kernel of kernels/ that carries a score_mod or a
// mask_mod through the CPU reference pipeline (tiles of 64 x 32, so that
// lengths are ragged and several key tiles meet each mod), runs it with
// MLIR's execution engine on random inputs with poisoned outputs, and
// compares O and LSE with the float64 reference given the same mods written
// in C++: soft-capping, ALiBi, the sliding window, document masking and
// prefix-LM, with logits near 1e3 and rows the mask hides entirely; and
// attention sinks. Then the backward of each, derived from the shipped
// forward by -flash-derive-backward (the score mod's derivative formed by
// the compiler), against the float64 gradients with the derivative
// written by hand, the sink's gradient included.
//
//===----------------------------------------------------------------------===//

#include "CpuTestSupport.h"

#include "flashc/Reference/Reference.h"

#include "flashc/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/MemoryBuffer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

using flashc::ref::RowMods;
using flashc::rt::DType;
using namespace flashc::cputest;

namespace {

struct ModCase {
  const char *name;
  /// kernels/<kernel>.mlir: bf16, with the LSE.
  const char *kernel;
  int64_t batch, heads, seqQ, seqK;
  /// The kernel's causal attribute.
  bool causal;
  float hotRowFactor = 1.0f;
  /// Query rows the mods (with causal) hide entirely; -1: not checked.
  int64_t expectMaskedRows = -1;
  int64_t headDim = 128;
  /// attention_chunked's chunk, written over the shipped 8192 (CPU-sized
  /// sequences); 0: as shipped.
  int64_t chunk = 0;
};

std::ostream &operator<<(std::ostream &os, const ModCase &c) {
  return os << c.name;
}

/// The captures a kernel reads and the reference's mods for (b, h).
struct Captures {
  std::vector<float> slopes, sinks;
  std::vector<int32_t> documents, prefix;
  int64_t documentRows = 0;
  /// attention_document's key_ranges: per batch and block of
  /// kKeyRangeRows query rows [lo, hi), the smallest range holding every
  /// key the block's rows see, and [full_lo, full_hi), the keys all of
  /// them keep under the ids alone (the CPU path computes every key; the
  /// table is the one a caller would pass).
  std::vector<int32_t> keyRanges;
  int64_t keyRangeBlocks = 0;

  /// keyRanges read off `mask(b, i, j)` (the mask_mod) with the case's
  /// causal mask.
  void setKeyRanges(const ModCase &c,
                    const std::function<bool(int64_t, int64_t, int64_t)> &mask);
};

/// The rows per key_ranges entry the shipped kernels declare.
constexpr int64_t kKeyRangeRows = 128;

void Captures::setKeyRanges(
    const ModCase &c,
    const std::function<bool(int64_t, int64_t, int64_t)> &mask) {
  keyRangeBlocks = (c.seqQ + kKeyRangeRows - 1) / kKeyRangeRows;
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t blk = 0; blk < keyRangeBlocks; ++blk) {
      int64_t lo = c.seqK, hi = 0, fullLo = c.seqK, fullHi = 0;
      int64_t first = blk * kKeyRangeRows,
              end = std::min(c.seqQ, (blk + 1) * kKeyRangeRows);
      for (int64_t j = 0; j < c.seqK; ++j) {
        bool all = true;
        for (int64_t i = first; i < end; ++i) {
          bool kept = mask(b, i, j);
          all &= kept;
          if (kept && (!c.causal || j <= i + c.seqK - c.seqQ)) {
            lo = std::min(lo, j);
            hi = std::max(hi, j + 1);
          }
        }
        if (all) {
          fullLo = std::min(fullLo, j);
          fullHi = std::max(fullHi, j + 1);
        }
      }
      if (fullHi <= fullLo)
        fullLo = fullHi = 0;
      for (int64_t v : {lo, hi, fullLo, fullHi})
        keyRanges.push_back(int32_t(v));
    }
  }
}

Captures makeCaptures(const ModCase &c, std::mt19937 &rng) {
  Captures cap;
  std::string kernel = c.kernel;
  if (kernel == "attention_alibi")
    for (int64_t h = 0; h < c.heads; ++h)
      cap.slopes.push_back(std::exp2(-8.0f * (h + 1) / c.heads));
  if (kernel == "attention_document") {
    // Documents of 1 to 90 rows, each batch its own cut.
    cap.documentRows = std::max(c.seqQ, c.seqK);
    std::uniform_int_distribution<int> length(1, 90);
    for (int64_t b = 0; b < c.batch; ++b) {
      int32_t id = 0;
      for (int64_t n = 0, left = length(rng); n < cap.documentRows; ++n) {
        if (left-- == 0) {
          ++id;
          left = length(rng) - 1;
        }
        cap.documents.push_back(id);
      }
    }
    const std::vector<int32_t> &ids = cap.documents;
    const int64_t n = cap.documentRows;
    cap.setKeyRanges(c, [&](int64_t b, int64_t i, int64_t j) {
      return ids[b * n + i] == ids[b * n + j];
    });
  }
  if (kernel == "attention_prefix_lm") {
    std::uniform_int_distribution<int32_t> prefix(0, int32_t(c.seqK));
    for (int64_t b = 0; b < c.batch; ++b)
      cap.prefix.push_back(prefix(rng));
    cap.setKeyRanges(c, [&](int64_t b, int64_t i, int64_t j) {
      return j < cap.prefix[b] || j <= i;
    });
  }
  if (kernel == "attention_sink") {
    // From a sink no key outweighs to one that outweighs most rows.
    const float logits[] = {-3.0f, 0.5f, 2.0f, 6.0f};
    for (int64_t h = 0; h < c.heads; ++h)
      cap.sinks.push_back(logits[h % 4]);
  }
  return cap;
}

RowMods referenceMods(const ModCase &c, const Captures &cap, int64_t b,
                      int64_t h) {
  std::string kernel = c.kernel;
  RowMods mods;
  if (kernel == "attention_softcap") {
    mods.score = [](double x, int64_t, int64_t) {
      return 50.0 * std::tanh(x / 50.0);
    };
    mods.scoreGrad = [](double x, int64_t, int64_t) {
      double t = std::tanh(x / 50.0);
      return 1.0 - t * t;
    };
  }
  if (kernel == "attention_sink") {
    mods.hasSink = true;
    mods.sink = cap.sinks[h];
  }
  if (kernel == "attention_alibi") {
    double slope = cap.slopes[h];
    mods.score = [slope](double x, int64_t i, int64_t j) {
      return x + slope * double(j - i);
    };
  }
  if (kernel == "attention_sliding_window")
    mods.mask = [](int64_t i, int64_t j) { return j + 1024 >= i; };
  if (kernel == "attention_document") {
    const int32_t *doc = cap.documents.data() + b * cap.documentRows;
    mods.mask = [doc](int64_t i, int64_t j) { return doc[i] == doc[j]; };
  }
  if (kernel == "attention_chunked") {
    int64_t chunk = c.chunk ? c.chunk : 8192;
    mods.mask = [chunk](int64_t i, int64_t j) {
      return i / chunk == j / chunk;
    };
  }
  if (kernel == "attention_prefix_lm") {
    int64_t prefix = cap.prefix[b];
    mods.mask = [prefix](int64_t i, int64_t j) { return j < prefix || j <= i; };
  }
  return mods;
}

/// The memref descriptors of a kernel's arguments after the attention
/// tensors: its captures, or its sinks (and, for the backward, their
/// gradients).
struct ExtraArgs {
  ExtraArgs(Captures &cap, const Case &c)
      : documents{cap.documents.data(),
                  cap.documents.data(),
                  0,
                  {c.batch, cap.documentRows},
                  {cap.documentRows, 1}},
        keyRanges{cap.keyRanges.empty() ? nullptr : cap.keyRanges.data(),
                  cap.keyRanges.data(),
                  0,
                  {c.batch, cap.keyRangeBlocks, 4},
                  {cap.keyRangeBlocks * 4, 4, 1}} {
    if (!cap.slopes.empty())
      floats = floatView(cap.slopes);
    if (!cap.sinks.empty()) {
      floats = floatView(cap.sinks);
      dSinks.assign(cap.sinks.size(), std::numeric_limits<float>::quiet_NaN());
      gradients = floatView(dSinks);
    }
    if (!cap.prefix.empty())
      prefix = view1(cap.prefix);
    hasDocuments = !cap.documents.empty();
  }
  static StridedMemRefType<float, 1> floatView(std::vector<float> &v) {
    return {v.data(), v.data(), 0, {int64_t(v.size())}, {1}};
  }
  void append(std::vector<void *> &args, bool withGradients) {
    if (floats.data)
      args.push_back(&floats);
    if (withGradients && gradients.data)
      args.push_back(&gradients);
    if (hasDocuments)
      args.push_back(&documents);
    if (prefix.data)
      args.push_back(&prefix);
    if (keyRanges.data)
      args.push_back(&keyRanges);
  }
  StridedMemRefType<float, 1> floats{}, gradients{};
  StridedMemRefType<int32_t, 2> documents;
  StridedMemRefType<int32_t, 3> keyRanges;
  StridedMemRefType<int32_t, 1> prefix{};
  std::vector<float> dSinks;
  bool hasDocuments = false;
};

/// Calls a _mlir_ciface_ entry point that takes `args.size()` pointers.
void callKernel(void *fn, const std::vector<void *> &a) {
  using P = void *;
  switch (a.size()) {
  case 5:
    return reinterpret_cast<void (*)(P, P, P, P, P)>(fn)(a[0], a[1], a[2], a[3],
                                                         a[4]);
  case 6:
    return reinterpret_cast<void (*)(P, P, P, P, P, P)>(fn)(a[0], a[1], a[2],
                                                            a[3], a[4], a[5]);
  case 7:
    return reinterpret_cast<void (*)(P, P, P, P, P, P, P)>(fn)(
        a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
  case 9:
    return reinterpret_cast<void (*)(P, P, P, P, P, P, P, P, P)>(fn)(
        a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]);
  case 10:
    return reinterpret_cast<void (*)(P, P, P, P, P, P, P, P, P, P)>(fn)(
        a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]);
  case 11:
    return reinterpret_cast<void (*)(P, P, P, P, P, P, P, P, P, P, P)>(fn)(
        a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]);
  }
  FAIL() << "no call of " << a.size() << " arguments";
}

/// The shipped kernel's module, its forward func given the C interface.
mlir::OwningOpRef<mlir::ModuleOp> parseKernel(mlir::MLIRContext &context,
                                              const ModCase &m) {
  std::string path = std::string(FLASHC_KERNELS_DIR) + "/" + m.kernel + ".mlir";
  mlir::OwningOpRef<mlir::ModuleOp> module;
  if (m.chunk) {
    auto file = llvm::MemoryBuffer::getFile(path);
    if (!file)
      return module;
    std::string text = (*file)->getBuffer().str();
    const std::string shipped = "arith.constant 8192 : index";
    size_t at = text.find(shipped);
    if (at == std::string::npos)
      return module;
    text.replace(at, shipped.size(),
                 "arith.constant " + std::to_string(m.chunk) + " : index");
    module = mlir::parseSourceString<mlir::ModuleOp>(text, &context);
  } else {
    module = mlir::parseSourceFile<mlir::ModuleOp>(path, &context);
  }
  if (!module)
    return module;
  if (auto func = module->lookupSymbol<mlir::func::FuncOp>(m.kernel))
    func->setAttr(mlir::LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                  mlir::UnitAttr::get(&context));
  return module;
}

flashc::TileOverrides testTiles() {
  // 64 x 32 tiles: lengths are ragged and several key tiles meet each mod.
  flashc::TileOverrides tiles;
  tiles.blockM = 64;
  tiles.blockN = 32;
  tiles.warpgroups = 1;
  return tiles;
}

Case caseOf(const ModCase &m) {
  return Case{m.name,    m.batch,  m.heads,     m.seqQ,        m.seqK,
              m.headDim, m.causal, DType::BF16, m.hotRowFactor};
}

/// The shipped kernel through the CPU reference pipeline, with its
/// -flash-derive-backward function when `withBackward`.
llvm::Expected<std::unique_ptr<mlir::ExecutionEngine>>
compileShipped(mlir::MLIRContext &context, const ModCase &m,
               bool withBackward) {
  mlir::OwningOpRef<mlir::ModuleOp> module = parseKernel(context, m);
  if (!module || !module->lookupSymbol<mlir::func::FuncOp>(m.kernel))
    return llvm::createStringError(std::string("no func @") + m.kernel +
                                   " in kernels/" + m.kernel + ".mlir");
  if (withBackward) {
    mlir::PassManager derive(&context);
    derive.addPass(mlir::flash::createFlashDeriveBackward());
    if (mlir::failed(derive.run(*module)))
      return llvm::createStringError("-flash-derive-backward failed");
  }
  return jitCompileModule(*module, testTiles());
}

class CpuModsTest : public ::testing::TestWithParam<ModCase> {};

TEST_P(CpuModsTest, MatchesFloat64Reference) {
  const ModCase &m = GetParam();
  Case c = caseOf(m);
  std::unique_ptr<mlir::MLIRContext> context = jitContext();
  auto engine = compileShipped(*context, m, /*withBackward=*/false);
  ASSERT_TRUE(static_cast<bool>(engine)) << llvm::toString(engine.takeError());
  auto symbol = (*engine)->lookup(std::string("_mlir_ciface_") + m.kernel);
  ASSERT_TRUE(static_cast<bool>(symbol)) << llvm::toString(symbol.takeError());

  std::mt19937 rng(4321 + c.seqQ * 3 + c.seqK);
  HostTensor q = randomTensor(rng, c, c.heads, c.seqQ, c.hotRowFactor);
  HostTensor k = randomTensor(rng, c, c.heads, c.seqK, 1.0f);
  HostTensor v = randomTensor(rng, c, c.heads, c.seqK, 1.0f);
  std::vector<uint16_t> o(c.batch * c.heads * c.seqQ * c.headDim,
                          flashc::ref::halfNaNBits(c.dtype));
  std::vector<float> lse(c.batch * c.heads * c.seqQ,
                         std::numeric_limits<float>::quiet_NaN());
  Captures cap = makeCaptures(m, rng);
  auto qView = view4(q.bits, c, c.heads, c.seqQ),
       kView = view4(k.bits, c, c.heads, c.seqK),
       vView = view4(v.bits, c, c.heads, c.seqK),
       oView = view4(o, c, c.heads, c.seqQ);
  auto lseView = view3(lse, c);

  ExtraArgs extra(cap, c);
  std::vector<void *> args = {&qView, &kView, &vView, &oView, &lseView};
  extra.append(args, /*withGradients=*/false);
  callKernel(reinterpret_cast<void *>(*symbol), args);

  ForwardErrors e =
      compareForward(c, q, k, v, o, lse, [&](int64_t b, int64_t h) {
        return referenceMods(m, cap, b, h);
      });
  ASSERT_TRUE(e.problem.empty()) << e.problem;
  std::cout << "[ numerics ] " << m.name << ": rel err O " << e.relErr
            << " (worst row " << e.worstRowErr << ": " << e.worstRow
            << "), LSE " << e.lseRelErr << ", fully masked rows "
            << e.maskedRows << "\n";
  EXPECT_LT(e.relErr, 1e-2);
  EXPECT_LT(e.worstRowErr, 3e-2);
  // The reference rounds nothing but the inputs: the LSE is off only by
  // f32 sums.
  EXPECT_LT(e.lseRelErr, 1e-5);
  if (m.expectMaskedRows >= 0) {
    EXPECT_EQ(e.maskedRows, m.expectMaskedRows);
  }
}

TEST_P(CpuModsTest, GradientsMatchFloat64) {
  const ModCase &m = GetParam();
  Case c = caseOf(m);
  std::unique_ptr<mlir::MLIRContext> context = jitContext();
  auto engine = compileShipped(*context, m, /*withBackward=*/true);
  ASSERT_TRUE(static_cast<bool>(engine)) << llvm::toString(engine.takeError());
  std::string name = m.kernel;
  auto forward = (*engine)->lookup("_mlir_ciface_" + name);
  auto backward = (*engine)->lookup("_mlir_ciface_" + name + "_backward");
  ASSERT_TRUE(forward && backward);

  std::mt19937 rng(8765 + c.seqQ * 3 + c.seqK);
  HostTensor q = randomTensor(rng, c, c.heads, c.seqQ, c.hotRowFactor);
  HostTensor k = randomTensor(rng, c, c.heads, c.seqK, 1.0f);
  HostTensor v = randomTensor(rng, c, c.heads, c.seqK, 1.0f);
  HostTensor dO = randomTensor(rng, c, c.heads, c.seqQ, 1.0f);
  uint16_t nan = flashc::ref::halfNaNBits(c.dtype);
  std::vector<uint16_t> o(q.bits.size(), nan), dq(q.bits.size(), nan),
      dk(k.bits.size(), nan), dv(v.bits.size(), nan);
  std::vector<float> lse(c.batch * c.heads * c.seqQ,
                         std::numeric_limits<float>::quiet_NaN());
  Captures cap = makeCaptures(m, rng);
  auto qView = view4(q.bits, c, c.heads, c.seqQ),
       kView = view4(k.bits, c, c.heads, c.seqK),
       vView = view4(v.bits, c, c.heads, c.seqK),
       oView = view4(o, c, c.heads, c.seqQ),
       dOView = view4(dO.bits, c, c.heads, c.seqQ),
       dqView = view4(dq, c, c.heads, c.seqQ),
       dkView = view4(dk, c, c.heads, c.seqK),
       dvView = view4(dv, c, c.heads, c.seqK);
  auto lseView = view3(lse, c);
  ExtraArgs extra(cap, c);
  std::vector<void *> forwardArgs = {&qView, &kView, &vView, &oView, &lseView};
  extra.append(forwardArgs, /*withGradients=*/false);
  callKernel(reinterpret_cast<void *>(*forward), forwardArgs);
  std::vector<void *> backwardArgs = {&qView,  &kView,  &vView,
                                      &oView,  &dOView, &lseView,
                                      &dqView, &dkView, &dvView};
  extra.append(backwardArgs, /*withGradients=*/true);
  callKernel(reinterpret_cast<void *>(*backward), backwardArgs);

  // float64 gradients, delta from the forward's stored O as the op
  // defines it.
  double scale = 1.0 / std::sqrt(static_cast<double>(c.headDim));
  std::vector<double> wantDq(q.values.size()), wantDk(k.values.size(), 0.0),
      wantDv(v.values.size(), 0.0), wantDSinks(c.heads, 0.0), storedOut;
  for (uint16_t bits : o)
    storedOut.push_back(flashc::ref::halfBitsToFloat(bits, c.dtype));
  for (int64_t bh = 0; bh < c.batch * c.heads; ++bh) {
    int64_t b = bh / c.heads, h = bh % c.heads;
    int64_t qOffset = bh * c.seqQ * c.headDim;
    int64_t kvOffset = bh * c.seqK * c.headDim;
    flashc::ref::RowMods mods = referenceMods(m, cap, b, h);
    flashc::ref::referenceBackwardHead(
        {q.values.data() + qOffset, k.values.data() + kvOffset,
         v.values.data() + kvOffset},
        dO.values.data() + qOffset, storedOut.data() + qOffset, c.seqQ, c.seqK,
        c.headDim, scale, c.causal, wantDq.data() + qOffset,
        wantDk.data() + kvOffset, wantDv.data() + kvOffset, mods,
        mods.hasSink ? &wantDSinks[h] : nullptr);
  }
  double errDq = relativeError(dq, wantDq, c, c.heads, c.seqQ, "dQ");
  double errDk = relativeError(dk, wantDk, c, c.heads, c.seqK, "dK");
  double errDv = relativeError(dv, wantDv, c, c.heads, c.seqK, "dV");
  std::cout << "[ numerics ] " << m.name << " backward: rel err dQ " << errDq
            << ", dK " << errDk << ", dV " << errDv;
  EXPECT_LT(errDq, 1e-2);
  EXPECT_LT(errDk, 1e-2);
  EXPECT_LT(errDv, 1e-2);
  if (!cap.sinks.empty()) {
    double errSq = 0, refSq = 0;
    for (int64_t h = 0; h < c.heads; ++h) {
      ASSERT_TRUE(std::isfinite(extra.dSinks[h])) << "dsinks[" << h << "]";
      errSq +=
          (extra.dSinks[h] - wantDSinks[h]) * (extra.dSinks[h] - wantDSinks[h]);
      refSq += wantDSinks[h] * wantDSinks[h];
    }
    double errDSinks = std::sqrt(errSq / refSq);
    std::cout << ", dsinks " << errDSinks;
    // f32 sums of the same terms as the reference's.
    EXPECT_LT(errDSinks, 1e-4);
  }
  std::cout << "\n";
}

INSTANTIATE_TEST_SUITE_P(
    ShippedKernels, CpuModsTest,
    ::testing::Values(
        // Logits near 1e3 on every third row: the cap keeps them in (-50,
        // 50), and the softmax of the capped logits must match.
        ModCase{"softcap_logits_near_1e3", "attention_softcap", 2, 2, 150, 150,
                true, /*hotRowFactor=*/3000.0f},
        ModCase{"softcap_more_keys", "attention_softcap", 1, 2, 70, 130, true},
        ModCase{"alibi", "attention_alibi", 2, 4, 130, 130, true},
        // The window (1024 keys back) with causal, 1200 queries over 100
        // keys: causal hides every key from the first 1100 rows; the last
        // 100 would see keys 0 .. i - 1100 but the window starts at
        // i - 1024 past them, so it hides those rows entirely (O = 0, LSE =
        // -inf).
        ModCase{"sliding_window_hides_rows", "attention_sliding_window", 1, 1,
                1200, 100, true, 1.0f, /*expectMaskedRows=*/1100 + 100},
        ModCase{"sliding_window_long", "attention_sliding_window", 1, 1, 1100,
                1100, true, /*hotRowFactor=*/3000.0f, /*expectMaskedRows=*/0},
        ModCase{"document", "attention_document", 2, 2, 300, 300, true,
                /*hotRowFactor=*/3000.0f, /*expectMaskedRows=*/0},
        ModCase{"prefix_lm", "attention_prefix_lm", 3, 2, 150, 150, false},
        // Chunks of 100 (no multiple of the 64 x 32 tiles: tiles straddle
        // chunks), logits near 1e3 on every third row.
        ModCase{"chunked", "attention_chunked", 2, 2, 300, 300, true,
                /*hotRowFactor=*/3000.0f, /*expectMaskedRows=*/0,
                /*headDim=*/128, /*chunk=*/100},
        // 200 queries over 150 keys: causal hides keys past i - 50, so rows
        // 0-49 see none, and rows 100-149 see only keys of chunk 0, which
        // the chunk hides: 100 rows a head with O = 0, LSE = -inf.
        ModCase{"chunked_hides_rows", "attention_chunked", 1, 2, 200, 150, true,
                1.0f, /*expectMaskedRows=*/200, /*headDim=*/128,
                /*chunk=*/100},
        // Sinks from -3 to 6 over four heads, logits near 1e3 on every
        // third row; 200 queries over 77 keys, so causal hides the first
        // 123 rows entirely: O = 0 and LSE = the sink there.
        ModCase{"sink_logits_near_1e3", "attention_sink", 2, 4, 150, 150, true,
                /*hotRowFactor=*/3000.0f, /*expectMaskedRows=*/0,
                /*headDim=*/64},
        ModCase{"sink_hides_rows", "attention_sink", 1, 4, 200, 77, true, 1.0f,
                /*expectMaskedRows=*/0, /*headDim=*/64}),
    [](const ::testing::TestParamInfo<ModCase> &info) {
      return std::string(info.param.name);
    });

} // namespace

//===- CpuModsTest.cpp - the shipped score and mask mods on the CPU -------===//
//
// Compiles each shipped kernel of kernels/ that carries a score_mod or a
// mask_mod through the CPU reference pipeline (tiles of 64 x 32, so that
// lengths are ragged and several key tiles meet each mod), runs it with
// MLIR's execution engine on random inputs with poisoned outputs, and
// compares O and LSE with the float64 reference given the same mods written
// in C++: soft-capping, ALiBi, the sliding window, document masking and
// prefix-LM, with logits near 1e3 and rows the mask hides entirely.
//
//===----------------------------------------------------------------------===//

#include "CpuTestSupport.h"

#include "flashc/Reference/Reference.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

using flashc::ref::RowMods;
using flashc::rt::DType;
using namespace flashc::cputest;

namespace {

struct ModCase {
  const char *name;
  /// kernels/<kernel>.mlir: bf16, head dim 128, with the LSE.
  const char *kernel;
  int64_t batch, heads, seqQ, seqK;
  /// The kernel's causal attribute.
  bool causal;
  float hotRowFactor = 1.0f;
  /// Query rows the mods (with causal) hide entirely; -1: not checked.
  int64_t expectMaskedRows = -1;
};

std::ostream &operator<<(std::ostream &os, const ModCase &c) {
  return os << c.name;
}

/// The captures a kernel reads and the reference's mods for (b, h).
struct Captures {
  std::vector<float> slopes;
  std::vector<int32_t> documents, prefix;
  int64_t documentRows = 0;
};

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
  }
  if (kernel == "attention_prefix_lm") {
    std::uniform_int_distribution<int32_t> prefix(0, int32_t(c.seqK));
    for (int64_t b = 0; b < c.batch; ++b)
      cap.prefix.push_back(prefix(rng));
  }
  return cap;
}

RowMods referenceMods(const ModCase &c, const Captures &cap, int64_t b,
                      int64_t h) {
  std::string kernel = c.kernel;
  RowMods mods;
  if (kernel == "attention_softcap")
    mods.score = [](double x, int64_t, int64_t) {
      return 50.0 * std::tanh(x / 50.0);
    };
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
  if (kernel == "attention_prefix_lm") {
    int64_t prefix = cap.prefix[b];
    mods.mask = [prefix](int64_t i, int64_t j) { return j < prefix || j <= i; };
  }
  return mods;
}

class CpuModsTest : public ::testing::TestWithParam<ModCase> {};

TEST_P(CpuModsTest, MatchesFloat64Reference) {
  const ModCase &m = GetParam();
  Case c{m.name, m.batch,  m.heads,     m.seqQ,        m.seqK,
         128,    m.causal, DType::BF16, m.hotRowFactor};

  std::unique_ptr<mlir::MLIRContext> context = jitContext();
  std::string path = std::string(FLASHC_KERNELS_DIR) + "/" + m.kernel + ".mlir";
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(path, context.get());
  ASSERT_TRUE(module) << "cannot parse " << path;
  auto func = module->lookupSymbol<mlir::func::FuncOp>(m.kernel);
  ASSERT_TRUE(func) << path << " has no func @" << m.kernel;
  func->setAttr(mlir::LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                mlir::UnitAttr::get(context.get()));
  flashc::TileOverrides tiles;
  tiles.blockM = 64;
  tiles.blockN = 32;
  tiles.warpgroups = 1;
  auto engine = jitCompileModule(*module, tiles);
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

  using NoCapture = void (*)(void *, void *, void *, void *, void *);
  using OneCapture = void (*)(void *, void *, void *, void *, void *, void *);
  void *kernel = reinterpret_cast<void *>(*symbol);
  if (!cap.slopes.empty()) {
    StridedMemRefType<float, 1> slopes{cap.slopes.data(),
                                       cap.slopes.data(),
                                       0,
                                       {int64_t(cap.slopes.size())},
                                       {1}};
    reinterpret_cast<OneCapture>(kernel)(&qView, &kView, &vView, &oView,
                                         &lseView, &slopes);
  } else if (!cap.documents.empty()) {
    StridedMemRefType<int32_t, 2> docs{cap.documents.data(),
                                       cap.documents.data(),
                                       0,
                                       {c.batch, cap.documentRows},
                                       {cap.documentRows, 1}};
    reinterpret_cast<OneCapture>(kernel)(&qView, &kView, &vView, &oView,
                                         &lseView, &docs);
  } else if (!cap.prefix.empty()) {
    auto prefix = view1(cap.prefix);
    reinterpret_cast<OneCapture>(kernel)(&qView, &kView, &vView, &oView,
                                         &lseView, &prefix);
  } else {
    reinterpret_cast<NoCapture>(kernel)(&qView, &kView, &vView, &oView,
                                        &lseView);
  }

  ForwardErrors e =
      compareForward(c, q, k, v, o, lse, [&](int64_t b, int64_t h) {
        return referenceMods(m, cap, b, h);
      });
  ASSERT_TRUE(e.problem.empty()) << e.problem;
  std::cout << "[ numerics ] " << m.name << ": rel err O " << e.relErr
            << " (worst row " << e.worstRowErr << "), LSE " << e.lseRelErr
            << ", fully masked rows " << e.maskedRows << "\n";
  EXPECT_LT(e.relErr, 1e-2);
  EXPECT_LT(e.worstRowErr, 3e-2);
  // The reference rounds nothing but the inputs: the LSE is off only by
  // f32 sums.
  EXPECT_LT(e.lseRelErr, 1e-5);
  if (m.expectMaskedRows >= 0) {
    EXPECT_EQ(e.maskedRows, m.expectMaskedRows);
  }
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
        ModCase{"prefix_lm", "attention_prefix_lm", 3, 2, 150, 150, false}),
    [](const ::testing::TestParamInfo<ModCase> &info) {
      return std::string(info.param.name);
    });

} // namespace

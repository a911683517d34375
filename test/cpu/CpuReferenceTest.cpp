//===- CpuReferenceTest.cpp - the tile program's numerics on the CPU ------===//
//
// Compiles flash.attention through the CPU reference pipeline (the same
// -flash-tile tile program the GPU path lowers), runs it with MLIR's
// execution engine and compares O and LSE with the float64 reference, so CI
// proves the tiling and the online softmax without a GPU.
//
//===----------------------------------------------------------------------===//

#include "CpuTestSupport.h"

#include "flashc/Reference/Reference.h"

#include "llvm/Support/FormatVariadic.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

using flashc::rt::DType;
using namespace flashc::cputest;

namespace {

std::string kernelSource(const Case &c) {
  std::string type =
      llvm::formatv("memref<?x?x?x{0}x{1}{2}>", c.headDim,
                    c.dtype == DType::BF16 ? "bf16" : "f16",
                    c.bshd ? ", strided<[?, ?, ?, 1], offset: ?>" : "");
  return llvm::formatv(
      R"mlir(
func.func @attention(%q: {0}, %k: {0}, %v: {0}, %o: {0},
                     %lse: memref<?x?x?xf32>) attributes {{llvm.emit_c_interface} {
  flash.attention %q, %k, %v -> %o, lse %lse
      {{{1}config = #flash.config<block_m = {2}, block_n = {3}, warpgroups = 1>}
      : {0}, {0}, {0} -> {0}, memref<?x?x?xf32>
  return
})mlir",
      type, c.causal ? "causal, " : "", c.blockM, c.blockN);
}

class CpuReferenceTest : public ::testing::TestWithParam<Case> {};

TEST_P(CpuReferenceTest, MatchesFloat64Reference) {
  const Case &c = GetParam();
  std::unique_ptr<mlir::MLIRContext> context = jitContext();
  auto engine = jitCompile(*context, kernelSource(c));
  ASSERT_TRUE(static_cast<bool>(engine)) << llvm::toString(engine.takeError());
  auto symbol = (*engine)->lookup("_mlir_ciface_attention");
  ASSERT_TRUE(static_cast<bool>(symbol)) << llvm::toString(symbol.takeError());
  using KernelFn = void (*)(void *, void *, void *, void *, void *);
  auto kernel = reinterpret_cast<KernelFn>(*symbol);

  std::mt19937 rng(1234 + c.seqQ * 7 + c.seqK);
  const int64_t kvHeads = c.keyValueHeads();
  HostTensor q = randomTensor(rng, c, c.heads, c.seqQ, c.hotRowFactor);
  HostTensor k = randomTensor(rng, c, kvHeads, c.seqK, 1.0f);
  HostTensor v = randomTensor(rng, c, kvHeads, c.seqK, 1.0f);
  // Poison: a row the kernel forgets to write stays NaN and fails below.
  std::vector<uint16_t> o(c.batch * c.heads * c.seqQ * c.headDim,
                          flashc::ref::halfNaNBits(c.dtype));
  std::vector<float> lse(c.batch * c.heads * c.seqQ,
                         std::numeric_limits<float>::quiet_NaN());

  std::vector<uint16_t> qStored = stored(q.bits, c, c.heads, c.seqQ),
                        kStored = stored(k.bits, c, kvHeads, c.seqK),
                        vStored = stored(v.bits, c, kvHeads, c.seqK);
  auto qView = view4(qStored, c, c.heads, c.seqQ),
       kView = view4(kStored, c, kvHeads, c.seqK),
       vView = view4(vStored, c, kvHeads, c.seqK),
       oView = view4(o, c, c.heads, c.seqQ);
  auto lseView = view3(lse, c);
  kernel(&qView, &kView, &vView, &oView, &lseView);

  ForwardErrors e = compareForward(c, q, k, v, o, lse);
  ASSERT_TRUE(e.problem.empty()) << e.problem;
  double relErr = e.relErr, lseRelErr = e.lseRelErr;
  int64_t maskedRows = e.maskedRows;
  double tolerance = c.dtype == DType::BF16 ? 1e-2 : 5e-3;
  std::cout << "[ numerics ] " << c.name << ": rel err O " << relErr << ", LSE "
            << lseRelErr << ", fully masked rows " << maskedRows
            << " (tolerance " << tolerance << ")\n";
  EXPECT_LT(relErr, tolerance);
  EXPECT_LT(lseRelErr, tolerance);
  if (c.causal && c.seqQ > c.seqK) {
    EXPECT_EQ(maskedRows, c.batch * c.heads * (c.seqQ - c.seqK));
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CpuReferenceTest,
    ::testing::Values(
        Case{"d64_bf16_ragged", 2, 3, 150, 150, 64, false, DType::BF16},
        Case{"d128_bf16_causal_ragged", 1, 2, 130, 130, 128, true, DType::BF16},
        Case{"d64_f16_causal_more_queries_than_keys", 1, 2, 200, 77, 64, true,
             DType::F16},
        Case{"d128_f16_more_keys_than_queries", 2, 1, 77, 190, 128, false,
             DType::F16},
        Case{"d128_bf16_causal_more_keys", 1, 2, 70, 150, 128, true,
             DType::BF16},
        Case{"d64_bf16_logits_near_1e3", 1, 2, 96, 100, 64, false, DType::BF16,
             /*hotRowFactor=*/3000.0f},
        Case{"d128_f16_causal_logits_near_1e3", 1, 1, 100, 100, 128, true,
             DType::F16, /*hotRowFactor=*/3000.0f},
        Case{"d64_bf16_single_key_big_tiles", 1, 1, 5, 1, 64, false,
             DType::BF16, 1.0f, /*blockM=*/128, /*blockN=*/64},
        // Grouped-query attention: 32 query heads over 8 K/V heads, and
        // multi-query (one K/V head), with hot rows and ragged lengths.
        Case{"d64_bf16_causal_gqa_32_over_8", 2, 32, 70, 129, 64, true,
             DType::BF16, /*hotRowFactor=*/3000.0f, 64, 32, /*kvHeads=*/8},
        Case{"d128_f16_mqa_32_over_1", 1, 32, 129, 65, 128, false, DType::F16,
             1.0f, 64, 32, /*kvHeads=*/1},
        // B x S x H x D storage as strided B x H x S x D views, with grouped
        // K/V heads and hot rows.
        Case{"d64_bf16_causal_bshd_gqa", 2, 8, 130, 97, 64, true, DType::BF16,
             /*hotRowFactor=*/3000.0f, 64, 32, /*kvHeads=*/2,
             /*bshd=*/true}),
    [](const ::testing::TestParamInfo<Case> &info) {
      return std::string(info.param.name);
    });

/// Packed sequences (varlen): queries and keys of every sequence one after
/// another along the seq dimension of a batch of 1, delimited by
/// cu_seqlens; each sequence is checked against its own float64 attention,
/// the causal mask at its own bottom-right corner. Lengths 0, 1, 127, 128,
/// 129 and 3000 (tiles of 64 x 32), hot rows, grouped K/V heads.
TEST(CpuPackedSequences, MatchesFloat64PerSequence) {
  const std::vector<int32_t> lengths = {0, 1, 127, 128, 129, 3000};
  Case c{"packed", 1, 2, 0, 0, 64, true, DType::BF16, 3000.0f};
  c.kvHeads = 1;
  std::vector<int32_t> cu = prefixSums(lengths);
  const int64_t total = cu.back();
  c.seqQ = c.seqK = total;
  const int64_t maxLength = 3000;

  std::string type = "memref<?x?x?x64xbf16>";
  std::string source = llvm::formatv(
      R"mlir(
func.func @attention(%q: {0}, %k: {0}, %v: {0}, %o: {0}, %lse: memref<?x?x?xf32>,
                     %cq: memref<?xi32>, %ck: memref<?xi32>, %max: index)
    attributes {{llvm.emit_c_interface} {
  flash.attention %q, %k, %v -> %o, lse %lse
      packed(%cq : memref<?xi32>, %ck : memref<?xi32>, max_q %max)
      {{causal, config = #flash.config<block_m = 64, block_n = 32, warpgroups = 1>}
      : {0}, {0}, {0} -> {0}, memref<?x?x?xf32>
  return
})mlir",
      type);
  std::unique_ptr<mlir::MLIRContext> context = jitContext();
  auto engine = jitCompile(*context, source);
  ASSERT_TRUE(static_cast<bool>(engine)) << llvm::toString(engine.takeError());
  auto symbol = (*engine)->lookup("_mlir_ciface_attention");
  ASSERT_TRUE(static_cast<bool>(symbol)) << llvm::toString(symbol.takeError());
  using KernelFn =
      void (*)(void *, void *, void *, void *, void *, void *, void *, int64_t);
  auto kernel = reinterpret_cast<KernelFn>(*symbol);

  std::mt19937 rng(77);
  HostTensor q = randomTensor(rng, c, c.heads, total, c.hotRowFactor);
  HostTensor k = randomTensor(rng, c, c.kvHeads, total, 1.0f);
  HostTensor v = randomTensor(rng, c, c.kvHeads, total, 1.0f);
  std::vector<uint16_t> o(c.heads * total * c.headDim,
                          flashc::ref::halfNaNBits(c.dtype));
  std::vector<float> lse(c.heads * total,
                         std::numeric_limits<float>::quiet_NaN());
  auto qView = view4(q.bits, c, c.heads, total),
       kView = view4(k.bits, c, c.kvHeads, total),
       vView = view4(v.bits, c, c.kvHeads, total),
       oView = view4(o, c, c.heads, total);
  auto lseView = view3(lse, c);
  auto cuView = view1(cu);
  kernel(&qView, &kView, &vView, &oView, &lseView, &cuView, &cuView, maxLength);

  double scale = 1.0 / std::sqrt(64.0);
  double errSq = 0, refSq = 0;
  std::vector<double> expected(c.headDim), scratch;
  for (size_t s = 0; s < lengths.size(); ++s) {
    int64_t start = cu[s], n = lengths[s];
    for (int64_t h = 0; h < c.heads; ++h) {
      int64_t kvh = h / (c.heads / c.kvHeads);
      flashc::ref::HeadView head{
          q.values.data() + (h * total + start) * c.headDim,
          k.values.data() + (kvh * total + start) * c.headDim,
          v.values.data() + (kvh * total + start) * c.headDim};
      for (int64_t i = 0; i < n; ++i) {
        double expectedLse = flashc::ref::referenceRow(
            head, i, n, n, c.headDim, scale, /*causal=*/true, expected.data(),
            scratch);
        float gotLse = lse[h * total + start + i];
        ASSERT_NEAR(gotLse, expectedLse, 1e-2 * std::abs(expectedLse) + 1e-3)
            << "sequence " << s << " head " << h << " row " << i;
        const uint16_t *row = o.data() + (h * total + start + i) * c.headDim;
        for (int64_t d = 0; d < c.headDim; ++d) {
          float got = flashc::ref::halfBitsToFloat(row[d], c.dtype);
          ASSERT_TRUE(std::isfinite(got))
              << "sequence " << s << " row " << i << " column " << d;
          errSq += (got - expected[d]) * (got - expected[d]);
          refSq += expected[d] * expected[d];
        }
      }
    }
  }
  double relErr = std::sqrt(errSq / refSq);
  std::cout << "[ numerics ] packed sequences (lengths 0 1 127 128 129 "
               "3000, causal, GQA 2/1): rel err O "
            << relErr << "\n";
  EXPECT_LT(relErr, 1e-2);
}

} // namespace

//===- CpuBackwardTest.cpp - the backward tile program's numerics ---------===//
//
// Compiles flash.attention and flash.attention_backward through the CPU
// reference pipeline (the tile programs -flash-tile writes), runs the
// forward for O and LSE and then the backward on a random dO, and compares
// dQ, dK and dV with the float64 gradients of the same inputs (delta from
// the forward's stored O, as the op defines it), so CI proves
// the recomputation loop, the delta, the dQ accumulation and the GQA
// reduction without a GPU.
//
//===----------------------------------------------------------------------===//

#include "CpuTestSupport.h"

#include "flashc/Reference/Reference.h"

#include "llvm/Support/FormatVariadic.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

using flashc::rt::DType;
using namespace flashc::cputest;

namespace {

std::string backwardSource(const Case &c) {
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
}
func.func @attention_backward(%q: {0}, %k: {0}, %v: {0}, %o: {0}, %do: {0},
                              %lse: memref<?x?x?xf32>, %dq: {0}, %dk: {0},
                              %dv: {0}) attributes {{llvm.emit_c_interface} {
  flash.attention_backward %q, %k, %v, %o, %do, %lse -> %dq, %dk, %dv
      {{{1}config = #flash.config<block_m = {2}, block_n = {3}, warpgroups = 1>}
      : {0}, {0}, {0}, {0}, {0}, memref<?x?x?xf32> -> {0}, {0}, {0}
  return
})mlir",
      type, c.causal ? "causal, " : "", c.blockM, c.blockN);
}

class CpuBackwardTest : public ::testing::TestWithParam<Case> {};

TEST_P(CpuBackwardTest, GradientsMatchFloat64) {
  const Case &c = GetParam();
  std::unique_ptr<mlir::MLIRContext> context = jitContext();
  auto engine = jitCompile(*context, backwardSource(c));
  ASSERT_TRUE(static_cast<bool>(engine)) << llvm::toString(engine.takeError());
  auto forwardSymbol = (*engine)->lookup("_mlir_ciface_attention");
  auto backwardSymbol = (*engine)->lookup("_mlir_ciface_attention_backward");
  ASSERT_TRUE(static_cast<bool>(forwardSymbol))
      << llvm::toString(forwardSymbol.takeError());
  ASSERT_TRUE(static_cast<bool>(backwardSymbol))
      << llvm::toString(backwardSymbol.takeError());
  using ForwardFn = void (*)(void *, void *, void *, void *, void *);
  using BackwardFn = void (*)(void *, void *, void *, void *, void *, void *,
                              void *, void *, void *);
  auto forward = reinterpret_cast<ForwardFn>(*forwardSymbol);
  auto backward = reinterpret_cast<BackwardFn>(*backwardSymbol);

  std::mt19937 rng(4321 + c.seqQ * 7 + c.seqK);
  const int64_t kvHeads = c.keyValueHeads();
  HostTensor q = randomTensor(rng, c, c.heads, c.seqQ, c.hotRowFactor);
  HostTensor k = randomTensor(rng, c, kvHeads, c.seqK, 1.0f);
  HostTensor v = randomTensor(rng, c, kvHeads, c.seqK, 1.0f);
  HostTensor dO = randomTensor(rng, c, c.heads, c.seqQ, 1.0f);

  std::vector<uint16_t> qStored = stored(q.bits, c, c.heads, c.seqQ),
                        kStored = stored(k.bits, c, kvHeads, c.seqK),
                        vStored = stored(v.bits, c, kvHeads, c.seqK),
                        dOStored = stored(dO.bits, c, c.heads, c.seqQ);
  uint16_t nan = flashc::ref::halfNaNBits(c.dtype);
  // Poison: an element the backward forgets to write stays NaN.
  std::vector<uint16_t> o(qStored.size(), nan), dq(qStored.size(), nan),
      dk(kStored.size(), nan), dv(vStored.size(), nan);
  std::vector<float> lse(c.batch * c.heads * c.seqQ,
                         std::numeric_limits<float>::quiet_NaN());
  auto qView = view4(qStored, c, c.heads, c.seqQ),
       kView = view4(kStored, c, kvHeads, c.seqK),
       vView = view4(vStored, c, kvHeads, c.seqK),
       oView = view4(o, c, c.heads, c.seqQ),
       dOView = view4(dOStored, c, c.heads, c.seqQ),
       dqView = view4(dq, c, c.heads, c.seqQ),
       dkView = view4(dk, c, kvHeads, c.seqK),
       dvView = view4(dv, c, kvHeads, c.seqK);
  auto lseView = view3(lse, c);
  forward(&qView, &kView, &vView, &oView, &lseView);
  backward(&qView, &kView, &vView, &oView, &dOView, &lseView, &dqView, &dkView,
           &dvView);

  // The forward's output as the backward read it (B x H x N x D order):
  // flash.attention_backward's delta = rowsum(dO * O) of this O.
  std::vector<double> storedOut(o.size());
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t n = 0; n < c.seqQ; ++n)
        for (int64_t d = 0; d < c.headDim; ++d)
          storedOut[((b * c.heads + h) * c.seqQ + n) * c.headDim + d] =
              flashc::ref::halfBitsToFloat(
                  o[elementIndex(c, c.heads, c.seqQ, b, h, n, d)], c.dtype);

  // float64 gradients; the query heads of a group sum into their K/V head.
  double scale = 1.0 / std::sqrt(static_cast<double>(c.headDim));
  const int64_t group = c.heads / kvHeads;
  std::vector<double> wantDq(q.values.size()), wantDk(k.values.size(), 0.0),
      wantDv(v.values.size(), 0.0);
  for (int64_t bh = 0; bh < c.batch * c.heads; ++bh) {
    int64_t kvSlice = (bh / c.heads) * kvHeads + (bh % c.heads) / group;
    int64_t qOffset = bh * c.seqQ * c.headDim;
    int64_t kvOffset = kvSlice * c.seqK * c.headDim;
    flashc::ref::HeadView head{q.values.data() + qOffset,
                               k.values.data() + kvOffset,
                               v.values.data() + kvOffset};
    flashc::ref::referenceBackwardHead(
        head, dO.values.data() + qOffset, storedOut.data() + qOffset, c.seqQ,
        c.seqK, c.headDim, scale, c.causal, wantDq.data() + qOffset,
        wantDk.data() + kvOffset, wantDv.data() + kvOffset);
  }

  // A query row that sees no key has dQ = 0 exactly.
  int64_t maskedRows = 0;
  if (c.causal && c.seqQ > c.seqK) {
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t h = 0; h < c.heads; ++h)
        for (int64_t n = 0; n < c.seqQ - c.seqK; ++n, ++maskedRows)
          for (int64_t d = 0; d < c.headDim; ++d)
            ASSERT_EQ(
                flashc::ref::halfBitsToFloat(
                    dq[elementIndex(c, c.heads, c.seqQ, b, h, n, d)], c.dtype),
                0.0f)
                << "dQ of fully masked row " << n;
  }
  double errDq = relativeError(dq, wantDq, c, c.heads, c.seqQ, "dQ");
  double errDk = relativeError(dk, wantDk, c, kvHeads, c.seqK, "dK");
  double errDv = relativeError(dv, wantDv, c, kvHeads, c.seqK, "dV");
  double tolerance = c.dtype == DType::BF16 ? 1e-2 : 5e-3;
  std::cout << "[ numerics ] " << c.name << ": rel err dQ " << errDq << ", dK "
            << errDk << ", dV " << errDv << ", fully masked rows " << maskedRows
            << " (tolerance " << tolerance << ")\n";
  EXPECT_LT(errDq, tolerance);
  EXPECT_LT(errDk, tolerance);
  EXPECT_LT(errDv, tolerance);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, CpuBackwardTest,
    ::testing::Values(
        Case{"d64_bf16_ragged", 2, 3, 150, 150, 64, false, DType::BF16},
        Case{"d64_bf16_causal_ragged", 1, 2, 130, 130, 64, true, DType::BF16},
        Case{"d64_f16_causal_more_queries_than_keys", 1, 2, 200, 77, 64, true,
             DType::F16},
        Case{"d128_bf16_causal_more_keys_than_queries", 1, 2, 70, 190, 128,
             true, DType::BF16},
        Case{"d64_bf16_logits_near_1e3", 1, 2, 96, 100, 64, false, DType::BF16,
             /*hotRowFactor=*/3000.0f},
        Case{"d64_bf16_causal_gqa_32_over_8", 1, 32, 70, 129, 64, true,
             DType::BF16, /*hotRowFactor=*/3000.0f, 64, 32, /*kvHeads=*/8},
        Case{"d64_f16_mqa_32_over_1", 1, 32, 65, 97, 64, false, DType::F16,
             1.0f, 64, 32, /*kvHeads=*/1},
        Case{"d64_bf16_causal_bshd_gqa", 2, 8, 130, 97, 64, true, DType::BF16,
             /*hotRowFactor=*/3000.0f, 64, 32, /*kvHeads=*/2,
             /*bshd=*/true}),
    [](const ::testing::TestParamInfo<Case> &info) {
      return std::string(info.param.name);
    });

/// Packed sequences: the forward and the backward over one batch of
/// lengths 0, 1, 127, 128, 129 and 700 (queries and keys alike), causal,
/// GQA 4/2, hot rows; each sequence's gradients checked against its own
/// float64 problem, dQ poisoned before the run.
TEST(CpuPackedBackward, GradientsMatchFloat64PerSequence) {
  const std::vector<int32_t> lengths = {0, 1, 127, 128, 129, 700};
  Case c{"packed", 1, 4, 0, 0, 64, true, DType::BF16, 3000.0f};
  c.kvHeads = 2;
  std::vector<int32_t> cu = prefixSums(lengths);
  const int64_t total = cu.back();
  c.seqQ = c.seqK = total;
  const int64_t maxLength = 700;

  std::string source = R"mlir(
!t = memref<1x?x?x64xbf16>
!l = memref<1x?x?xf32>
func.func @attention(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !l,
                     %cq: memref<?xi32>, %ck: memref<?xi32>, %max: index)
    attributes {llvm.emit_c_interface} {
  flash.attention %q, %k, %v -> %o, lse %lse
      packed(%cq : memref<?xi32>, %ck : memref<?xi32>, max_q %max)
      {causal, config = #flash.config<block_m = 64, block_n = 32, warpgroups = 1>}
      : !t, !t, !t -> !t, !l
  return
}
func.func @attention_backward(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !l,
                              %dq: !t, %dk: !t, %dv: !t, %cq: memref<?xi32>,
                              %ck: memref<?xi32>, %maxq: index, %maxk: index)
    attributes {llvm.emit_c_interface} {
  flash.attention_backward %q, %k, %v, %o, %do, %lse -> %dq, %dk, %dv
      packed(%cq : memref<?xi32>, %ck : memref<?xi32>, max_q %maxq, max_k %maxk)
      {causal, config = #flash.config<block_m = 64, block_n = 32, warpgroups = 1>}
      : !t, !t, !t, !t, !t, !l -> !t, !t, !t
  return
})mlir";
  std::unique_ptr<mlir::MLIRContext> context = jitContext();
  auto engine = jitCompile(*context, source);
  ASSERT_TRUE(static_cast<bool>(engine)) << llvm::toString(engine.takeError());
  auto forwardSymbol = (*engine)->lookup("_mlir_ciface_attention");
  auto backwardSymbol = (*engine)->lookup("_mlir_ciface_attention_backward");
  ASSERT_TRUE(forwardSymbol && backwardSymbol);
  using ForwardFn =
      void (*)(void *, void *, void *, void *, void *, void *, void *, int64_t);
  using BackwardFn =
      void (*)(void *, void *, void *, void *, void *, void *, void *, void *,
               void *, void *, void *, int64_t, int64_t);
  auto forward = reinterpret_cast<ForwardFn>(*forwardSymbol);
  auto backward = reinterpret_cast<BackwardFn>(*backwardSymbol);

  std::mt19937 rng(99);
  HostTensor q = randomTensor(rng, c, c.heads, total, c.hotRowFactor);
  HostTensor k = randomTensor(rng, c, c.kvHeads, total, 1.0f);
  HostTensor v = randomTensor(rng, c, c.kvHeads, total, 1.0f);
  HostTensor dO = randomTensor(rng, c, c.heads, total, 1.0f);
  uint16_t nan = flashc::ref::halfNaNBits(c.dtype);
  std::vector<uint16_t> o(q.bits.size(), nan), dq(q.bits.size(), nan),
      dk(k.bits.size(), nan), dv(v.bits.size(), nan);
  std::vector<float> lse(c.heads * total,
                         std::numeric_limits<float>::quiet_NaN());
  auto qView = view4(q.bits, c, c.heads, total),
       kView = view4(k.bits, c, c.kvHeads, total),
       vView = view4(v.bits, c, c.kvHeads, total),
       oView = view4(o, c, c.heads, total),
       dOView = view4(dO.bits, c, c.heads, total),
       dqView = view4(dq, c, c.heads, total),
       dkView = view4(dk, c, c.kvHeads, total),
       dvView = view4(dv, c, c.kvHeads, total);
  auto lseView = view3(lse, c);
  auto cuView = view1(cu);
  forward(&qView, &kView, &vView, &oView, &lseView, &cuView, &cuView,
          maxLength);
  backward(&qView, &kView, &vView, &oView, &dOView, &lseView, &dqView, &dkView,
           &dvView, &cuView, &cuView, maxLength, maxLength);

  // The float64 gradients of each sequence, in the packed layout.
  double scale = 1.0 / std::sqrt(64.0);
  const int64_t group = c.heads / c.kvHeads;
  std::vector<double> wantDq(q.values.size(), 0.0),
      wantDk(k.values.size(), 0.0), wantDv(v.values.size(), 0.0);
  std::vector<double> hq, hk, hv, hdo, ho, gq, gk, gv;
  for (size_t s = 0; s < lengths.size(); ++s) {
    int64_t start = cu[s], n = lengths[s];
    if (n == 0)
      continue;
    auto slice = [&](const std::vector<double> &from, int64_t head,
                     std::vector<double> &to) {
      to.assign(from.begin() + (head * total + start) * c.headDim,
                from.begin() + (head * total + start + n) * c.headDim);
    };
    for (int64_t h = 0; h < c.heads; ++h) {
      int64_t kvh = h / group;
      slice(q.values, h, hq);
      slice(k.values, kvh, hk);
      slice(v.values, kvh, hv);
      slice(dO.values, h, hdo);
      ho.resize(hdo.size());
      for (size_t i = 0; i < ho.size(); ++i)
        ho[i] = flashc::ref::halfBitsToFloat(
            o[(h * total + start) * c.headDim + i], c.dtype);
      gq.assign(hq.size(), 0.0);
      gk.assign(hk.size(), 0.0);
      gv.assign(hv.size(), 0.0);
      flashc::ref::referenceBackwardHead(
          {hq.data(), hk.data(), hv.data()}, hdo.data(), ho.data(), n, n,
          c.headDim, scale,
          /*causal=*/true, gq.data(), gk.data(), gv.data());
      for (int64_t i = 0; i < n * c.headDim; ++i) {
        wantDq[(h * total + start) * c.headDim + i] = gq[i];
        wantDk[(kvh * total + start) * c.headDim + i] += gk[i];
        wantDv[(kvh * total + start) * c.headDim + i] += gv[i];
      }
    }
  }
  double errDq = relativeError(dq, wantDq, c, c.heads, total, "dQ");
  double errDk = relativeError(dk, wantDk, c, c.kvHeads, total, "dK");
  double errDv = relativeError(dv, wantDv, c, c.kvHeads, total, "dV");
  std::cout << "[ numerics ] packed sequences (lengths 0 1 127 128 129 700, "
               "causal, GQA 4/2): rel err dQ "
            << errDq << ", dK " << errDk << ", dV " << errDv << "\n";
  EXPECT_LT(errDq, 1e-2);
  EXPECT_LT(errDk, 1e-2);
  EXPECT_LT(errDv, 1e-2);
}

} // namespace

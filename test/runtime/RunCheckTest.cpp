//===- RunCheckTest.cpp - flash-run's library on the host -----------------===//
//
// lib/Run without a GPU: problem strides in both layouts, seeded inputs, and
// the check against the float64 reference fed outputs computed by that
// reference (pass), left poisoned (fail, NaNs counted) or with a fully
// masked row written wrong (fail).
//
//===----------------------------------------------------------------------===//

#include "flashc/Reference/HostData.h"
#include "flashc/Reference/Reference.h"
#include "flashc/Run/RunKernel.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace flashc;
using namespace flashc::rt;

namespace {

KernelMetadata smallMeta(bool causal) {
  KernelMetadata meta;
  meta.kernel = "k";
  meta.dtype = DType::BF16;
  meta.headDim = 16;
  meta.causal = causal;
  meta.scale = 0.25;
  meta.hasLse = true;
  return meta;
}

/// What a correct kernel writes: the reference, rounded to the dtype.
run::DeviceOutputs referenceOutputs(const run::Problem &p,
                                    const KernelMetadata &meta,
                                    const run::HostInputs &in) {
  run::DeviceOutputs out;
  out.o.assign(size_t(p.elems[3]), 0);
  out.lse.assign(size_t(p.elems[4]), 0);
  std::vector<double> row(size_t(p.d)), scratch;
  for (int64_t b = 0; b < p.b; ++b)
    for (int64_t h = 0; h < p.h; ++h) {
      int64_t bh = b * p.h + h;
      ref::HeadView head{in.values[0].data() + size_t(bh * p.nq * p.d),
                         in.values[1].data() + size_t(bh * p.nk * p.d),
                         in.values[2].data() + size_t(bh * p.nk * p.d)};
      for (int64_t i = 0; i < p.nq; ++i) {
        double lse = ref::referenceRow(head, i, p.nq, p.nk, p.d, meta.scale,
                                       meta.causal, row.data(), scratch);
        for (int64_t d = 0; d < p.d; ++d)
          out.o[size_t(ref::offsetOf(p.strides[3], b, h, i, d))] =
              ref::floatToHalfBits(float(row[size_t(d)]), p.dtype);
        out.lse[size_t(b * p.strides[4][0] + h * p.strides[4][1] + i)] =
            float(lse);
      }
    }
  return out;
}

TEST(RunProblem, StridesFollowTheLayout) {
  KernelMetadata meta = smallMeta(false);
  run::Problem bhsd = run::Problem::make(meta, {2, 3, 5, 7}, run::Layout::BHSD);
  EXPECT_EQ(bhsd.nk, 7);
  EXPECT_EQ(bhsd.strides[0][1], 5 * 16);
  EXPECT_EQ(bhsd.strides[1][2], 16);
  EXPECT_EQ(bhsd.elems[1], 2 * 3 * 7 * 16);
  EXPECT_EQ(bhsd.elems[4], 2 * 3 * 5);
  run::Problem bshd =
      run::Problem::make(meta, {2, 3, 5, -1}, run::Layout::BSHD);
  EXPECT_EQ(bshd.nk, 5);
  EXPECT_EQ(bshd.strides[0][1], 16);
  EXPECT_EQ(bshd.strides[0][2], 3 * 16);
  EXPECT_EQ(bshd.setBytes(), size_t(4 * 2 * 3 * 5 * 16 * 2 + 2 * 3 * 5 * 4));
  EXPECT_EQ(run::benchInputSets(size_t(1) << 30), 1u);
  EXPECT_EQ(run::benchInputSets(size_t(1) << 20), 8u);
}

TEST(RunCheck, ReferenceOutputsPassPoisonedOnesFail) {
  for (bool causal : {false, true}) {
    KernelMetadata meta = smallMeta(causal);
    // Nq > Nk: the first causal rows see no key.
    run::Problem p =
        run::Problem::make(meta, {1, 2, 40, 24}, run::Layout::BSHD);
    std::mt19937_64 rng(1);
    run::HostInputs in = run::generateInputs(p, rng, /*hardRows=*/true);
    run::DeviceOutputs good = referenceOutputs(p, meta, in);
    run::CheckResult pass = run::checkOutputs(p, meta, in, good, rng, {});
    EXPECT_TRUE(pass.pass) << causal;
    EXPECT_TRUE(pass.allRows);
    EXPECT_EQ(pass.rows, size_t(2 * 40));
    EXPECT_EQ(pass.maskedRows, causal ? 2 * 16 : 0);
    EXPECT_DOUBLE_EQ(pass.tolerance, 1e-2);

    run::DeviceOutputs poisoned = good;
    poisoned.o[5] = ref::halfNaNBits(p.dtype);
    poisoned.lse[3] = NAN;
    run::CheckResult fail = run::checkOutputs(p, meta, in, poisoned, rng, {});
    EXPECT_FALSE(fail.pass);
    EXPECT_EQ(fail.nanO, 1u);
    EXPECT_EQ(fail.nanLse, 1u);
    std::string text;
    llvm::raw_string_ostream os(text);
    run::printCheck(os, fail);
    EXPECT_NE(text.find("1 NaN in o and 1 in lse"), std::string::npos) << text;
    EXPECT_NE(text.find("-> FAIL"), std::string::npos) << text;
  }
}

TEST(RunCheck, MaskedRowsMustBeZeroAndMinusInfinity) {
  KernelMetadata meta = smallMeta(true);
  run::Problem p = run::Problem::make(meta, {1, 1, 32, 16}, run::Layout::BHSD);
  std::mt19937_64 rng(3);
  run::HostInputs in = run::generateInputs(p, rng, /*hardRows=*/false);
  run::DeviceOutputs out = referenceOutputs(p, meta, in);
  out.lse[0] = 0; // row 0 sees no key
  run::CheckResult result = run::checkOutputs(p, meta, in, out, rng, {});
  EXPECT_FALSE(result.pass);
  EXPECT_EQ(result.maskedRows, 16);
  EXPECT_EQ(result.badMasked, 1);
}

} // namespace

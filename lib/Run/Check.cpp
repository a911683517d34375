//===- Check.cpp - outputs against the float64 reference, and the reports -===//
//
// Every row of a small problem, a sample of a large one, is recomputed in
// double precision (flashc/Reference) and compared with what the kernel
// wrote: the relative error of each O row, the LSE's, fully masked rows
// exactly O = 0 and LSE = -inf, and no NaN left from the poisoning. Also
// the lines flash-run prints for a check and for a timing.
//
//===----------------------------------------------------------------------===//

#include "flashc/Reference/HostData.h"
#include "flashc/Reference/Reference.h"
#include "flashc/Run/RunKernel.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cmath>

using namespace llvm;
using namespace flashc::rt;

namespace flashc::run {

/// Rows of B*H*N checked: all of them while the reference stays cheap.
static std::vector<int64_t> rowsToCheck(const Problem &p, bool causal,
                                        std::mt19937_64 &rng,
                                        unsigned sampleRows, bool &all) {
  int64_t rowsTotal = p.b * p.h * p.nq;
  all = double(rowsTotal) * double(p.nk) * double(p.d) <= 3e8;
  std::vector<int64_t> rows;
  if (all) {
    for (int64_t r = 0; r < rowsTotal; ++r)
      rows.push_back(r);
    return rows;
  }
  std::uniform_int_distribution<int64_t> pick(0, rowsTotal - 1);
  rows = {0, rowsTotal - 1, 3}; // first, last, a hard row
  int64_t masked = causal ? p.nq - p.nk : 0;
  for (int64_t i = 0; i < std::min<int64_t>(masked, 8); ++i)
    rows.push_back(i); // fully-masked rows of (0, 0)
  while (rows.size() < sampleRows)
    rows.push_back(pick(rng));
  return rows;
}

CheckResult checkOutputs(const Problem &p, const KernelMetadata &meta,
                         const HostInputs &inputs, const DeviceOutputs &outputs,
                         std::mt19937_64 &rng, const CheckOptions &options) {
  CheckResult result;
  // Every element written: no NaN survives anywhere.
  for (uint16_t bits : outputs.o)
    result.nanO += std::isnan(ref::halfBitsToFloat(bits, p.dtype));
  for (float x : outputs.lse)
    result.nanLse += std::isnan(x);

  std::vector<int64_t> rows =
      rowsToCheck(p, meta.causal, rng, options.sampleRows, result.allRows);
  result.rows = rows.size();
  result.tolerance = options.tolerance > 0
                         ? options.tolerance
                         : (p.dtype == DType::BF16 ? 1e-2 : 5e-3);
  std::vector<double> out(size_t(p.d)), scratch;
  for (int64_t r : rows) {
    int64_t i = r % p.nq, bh = r / p.nq, b = bh / p.h, h = bh % p.h;
    int64_t kv = p.kvSliceOf(bh);
    // A packed row sees its own sequence's rows alone.
    int64_t q0 = 0, k0 = 0, nq = p.nq, nk = p.nk;
    if (p.packed()) {
      int64_t s = p.sequenceOf(i);
      q0 = p.cuQ[s], k0 = p.cuK[s];
      nq = p.cuQ[s + 1] - q0, nk = p.cuK[s + 1] - k0;
    }
    ref::HeadView head{inputs.values[0].data() + size_t((bh * p.nq + q0) * p.d),
                       inputs.values[1].data() + size_t((kv * p.nk + k0) * p.d),
                       inputs.values[2].data() +
                           size_t((kv * p.nk + k0) * p.d)};
    double lseRef = ref::referenceRow(head, i - q0, nq, nk, p.d, meta.scale,
                                      meta.causal, out.data(), scratch);
    double num = 0, den = 0;
    bool allZero = true;
    for (int64_t d = 0; d < p.d; ++d) {
      double got = ref::halfBitsToFloat(
          outputs.o[size_t(ref::offsetOf(p.strides[3], b, h, i, d))], p.dtype);
      allZero &= got == 0.0;
      num += (got - out[size_t(d)]) * (got - out[size_t(d)]);
      den += out[size_t(d)] * out[size_t(d)];
    }
    double lseGot =
        p.hasLse
            ? outputs.lse[size_t(b * p.strides[4][0] + h * p.strides[4][1] + i)]
            : 0;
    if (std::isinf(lseRef)) { // fully masked: O = 0, LSE = -inf exactly
      ++result.maskedRows;
      if (!allZero || (p.hasLse && !(std::isinf(lseGot) && lseGot < 0)))
        ++result.badMasked;
      continue;
    }
    double err = std::sqrt(num / den);
    if (!(err <= result.maxErr)) { // NaN counts as the worst
      result.maxErr = std::isnan(err) ? INFINITY : err;
      result.worstRow = r;
    }
    if (p.hasLse) {
      double le = std::fabs(lseGot - lseRef) / std::max(1.0, std::fabs(lseRef));
      if (!(le <= result.maxLseErr))
        result.maxLseErr = std::isnan(le) ? INFINITY : le;
    }
  }
  result.pass = result.maxErr <= result.tolerance &&
                result.maxLseErr <= result.tolerance && result.badMasked == 0 &&
                result.nanO == 0 && result.nanLse == 0;
  return result;
}

void printCheck(raw_ostream &os, const CheckResult &r) {
  os << formatv("check: {0} rows ({1}), {2} fully masked: max rel err "
                "||o-ref||/||ref|| = {3:e} (row {4}), max lse err = "
                "{5:e}, tolerance {6:e}",
                r.rows, r.allRows ? "all" : "sampled", r.maskedRows, r.maxErr,
                r.worstRow, r.maxLseErr, r.tolerance);
  if (r.nanO || r.nanLse)
    os << formatv(", {0} NaN in o and {1} in lse (unwritten?)", r.nanO,
                  r.nanLse);
  if (r.badMasked)
    os << formatv(", {0} masked rows not O=0/LSE=-inf", r.badMasked);
  os << (r.pass ? " -> PASS\n" : " -> FAIL\n");
}

void printBench(raw_ostream &os, const BenchResult &r) {
  os << formatv("bench: median {0:f4} ms over {1} launches ({2} input "
                "sets of {3:f1} MB, {4} warm-up), {5:f2} TFLOP/s\n",
                r.medianMs, r.iters, r.numSets, r.setBytes / 1e6, r.warmup,
                r.tflops);
}

} // namespace flashc::run

//===- Reference.cpp - float64 attention reference for one row ------------===//
//
// The two-pass (max, then exp-sum) softmax in double precision: the ground
// truth flash-run checks kernels against.
//
//===----------------------------------------------------------------------===//

#include "flashc/Reference/Reference.h"

#include <cmath>
#include <limits>

namespace flashc::ref {

double referenceRow(const HeadView &head, int64_t i, int64_t seqQ, int64_t seqK,
                    int64_t headDim, double scale, bool causal, double *out,
                    std::vector<double> &scratch, const RowMods &mods) {
  constexpr double kNegInf = -std::numeric_limits<double>::infinity();
  int64_t last = causal ? std::min(seqK - 1, i + seqK - seqQ) : seqK - 1;
  for (int64_t d = 0; d < headDim; ++d)
    out[d] = 0;
  if (last < 0)
    return mods.hasSink ? mods.sink : kNegInf;
  scratch.resize(size_t(last + 1));
  const double *q = head.q + i * headDim;
  double m = kNegInf;
  for (int64_t j = 0; j <= last; ++j) {
    if (mods.mask && !mods.mask(i, j)) {
      scratch[j] = kNegInf;
      continue;
    }
    const double *k = head.k + j * headDim;
    double x = 0;
    for (int64_t d = 0; d < headDim; ++d)
      x += q[d] * k[d];
    scratch[j] = mods.score ? mods.score(x * scale, i, j) : x * scale;
    m = std::max(m, scratch[j]);
  }
  if (mods.hasSink)
    m = std::max(m, mods.sink);
  if (m == kNegInf)
    return kNegInf;
  // The sink adds to the denominator only.
  double l = mods.hasSink ? std::exp(mods.sink - m) : 0.0;
  for (int64_t j = 0; j <= last; ++j) {
    if (scratch[j] == kNegInf)
      continue;
    double p = std::exp(scratch[j] - m);
    l += p;
    const double *v = head.v + j * headDim;
    for (int64_t d = 0; d < headDim; ++d)
      out[d] += p * v[d];
  }
  for (int64_t d = 0; d < headDim; ++d)
    out[d] /= l;
  return m + std::log(l);
}

} // namespace flashc::ref

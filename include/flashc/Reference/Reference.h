//===- Reference.h - float64 attention reference for one row ----*- C++ -*-===//
//
// softmax(scale * q K^T) V and its log-sum-exp for a single query row, in
// double precision, with flashc's causal convention (bottom-right aligned).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_REFERENCE_REFERENCE_H
#define FLASHC_REFERENCE_REFERENCE_H

#include <cstdint>
#include <vector>

namespace flashc::ref {

/// Host copy of one (b, h) slice: rows of D doubles, row-major.
struct HeadView {
  const double *q; ///< seqQ x D
  const double *k; ///< seqK x D
  const double *v; ///< seqK x D
};

/// Computes row `i`: writes D values to `out` and returns the LSE
/// (-inf, with out = 0, if the row sees no key).
double referenceRow(const HeadView &head, int64_t i, int64_t seqQ, int64_t seqK,
                    int64_t headDim, double scale, bool causal, double *out,
                    std::vector<double> &scratch);

} // namespace flashc::ref

#endif // FLASHC_REFERENCE_REFERENCE_H

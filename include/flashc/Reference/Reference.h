//===- Reference.h - float64 attention reference for one row ----*- C++ -*-===//
//
// softmax(scale * q K^T) V and its log-sum-exp for a single query row, and
// the gradients of one head, in double precision, with flashc's causal
// convention (bottom-right aligned).
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_REFERENCE_REFERENCE_H
#define FLASHC_REFERENCE_REFERENCE_H

#include <cstdint>
#include <functional>
#include <vector>

namespace flashc::ref {

/// Host copy of one (b, h) slice: rows of D doubles, row-major.
struct HeadView {
  const double *q; ///< seqQ x D
  const double *k; ///< seqK x D
  const double *v; ///< seqK x D
};

/// A score mod and a mask mod (flash.attention's regions) for one (b, h):
/// `score(x, i, j)` is the logit of query i and key j given the scaled one,
/// `mask(i, j)` whether i sees j. Either may be empty (identity / all).
/// `scoreGrad(x, i, j)` is d score / dx, written by hand (the backward
/// reference; empty: 1). `sink` is the head's attention sink logit, when
/// `hasSink`.
struct RowMods {
  std::function<double(double, int64_t, int64_t)> score;
  std::function<bool(int64_t, int64_t)> mask;
  std::function<double(double, int64_t, int64_t)> scoreGrad;
  bool hasSink = false;
  double sink = 0;
};

/// Computes row `i`: writes D values to `out` and returns the LSE
/// (-inf, with out = 0, if the row sees no key; the sink's logit with a
/// sink).
double referenceRow(const HeadView &head, int64_t i, int64_t seqQ, int64_t seqK,
                    int64_t headDim, double scale, bool causal, double *out,
                    std::vector<double> &scratch, const RowMods &mods = {});

/// The gradients of one query head's attention in double precision:
/// O = softmax(scale * Q K^T) V with flashc's causal convention, and dO the
/// gradient of the loss with respect to O. Writes dQ (seqQ x D) and *adds*
/// this head's share to dK and dV (seqK x D each), so that the query heads
/// of a grouped-query group sum into their K/V head's gradients. A query
/// row that sees no key contributes nothing.
///
/// delta_i = dO_i . O_i is taken from `storedOut` (seqQ x D) where given:
/// flash.attention_backward's definition, from the forward's rounded
/// output, whose rounding rows with huge logits amplify into dK by |q|
/// whatever the kernel; null: the exact sum_j P_ij dP_ij.
///
/// With `mods` the logits go through them as in referenceRow, the raw
/// logit's gradient takes mods.scoreGrad, and a sink's gradient
/// -sum_i exp(sink - lse_i) delta_i is *added* to `*dSink` (non-null then).
void referenceBackwardHead(const HeadView &head, const double *dOut,
                           const double *storedOut, int64_t seqQ, int64_t seqK,
                           int64_t headDim, double scale, bool causal,
                           double *dq, double *dk, double *dv,
                           const RowMods &mods = {}, double *dSink = nullptr);

} // namespace flashc::ref

#endif // FLASHC_REFERENCE_REFERENCE_H

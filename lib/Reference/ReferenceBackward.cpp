//===- ReferenceBackward.cpp - float64 attention gradients of one head ----===//
//
// The gradients by the textbook formulas over the whole row (no tiling, no
// online softmax, no LSE from the forward): the ground truth the tiled
// backward is checked against.
//
//===----------------------------------------------------------------------===//

#include "flashc/Reference/Reference.h"

#include <cmath>

namespace flashc::ref {

void referenceBackwardHead(const HeadView &head, const double *dOut,
                           const double *storedOut, int64_t seqQ, int64_t seqK,
                           int64_t headDim, double scale, bool causal,
                           double *dq, double *dk, double *dv,
                           const RowMods &mods, double *dSink) {
  std::vector<double> out(static_cast<size_t>(headDim)), scratch;
  std::vector<double> p(static_cast<size_t>(seqK)),
      dp(static_cast<size_t>(seqK)), grad(static_cast<size_t>(seqK));
  for (int64_t i = 0; i < seqQ; ++i) {
    double *dqRow = dq + i * headDim;
    for (int64_t d = 0; d < headDim; ++d)
      dqRow[d] = 0;
    double lse = referenceRow(head, i, seqQ, seqK, headDim, scale, causal,
                              out.data(), scratch, mods);
    if (std::isinf(lse))
      continue;
    int64_t last = causal ? std::min(seqK - 1, i + seqK - seqQ) : seqK - 1;
    const double *q = head.q + i * headDim;
    const double *dO = dOut + i * headDim;
    // P_ij = exp(scale * q_i . k_j - lse_i); dP_ij = dO_i . v_j.
    // delta_i = sum_j P_ij dP_ij (= dO_i . O_i).
    double delta = 0;
    for (int64_t j = 0; j <= last; ++j) {
      const double *k = head.k + j * headDim;
      const double *v = head.v + j * headDim;
      double s = 0, g = 0;
      for (int64_t d = 0; d < headDim; ++d) {
        s += q[d] * k[d];
        g += dO[d] * v[d];
      }
      double x = s * scale;
      bool seen = !mods.mask || mods.mask(i, j);
      double modded = mods.score ? mods.score(x, i, j) : x;
      p[j] = seen ? std::exp(modded - lse) : 0.0;
      grad[j] = mods.scoreGrad ? mods.scoreGrad(x, i, j) : 1.0;
      dp[j] = g;
      delta += p[j] * g;
    }
    if (storedOut) {
      delta = 0;
      for (int64_t d = 0; d < headDim; ++d)
        delta += dO[d] * storedOut[i * headDim + d];
    }
    if (dSink)
      *dSink -= std::exp(mods.sink - lse) * delta;
    for (int64_t j = 0; j <= last; ++j) {
      // dS_ij = P_ij (dP_ij - delta_i), the gradient of the modded logit;
      // the scaled logit's is score'(x) times that, the raw one's scale
      // times more.
      if (p[j] == 0.0)
        continue;
      double ds = p[j] * (dp[j] - delta) * grad[j] * scale;
      const double *k = head.k + j * headDim;
      double *dkRow = dk + j * headDim;
      double *dvRow = dv + j * headDim;
      for (int64_t d = 0; d < headDim; ++d) {
        dqRow[d] += ds * k[d];
        dkRow[d] += ds * q[d];
        dvRow[d] += p[j] * dO[d];
      }
    }
  }
}

} // namespace flashc::ref

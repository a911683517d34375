//===- Inputs.cpp - the timer's inputs and the reference's answer ---------===//
//
// The inputs follow tools/flash-run: seeded uniform(-1, 1) values rounded to
// the kernel's dtype with every 16th query row scaled so its logits reach
// ~1e3, in dense B x H x N x D tensors, enough sets of them to rotate past
// L2. The reference rows of the check shape are computed once, before any
// candidate runs.
//
//===----------------------------------------------------------------------===//

#include "TimerImpl.h"

#include "flashc/Reference/HostData.h"
#include "flashc/Reference/Reference.h"

#include "llvm/ADT/STLExtras.h"

#include <algorithm>

using namespace llvm;
using namespace flashc;
using namespace flashc::rt;

namespace flashc::tune::timer {

ShapeLayout::ShapeLayout(const ProblemShape &s, const KernelMetadata &meta,
                         size_t rotateBytes)
    : shape(s), dtype(meta.dtype), hasLse(meta.hasLse) {
  for (unsigned t = 0; t < kNumTensors; ++t) {
    int64_t *st = strides[t];
    st[0] = s.heads * s.seq * s.headDim, st[1] = s.seq * s.headDim,
    st[2] = s.headDim, st[3] = 1;
  }
  int64_t *lse = strides[unsigned(TensorId::LSE)];
  lse[0] = s.heads * s.seq, lse[1] = s.seq, lse[2] = 1, lse[3] = 0;
  for (unsigned t = 0; t < 4; ++t)
    elems[t] = s.batch * s.heads * s.seq * s.headDim;
  elems[unsigned(TensorId::LSE)] = hasLse ? s.batch * s.heads * s.seq : 0;
  size_t setBytes = 0;
  for (unsigned t = 0; t < kNumTensors; ++t)
    setBytes += bytes(t);
  numSets = std::clamp<size_t>((rotateBytes + setBytes - 1) / setBytes, 1, 8);
}

TensorArg ShapeLayout::arg(unsigned t, CUdeviceptr ptr, int device) const {
  TensorArg a;
  a.data = ptr;
  a.device = device;
  bool lse = t == unsigned(TensorId::LSE);
  a.dtype = lse ? DType::F32 : dtype;
  a.rank = lse ? 3 : 4;
  int64_t sizes[4] = {shape.batch, shape.heads, shape.seq, shape.headDim};
  for (unsigned i = 0; i < a.rank; ++i) {
    a.sizes[i] = sizes[i];
    a.strides[i] = strides[t][i];
  }
  return a;
}

void InputGenerator::fill(const ShapeLayout &layout, unsigned tensor,
                          std::vector<uint16_t> &bits) {
  const ProblemShape &s = layout.shape;
  bits.resize(size_t(layout.elems[tensor]));
  for (size_t i = 0; i < bits.size(); ++i) {
    int64_t row = int64_t(i) / s.headDim % s.seq;
    bits[i] = ref::drawInputBits(rng, layout.dtype,
                                 tensor == 0 && ref::isHardQueryRow(row));
  }
}

ExpectedRows computeExpected(const ShapeLayout &layout, size_t shapeIndex,
                             const std::vector<uint16_t> (&bits)[3],
                             const KernelMetadata &meta,
                             const TimerOptions &options) {
  const ProblemShape &s = layout.shape;
  ExpectedRows expected;
  expected.shape = shapeIndex;
  expected.tolerance =
      options.tolerance > 0 ? options.tolerance
                            : (layout.dtype == DType::BF16 ? 1e-2 : 5e-3);
  int64_t rowsTotal = s.batch * s.heads * s.seq;
  expected.rows = {0, rowsTotal - 1, std::min<int64_t>(3, rowsTotal - 1)};
  std::mt19937_64 pick(options.seed + 1);
  std::uniform_int_distribution<int64_t> any(0, rowsTotal - 1);
  while (expected.rows.size() < options.checkRows &&
         int64_t(expected.rows.size()) < rowsTotal)
    expected.rows.push_back(any(pick));
  // Sorted, so each head's inputs are converted to double once.
  std::sort(expected.rows.begin(), expected.rows.end());

  int64_t d = s.headDim, headElems = s.seq * d;
  expected.out.resize(expected.rows.size() * size_t(d));
  expected.lse.resize(expected.rows.size());
  std::vector<double> head[3], scratch;
  int64_t converted = -1;
  for (auto [n, r] : enumerate(expected.rows)) {
    int64_t i = r % s.seq, bh = r / s.seq;
    if (bh != converted) {
      for (unsigned t = 0; t < 3; ++t) {
        head[t].resize(size_t(headElems));
        for (int64_t e = 0; e < headElems; ++e)
          head[t][size_t(e)] = ref::halfBitsToFloat(
              bits[t][size_t(bh * headElems + e)], layout.dtype);
      }
      converted = bh;
    }
    ref::HeadView view{head[0].data(), head[1].data(), head[2].data()};
    expected.lse[n] =
        ref::referenceRow(view, i, s.seq, s.seq, d, meta.scale, meta.causal,
                          expected.out.data() + n * size_t(d), scratch);
  }
  return expected;
}

} // namespace flashc::tune::timer

//===- Check.cpp - a candidate against the float64 reference --------------===//
//
// Before a candidate is timed, one launch on the check shape's first input
// set, its outputs poisoned with NaN first, is compared with the reference
// rows: the largest relative error of O and of LSE must be within the
// tolerance.
//
//===----------------------------------------------------------------------===//

#include "TimerImpl.h"

#include "flashc/Reference/HostData.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace llvm;
using namespace flashc::rt;

namespace flashc::tune::timer {

Expected<std::string> DeviceWorker::check(Kernel &kernel,
                                          const ExpectedRows &expected) {
  const ShapeLayout &layout = layouts[expected.shape];
  const std::array<CUdeviceptr, kNumTensors> &set = buffers[expected.shape][0];
  unsigned o = unsigned(TensorId::O), l = unsigned(TensorId::LSE);
  if (Error err = checkCu(cu.cuMemsetD16(set[o], ref::halfNaNBits(layout.dtype),
                                         size_t(layout.elems[o])),
                          "cuMemsetD16"))
    return std::move(err);
  if (layout.hasLse)
    if (Error err = checkCu(
            cu.cuMemsetD32(set[l], 0x7fc00000u, size_t(layout.elems[l])),
            "cuMemsetD32"))
      return std::move(err);
  if (Error err = kernel.launch(args(expected.shape, 0), stream))
    return std::move(err);
  if (Error err = wait("the checked launch"))
    return std::move(err);
  std::vector<uint16_t> out(size_t(layout.elems[o]));
  std::vector<float> lse(size_t(layout.elems[l]));
  if (Error err = checkCu(cu.cuMemcpyDtoH(out.data(), set[o], layout.bytes(o)),
                          "cuMemcpyDtoH"))
    return std::move(err);
  if (layout.hasLse)
    if (Error err = checkCu(
            cu.cuMemcpyDtoH(lse.data(), set[l], layout.bytes(l)),
            "cuMemcpyDtoH"))
      return std::move(err);

  int64_t d = layout.shape.headDim;
  double maxErr = 0, maxLseErr = 0;
  for (auto [n, r] : enumerate(expected.rows)) {
    const double *want = expected.out.data() + n * size_t(d);
    double num = 0, den = 0;
    for (int64_t c = 0; c < d; ++c) {
      double got = ref::halfBitsToFloat(out[size_t(r * d + c)], layout.dtype);
      num += (got - want[c]) * (got - want[c]);
      den += want[c] * want[c];
    }
    double err = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    maxErr = std::isnan(err) ? INFINITY : std::max(maxErr, err);
    if (layout.hasLse) {
      double le = std::fabs(lse[size_t(r)] - expected.lse[n]) /
                  std::max(1.0, std::fabs(expected.lse[n]));
      maxLseErr = std::isnan(le) ? INFINITY : std::max(maxLseErr, le);
    }
  }
  if (maxErr <= expected.tolerance && maxLseErr <= expected.tolerance)
    return std::string();
  return formatv("check failed on {0}: max rel err {1:e}, max lse err {2:e} "
                 "(tolerance {3:e}, {4} rows)",
                 layout.shape.str(), maxErr, maxLseErr, expected.tolerance,
                 expected.rows.size())
      .str();
}

} // namespace flashc::tune::timer

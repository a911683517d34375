//===- Measure.cpp - timed launches after an L2 flush ---------------------===//
//
// A warm-up, then each timed launch between two CUDA events, preceded
// (outside the events) by a write of TimerOptions::flushBytes as do_bench
// and bench/compare.py do, so it finds L2 full of another buffer's dirty
// lines; the input sets rotate so L2 does not serve the inputs either.
//
//===----------------------------------------------------------------------===//

#include "TimerImpl.h"

#include <algorithm>

using namespace llvm;
using namespace flashc::rt;

namespace flashc::tune::timer {

double median(std::vector<float> ms) {
  std::sort(ms.begin(), ms.end());
  size_t n = ms.size();
  return n % 2 ? double(ms[n / 2]) : 0.5 * (double(ms[n / 2 - 1]) + ms[n / 2]);
}

Expected<std::vector<float>> DeviceWorker::time(Kernel &kernel, size_t shape,
                                                unsigned launches) {
  size_t numSets = layouts[shape].numSets;
  for (unsigned i = 0; i < options.warmup; ++i)
    if (Error err = kernel.launch(args(shape, i % numSets), stream))
      return std::move(err);
  for (unsigned i = 0; i < launches; ++i) {
    if (flush)
      if (Error err = checkCu(
              cu.cuMemsetD32Async(flush, 0, options.flushBytes / 4, stream),
              "cuMemsetD32Async (L2 flush)"))
        return std::move(err);
    cu.cuEventRecord(events[2 * i], stream);
    if (Error err = kernel.launch(args(shape, (i + 1) % numSets), stream))
      return std::move(err);
    cu.cuEventRecord(events[2 * i + 1], stream);
  }
  if (Error err = wait("a timed launch"))
    return std::move(err);
  std::vector<float> ms(launches);
  for (unsigned i = 0; i < launches; ++i)
    if (Error err = checkCu(
            cu.cuEventElapsedTime(&ms[i], events[2 * i], events[2 * i + 1]),
            "cuEventElapsedTime"))
      return std::move(err);
  return ms;
}

} // namespace flashc::tune::timer

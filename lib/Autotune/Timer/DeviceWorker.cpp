//===- DeviceWorker.cpp - one GPU's context, buffers and waits ------------===//
//
// A worker owns one GPU's primary context, stream, events, L2-flush scratch
// and a copy of every input set, so every device sees the same inputs and a
// candidate's check does not depend on where it ran. Its waits poll the
// stream so that a hung kernel stops the run instead of blocking it.
//
//===----------------------------------------------------------------------===//

#include "TimerImpl.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <thread>

using namespace llvm;
using namespace flashc::rt;

namespace flashc::tune::timer {

DeviceWorker::~DeviceWorker() {
  if (hung || !context)
    return;
  ScopedContext scope(context->get());
  for (auto &shape : buffers)
    for (auto &set : shape)
      for (CUdeviceptr ptr : set)
        if (ptr)
          cu.cuMemFree(ptr);
  if (flush)
    cu.cuMemFree(flush);
  for (CUevent e : events)
    cu.cuEventDestroy(e);
  if (stream)
    cu.cuStreamDestroy(stream);
}

Error DeviceWorker::init(ArrayRef<ShapeLayout> shapeLayouts) {
  layouts = shapeLayouts.data();
  Expected<PrimaryContext> ctx = PrimaryContext::retain(info);
  if (!ctx)
    return ctx.takeError();
  context.emplace(std::move(*ctx));
  ScopedContext scope(context->get());
  if (Error err = checkCu(cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
                          "cuStreamCreate"))
    return err;
  events.resize(2 * size_t(options.iters));
  for (CUevent &e : events)
    if (Error err =
            checkCu(cu.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate"))
      return err;
  if (options.flushBytes)
    if (Error err = checkCu(cu.cuMemAlloc(&flush, options.flushBytes),
                            formatv("cuMemAlloc({0} bytes) on GPU {1}",
                                    options.flushBytes, info.ordinal)))
      return err;
  buffers.resize(shapeLayouts.size());
  for (auto [i, layout] : enumerate(shapeLayouts)) {
    buffers[i].resize(layout.numSets);
    for (auto &set : buffers[i])
      for (unsigned t = 0; t < kNumTensors; ++t) {
        set[t] = 0;
        if (layout.elems[t])
          if (Error err = checkCu(cu.cuMemAlloc(&set[t], layout.bytes(t)),
                                  formatv("cuMemAlloc({0} bytes) on GPU {1}",
                                          layout.bytes(t), info.ordinal)))
            return err;
      }
  }
  return Error::success();
}

Error DeviceWorker::upload(size_t shape, size_t set, unsigned tensor,
                           ArrayRef<uint16_t> bits) {
  ScopedContext scope(context->get());
  return checkCu(cu.cuMemcpyHtoD(buffers[shape][set][tensor], bits.data(),
                                 bits.size() * sizeof(uint16_t)),
                 "cuMemcpyHtoD");
}

LaunchArgs DeviceWorker::args(size_t shape, size_t set) const {
  LaunchArgs launch;
  for (unsigned t = 0; t < kNumTensors; ++t)
    if (CUdeviceptr ptr = buffers[shape][set][t])
      launch.tensors[t] = layouts[shape].arg(t, ptr, info.ordinal);
  return launch;
}

Error DeviceWorker::wait(StringRef what) {
  Clock::time_point start = Clock::now();
  while (true) {
    CUresult result = cu.cuStreamQuery(stream);
    if (result != CUDA_ERROR_NOT_READY)
      return checkCu(result, what);
    if (secondsSince(start) > options.hangSeconds) {
      hung = true;
      return createStringError(
          inconvertibleErrorCode(),
          "%s did not finish within %.0f s on GPU %d: the kernel hangs",
          what.str().c_str(), options.hangSeconds, info.ordinal);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

} // namespace flashc::tune::timer

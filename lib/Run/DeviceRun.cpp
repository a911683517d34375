//===- DeviceRun.cpp - a kernel's buffers, launches and timing loop -------===//
//
// The device side of a run: input sets uploaded once, outputs poisoned with
// NaN before the checked launch (so an element the kernel never writes
// shows), and the timing loop: CUDA events around each launch after a
// warm-up, rotating among input sets larger than L2, the median reported.
//
//===----------------------------------------------------------------------===//

#include "flashc/Reference/HostData.h"
#include "flashc/Run/RunKernel.h"

#include <algorithm>

using namespace llvm;
using namespace flashc::rt;

namespace flashc::run {

Expected<std::unique_ptr<DeviceRun>>
DeviceRun::create(Kernel &kernel, const Problem &problem,
                  const HostInputs &inputs, unsigned numSets, int device) {
  Expected<const DriverApi *> driver = getDriver();
  if (!driver)
    return driver.takeError();
  std::unique_ptr<DeviceRun> run(
      new DeviceRun(kernel, **driver, problem, device));
  const DriverApi &cu = run->cu;
  ScopedContext scope(kernel.getContext());
  run->sets.resize(std::max(numSets, 1u));
  for (auto &set : run->sets) {
    set.fill(0);
    for (unsigned t = 0; t < kNumTensors; ++t) {
      if (!problem.elems[t])
        continue;
      size_t bytes = problem.bytes(t);
      if (Error err = checkCu(cu.cuMemAlloc(&set[t], bytes), "cuMemAlloc"))
        return std::move(err);
      if (t < 3)
        if (Error err =
                checkCu(cu.cuMemcpyHtoD(set[t], inputs.bits[t].data(), bytes),
                        "cuMemcpyHtoD"))
          return std::move(err);
    }
  }
  if (problem.packed()) {
    for (auto [ptr, cu32] : {std::pair{&run->cuQ, &problem.cuQ},
                             std::pair{&run->cuK, &problem.cuK}}) {
      size_t bytes = cu32->size() * sizeof(int32_t);
      if (Error err = checkCu(cu.cuMemAlloc(ptr, bytes), "cuMemAlloc"))
        return std::move(err);
      if (Error err = checkCu(cu.cuMemcpyHtoD(*ptr, cu32->data(), bytes),
                              "cuMemcpyHtoD"))
        return std::move(err);
    }
  }
  if (Error err =
          checkCu(cu.cuStreamCreate(&run->stream, CU_STREAM_NON_BLOCKING),
                  "cuStreamCreate"))
    return std::move(err);
  return std::move(run);
}

DeviceRun::~DeviceRun() {
  ScopedContext scope(kernel.getContext());
  if (stream)
    cu.cuStreamDestroy(stream);
  for (auto &set : sets)
    for (CUdeviceptr ptr : set)
      if (ptr)
        cu.cuMemFree(ptr);
  for (CUdeviceptr ptr : {cuQ, cuK})
    if (ptr)
      cu.cuMemFree(ptr);
}

LaunchArgs DeviceRun::args(unsigned set) const {
  LaunchArgs launch;
  for (unsigned t = 0; t < kNumTensors; ++t)
    if (CUdeviceptr ptr = sets[set][t])
      launch.tensors[t] = problem.arg(TensorId(t), ptr, device);
  if (problem.packed()) {
    launch.cuSeqlensQ = problem.seqlensArg(false, cuQ, device);
    launch.cuSeqlensK = problem.seqlensArg(true, cuK, device);
    launch.maxSeqlenQ = problem.maxSeqQ;
  }
  return launch;
}

Error DeviceRun::launchRepeated(unsigned count) {
  for (unsigned r = 0; r < count; ++r)
    if (Error err = kernel.launch(args(0), stream))
      return err;
  return checkCu(cu.cuStreamSynchronize(stream), "kernel execution (--repeat)");
}

Error DeviceRun::launchChecked() {
  unsigned o = unsigned(TensorId::O), l = unsigned(TensorId::LSE);
  if (Error err =
          checkCu(cu.cuMemsetD16(sets[0][o], ref::halfNaNBits(problem.dtype),
                                 size_t(problem.elems[o])),
                  "cuMemsetD16"))
    return err;
  if (problem.hasLse)
    if (Error err = checkCu(
            cu.cuMemsetD32(sets[0][l], 0x7fc00000u, size_t(problem.elems[l])),
            "cuMemsetD32"))
      return err;
  if (Error err = checkCu(cu.cuCtxSynchronize(), "cuCtxSynchronize"))
    return err;
  if (Error err = kernel.launch(args(0), stream))
    return err;
  return checkCu(cu.cuStreamSynchronize(stream), "kernel execution");
}

Expected<DeviceOutputs> DeviceRun::readOutputs() {
  unsigned o = unsigned(TensorId::O), l = unsigned(TensorId::LSE);
  DeviceOutputs out;
  out.o.resize(size_t(problem.elems[o]));
  out.lse.resize(size_t(problem.elems[l]));
  if (Error err =
          checkCu(cu.cuMemcpyDtoH(out.o.data(), sets[0][o], out.o.size() * 2),
                  "cuMemcpyDtoH"))
    return std::move(err);
  if (problem.hasLse)
    if (Error err = checkCu(
            cu.cuMemcpyDtoH(out.lse.data(), sets[0][l], out.lse.size() * 4),
            "cuMemcpyDtoH"))
      return std::move(err);
  return out;
}

static double median(std::vector<float> v) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

Expected<BenchResult> DeviceRun::bench(unsigned warmup, unsigned iters,
                                       bool causal) {
  unsigned numSets = unsigned(sets.size());
  for (unsigned i = 0; i < warmup; ++i)
    if (Error err = kernel.launch(args(i % numSets), stream))
      return std::move(err);
  std::vector<CUevent> events(2 * size_t(iters));
  auto destroyEvents = [&] {
    for (CUevent e : events)
      if (e)
        cu.cuEventDestroy(e);
  };
  auto fail = [&](Error err) -> Expected<BenchResult> {
    destroyEvents();
    return std::move(err);
  };
  for (CUevent &e : events)
    if (Error err =
            checkCu(cu.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate"))
      return fail(std::move(err));
  for (unsigned i = 0; i < iters; ++i) {
    if (Error err =
            checkCu(cu.cuEventRecord(events[2 * i], stream), "cuEventRecord"))
      return fail(std::move(err));
    if (Error err = kernel.launch(args(i % numSets), stream))
      return fail(std::move(err));
    if (Error err = checkCu(cu.cuEventRecord(events[2 * i + 1], stream),
                            "cuEventRecord"))
      return fail(std::move(err));
  }
  if (Error err =
          checkCu(cu.cuStreamSynchronize(stream), "kernel execution (bench)"))
    return fail(std::move(err));
  std::vector<float> ms(iters);
  for (unsigned i = 0; i < iters; ++i)
    if (Error err = checkCu(
            cu.cuEventElapsedTime(&ms[i], events[2 * i], events[2 * i + 1]),
            "cuEventElapsedTime"))
      return fail(std::move(err));
  destroyEvents();

  BenchResult result;
  result.medianMs = median(ms);
  result.iters = iters;
  result.warmup = warmup;
  result.numSets = numSets;
  result.setBytes = problem.setBytes();
  result.tflops = problem.flops(causal) / (result.medianMs * 1e-3) / 1e12;
  return result;
}

} // namespace flashc::run

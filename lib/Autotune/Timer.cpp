//===- Timer.cpp - check and time a candidate bundle on the GPU -----------===//
//
// The measurement follows tools/flash-run: seeded uniform(-1, 1) inputs
// rounded to the kernel's dtype with every 16th query row scaled so its
// logits reach ~1e3, outputs poisoned with NaN before the checked launch,
// a float64 reference per sampled row, and CUDA events around each timed
// launch.
//
//===----------------------------------------------------------------------===//

#include "flashc/Autotune/Timer.h"
#include "flashc/Autotune/Progress.h"

#include "flashc/Reference/HostData.h"
#include "flashc/Reference/Reference.h"
#include "flashc/Runtime/Kernel.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>

using namespace llvm;
using namespace flashc;
using namespace flashc::rt;
using flashc::tune::CandidateTiming;
using flashc::tune::TimingStatus;

namespace {

/// Device buffers of q, k, v, o, lse (dense B x H x N x D).
struct DeviceSet {
  CUdeviceptr ptr[kNumTensors] = {};
};

/// One shape's inputs on the device (several sets, rotated) and, for the
/// shape candidates are checked on, the exact inputs as doubles.
struct ShapeInputs {
  tune::ProblemShape shape;
  DType dtype = DType::BF16;
  bool hasLse = false;
  int64_t elems[kNumTensors] = {};
  int64_t strides[kNumTensors][4] = {};
  std::vector<DeviceSet> sets;
  std::vector<double> host[3];

  size_t bytes(unsigned t) const {
    return size_t(elems[t]) * (t == unsigned(TensorId::LSE) ? 4 : 2);
  }
  TensorArg arg(unsigned t, CUdeviceptr ptr, int device) const {
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
  LaunchArgs args(size_t set, int device) const {
    LaunchArgs launch;
    for (unsigned t = 0; t < kNumTensors; ++t)
      if (sets[set].ptr[t])
        launch.tensors[t] = arg(t, sets[set].ptr[t], device);
    return launch;
  }
};

class BundleTimer {
public:
  BundleTimer(const DriverApi &cu, const tune::TimerOptions &options)
      : cu(cu), options(options) {}
  ~BundleTimer() {
    for (ShapeInputs &inputs : shapes)
      for (DeviceSet &set : inputs.sets)
        for (CUdeviceptr ptr : set.ptr)
          if (ptr)
            cu.cuMemFree(ptr);
    if (stream)
      cu.cuStreamDestroy(stream);
  }

  Error prepare(ArrayRef<tune::ProblemShape> problemShapes,
                const KernelMetadata &meta);
  /// Checks `kernel` once on the check shape: empty if it passes, else why.
  Expected<std::string> check(Kernel &kernel);
  /// Median milliseconds of `kernel` on shape `index`.
  Expected<double> time(Kernel &kernel, size_t index);

  std::vector<ShapeInputs> shapes;
  size_t checkShape = 0;

private:
  Error upload(ShapeInputs &inputs, bool keepHost);

  const DriverApi &cu;
  const tune::TimerOptions &options;
  CUstream stream = nullptr;
  std::mt19937_64 rng;
};

} // namespace

Error BundleTimer::upload(ShapeInputs &inputs, bool keepHost) {
  const tune::ProblemShape &s = inputs.shape;
  for (unsigned t = 0; t < kNumTensors; ++t) {
    int64_t *st = inputs.strides[t];
    st[0] = s.heads * s.seq * s.headDim, st[1] = s.seq * s.headDim,
    st[2] = s.headDim, st[3] = 1;
  }
  int64_t *lse = inputs.strides[unsigned(TensorId::LSE)];
  lse[0] = s.heads * s.seq, lse[1] = s.seq, lse[2] = 1, lse[3] = 0;
  int64_t elems = s.batch * s.heads * s.seq * s.headDim;
  for (unsigned t = 0; t < 4; ++t)
    inputs.elems[t] = elems;
  inputs.elems[unsigned(TensorId::LSE)] =
      inputs.hasLse ? s.batch * s.heads * s.seq : 0;

  size_t setBytes = 0;
  for (unsigned t = 0; t < kNumTensors; ++t)
    setBytes += inputs.bytes(t);
  size_t numSets =
      std::clamp<size_t>((options.rotateBytes + setBytes - 1) / setBytes, 1, 8);
  inputs.sets.resize(numSets);

  std::uniform_real_distribution<float> uni(-1.f, 1.f);
  std::vector<uint16_t> bits(static_cast<size_t>(elems));
  for (unsigned t = 0; t < 3; ++t) {
    if (keepHost)
      inputs.host[t].assign(size_t(elems), 0);
    for (size_t set = 0; set < numSets; ++set) {
      // Every set has its own values; only set 0 is checked.
      for (int64_t i = 0; i < elems; ++i) {
        int64_t row = i / s.headDim % s.seq;
        float scale = (t == 0 && row % 16 == 3) ? 1000.f : 1.f;
        float x = uni(rng);
        if (x == 0.f)
          x = 0.5f;
        bits[size_t(i)] = ref::floatToHalfBits(x * scale, inputs.dtype);
        if (keepHost && set == 0)
          inputs.host[t][size_t(i)] =
              ref::halfBitsToFloat(bits[size_t(i)], inputs.dtype);
      }
      CUdeviceptr &ptr = inputs.sets[set].ptr[t];
      if (Error err =
              checkCu(cu.cuMemAlloc(&ptr, inputs.bytes(t)), "cuMemAlloc"))
        return err;
      if (Error err =
              checkCu(cu.cuMemcpyHtoD(ptr, bits.data(), inputs.bytes(t)),
                      "cuMemcpyHtoD"))
        return err;
    }
  }
  for (DeviceSet &set : inputs.sets)
    for (unsigned t = 3; t < kNumTensors; ++t)
      if (inputs.elems[t])
        if (Error err = checkCu(cu.cuMemAlloc(&set.ptr[t], inputs.bytes(t)),
                                "cuMemAlloc"))
          return err;
  return Error::success();
}

Error BundleTimer::prepare(ArrayRef<tune::ProblemShape> problemShapes,
                           const KernelMetadata &meta) {
  rng.seed(options.seed);
  if (Error err = checkCu(cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
                          "cuStreamCreate"))
    return err;
  // Check on the smallest shape: its float64 copy is the cheapest to keep.
  auto elemsOf = [](const tune::ProblemShape &s) {
    return s.batch * s.heads * s.seq;
  };
  for (size_t i = 1; i < problemShapes.size(); ++i)
    if (elemsOf(problemShapes[i]) < elemsOf(problemShapes[checkShape]))
      checkShape = i;
  for (auto [i, shape] : enumerate(problemShapes)) {
    ShapeInputs &inputs = shapes.emplace_back();
    inputs.shape = shape;
    inputs.dtype = meta.dtype;
    inputs.hasLse = meta.hasLse;
    if (Error err = upload(inputs, i == checkShape))
      return err;
  }
  return Error::success();
}

Expected<std::string> BundleTimer::check(Kernel &kernel) {
  const KernelMetadata &meta = kernel.getMetadata();
  const ShapeInputs &in = shapes[checkShape];
  const tune::ProblemShape &s = in.shape;
  const DeviceSet &set = in.sets[0];
  unsigned o = unsigned(TensorId::O), l = unsigned(TensorId::LSE);
  if (Error err = checkCu(cu.cuMemsetD16(set.ptr[o], ref::halfNaNBits(in.dtype),
                                         size_t(in.elems[o])),
                          "cuMemsetD16"))
    return std::move(err);
  if (in.hasLse)
    if (Error err = checkCu(
            cu.cuMemsetD32(set.ptr[l], 0x7fc00000u, size_t(in.elems[l])),
            "cuMemsetD32"))
      return std::move(err);
  if (Error err = kernel.launch(in.args(0, options.device), stream))
    return std::move(err);
  if (Error err = checkCu(cu.cuStreamSynchronize(stream), "kernel execution"))
    return std::move(err);
  std::vector<uint16_t> out(size_t(in.elems[o]));
  std::vector<float> lse(size_t(in.elems[l]));
  if (Error err = checkCu(cu.cuMemcpyDtoH(out.data(), set.ptr[o], in.bytes(o)),
                          "cuMemcpyDtoH"))
    return std::move(err);
  if (in.hasLse)
    if (Error err =
            checkCu(cu.cuMemcpyDtoH(lse.data(), set.ptr[l], in.bytes(l)),
                    "cuMemcpyDtoH"))
      return std::move(err);

  int64_t rowsTotal = s.batch * s.heads * s.seq;
  std::vector<int64_t> rows = {0, rowsTotal - 1,
                               std::min<int64_t>(3, rowsTotal - 1)};
  std::mt19937_64 pick(options.seed + 1);
  std::uniform_int_distribution<int64_t> any(0, rowsTotal - 1);
  while (rows.size() < options.checkRows && int64_t(rows.size()) < rowsTotal)
    rows.push_back(any(pick));
  double tol = options.tolerance > 0 ? options.tolerance
                                     : (in.dtype == DType::BF16 ? 1e-2 : 5e-3);
  double maxErr = 0, maxLseErr = 0;
  int64_t d = s.headDim;
  std::vector<double> expect(static_cast<size_t>(d)), scratch;
  for (int64_t r : rows) {
    int64_t i = r % s.seq, bh = r / s.seq;
    ref::HeadView head{in.host[0].data() + size_t(bh * s.seq * d),
                       in.host[1].data() + size_t(bh * s.seq * d),
                       in.host[2].data() + size_t(bh * s.seq * d)};
    double lseRef = ref::referenceRow(head, i, s.seq, s.seq, d, meta.scale,
                                      meta.causal, expect.data(), scratch);
    double num = 0, den = 0;
    for (int64_t c = 0; c < d; ++c) {
      double got = ref::halfBitsToFloat(out[size_t(r * d + c)], in.dtype);
      num += (got - expect[size_t(c)]) * (got - expect[size_t(c)]);
      den += expect[size_t(c)] * expect[size_t(c)];
    }
    double err = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    maxErr = std::isnan(err) ? INFINITY : std::max(maxErr, err);
    if (in.hasLse) {
      double le =
          std::fabs(lse[size_t(r)] - lseRef) / std::max(1.0, std::fabs(lseRef));
      maxLseErr = std::isnan(le) ? INFINITY : std::max(maxLseErr, le);
    }
  }
  if (maxErr <= tol && maxLseErr <= tol)
    return std::string();
  return formatv("check failed on {0}: max rel err {1:e}, max lse err {2:e} "
                 "(tolerance {3:e}, {4} rows)",
                 s.str(), maxErr, maxLseErr, tol, rows.size())
      .str();
}

Expected<double> BundleTimer::time(Kernel &kernel, size_t index) {
  const ShapeInputs &in = shapes[index];
  size_t numSets = in.sets.size();
  for (unsigned i = 0; i < options.warmup; ++i)
    if (Error err = kernel.launch(in.args(i % numSets, options.device), stream))
      return std::move(err);
  std::vector<CUevent> events(2 * size_t(options.iters));
  auto destroy = [&] {
    for (CUevent e : events)
      if (e)
        cu.cuEventDestroy(e);
  };
  for (CUevent &e : events)
    if (Error err =
            checkCu(cu.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate")) {
      destroy();
      return std::move(err);
    }
  for (unsigned i = 0; i < options.iters; ++i) {
    cu.cuEventRecord(events[2 * i], stream);
    if (Error err =
            kernel.launch(in.args((i + 1) % numSets, options.device), stream)) {
      destroy();
      return std::move(err);
    }
    cu.cuEventRecord(events[2 * i + 1], stream);
  }
  if (Error err = checkCu(cu.cuStreamSynchronize(stream), "kernel execution")) {
    destroy();
    return std::move(err);
  }
  std::vector<float> ms(options.iters);
  for (unsigned i = 0; i < options.iters; ++i)
    if (Error err = checkCu(
            cu.cuEventElapsedTime(&ms[i], events[2 * i], events[2 * i + 1]),
            "cuEventElapsedTime")) {
      destroy();
      return std::move(err);
    }
  destroy();
  std::sort(ms.begin(), ms.end());
  size_t n = ms.size();
  return n % 2 ? double(ms[n / 2]) : 0.5 * (ms[n / 2 - 1] + ms[n / 2]);
}

Expected<tune::TimingsFile>
flashc::tune::timeBundle(StringRef dir, const BundleManifest &manifest,
                         const TimerOptions &options) {
  if (manifest.candidates.empty())
    return createStringError(inconvertibleErrorCode(),
                             "the bundle has no candidates");
  if (manifest.shapes.empty())
    return createStringError(inconvertibleErrorCode(),
                             "the bundle has no shapes");
  if (options.iters == 0)
    return createStringError(inconvertibleErrorCode(), "--iters must be > 0");
  Expected<const DriverApi *> driver = getDriver();
  if (!driver)
    return driver.takeError();
  Expected<DeviceInfo> device = getDeviceInfo(options.device);
  if (!device)
    return device.takeError();
  Expected<PrimaryContext> context = PrimaryContext::retain(*device);
  if (!context)
    return context.takeError();
  ScopedContext scope(context->get());

  auto pathOf = [&](const BundleCandidate &c) {
    SmallString<256> path(dir);
    sys::path::append(path, c.binary);
    return std::string(path);
  };
  Expected<KernelMetadata> meta =
      loadMetadataFile(pathOf(manifest.candidates.front()));
  if (!meta)
    return meta.takeError();
  BundleTimer timer(**driver, options);
  if (Error err = timer.prepare(manifest.shapes, *meta))
    return std::move(err);

  TimingsFile file;
  file.gpu = device->name;
  file.manifest = manifest;
  std::optional<Progress> progress;
  if (options.progress)
    progress.emplace("timing", manifest.candidates.size(), *options.progress,
                     options.interactive);
  for (const BundleCandidate &c : manifest.candidates) {
    auto record = [&](TimingStatus status, const std::string &message,
                      size_t shape, double ms) {
      file.timings.push_back(
          {c.id, c.config, manifest.shapes[shape], status, message, ms});
    };
    auto recordAll = [&](TimingStatus status, const std::string &message) {
      for (size_t i = 0; i < manifest.shapes.size(); ++i)
        record(status, message, i, 0);
      if (progress)
        progress->step(c.id + " " + c.config.str() + ": " + message);
    };
    Expected<std::unique_ptr<Kernel>> kernel =
        Kernel::load(pathOf(c), options.device);
    if (!kernel) {
      recordAll(TimingStatus::Error, toString(kernel.takeError()));
      continue;
    }
    Expected<std::string> failure = timer.check(**kernel);
    if (!failure) {
      recordAll(TimingStatus::Error, toString(failure.takeError()));
      continue;
    }
    if (!failure->empty()) {
      recordAll(TimingStatus::CheckFailed, *failure);
      continue;
    }
    std::string line = c.id + " " + c.config.str() + ":";
    std::optional<double> first;
    for (size_t i = 0; i < manifest.shapes.size(); ++i) {
      Expected<double> ms = timer.time(**kernel, i);
      if (!ms) {
        std::string message = toString(ms.takeError());
        record(TimingStatus::Error, message, i, 0);
        line += " error";
        continue;
      }
      record(TimingStatus::Ok, "", i, *ms);
      line += formatv(" {0:f4} ms", *ms);
      if (i == 0)
        first = *ms;
    }
    if (progress)
      progress->step(line, first, c.id);
  }
  if (progress)
    progress->finish();
  return file;
}

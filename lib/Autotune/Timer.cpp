//===- Timer.cpp - check and time a candidate bundle on the GPU -----------===//
//
// The measurement follows tools/flash-run: seeded uniform(-1, 1) inputs
// rounded to the kernel's dtype with every 16th query row scaled so its
// logits reach ~1e3, outputs poisoned with NaN before the checked launch,
// a float64 reference per sampled row, and CUDA events around each timed
// launch, before which L2 is flushed as bench/compare.py's do_bench does.
// The reference rows do not depend on the candidate, so they are computed
// once, before any candidate runs.
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
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <optional>
#include <random>
#include <thread>

using namespace llvm;
using namespace flashc;
using namespace flashc::rt;
using flashc::tune::CandidateTiming;
using flashc::tune::TimingStatus;

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// One shape's dense B x H x N x D tensors (LSE: B x H x N) as the kernel
/// sees them, and how many input sets rotate to defeat L2.
struct ShapeLayout {
  tune::ProblemShape shape;
  DType dtype = DType::BF16;
  bool hasLse = false;
  int64_t elems[kNumTensors] = {};
  int64_t strides[kNumTensors][4] = {};
  size_t numSets = 1;

  ShapeLayout(const tune::ProblemShape &s, const KernelMetadata &meta,
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
};

/// The reference's answer for the sampled rows of the check inputs.
struct ExpectedRows {
  size_t shape = 0; ///< index of the check shape
  std::vector<int64_t> rows;
  std::vector<double> out; ///< rows.size() x D
  std::vector<double> lse;
  double tolerance = 0;
};

/// Seeded host inputs, generated one tensor at a time and uploaded to every
/// device; only the check shape's first set stays on the host.
class InputGenerator {
public:
  explicit InputGenerator(unsigned seed) { rng.seed(seed); }
  void fill(const ShapeLayout &layout, unsigned tensor,
            std::vector<uint16_t> &bits) {
    const tune::ProblemShape &s = layout.shape;
    bits.resize(size_t(layout.elems[tensor]));
    for (size_t i = 0; i < bits.size(); ++i) {
      int64_t row = int64_t(i) / s.headDim % s.seq;
      bits[i] = ref::drawInputBits(rng, layout.dtype,
                                   tensor == 0 && ref::isHardQueryRow(row));
    }
  }

private:
  std::mt19937_64 rng;
};

ExpectedRows computeExpected(const ShapeLayout &layout, size_t shapeIndex,
                             const std::vector<uint16_t> (&bits)[3],
                             const KernelMetadata &meta,
                             const tune::TimerOptions &options) {
  const tune::ProblemShape &s = layout.shape;
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

double median(std::vector<float> ms) {
  std::sort(ms.begin(), ms.end());
  size_t n = ms.size();
  return n % 2 ? double(ms[n / 2]) : 0.5 * (double(ms[n / 2 - 1]) + ms[n / 2]);
}

/// One GPU: its context, stream, events and a copy of every input set.
class DeviceWorker {
public:
  DeviceWorker(const DriverApi &cu, DeviceInfo info,
               const tune::TimerOptions &options)
      : cu(cu), info(std::move(info)), options(options) {}
  ~DeviceWorker();

  Error init(ArrayRef<ShapeLayout> layouts);
  Error upload(size_t shape, size_t set, unsigned tensor,
               ArrayRef<uint16_t> bits);
  /// Empty if `kernel` matches the reference on the check rows, else why.
  Expected<std::string> check(Kernel &kernel, const ExpectedRows &expected);
  /// The times (ms) of `launches` timed launches after the warm-up.
  Expected<std::vector<float>> time(Kernel &kernel, size_t shape,
                                    unsigned launches);

  const DeviceInfo &device() const { return info; }
  CUcontext getContext() const { return context->get(); }
  /// Set once a launch hangs: nothing may touch the device again (freeing
  /// would wait on the hung kernel), the process exits soon after.
  bool hung = false;

private:
  Error wait(StringRef what);
  LaunchArgs args(size_t shape, size_t set) const;

  const DriverApi &cu;
  DeviceInfo info;
  const tune::TimerOptions &options;
  std::optional<PrimaryContext> context;
  CUstream stream = nullptr;
  std::vector<CUevent> events;
  /// TimerOptions::flushBytes of scratch, written before each timed launch.
  CUdeviceptr flush = 0;
  const ShapeLayout *layouts = nullptr;
  /// [shape][set][tensor]
  std::vector<std::vector<std::array<CUdeviceptr, kNumTensors>>> buffers;
};

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

/// The two passes over the candidates: every candidate is checked and
/// probed; then the finalists (probe within screenRatio of the best probe of
/// a shape) get the full count of launches on that shape, spread over
/// TimerOptions::rounds rounds that each visit every finalist once.
enum class Pass { Probe, Final };

/// Everything the workers share.
struct Session {
  StringRef dir;
  const tune::BundleManifest &manifest;
  const tune::TimerOptions &options;
  const ExpectedRows &expected;
  std::optional<tune::Progress> &progress;
  size_t numWorkers = 1;
  /// Candidate indices of the current pass, taken in order by the workers.
  std::vector<size_t> queue;
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  /// Per candidate, one record per shape (pass 2 overwrites the probes).
  std::vector<std::vector<CandidateTiming>> results;
  /// Per candidate, the shapes pass 2 times fully.
  std::vector<std::vector<size_t>> finalShapes;
  /// Pass 2: launches per finalist and shape in the current round, and per
  /// candidate and shape every launch time so far (ms).
  unsigned roundLaunches = 0;
  std::vector<std::vector<std::vector<float>>> samples;
  std::mutex errorMutex;
  std::optional<std::string> fatal;
};

void runPass(Session &session, DeviceWorker &worker, Pass pass) {
  ScopedContext scope(worker.getContext());
  const tune::BundleManifest &manifest = session.manifest;
  const tune::TimerOptions &options = session.options;
  bool several = session.numWorkers > 1;
  int ordinal = worker.device().ordinal;
  unsigned probe = pass == Pass::Probe && options.screenRatio > 0
                       ? std::min(options.probe, options.iters)
                       : options.iters;
  while (!session.stop) {
    size_t slot = session.next++;
    if (slot >= session.queue.size())
      return;
    size_t index = session.queue[slot];
    const tune::BundleCandidate &c = manifest.candidates[index];
    std::vector<CandidateTiming> &records = session.results[index];
    std::string prefix =
        c.id + " " + c.config.str() +
        (several ? formatv(" [GPU {0}]", ordinal).str() : std::string()) + ":";
    auto recordAll = [&](TimingStatus status, const std::string &message) {
      records.clear();
      for (const tune::ProblemShape &shape : manifest.shapes)
        records.push_back({c.id, c.config, shape, status, message, 0, 0,
                           ordinal});
      if (session.progress)
        session.progress->step(prefix + " " + message);
    };
    // After a hang nothing may touch the kernel (unloading would wait).
    auto stopOnHang = [&](std::unique_ptr<Kernel> &kernel,
                          const std::string &message) {
      if (!worker.hung)
        return false;
      (void)kernel.release();
      std::lock_guard<std::mutex> lock(session.errorMutex);
      session.fatal =
          c.id + ": " + message + " (rerun with --skip " + c.id + ")";
      session.stop = true;
      return true;
    };
    if (options.skip.contains(c.id)) {
      recordAll(TimingStatus::Error, "skipped (--skip)");
      continue;
    }
    SmallString<256> path(session.dir);
    sys::path::append(path, c.binary);
    Expected<std::unique_ptr<Kernel>> kernel = Kernel::load(path, ordinal);
    if (!kernel) {
      recordAll(TimingStatus::Error, toString(kernel.takeError()));
      continue;
    }
    if (pass == Pass::Probe) {
      Expected<std::string> failure = worker.check(**kernel, session.expected);
      if (!failure) {
        std::string message = toString(failure.takeError());
        recordAll(TimingStatus::Error, message);
        stopOnHang(*kernel, message);
        continue;
      }
      if (!failure->empty()) {
        recordAll(TimingStatus::CheckFailed, *failure);
        continue;
      }
      // A probe is screened until the final pass times it fully.
      bool probeOnly = probe < options.iters;
      records.clear();
      for (const tune::ProblemShape &shape : manifest.shapes)
        records.push_back({c.id, c.config, shape, TimingStatus::Ok,
                           probeOnly ? "probe" : "", 0, 0, ordinal,
                           probeOnly});
    }
    std::vector<size_t> shapes;
    if (pass == Pass::Final)
      shapes = session.finalShapes[index];
    else
      for (size_t i = 0; i < manifest.shapes.size(); ++i)
        shapes.push_back(i);
    std::string line = prefix;
    std::optional<double> first;
    for (size_t i : shapes) {
      Expected<std::vector<float>> m = worker.time(
          **kernel, i, pass == Pass::Final ? session.roundLaunches : probe);
      if (!m) {
        std::string message = toString(m.takeError());
        records[i].status = TimingStatus::Error;
        records[i].message = message;
        line += " error";
        if (stopOnHang(*kernel, message))
          break;
        continue;
      }
      std::vector<float> &all = session.samples[index][i];
      if (pass == Pass::Final)
        all.insert(all.end(), m->begin(), m->end());
      else
        all = std::move(*m);
      double medianMs = median(all);
      records[i].medianMs = medianMs;
      records[i].launches = unsigned(all.size());
      records[i].device = ordinal;
      if (all.size() >= options.iters) {
        records[i].message.clear();
        records[i].screened = false;
      }
      line += formatv(" {0:f4} ms", medianMs);
      // The bar's "best" is the first shape's, per pass: the best probe
      // while probing (the bar says "probing"), the best full median so far
      // while timing.
      if (i == 0)
        first = medianMs;
    }
    if (session.progress)
      session.progress->step(line, first, c.id);
  }
}

/// Runs one pass over `queue` on every worker.
void runWorkers(Session &session,
                ArrayRef<std::unique_ptr<DeviceWorker>> workers, Pass pass,
                std::vector<size_t> queue, StringRef label) {
  session.queue = std::move(queue);
  session.next = 0;
  if (session.queue.empty())
    return;
  if (session.options.progress)
    session.progress.emplace(label, session.queue.size(),
                             *session.options.progress,
                             session.options.interactive);
  if (workers.size() == 1) {
    runPass(session, *workers.front(), pass);
  } else {
    std::vector<std::thread> threads;
    for (const auto &w : workers)
      threads.emplace_back([&session, &w, pass] {
        runPass(session, *w, pass);
      });
    for (std::thread &t : threads)
      t.join();
  }
  if (session.progress)
    session.progress->finish();
}

/// Picks the finalists from the probes: per shape, every candidate whose
/// probe is within `ratio` of the best probe; the rest keep their probe,
/// still screened, with the reason.
std::vector<size_t> chooseFinalists(Session &session) {
  const tune::TimerOptions &options = session.options;
  size_t numShapes = session.manifest.shapes.size();
  std::vector<size_t> finalists;
  for (size_t shape = 0; shape < numShapes; ++shape) {
    std::optional<double> best;
    for (auto &records : session.results)
      if (records.size() == numShapes &&
          records[shape].status == TimingStatus::Ok &&
          records[shape].medianMs > 0)
        best = std::min(best.value_or(INFINITY), records[shape].medianMs);
    for (auto [index, records] : enumerate(session.results)) {
      if (records.size() != numShapes ||
          records[shape].status != TimingStatus::Ok || !best)
        continue;
      CandidateTiming &t = records[shape];
      if (t.medianMs <= options.screenRatio * *best) {
        session.finalShapes[index].push_back(shape);
      } else {
        t.message = formatv("screened: the median of {0} launches is over "
                            "{1}x the best",
                            t.launches, options.screenRatio)
                        .str();
      }
    }
  }
  for (auto [index, shapes] : enumerate(session.finalShapes))
    if (!shapes.empty())
      finalists.push_back(index);
  return finalists;
}

} // namespace

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
  Clock::time_point start = Clock::now();
  Expected<const DriverApi *> driver = getDriver();
  if (!driver)
    return driver.takeError();
  const DriverApi &cu = **driver;

  std::vector<int> ordinals = options.devices;
  if (ordinals.empty()) {
    int count = 0;
    if (Error err = checkCu(cu.cuDeviceGetCount(&count), "cuDeviceGetCount"))
      return std::move(err);
    for (int i = 0; i < std::max(count, 1); ++i)
      ordinals.push_back(i);
  }
  std::vector<std::unique_ptr<DeviceWorker>> workers;
  for (int ordinal : ordinals) {
    Expected<DeviceInfo> device = getDeviceInfo(ordinal);
    if (!device)
      return device.takeError();
    workers.push_back(std::make_unique<DeviceWorker>(cu, *device, options));
  }
  // Timings on different GPUs are only comparable on one model.
  for (const auto &w : workers)
    if (w->device().name != workers.front()->device().name)
      return createStringError(
          inconvertibleErrorCode(),
          "GPU %d is a %s but GPU %d is a %s: time on one model at a time "
          "(--device)",
          w->device().ordinal, w->device().name.c_str(),
          workers.front()->device().ordinal,
          workers.front()->device().name.c_str());

  SmallString<256> firstBinary(dir);
  sys::path::append(firstBinary, manifest.candidates.front().binary);
  Expected<KernelMetadata> meta = loadMetadataFile(firstBinary);
  if (!meta)
    return meta.takeError();

  std::vector<ShapeLayout> layouts;
  for (const ProblemShape &shape : manifest.shapes)
    layouts.emplace_back(shape, *meta, options.rotateBytes);
  for (auto &w : workers)
    if (Error err = w->init(layouts))
      return std::move(err);

  // Check on the smallest shape: its reference is the cheapest.
  size_t checkShape = 0;
  for (size_t i = 1; i < layouts.size(); ++i)
    if (layouts[i].elems[0] < layouts[checkShape].elems[0])
      checkShape = i;
  InputGenerator generator(options.seed);
  std::vector<uint16_t> bits;
  std::vector<uint16_t> checkBits[3];
  for (auto [i, layout] : enumerate(layouts))
    for (size_t set = 0; set < layout.numSets; ++set)
      for (unsigned t = 0; t < 3; ++t) {
        generator.fill(layout, t, bits);
        for (auto &w : workers)
          if (Error err = w->upload(i, set, t, bits))
            return std::move(err);
        if (i == checkShape && set == 0)
          checkBits[t] = bits;
      }
  ExpectedRows expected =
      computeExpected(layouts[checkShape], checkShape, checkBits, *meta,
                      options);
  for (std::vector<uint16_t> &b : checkBits)
    b = {};
  if (options.progress)
    *options.progress << formatv("inputs and reference ready in {0:f1} s "
                                 "({1} GPU(s): {2})\n",
                                 secondsSince(start), workers.size(),
                                 workers.front()->device().name);

  TimingsFile file;
  file.gpu = workers.front()->device().name;
  file.manifest = manifest;
  std::optional<Progress> progress;
  Session session{dir, manifest, options, expected, progress};
  session.numWorkers = workers.size();
  session.results.resize(manifest.candidates.size());
  session.finalShapes.resize(manifest.candidates.size());
  session.samples.assign(
      manifest.candidates.size(),
      std::vector<std::vector<float>>(manifest.shapes.size()));
  std::vector<size_t> all(manifest.candidates.size());
  for (size_t i = 0; i < all.size(); ++i)
    all[i] = i;
  runWorkers(session, workers, Pass::Probe, std::move(all), "probing");
  bool probed = options.screenRatio > 0 && options.probe < options.iters;
  if (!session.fatal && probed) {
    std::vector<size_t> finalists = chooseFinalists(session);
    for (size_t index : finalists)
      for (size_t shape : session.finalShapes[index])
        session.samples[index][shape].clear();
    // Round r gets its share of `iters` launches; a clock that drifts during
    // the run then moves every finalist's median alike.
    unsigned rounds = std::clamp(options.rounds, 1u, options.iters);
    for (unsigned r = 0; r < rounds && !session.fatal; ++r) {
      session.roundLaunches =
          options.iters / rounds + (r < options.iters % rounds ? 1 : 0);
      runWorkers(session, workers, Pass::Final, finalists,
                 rounds > 1 ? formatv("timing {0}/{1}", r + 1, rounds).str()
                            : "timing");
    }
  }
  for (auto &records : session.results)
    file.timings.insert(file.timings.end(), records.begin(), records.end());
  if (session.fatal) {
    file.incomplete = *session.fatal;
    // Candidates never reached are recorded so the file says so.
    for (auto [i, records] : enumerate(session.results))
      if (records.empty())
        for (const ProblemShape &shape : manifest.shapes)
          file.timings.push_back({manifest.candidates[i].id,
                                  manifest.candidates[i].config, shape,
                                  TimingStatus::Error,
                                  "not run: the run stopped at a hung kernel",
                                  0, 0, -1});
  }
  if (options.progress)
    *options.progress << formatv("timed {0} candidates x {1} shapes in "
                                 "{2:f1} s\n",
                                 manifest.candidates.size(),
                                 manifest.shapes.size(), secondsSince(start));
  return file;
}

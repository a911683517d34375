//===- TimerImpl.h - the parts of the bundle timer --------------*- C++ -*-===//
//
// Private to lib/Autotune/Timer: what the files of flash-tune-run's timer
// share. Inputs.cpp makes the inputs and the reference's answer,
// DeviceWorker.cpp holds one GPU's state, Check.cpp checks a candidate,
// Measure.cpp times its launches after an L2 flush, Schedule.cpp runs a pass
// over the candidates on one worker per GPU, Results.cpp records what each
// candidate did and picks the finalists, Timer.cpp runs the whole.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_LIB_AUTOTUNE_TIMER_TIMERIMPL_H
#define FLASHC_LIB_AUTOTUNE_TIMER_TIMERIMPL_H

#include "flashc/Autotune/Progress.h"
#include "flashc/Autotune/Timer.h"

#include "flashc/Runtime/Kernel.h"

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace flashc::tune::timer {

using Clock = std::chrono::steady_clock;

inline double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

//===--- Inputs.cpp -------------------------------------------------------===//

/// One shape's dense B x H x N x D tensors (LSE: B x H x N) as the kernel
/// sees them, and how many input sets rotate to defeat L2.
struct ShapeLayout {
  ProblemShape shape;
  rt::DType dtype = rt::DType::BF16;
  bool hasLse = false;
  int64_t elems[rt::kNumTensors] = {};
  int64_t strides[rt::kNumTensors][4] = {};
  size_t numSets = 1;

  ShapeLayout(const ProblemShape &s, const rt::KernelMetadata &meta,
              size_t rotateBytes);
  size_t bytes(unsigned t) const {
    return size_t(elems[t]) * (t == unsigned(rt::TensorId::LSE) ? 4 : 2);
  }
  rt::TensorArg arg(unsigned t, CUdeviceptr ptr, int device) const;
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
            std::vector<uint16_t> &bits);

private:
  std::mt19937_64 rng;
};

/// The reference rows of the check shape's first input set; they do not
/// depend on the candidate, so they are computed once, before any runs.
ExpectedRows computeExpected(const ShapeLayout &layout, size_t shapeIndex,
                             const std::vector<uint16_t> (&bits)[3],
                             const rt::KernelMetadata &meta,
                             const TimerOptions &options);

//===--- DeviceWorker.cpp, Check.cpp, Measure.cpp -------------------------===//

/// One GPU: its context, stream, events and a copy of every input set.
class DeviceWorker {
public:
  DeviceWorker(const rt::DriverApi &cu, rt::DeviceInfo info,
               const TimerOptions &options)
      : cu(cu), info(std::move(info)), options(options) {}
  ~DeviceWorker();

  llvm::Error init(llvm::ArrayRef<ShapeLayout> layouts);
  llvm::Error upload(size_t shape, size_t set, unsigned tensor,
                     llvm::ArrayRef<uint16_t> bits);
  /// Empty if `kernel` matches the reference on the check rows, else why.
  llvm::Expected<std::string> check(rt::Kernel &kernel,
                                    const ExpectedRows &expected);
  /// The times (ms) of `launches` timed launches after the warm-up.
  llvm::Expected<std::vector<float>> time(rt::Kernel &kernel, size_t shape,
                                          unsigned launches);

  const rt::DeviceInfo &device() const { return info; }
  CUcontext getContext() const { return context->get(); }
  /// Set once a launch hangs: nothing may touch the device again (freeing
  /// would wait on the hung kernel), the process exits soon after.
  bool hung = false;

private:
  llvm::Error wait(llvm::StringRef what);
  rt::LaunchArgs args(size_t shape, size_t set) const;

  const rt::DriverApi &cu;
  rt::DeviceInfo info;
  const TimerOptions &options;
  std::optional<rt::PrimaryContext> context;
  CUstream stream = nullptr;
  std::vector<CUevent> events;
  /// TimerOptions::flushBytes of scratch, written before each timed launch.
  CUdeviceptr flush = 0;
  const ShapeLayout *layouts = nullptr;
  /// [shape][set][tensor]
  std::vector<std::vector<std::array<CUdeviceptr, rt::kNumTensors>>> buffers;
};

/// The median of launch times (ms).
double median(std::vector<float> ms);

//===--- Schedule.cpp, Results.cpp ----------------------------------------===//

/// The two passes over the candidates: every candidate is checked and
/// probed; then the finalists (probe within screenRatio of the best probe of
/// a shape) get the full count of launches on that shape, spread over
/// TimerOptions::rounds rounds that each visit every finalist once.
enum class Pass { Probe, Final };

/// Everything the workers share.
struct Session {
  llvm::StringRef dir;
  const BundleManifest &manifest;
  const TimerOptions &options;
  const ExpectedRows &expected;
  std::optional<Progress> &progress;
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

/// Runs one pass over `queue` on every worker, one thread per GPU.
void runWorkers(Session &session,
                llvm::ArrayRef<std::unique_ptr<DeviceWorker>> workers,
                Pass pass, std::vector<size_t> queue, llvm::StringRef label);

/// Every shape of `candidate` gets the same record: it could not load or
/// launch, or failed its check.
void recordAll(std::vector<CandidateTiming> &records,
               const BundleCandidate &candidate,
               llvm::ArrayRef<ProblemShape> shapes, TimingStatus status,
               const std::string &message, int device);
/// A candidate that passed its check: Ok on every shape, screened as a
/// "probe" while `probeOnly` until the final pass times it fully.
void recordChecked(std::vector<CandidateTiming> &records,
                   const BundleCandidate &candidate,
                   llvm::ArrayRef<ProblemShape> shapes, int device,
                   bool probeOnly);
/// One shape's record from every launch time it has so far; no longer
/// screened once it has `iters` of them. Returns the median.
double recordTimes(CandidateTiming &record, llvm::ArrayRef<float> samples,
                   unsigned iters, int device);

/// Picks the finalists from the probes: per shape, every candidate whose
/// probe is within TimerOptions::screenRatio of the best probe; the rest
/// keep their probe, still screened, with the reason.
std::vector<size_t> chooseFinalists(Session &session);

/// Appends every record to `file`; after a hang, also a record for each
/// candidate never reached, and why the run stopped.
void collectTimings(Session &session, TimingsFile &file);

} // namespace flashc::tune::timer

#endif // FLASHC_LIB_AUTOTUNE_TIMER_TIMERIMPL_H

//===- Schedule.cpp - a pass over the candidates, one worker per GPU ------===//
//
// Each worker thread takes the next candidate of the pass from a shared
// queue, loads it on its GPU, checks it (first pass) and times it on its
// shapes; a hung launch stops every worker, naming the candidate to skip.
//
//===----------------------------------------------------------------------===//

#include "TimerImpl.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <thread>

using namespace llvm;
using namespace flashc::rt;

namespace flashc::tune::timer {

static void runPass(Session &session, DeviceWorker &worker, Pass pass) {
  ScopedContext scope(worker.getContext());
  const BundleManifest &manifest = session.manifest;
  const TimerOptions &options = session.options;
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
    const BundleCandidate &c = manifest.candidates[index];
    std::vector<CandidateTiming> &records = session.results[index];
    std::string prefix =
        c.id + " " + c.config.str() +
        (several ? formatv(" [GPU {0}]", ordinal).str() : std::string()) + ":";
    auto recordFailure = [&](TimingStatus status, const std::string &message) {
      recordAll(records, c, manifest.shapes, status, message, ordinal);
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
      recordFailure(TimingStatus::Error, "skipped (--skip)");
      continue;
    }
    SmallString<256> path(session.dir);
    sys::path::append(path, c.binary);
    Expected<std::unique_ptr<Kernel>> kernel = Kernel::load(path, ordinal);
    if (!kernel) {
      recordFailure(TimingStatus::Error, toString(kernel.takeError()));
      continue;
    }
    if (pass == Pass::Probe) {
      Expected<std::string> failure = worker.check(**kernel, session.expected);
      if (!failure) {
        std::string message = toString(failure.takeError());
        recordFailure(TimingStatus::Error, message);
        stopOnHang(*kernel, message);
        continue;
      }
      if (!failure->empty()) {
        recordFailure(TimingStatus::CheckFailed, *failure);
        continue;
      }
      recordChecked(records, c, manifest.shapes, ordinal,
                    /*probeOnly=*/probe < options.iters);
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
      double medianMs = recordTimes(records[i], all, options.iters, ordinal);
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

} // namespace flashc::tune::timer

//===- Results.cpp - what each candidate did, and the finalists -----------===//
//
// One CandidateTiming per candidate and shape: an error or a failed check
// on every shape, or Ok with the median of every launch so far, screened
// while it holds only a probe. The finalists are picked from the probes;
// a run stopped by a hang still records every candidate it never reached.
//
//===----------------------------------------------------------------------===//

#include "TimerImpl.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"

#include <cmath>

using namespace llvm;

namespace flashc::tune::timer {

void recordAll(std::vector<CandidateTiming> &records,
               const BundleCandidate &candidate, ArrayRef<ProblemShape> shapes,
               TimingStatus status, const std::string &message, int device) {
  records.clear();
  for (const ProblemShape &shape : shapes)
    records.push_back({candidate.id, candidate.config, shape, status, message,
                       0, 0, device});
}

void recordChecked(std::vector<CandidateTiming> &records,
                   const BundleCandidate &candidate,
                   ArrayRef<ProblemShape> shapes, int device, bool probeOnly) {
  records.clear();
  for (const ProblemShape &shape : shapes)
    records.push_back({candidate.id, candidate.config, shape, TimingStatus::Ok,
                       probeOnly ? "probe" : "", 0, 0, device, probeOnly});
}

double recordTimes(CandidateTiming &record, ArrayRef<float> samples,
                   unsigned iters, int device) {
  record.medianMs = median(samples.vec());
  record.launches = unsigned(samples.size());
  record.device = device;
  if (samples.size() >= iters) {
    record.message.clear();
    record.screened = false;
  }
  return record.medianMs;
}

std::vector<size_t> chooseFinalists(Session &session) {
  const TimerOptions &options = session.options;
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

void collectTimings(Session &session, TimingsFile &file) {
  const BundleManifest &manifest = session.manifest;
  for (auto &records : session.results)
    file.timings.insert(file.timings.end(), records.begin(), records.end());
  if (!session.fatal)
    return;
  file.incomplete = *session.fatal;
  // Candidates never reached are recorded so the file says so.
  for (auto [i, records] : enumerate(session.results))
    if (records.empty())
      for (const ProblemShape &shape : manifest.shapes)
        file.timings.push_back({manifest.candidates[i].id,
                                manifest.candidates[i].config, shape,
                                TimingStatus::Error,
                                "not run: the run stopped at a hung kernel", 0,
                                0, -1});
}

} // namespace flashc::tune::timer

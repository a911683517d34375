//===- Selection.cpp - timings and the choice of winners ------------------===//

#include "flashc/Autotune/Selection.h"
#include "JsonUtil.h"
#include "flashc/Autotune/Files.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FormatVariadic.h"

using namespace llvm;
using namespace flashc::tune;
using namespace flashc::tune::json_util;

StringRef flashc::tune::toString(TimingStatus status) {
  switch (status) {
  case TimingStatus::Ok:
    return "ok";
  case TimingStatus::CheckFailed:
    return "check_failed";
  case TimingStatus::Error:
    return "error";
  }
  llvm_unreachable("unknown timing status");
}

json::Value TimingsFile::toJson() const {
  json::Array array;
  for (const CandidateTiming &t : timings) {
    json::Object o{{"candidate", t.candidate},
                   {"config", flashc::tune::toJson(t.config)},
                   {"shape", flashc::tune::toJson(t.shape)},
                   {"status", toString(t.status)},
                   {"message", t.message},
                   {"median_ms", t.medianMs}};
    if (t.launches > 0)
      o["launches"] = t.launches;
    if (t.device >= 0)
      o["device"] = t.device;
    if (t.screened)
      o["screened"] = true;
    array.push_back(std::move(o));
  }
  json::Object root{{"format", kTimingsFormat},
                    {"format_version", kTimingsVersion},
                    {"gpu", gpu},
                    {"kernel", manifest.kernel},
                    {"source_hash", manifest.sourceHash},
                    {"arch", manifest.arch},
                    {"causal", manifest.causal},
                    {"timings", std::move(array)}};
  if (!incomplete.empty())
    root["incomplete"] = incomplete;
  return root;
}

namespace flashc::tune {
static bool fromJSON(const json::Value &value, TimingStatus &status,
                     json::Path path) {
  std::optional<StringRef> text = value.getAsString();
  std::optional<TimingStatus> st =
      StringSwitch<std::optional<TimingStatus>>(text.value_or(""))
          .Case("ok", TimingStatus::Ok)
          .Case("check_failed", TimingStatus::CheckFailed)
          .Case("error", TimingStatus::Error)
          .Default(std::nullopt);
  if (!st) {
    path.report("expected ok, check_failed or error");
    return false;
  }
  status = *st;
  return true;
}

static bool fromJSON(const json::Value &value, CandidateTiming &t,
                     json::Path path) {
  json::ObjectMapper o(value, path);
  return o && o.map("candidate", t.candidate) && o.map("status", t.status) &&
         o.map("median_ms", t.medianMs) && o.map("config", t.config) &&
         o.map("shape", t.shape) && o.mapOptional("message", t.message) &&
         o.mapOptional("launches", t.launches) &&
         o.mapOptional("device", t.device) &&
         o.mapOptional("screened", t.screened);
}

static bool fromJSON(const json::Value &value, TimingsFile &file,
                     json::Path path) {
  json::ObjectMapper o(value, path);
  return o && o.map("gpu", file.gpu) && o.map("kernel", file.manifest.kernel) &&
         o.map("source_hash", file.manifest.sourceHash) &&
         o.map("arch", file.manifest.arch) &&
         o.mapOptional("causal", file.manifest.causal) &&
         o.mapOptional("incomplete", file.incomplete) &&
         o.map("timings", file.timings);
}
} // namespace flashc::tune

Expected<TimingsFile> TimingsFile::parse(StringRef text, StringRef path) {
  Expected<json::Value> value =
      parseTuningDocument(text, path, kTimingsFormat, kTimingsVersion);
  if (!value)
    return value.takeError();
  TimingsFile file;
  if (Error err = readJson(*value, file, path))
    return std::move(err);
  return file;
}

std::vector<Winner>
flashc::tune::selectWinners(ArrayRef<ProblemShape> shapes,
                            ArrayRef<CandidateTiming> timings) {
  std::vector<Winner> winners;
  for (const ProblemShape &shape : shapes) {
    Winner winner;
    winner.shape = shape;
    for (const CandidateTiming &t : timings) {
      if (!(t.shape == shape))
        continue;
      if (t.status == TimingStatus::CheckFailed) {
        ++winner.checkFailed;
        continue;
      }
      // A median that is not a positive number is a broken measurement.
      if (t.status == TimingStatus::Error || !(t.medianMs > 0)) {
        ++winner.errors;
        continue;
      }
      ++winner.timed;
      if (t.screened)
        continue;
      if (!winner.best || std::make_pair(t.medianMs, StringRef(t.candidate)) <
                              std::make_pair(winner.best->medianMs,
                                             StringRef(winner.best->candidate)))
        winner.best = t;
    }
    winners.push_back(std::move(winner));
  }
  return winners;
}

bool flashc::tune::printWinners(raw_ostream &os, ArrayRef<Winner> winners) {
  bool all = true;
  for (const Winner &w : winners) {
    if (!w.best) {
      os << formatv("{0}: no candidate passed ({1} wrong, {2} errors)\n",
                    w.shape.str(), w.checkFailed, w.errors);
      all = false;
      continue;
    }
    os << formatv("{0}: {1} {2} {3:f4} ms ({4} timed, {5} wrong, {6} "
                  "errors)\n",
                  w.shape.str(), w.best->candidate, w.best->config.str(),
                  w.best->medianMs, w.timed, w.checkFailed, w.errors);
  }
  return all;
}

size_t flashc::tune::recordWinners(TuningDb &db, const BundleManifest &manifest,
                                   StringRef gpu, ArrayRef<Winner> winners) {
  size_t written = 0;
  for (const Winner &winner : winners) {
    if (!winner.best)
      continue;
    TuningEntry entry;
    entry.sourceHash = manifest.sourceHash;
    entry.arch = manifest.arch;
    entry.gpu = gpu.str();
    entry.bucket = bucketOf(winner.shape);
    entry.kernel = manifest.kernel;
    entry.shape = winner.shape;
    entry.config = winner.best->config;
    entry.medianMs = winner.best->medianMs;
    entry.tflops = attentionFlops(winner.shape, manifest.causal) /
                   (winner.best->medianMs * 1e-3) / 1e12;
    entry.candidates = winner.timed;
    db.upsert(std::move(entry));
    ++written;
  }
  return written;
}

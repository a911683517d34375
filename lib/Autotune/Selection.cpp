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

Expected<TimingsFile> TimingsFile::parse(StringRef text, StringRef path) {
  Expected<json::Value> value =
      parseTuningDocument(text, path, kTimingsFormat, kTimingsVersion);
  if (!value)
    return value.takeError();
  const json::Object &root = *value->getAsObject();
  TimingsFile file;
  std::pair<StringRef, std::string *> strings[] = {
      {"gpu", &file.gpu},
      {"kernel", &file.manifest.kernel},
      {"source_hash", &file.manifest.sourceHash},
      {"arch", &file.manifest.arch}};
  for (auto [key, field] : strings) {
    Expected<std::string> s = getString(root, key, path);
    if (!s)
      return s.takeError();
    *field = std::move(*s);
  }
  file.manifest.causal = root.getBoolean("causal").value_or(false);
  if (std::optional<StringRef> why = root.getString("incomplete"))
    file.incomplete = why->str();
  Expected<const json::Array *> timings = getArray(root, "timings", path);
  if (!timings)
    return timings.takeError();
  for (auto [i, v] : enumerate(**timings)) {
    std::string where = (path + ".timings[" + Twine(i) + "]").str();
    Expected<const json::Object *> o = getObject(v, where);
    if (!o)
      return o.takeError();
    CandidateTiming t;
    Expected<std::string> id = getString(**o, "candidate", where);
    Expected<std::string> status = getString(**o, "status", where);
    Expected<double> ms = getNumber(**o, "median_ms", where);
    if (!id || !status || !ms)
      return joinErrors(joinErrors(id.takeError(), status.takeError()),
                        ms.takeError());
    const json::Value *config = (*o)->get("config");
    const json::Value *shape = (*o)->get("shape");
    if (!config || !shape)
      return fieldError(where, "config and shape are required");
    Expected<TuneConfig> tc = configFromJson(*config, where + ".config");
    if (!tc)
      return tc.takeError();
    Expected<ProblemShape> ps = shapeFromJson(*shape, where + ".shape");
    if (!ps)
      return ps.takeError();
    std::optional<TimingStatus> st =
        StringSwitch<std::optional<TimingStatus>>(*status)
            .Case("ok", TimingStatus::Ok)
            .Case("check_failed", TimingStatus::CheckFailed)
            .Case("error", TimingStatus::Error)
            .Default(std::nullopt);
    if (!st)
      return fieldError(where + ".status",
                        "expected ok, check_failed or error");
    t.candidate = *id;
    t.config = *tc;
    t.shape = *ps;
    t.status = *st;
    t.medianMs = *ms;
    if (std::optional<StringRef> message = (*o)->getString("message"))
      t.message = message->str();
    t.launches = (*o)->getInteger("launches").value_or(0);
    t.device = int((*o)->getInteger("device").value_or(-1));
    t.screened = (*o)->getBoolean("screened").value_or(false);
    file.timings.push_back(std::move(t));
  }
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

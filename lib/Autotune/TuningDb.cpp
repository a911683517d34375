//===- TuningDb.cpp - the tuning database ---------------------------------===//

#include "flashc/Autotune/TuningDb.h"
#include "flashc/Autotune/Files.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"

#include <algorithm>

using namespace llvm;
using namespace flashc::tune;

namespace flashc::tune {
static bool fromJSON(const json::Value &value, TuningEntry &entry,
                     json::Path path) {
  json::ObjectMapper o(value, path);
  return o && o.map("source_hash", entry.sourceHash) &&
         o.map("arch", entry.arch) && o.map("gpu", entry.gpu) &&
         o.map("kernel", entry.kernel) && o.map("bucket", entry.bucket) &&
         o.map("shape", entry.shape) && o.map("config", entry.config) &&
         o.map("median_ms", entry.medianMs) && o.map("tflops", entry.tflops) &&
         o.map("candidates", entry.candidates);
}
} // namespace flashc::tune

static json::Object entryToJson(const TuningEntry &entry) {
  return json::Object{{"source_hash", entry.sourceHash},
                      {"kernel", entry.kernel},
                      {"arch", entry.arch},
                      {"gpu", entry.gpu},
                      {"bucket", toJson(entry.bucket)},
                      {"shape", toJson(entry.shape)},
                      {"config", toJson(entry.config)},
                      {"median_ms", entry.medianMs},
                      {"tflops", entry.tflops},
                      {"candidates", entry.candidates}};
}

Expected<TuningDb> TuningDb::parse(StringRef text, StringRef path) {
  Expected<json::Value> value =
      parseTuningDocument(text, path, kTuningDbFormat, kTuningDbVersion);
  if (!value)
    return value.takeError();
  std::vector<TuningEntry> entries;
  json::Path::Root root(path);
  json::ObjectMapper o(*value, root);
  if (!o.map("entries", entries))
    return root.getError();
  TuningDb db;
  for (TuningEntry &entry : entries)
    db.upsert(std::move(entry));
  return db;
}

Expected<TuningDb> TuningDb::load(StringRef path) {
  Expected<std::string> text = readFile(path);
  if (!text)
    return text.takeError();
  return parse(*text, path);
}

Expected<TuningDb> TuningDb::loadForUpdate(StringRef path) {
  if (!sys::fs::exists(path))
    return TuningDb();
  Expected<TuningDb> db = load(path);
  if (!db)
    return createStringError(inconvertibleErrorCode(),
                             "%s\n'%s' is left as it is: pass another -o or "
                             "move the file away",
                             toString(db.takeError()).c_str(),
                             path.str().c_str());
  return db;
}

json::Value TuningDb::toJson() const {
  json::Array array;
  for (const TuningEntry &entry : entries)
    array.push_back(entryToJson(entry));
  return json::Object{{"format", kTuningDbFormat},
                      {"format_version", kTuningDbVersion},
                      {"entries", std::move(array)}};
}

Error TuningDb::save(StringRef path) const {
  return writeJsonAtomically(path, toJson());
}

void TuningDb::upsert(TuningEntry entry) {
  auto it = find_if(entries, [&](const TuningEntry &existing) {
    return existing.sameKey(entry);
  });
  if (it != entries.end())
    *it = std::move(entry);
  else
    entries.push_back(std::move(entry));
  // A stable order keeps diffs of the file small.
  llvm::sort(entries, [](const TuningEntry &a, const TuningEntry &b) {
    return std::tie(a.kernel, a.sourceHash, a.arch, a.gpu, a.bucket) <
           std::tie(b.kernel, b.sourceHash, b.arch, b.gpu, b.bucket);
  });
}

std::vector<const TuningEntry *>
TuningDb::find(StringRef sourceHash, StringRef arch,
               const ShapeBucket &bucket) const {
  std::vector<const TuningEntry *> found;
  for (const TuningEntry &entry : entries)
    if (entry.sourceHash == sourceHash && entry.arch == arch &&
        entry.bucket == bucket)
      found.push_back(&entry);
  return found;
}

void TuningDb::printTable(raw_ostream &os) const {
  os << formatv("{0,-12} {1,-8} {2,-7} {3,-18} {4,-24} {5,-28} {6,10} {7,8} "
                "{8,5}\n",
                "kernel", "hash", "arch", "gpu", "bucket", "config",
                "median_ms", "TFLOP/s", "cands");
  for (const TuningEntry &e : entries)
    os << formatv("{0,-12} {1,-8} {2,-7} {3,-18} {4,-24} {5,-28} {6,10:f4} "
                  "{7,8:f1} {8,5}\n",
                  e.kernel, StringRef(e.sourceHash).take_front(8), e.arch,
                  e.gpu, e.bucket.str(), e.config.str(), e.medianMs, e.tflops,
                  e.candidates);
  if (entries.empty())
    os << "(no entries)\n";
}

Expected<const TuningEntry *>
flashc::tune::lookupTuning(const TuningDb &db, StringRef sourceHash,
                           StringRef arch, StringRef gpu,
                           const ProblemShape &shape) {
  ShapeBucket bucket = bucketOf(shape);
  std::vector<const TuningEntry *> found = db.find(sourceHash, arch, bucket);
  if (!gpu.empty())
    llvm::erase_if(found,
                   [&](const TuningEntry *entry) { return entry->gpu != gpu; });
  if (found.size() == 1)
    return found.front();
  if (found.size() > 1) {
    std::string gpus;
    for (const TuningEntry *entry : found)
      gpus += "\n  " + entry->gpu;
    return createStringError(inconvertibleErrorCode(),
                             "the tuning database has entries for %s on "
                             "several GPUs; pick one with --gpu:%s",
                             bucket.str().c_str(), gpus.c_str());
  }
  std::string known;
  for (const TuningEntry &entry : db.getEntries())
    if (entry.sourceHash == sourceHash)
      known +=
          formatv("\n  {0} {1} {2}", entry.arch, entry.gpu, entry.bucket.str());
  return createStringError(
      inconvertibleErrorCode(),
      "no tuning entry for shape %s (bucket %s, arch %s%s%s) of this kernel "
      "(source hash %s); %s",
      shape.str().c_str(), bucket.str().c_str(), arch.str().c_str(),
      gpu.empty() ? "" : ", gpu ", gpu.str().c_str(),
      sourceHash.take_front(12).str().c_str(),
      known.empty() ? "the database has none for this source (was the kernel "
                      "edited after tuning?)"
                    : ("it has:" + known).c_str());
}

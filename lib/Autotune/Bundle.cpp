//===- Bundle.cpp - the candidate bundle manifest -------------------------===//

#include "flashc/Autotune/Bundle.h"
#include "JsonUtil.h"
#include "flashc/Autotune/Files.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Path.h"

using namespace llvm;
using namespace flashc::tune;
using namespace flashc::tune::json_util;

json::Value BundleManifest::toJson() const {
  json::Array shapeArray, candidateArray, prunedArray;
  for (const ProblemShape &shape : shapes)
    shapeArray.push_back(flashc::tune::toJson(shape));
  for (const BundleCandidate &c : candidates)
    candidateArray.push_back(
        json::Object{{"id", c.id},
                     {"binary", c.binary},
                     {"config", flashc::tune::toJson(c.config)},
                     {"registers", c.registers},
                     {"spill_bytes", c.spillBytes}});
  for (const PrunedConfig &p : pruned)
    prunedArray.push_back(
        json::Object{{"config", flashc::tune::toJson(p.config)},
                     {"stage", p.stage},
                     {"reason", p.reason}});
  return json::Object{{"format", kBundleFormat},
                      {"format_version", kBundleVersion},
                      {"kernel", kernel},
                      {"source", source},
                      {"source_hash", sourceHash},
                      {"arch", arch},
                      {"dtype", dtype},
                      {"head_dim", headDim},
                      {"causal", causal},
                      {"shapes", std::move(shapeArray)},
                      {"candidates", std::move(candidateArray)},
                      {"pruned", std::move(prunedArray)}};
}

namespace flashc::tune {
static bool fromJSON(const json::Value &value, BundleCandidate &candidate,
                     json::Path path) {
  json::ObjectMapper o(value, path);
  return o && o.map("id", candidate.id) && o.map("binary", candidate.binary) &&
         o.map("registers", candidate.registers) &&
         o.map("spill_bytes", candidate.spillBytes) &&
         o.map("config", candidate.config);
}

static bool fromJSON(const json::Value &value, PrunedConfig &pruned,
                     json::Path path) {
  json::ObjectMapper o(value, path);
  return o && o.map("config", pruned.config) && o.map("stage", pruned.stage) &&
         o.map("reason", pruned.reason);
}

static bool fromJSON(const json::Value &value, BundleManifest &m,
                     json::Path path) {
  json::ObjectMapper o(value, path);
  // "pruned" is a record for people; it is optional.
  return o && o.map("kernel", m.kernel) && o.map("source", m.source) &&
         o.map("source_hash", m.sourceHash) && o.map("arch", m.arch) &&
         o.map("dtype", m.dtype) && o.map("head_dim", m.headDim) &&
         o.map("causal", m.causal) && o.map("shapes", m.shapes) &&
         o.map("candidates", m.candidates) && o.mapOptional("pruned", m.pruned);
}
} // namespace flashc::tune

Expected<BundleManifest> BundleManifest::parse(StringRef text, StringRef path) {
  Expected<json::Value> value =
      parseTuningDocument(text, path, kBundleFormat, kBundleVersion);
  if (!value)
    return value.takeError();
  BundleManifest m;
  if (Error err = readJson(*value, m, path))
    return std::move(err);
  return m;
}

Expected<BundleManifest> BundleManifest::load(StringRef dir) {
  SmallString<256> path(dir);
  sys::path::append(path, kManifestName);
  Expected<std::string> text = readFile(path);
  if (!text)
    return text.takeError();
  return parse(*text, path);
}

Error BundleManifest::save(StringRef dir) const {
  SmallString<256> path(dir);
  sys::path::append(path, kManifestName);
  return writeJsonAtomically(path, toJson());
}

//===- Bundle.cpp - the candidate bundle manifest -------------------------===//

#include "flashc/Autotune/Bundle.h"
#include "JsonUtil.h"
#include "flashc/Autotune/Files.h"

#include "llvm/ADT/STLExtras.h"
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

Expected<BundleManifest> BundleManifest::parse(StringRef text, StringRef path) {
  Expected<json::Value> value =
      parseTuningDocument(text, path, kBundleFormat, kBundleVersion);
  if (!value)
    return value.takeError();
  const json::Object &root = *value->getAsObject();
  BundleManifest m;
  std::pair<StringRef, std::string *> strings[] = {
      {"kernel", &m.kernel},
      {"source", &m.source},
      {"source_hash", &m.sourceHash},
      {"arch", &m.arch},
      {"dtype", &m.dtype}};
  for (auto [key, field] : strings) {
    Expected<std::string> s = getString(root, key, path);
    if (!s)
      return s.takeError();
    *field = std::move(*s);
  }
  Expected<int64_t> headDim = getInt(root, "head_dim", path);
  if (!headDim)
    return headDim.takeError();
  m.headDim = *headDim;
  std::optional<bool> causal = root.getBoolean("causal");
  if (!causal)
    return fieldError(path + ".causal", "expected a boolean");
  m.causal = *causal;

  Expected<const json::Array *> shapes = getArray(root, "shapes", path);
  if (!shapes)
    return shapes.takeError();
  for (auto [i, v] : enumerate(**shapes)) {
    Expected<ProblemShape> shape =
        shapeFromJson(v, (path + ".shapes[" + Twine(i) + "]").str());
    if (!shape)
      return shape.takeError();
    m.shapes.push_back(*shape);
  }

  Expected<const json::Array *> candidates = getArray(root, "candidates", path);
  if (!candidates)
    return candidates.takeError();
  for (auto [i, v] : enumerate(**candidates)) {
    std::string where = (path + ".candidates[" + Twine(i) + "]").str();
    Expected<const json::Object *> o = getObject(v, where);
    if (!o)
      return o.takeError();
    BundleCandidate c;
    Expected<std::string> id = getString(**o, "id", where);
    Expected<std::string> binary = getString(**o, "binary", where);
    Expected<int64_t> registers = getInt(**o, "registers", where);
    Expected<int64_t> spills = getInt(**o, "spill_bytes", where);
    if (!id || !binary || !registers || !spills)
      return joinErrors(joinErrors(id.takeError(), binary.takeError()),
                        joinErrors(registers.takeError(), spills.takeError()));
    const json::Value *config = (*o)->get("config");
    if (!config)
      return fieldError(where + ".config", "missing");
    Expected<TuneConfig> tc = configFromJson(*config, where + ".config");
    if (!tc)
      return tc.takeError();
    c.id = *id;
    c.binary = *binary;
    c.registers = *registers;
    c.spillBytes = *spills;
    c.config = *tc;
    m.candidates.push_back(std::move(c));
  }

  // "pruned" is a record for people; it is optional.
  if (const json::Array *pruned = root.getArray("pruned")) {
    for (auto [i, v] : enumerate(*pruned)) {
      std::string where = (path + ".pruned[" + Twine(i) + "]").str();
      Expected<const json::Object *> o = getObject(v, where);
      if (!o)
        return o.takeError();
      const json::Value *config = (*o)->get("config");
      if (!config)
        return fieldError(where + ".config", "missing");
      Expected<TuneConfig> tc = configFromJson(*config, where + ".config");
      Expected<std::string> stage = getString(**o, "stage", where);
      Expected<std::string> reason = getString(**o, "reason", where);
      if (!tc || !stage || !reason)
        return joinErrors(joinErrors(tc.takeError(), stage.takeError()),
                          reason.takeError());
      m.pruned.push_back({*tc, *stage, *reason});
    }
  }
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

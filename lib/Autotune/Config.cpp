//===- Config.cpp - tuning knobs, shapes and shape buckets ----------------===//

#include "flashc/Autotune/Config.h"
#include "JsonUtil.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MathExtras.h"

using namespace llvm;
using namespace flashc::tune;
using namespace flashc::tune::json_util;

std::string TuneConfig::str() const {
  return formatv("bm{0} bn{1} s{2} wg{3}{4}", blockM, blockN, stages,
                 warpgroups, scheduleSwitchLabels(switches));
}

json::Object flashc::tune::toJson(const TuneConfig &config) {
  json::Object object{{"block_m", config.blockM},
                      {"block_n", config.blockN},
                      {"stages", config.stages},
                      {"warpgroups", config.warpgroups}};
  for (const ScheduleSwitchInfo &info : scheduleSwitchInfos())
    object[info.key] = int64_t(config.switches.*info.member);
  return object;
}

Expected<TuneConfig> flashc::tune::configFromJson(const json::Value &value,
                                                  StringRef where) {
  Expected<const json::Object *> object = getObject(value, where);
  if (!object)
    return object.takeError();
  TuneConfig config;
  std::pair<StringRef, int64_t *> ints[] = {{"block_m", &config.blockM},
                                            {"block_n", &config.blockN},
                                            {"stages", &config.stages},
                                            {"warpgroups", &config.warpgroups}};
  for (auto [key, field] : ints) {
    Expected<int64_t> v = getInt(**object, key, where);
    if (!v)
      return v.takeError();
    *field = *v;
  }
  // A switch added after databases were first written is missing there:
  // it means what those entries ran with, the switch's default but for
  // the two below.
  for (const ScheduleSwitchInfo &info : scheduleSwitchInfos()) {
    if (!(*object)->get(info.key))
      continue;
    Expected<int64_t> v = getInt(**object, info.key, where);
    if (!v)
      return v.takeError();
    if (*v != 0 && *v != 1)
      return fieldError(where + "." + info.key, "expected 0 or 1");
    config.switches.*info.member = *v == 1;
  }
  // Before the TMA store was a switch, the compiler used it with at most
  // two warpgroups; persistent entries from before claimed tiles ran the
  // static pairs.
  if (!(*object)->get("tma_store_o"))
    config.switches.tmaStoreO = config.warpgroups <= 2;
  if (!(*object)->get("dynamic_schedule"))
    config.switches.dynamicSchedule = !config.switches.persistent;
  return config;
}

std::string ProblemShape::str() const {
  return formatv("{0},{1},{2},{3}", batch, heads, seq, headDim);
}

Expected<ProblemShape> flashc::tune::parseShape(StringRef text) {
  SmallVector<StringRef, 4> parts;
  text.split(parts, ',');
  int64_t values[4];
  bool ok = parts.size() == 4;
  for (unsigned i = 0; ok && i < 4; ++i)
    ok = !parts[i].trim().getAsInteger(10, values[i]) && values[i] > 0;
  if (!ok)
    return createStringError(inconvertibleErrorCode(),
                             "bad shape '%s': expected B,H,N,D (four "
                             "positive integers)",
                             text.str().c_str());
  return ProblemShape{values[0], values[1], values[2], values[3]};
}

json::Array flashc::tune::toJson(const ProblemShape &shape) {
  return json::Array{shape.batch, shape.heads, shape.seq, shape.headDim};
}

Expected<ProblemShape> flashc::tune::shapeFromJson(const json::Value &value,
                                                   StringRef where) {
  const json::Array *array = value.getAsArray();
  int64_t values[4];
  bool ok = array && array->size() == 4;
  for (unsigned i = 0; ok && i < 4; ++i) {
    std::optional<int64_t> v = (*array)[i].getAsInteger();
    ok = v && *v > 0;
    values[i] = v.value_or(0);
  }
  if (!ok)
    return fieldError(where, "expected [B, H, N, D] (positive integers)");
  return ProblemShape{values[0], values[1], values[2], values[3]};
}

std::string ShapeBucket::str() const {
  return formatv("N<={0} D={1} BH<={2}", seq, headDim, batchHeads);
}

ShapeBucket flashc::tune::bucketOf(const ProblemShape &shape) {
  return {int64_t(PowerOf2Ceil(uint64_t(shape.seq))), shape.headDim,
          int64_t(PowerOf2Ceil(uint64_t(shape.batch * shape.heads)))};
}

json::Object flashc::tune::toJson(const ShapeBucket &bucket) {
  return json::Object{{"seq", bucket.seq},
                      {"head_dim", bucket.headDim},
                      {"batch_heads", bucket.batchHeads}};
}

Expected<ShapeBucket> flashc::tune::bucketFromJson(const json::Value &value,
                                                   StringRef where) {
  Expected<const json::Object *> object = getObject(value, where);
  if (!object)
    return object.takeError();
  ShapeBucket bucket;
  std::pair<StringRef, int64_t *> fields[] = {
      {"seq", &bucket.seq},
      {"head_dim", &bucket.headDim},
      {"batch_heads", &bucket.batchHeads}};
  for (auto [key, field] : fields) {
    Expected<int64_t> v = getInt(**object, key, where);
    if (!v)
      return v.takeError();
    *field = *v;
  }
  return bucket;
}

double flashc::tune::attentionFlops(const ProblemShape &shape, bool causal) {
  double flops = 4.0 * double(shape.batch) * double(shape.heads) *
                 double(shape.seq) * double(shape.seq) * double(shape.headDim);
  return causal ? flops / 2 : flops;
}

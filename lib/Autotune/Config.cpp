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

bool flashc::tune::fromJSON(const json::Value &value, TuneConfig &config,
                            json::Path path) {
  json::ObjectMapper o(value, path);
  if (!o || !o.map("block_m", config.blockM) ||
      !o.map("block_n", config.blockN) || !o.map("stages", config.stages) ||
      !o.map("warpgroups", config.warpgroups))
    return false;
  const json::Object &object = *value.getAsObject();
  // A switch added after databases were first written is missing there:
  // it means what those entries ran with, the switch's default but for
  // the two below.
  for (const ScheduleSwitchInfo &info : scheduleSwitchInfos()) {
    if (!object.get(info.key))
      continue;
    int64_t v = 0;
    if (!o.map(info.key, v))
      return false;
    if (v != 0 && v != 1) {
      path.field(info.key).report("expected 0 or 1");
      return false;
    }
    config.switches.*info.member = v == 1;
  }
  // Before the TMA store was a switch, the compiler used it with at most
  // two warpgroups; persistent entries from before claimed tiles ran the
  // static pairs.
  if (!object.get("tma_store_o"))
    config.switches.tmaStoreO = config.warpgroups <= 2;
  if (!object.get("dynamic_schedule"))
    config.switches.dynamicSchedule = !config.switches.persistent;
  return true;
}

Expected<TuneConfig> flashc::tune::configFromJson(const json::Value &value,
                                                  StringRef where) {
  TuneConfig config;
  if (Error err = readJson(value, config, where))
    return std::move(err);
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

bool flashc::tune::fromJSON(const json::Value &value, ProblemShape &shape,
                            json::Path path) {
  const json::Array *array = value.getAsArray();
  int64_t values[4];
  bool ok = array && array->size() == 4;
  for (unsigned i = 0; ok && i < 4; ++i) {
    std::optional<int64_t> v = (*array)[i].getAsInteger();
    ok = v && *v > 0;
    values[i] = v.value_or(0);
  }
  if (!ok) {
    path.report("expected [B, H, N, D] (positive integers)");
    return false;
  }
  shape = ProblemShape{values[0], values[1], values[2], values[3]};
  return true;
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

bool flashc::tune::fromJSON(const json::Value &value, ShapeBucket &bucket,
                            json::Path path) {
  json::ObjectMapper o(value, path);
  return o && o.map("seq", bucket.seq) && o.map("head_dim", bucket.headDim) &&
         o.map("batch_heads", bucket.batchHeads);
}

double flashc::tune::attentionFlops(const ProblemShape &shape, bool causal) {
  double flops = 4.0 * double(shape.batch) * double(shape.heads) *
                 double(shape.seq) * double(shape.seq) * double(shape.headDim);
  return causal ? flops / 2 : flops;
}

//===- SearchSpace.cpp - the cross product of the tuning axes -------------===//

#include "flashc/Autotune/SearchSpace.h"

#include "llvm/ADT/StringSwitch.h"

using namespace llvm;
using namespace flashc::tune;

std::array<SmallVector<bool>, flashc::kNumScheduleSwitches>
SearchSpace::defaultSwitchAxes() {
  std::array<SmallVector<bool>, kNumScheduleSwitches> axes;
  for (auto [info, axis] : zip_equal(scheduleSwitchInfos(), axes)) {
    Expected<SmallVector<bool>> values = parseFlagList(info.tuneValues);
    if (!values)
      report_fatal_error(values.takeError());
    axis = *values;
  }
  return axes;
}

SmallVector<bool> &SearchSpace::axis(bool ScheduleSwitches::*member) {
  for (auto [info, axis] : zip_equal(scheduleSwitchInfos(), switches))
    if (info.member == member)
      return axis;
  llvm_unreachable("not a schedule switch");
}

size_t SearchSpace::size() const {
  size_t n = blockM.size() * blockN.size() * stages.size() * warpgroups.size();
  for (const SmallVector<bool> &axis : switches)
    n *= axis.size();
  return n;
}

std::vector<TuneConfig>
flashc::tune::enumerateConfigs(const SearchSpace &space) {
  // The switches' cross product, the first switch outermost.
  std::vector<ScheduleSwitches> schedules = {ScheduleSwitches()};
  for (auto [info, axis] : zip_equal(scheduleSwitchInfos(), space.switches)) {
    std::vector<ScheduleSwitches> next;
    for (const ScheduleSwitches &schedule : schedules)
      for (bool value : axis) {
        next.push_back(schedule);
        next.back().*info.member = value;
      }
    schedules = std::move(next);
  }
  std::vector<TuneConfig> configs;
  configs.reserve(space.size());
  for (int64_t blockM : space.blockM)
    for (int64_t warpgroups : space.warpgroups)
      for (int64_t blockN : space.blockN)
        for (int64_t stages : space.stages)
          for (const ScheduleSwitches &schedule : schedules)
            configs.push_back({blockM, blockN, stages, warpgroups, schedule});
  return configs;
}

Expected<SmallVector<int64_t>> flashc::tune::parseIntList(StringRef text) {
  SmallVector<StringRef> parts;
  text.split(parts, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  SmallVector<int64_t> values;
  for (StringRef part : parts) {
    int64_t value;
    if (part.trim().getAsInteger(10, value) || value <= 0)
      return createStringError(inconvertibleErrorCode(),
                               "bad list '%s': expected positive integers "
                               "separated by commas",
                               text.str().c_str());
    values.push_back(value);
  }
  if (values.empty())
    return createStringError(inconvertibleErrorCode(), "empty list");
  return values;
}

Expected<SmallVector<bool>> flashc::tune::parseFlagList(StringRef text) {
  SmallVector<StringRef> parts;
  text.split(parts, ',', /*MaxSplit=*/-1, /*KeepEmpty=*/false);
  SmallVector<bool> values;
  for (StringRef part : parts) {
    std::optional<bool> value = StringSwitch<std::optional<bool>>(part.trim())
                                    .Cases({"1", "on", "true"}, true)
                                    .Cases({"0", "off", "false"}, false)
                                    .Default(std::nullopt);
    if (!value)
      return createStringError(inconvertibleErrorCode(),
                               "bad list '%s': expected 1/0, on/off or "
                               "true/false separated by commas",
                               text.str().c_str());
    values.push_back(*value);
  }
  if (values.empty())
    return createStringError(inconvertibleErrorCode(), "empty list");
  return values;
}

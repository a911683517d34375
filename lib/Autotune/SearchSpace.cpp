//===- SearchSpace.cpp - the cross product of the tuning axes -------------===//

#include "flashc/Autotune/SearchSpace.h"

#include "llvm/ADT/StringSwitch.h"

using namespace llvm;
using namespace flashc::tune;

size_t SearchSpace::size() const {
  return blockM.size() * blockN.size() * stages.size() * warpgroups.size() *
         overlap.size() * pingpong.size() * splitRelease.size() *
         persistent.size() * tmaStoreO.size() * dynamicSchedule.size() *
         speculativeExp.size();
}

std::vector<TuneConfig>
flashc::tune::enumerateConfigs(const SearchSpace &space) {
  std::vector<TuneConfig> configs;
  configs.reserve(space.size());
  for (int64_t blockM : space.blockM)
    for (int64_t warpgroups : space.warpgroups)
      for (int64_t blockN : space.blockN)
        for (int64_t stages : space.stages)
          for (bool overlap : space.overlap)
            for (bool pingpong : space.pingpong)
              for (bool splitRelease : space.splitRelease)
                for (bool persistent : space.persistent)
                  for (bool tmaStoreO : space.tmaStoreO)
                    for (bool dynamicSchedule : space.dynamicSchedule)
                      for (bool speculativeExp : space.speculativeExp)
                        configs.push_back({blockM, blockN, stages, warpgroups,
                                           overlap, pingpong, splitRelease,
                                           persistent, tmaStoreO,
                                           dynamicSchedule, speculativeExp});
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

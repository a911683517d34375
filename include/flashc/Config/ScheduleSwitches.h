//===- ScheduleSwitches.h - the schedule switches as data -------*- C++ -*-===//
//
// The switches of ScheduleSwitches.def as a plain struct and a table to walk
// them by, so that the dialect, the passes, the tools, the tuner and the
// runtime-only timer all read and write the same set. LLVM Support only: the
// runtime-only build includes it too, so it is header-only: it links
// nothing and adds no library to either build.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_CONFIG_SCHEDULESWITCHES_H
#define FLASHC_CONFIG_SCHEDULESWITCHES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/Hashing.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"

#include <array>
#include <string>

namespace flashc {

/// One value per schedule switch.
struct ScheduleSwitches {
#define FLASH_SCHEDULE_SWITCH(Name, field, key, flag, dflt, tune, label, summary)     \
  bool field = dflt;
#include "flashc/Config/ScheduleSwitches.def"

  bool operator==(const ScheduleSwitches &other) const {
    return bits() == other.bits();
  }
  bool operator!=(const ScheduleSwitches &other) const {
    return !(*this == other);
  }
  bool operator<(const ScheduleSwitches &other) const {
    return bits() < other.bits();
  }
  /// The switches in declaration order, as one integer (bit i: switch i).
  unsigned bits() const {
    unsigned result = 0, bit = 0;
#define FLASH_SCHEDULE_SWITCH(Name, field, key, flag, dflt, tune, label, summary)     \
  result |= unsigned(field) << bit++;
#include "flashc/Config/ScheduleSwitches.def"
    return result;
  }
};

/// What ScheduleSwitches.def says of one switch.
struct ScheduleSwitchInfo {
  llvm::StringLiteral key;
  llvm::StringLiteral flag;
  bool defaultValue;
  llvm::StringLiteral tuneValues;
  llvm::StringLiteral label;
  llvm::StringLiteral summary;
  bool ScheduleSwitches::*member;
};

/// Every switch, in declaration order.
inline llvm::ArrayRef<ScheduleSwitchInfo> scheduleSwitchInfos() {
  static const ScheduleSwitchInfo infos[] = {
#define FLASH_SCHEDULE_SWITCH(Name, field, key, flag, dflt, tune, label, summary)     \
  {key, flag, dflt, tune, label, summary, &ScheduleSwitches::field},
#include "flashc/Config/ScheduleSwitches.def"
  };
  return infos;
}

/// Number of switches.
inline constexpr size_t kNumScheduleSwitches = 0
#define FLASH_SCHEDULE_SWITCH(...) +1
#include "flashc/Config/ScheduleSwitches.def"
    ;

/// The switch whose key (or, with `byFlag`, flag) is `name`; null if none.
inline const ScheduleSwitchInfo *findScheduleSwitch(llvm::StringRef name,
                                                    bool byFlag = false) {
  for (const ScheduleSwitchInfo &info : scheduleSwitchInfos())
    if ((byFlag ? info.flag : info.key) == name)
      return &info;
  return nullptr;
}

/// The switches that differ from their defaults, as " label" (on) or
/// " -label" (off) each: "" for the default schedule.
inline std::string scheduleSwitchLabels(const ScheduleSwitches &switches) {
  std::string text;
  for (const ScheduleSwitchInfo &info : scheduleSwitchInfos())
    if (switches.*info.member != info.defaultValue)
      text += (switches.*info.member ? " " : " -") + info.label.str();
  return text;
}

/// Per switch: -1 keeps what the config says, 0 or 1 overrides it.
struct ScheduleOverrides {
  std::array<int, kNumScheduleSwitches> values;
  ScheduleOverrides() { values.fill(-1); }
  bool any() const {
    for (int value : values)
      if (value >= 0)
        return true;
    return false;
  }
  /// `base` with the overrides applied.
  ScheduleSwitches applyTo(ScheduleSwitches base) const {
    for (auto [info, value] : llvm::zip_equal(scheduleSwitchInfos(), values))
      if (value >= 0)
        base.*info.member = value != 0;
    return base;
  }
};

inline llvm::hash_code hash_value(const ScheduleSwitches &switches) {
  return llvm::hash_value(switches.bits());
}

} // namespace flashc

#endif // FLASHC_CONFIG_SCHEDULESWITCHES_H

//===- SearchSpace.h - the configs flash-tune enumerates --------*- C++ -*-===//
//
// The axes of the search (each a list of values) and their cross product.
// Nothing is pruned here: which points are legal is decided by the dialect's
// ConfigAttr verifier and by -convert-flash-to-gpu itself (Prune.h), so the
// rules live in one place.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_AUTOTUNE_SEARCHSPACE_H
#define FLASHC_AUTOTUNE_SEARCHSPACE_H

#include "flashc/Autotune/Config.h"

#include "llvm/ADT/SmallVector.h"

#include <array>

#include <vector>

namespace flashc::tune {

struct SearchSpace {
  /// #flash.config axes. block_n: multiples of 16 up to the largest wgmma
  /// N, including 176 and 192, which the prototype the conversion came from
  /// found worth trying (docs/gpu-kernel.md), and 80, FA3's D = 256 tile
  /// (1-2.5% faster than 64 at N >= 4096 on the H200; docs/decisions.md,
  /// "block_n 80 in the search space").
  llvm::SmallVector<int64_t> blockM = {64, 128, 192, 256};
  llvm::SmallVector<int64_t> blockN = {64, 80, 96, 128, 176, 192, 256};
  llvm::SmallVector<int64_t> stages = {1, 2, 3, 4};
  llvm::SmallVector<int64_t> warpgroups = {1, 2, 3, 4};
  /// The schedule switches, in ScheduleSwitches.def's order, each
  /// searched over that table's tuneValues unless flash-tune's flag says
  /// otherwise. Overlap is searched on and off (it trades registers for
  /// latency); the others keep one value by default: persistence and both
  /// store paths double the compile time, claimed tiles apply only to
  /// persistent causal kernels, and the speculative exp spills most configs
  /// and is data-dependent.
  std::array<llvm::SmallVector<bool>, kNumScheduleSwitches> switches =
      defaultSwitchAxes();

  /// The axis of one switch, named by its member
  /// (`space.axis(&ScheduleSwitches::overlap) = {true}`).
  llvm::SmallVector<bool> &axis(bool ScheduleSwitches::*member);
  const llvm::SmallVector<bool> &axis(bool ScheduleSwitches::*member) const {
    return const_cast<SearchSpace *>(this)->axis(member);
  }

  /// The switch axes from ScheduleSwitches.def's tuneValues.
  static std::array<llvm::SmallVector<bool>, kNumScheduleSwitches>
  defaultSwitchAxes();

  /// Number of points in the cross product.
  size_t size() const;
};

/// The cross product of the axes, block_m outermost, in the order given.
std::vector<TuneConfig> enumerateConfigs(const SearchSpace &space);

/// Parses "64,128,256" (positive integers).
llvm::Expected<llvm::SmallVector<int64_t>> parseIntList(llvm::StringRef text);
/// Parses "1,0" / "on,off" / "true,false".
llvm::Expected<llvm::SmallVector<bool>> parseFlagList(llvm::StringRef text);

} // namespace flashc::tune

#endif // FLASHC_AUTOTUNE_SEARCHSPACE_H

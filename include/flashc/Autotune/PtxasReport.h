//===- PtxasReport.h - what ptxas -v says about a kernel --------*- C++ -*-===//

#ifndef FLASHC_AUTOTUNE_PTXASREPORT_H
#define FLASHC_AUTOTUNE_PTXASREPORT_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <optional>
#include <string>

namespace flashc::tune {

struct PtxasResources {
  int64_t registers = -1;  ///< "Used N registers"; -1 if not reported
  int64_t spillBytes = -1; ///< spill stores + spill loads; -1 if not reported
  /// ptxas serialised the wgmma chain: each wgmma then waits for the one
  /// before (a serialised build ran 12-56% slower; docs/decisions.md,
  /// "Serialised wgmma is pruned"). C7513: a non-wgmma instruction defines
  /// a wgmma input while the chain runs; C7518: a wait ptxas inserted sits
  /// in a divergent path.
  bool serializedWgmma = false;
  std::string wgmmaCode;  ///< ptxas's code, e.g. "C7513"
  std::string wgmmaCause; ///< ptxas's words after "due to"
};

/// Reads the resource lines of `ptxas -v` (one kernel).
PtxasResources parsePtxasReport(llvm::StringRef report);

/// Why flash-tune drops a kernel that ptxas assembled (spills, unless
/// `keepSpills`; a serialised wgmma chain, unless `keepSerializedWgmma`),
/// as {stage, reason}; nothing if it is kept.
struct PtxasVerdict {
  std::string stage, reason;
};
std::optional<PtxasVerdict> ptxasPruneReason(const PtxasResources &resources,
                                             bool keepSpills,
                                             bool keepSerializedWgmma);

} // namespace flashc::tune

#endif // FLASHC_AUTOTUNE_PTXASREPORT_H

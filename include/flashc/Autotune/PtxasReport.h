//===- PtxasReport.h - what ptxas -v says about a kernel --------*- C++ -*-===//

#ifndef FLASHC_AUTOTUNE_PTXASREPORT_H
#define FLASHC_AUTOTUNE_PTXASREPORT_H

#include "llvm/ADT/StringRef.h"

#include <cstdint>

namespace flashc::tune {

struct PtxasResources {
  int64_t registers = -1;  ///< "Used N registers"; -1 if not reported
  int64_t spillBytes = -1; ///< spill stores + spill loads; -1 if not reported
};

/// Reads the resource lines of `ptxas -v` (one kernel).
PtxasResources parsePtxasReport(llvm::StringRef report);

} // namespace flashc::tune

#endif // FLASHC_AUTOTUNE_PTXASREPORT_H

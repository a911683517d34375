//===- PtxasReport.cpp - what ptxas -v says about a kernel ----------------===//
//
// The lines read are
//   ptxas info    : Used 168 registers, used 16 barriers, 80 bytes smem
//       0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//   ptxas info    : (C7513) Potential Performance Loss: wgmma.mma_async
//       instructions are serialized due to ...
// (C7513, C7518, ...: ptxas has a code per cause; every one of them makes
// each wgmma wait for the one before.)
//
//===----------------------------------------------------------------------===//

#include "flashc/Autotune/PtxasReport.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/FormatVariadic.h"

using namespace llvm;
using namespace flashc::tune;

/// The integer right before `suffix` in `line`, if any.
static std::optional<int64_t> numberBefore(StringRef line, StringRef suffix) {
  size_t pos = line.find(suffix);
  if (pos == StringRef::npos)
    return std::nullopt;
  StringRef head = line.take_front(pos).rtrim();
  size_t start = head.find_last_not_of("0123456789");
  StringRef digits =
      start == StringRef::npos ? head : head.drop_front(start + 1);
  int64_t value;
  if (digits.empty() || digits.getAsInteger(10, value))
    return std::nullopt;
  return value;
}

PtxasResources flashc::tune::parsePtxasReport(StringRef report) {
  PtxasResources resources;
  SmallVector<StringRef> lines;
  report.split(lines, '\n');
  for (StringRef line : lines) {
    if (std::optional<int64_t> regs = numberBefore(line, " registers"))
      if (line.contains("Used "))
        resources.registers = *regs;
    std::optional<int64_t> stores = numberBefore(line, " bytes spill stores");
    std::optional<int64_t> loads = numberBefore(line, " bytes spill loads");
    if (stores || loads)
      resources.spillBytes = stores.value_or(0) + loads.value_or(0);
    if (line.contains("wgmma.mma_async instructions are serialized")) {
      resources.serializedWgmma = true;
      size_t open = line.find("(C"), close = line.find(')', open);
      if (open != StringRef::npos && close != StringRef::npos)
        resources.wgmmaCode = line.slice(open + 1, close).str();
      size_t cause = line.find("due to ");
      if (cause != StringRef::npos)
        resources.wgmmaCause = line.drop_front(cause + 7).trim().str();
    }
  }
  return resources;
}

std::optional<PtxasVerdict>
flashc::tune::ptxasPruneReason(const PtxasResources &resources, bool keepSpills,
                               bool keepSerializedWgmma) {
  if (resources.spillBytes > 0 && !keepSpills)
    return PtxasVerdict{"spills",
                        formatv("ptxas spills {0} bytes ({1} registers)",
                                resources.spillBytes, resources.registers)
                            .str()};
  if (resources.serializedWgmma && !keepSerializedWgmma)
    return PtxasVerdict{"wgmma",
                        formatv("ptxas serialised the wgmma chain ({0}): {1}",
                                resources.wgmmaCode, resources.wgmmaCause)
                            .str()};
  return std::nullopt;
}

//===- FlashAttrs.cpp - flash dialect attributes --------------------------===//
//
// `#flash.config` and `#flash.schedule`: their `key = value` syntax, parsed
// and printed from the schedule switch table (ScheduleSwitches.def) so a new
// switch needs no parser change, and their verifiers. The config's verifier
// maps every tile size onto the MMA shapes the GPU lowering uses, so a bad
// config fails here and not in ptxas.
//
//===----------------------------------------------------------------------===//

#include "Flash/FlashAttrs.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"

#include <optional>

using namespace mlir;
using namespace mlir::flash;

StringRef mlir::flash::stringifyGridKind(GridKind kind) {
  switch (kind) {
  case GridKind::Tiles:
    return "tiles";
  case GridKind::Sections:
    return "sections";
  case GridKind::Persistent:
    return "persistent";
  case GridKind::Packed:
    return "packed";
  }
  llvm_unreachable("unknown grid kind");
}

namespace {

/// One `key = value` of an attribute body: an integer, `true`/`false`, or
/// another keyword.
struct Entry {
  SMLoc loc;
  std::optional<int64_t> integer;
  std::optional<bool> flag;
  std::optional<StringRef> keyword;
};

/// The `<key = value, ...>` body of an attribute, by key, or failure after a
/// diagnostic (a key given twice, a syntax error).
struct Entries {
  AsmParser &parser;
  llvm::StringMap<Entry> byKey;
  SmallVector<StringRef> order;
  /// Every key the attribute asked for, in order: what finish() lists.
  SmallVector<StringRef> asked;

  explicit Entries(AsmParser &parser) : parser(parser) {}

  ParseResult parse() {
    if (parser.parseLess())
      return failure();
    auto parseOne = [&]() -> ParseResult {
      Entry entry;
      entry.loc = parser.getCurrentLocation();
      StringRef key;
      if (parser.parseKeyword(&key) || parser.parseEqual())
        return failure();
      StringRef keyword;
      if (succeeded(parser.parseOptionalKeyword(&keyword))) {
        if (keyword == "true" || keyword == "false")
          entry.flag = keyword == "true";
        else
          entry.keyword = keyword;
      } else {
        int64_t value = 0;
        if (parser.parseInteger(value))
          return failure();
        entry.integer = value;
      }
      if (!byKey.try_emplace(key, entry).second)
        return parser.emitError(entry.loc) << "'" << key << "' given twice";
      order.push_back(key);
      return success();
    };
    if (parser.parseCommaSeparatedList(parseOne) || parser.parseGreater())
      return failure();
    return success();
  }

  /// Takes `key`'s value of kind T through `get` (required unless `dflt`
  /// is given); `kind` names T in the error.
  template <typename T>
  ParseResult take(StringRef key, T &out, std::optional<T> dflt,
                   std::optional<T> Entry::*get, StringRef kind) {
    asked.push_back(key);
    auto it = byKey.find(key);
    if (it == byKey.end()) {
      if (dflt) {
        out = *dflt;
        return success();
      }
      return parser.emitError(parser.getNameLoc())
             << "missing '" << key << "'";
    }
    std::optional<T> value = it->second.*get;
    if (!value)
      return parser.emitError(it->second.loc)
             << "'" << key << "' takes " << kind;
    out = *value;
    byKey.erase(it);
    return success();
  }
  ParseResult integer(StringRef key, int64_t &out,
                      std::optional<int64_t> dflt = std::nullopt) {
    return take(key, out, dflt, &Entry::integer, "an integer");
  }
  ParseResult flag(StringRef key, bool &out,
                   std::optional<bool> dflt = std::nullopt) {
    return take(key, out, dflt, &Entry::flag, "'true' or 'false'");
  }

  /// Takes `key`'s keyword, the name (`name`) of one of `choices`
  /// (required).
  template <typename E>
  ParseResult choice(StringRef key, E &out, ArrayRef<E> choices,
                     StringRef (*name)(E)) {
    auto it = byKey.find(key);
    SMLoc loc = it == byKey.end() ? SMLoc() : it->second.loc;
    std::string kinds;
    for (auto [i, c] : llvm::enumerate(choices))
      kinds += (i == 0 ? "" : i + 1 == choices.size() ? " or " : ", ") +
               name(c).str();
    StringRef keyword;
    if (take<StringRef>(key, keyword, std::nullopt, &Entry::keyword, kinds))
      return failure();
    for (E c : choices)
      if (name(c) == keyword) {
        out = c;
        return success();
      }
    return parser.emitError(loc) << "'" << key << "' takes " << kinds;
  }

  /// Takes every schedule switch (each defaulting to the table's default
  /// when `required` is false).
  ParseResult switches(flashc::ScheduleSwitches &out, bool required) {
    for (const flashc::ScheduleSwitchInfo &info :
         flashc::scheduleSwitchInfos())
      if (flag(info.key, out.*info.member,
               required ? std::nullopt
                        : std::optional<bool>(info.defaultValue)))
        return failure();
    return success();
  }

  /// Fails on the first key nobody took.
  ParseResult finish() {
    for (StringRef key : order)
      if (byKey.count(key))
        return parser.emitError(byKey[key].loc)
               << "unknown key '" << key << "' (expected one of "
               << llvm::join(asked, ", ") << ")";
    return success();
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// #flash.config
//===----------------------------------------------------------------------===//

Attribute ConfigAttr::parse(AsmParser &parser, Type) {
  Entries entries(parser);
  int64_t blockM, blockN, stages, warpgroups;
  flashc::ScheduleSwitches switches;
  if (entries.parse() || entries.integer("block_m", blockM) ||
      entries.integer("block_n", blockN) ||
      entries.integer("stages", stages, 2) ||
      entries.integer("warpgroups", warpgroups, 1) ||
      entries.switches(switches, /*required=*/false) ||
      entries.finish())
    return {};
  return ConfigAttr::getChecked(
      [&] { return parser.emitError(parser.getNameLoc()); },
      parser.getContext(), blockM, blockN, stages, warpgroups, switches);
}

void ConfigAttr::print(AsmPrinter &printer) const {
  printer << "<block_m = " << getBlockM() << ", block_n = " << getBlockN();
  // Defaults are elided.
  if (getStages() != 2)
    printer << ", stages = " << getStages();
  if (getWarpgroups() != 1)
    printer << ", warpgroups = " << getWarpgroups();
  for (const flashc::ScheduleSwitchInfo &info : flashc::scheduleSwitchInfos())
    if (getSwitches().*info.member != info.defaultValue)
      printer << ", " << info.key << " = "
              << (getSwitches().*info.member ? "true" : "false");
  printer << ">";
}

LogicalResult ConfigAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t blockM, int64_t blockN, int64_t stages,
                                 int64_t warpgroups,
                                 flashc::ScheduleSwitches) {
  if (warpgroups < 1 || warpgroups > 4)
    return emitError() << "warpgroups must be between 1 and 4, got "
                       << warpgroups;
  int64_t rowsPerProgram = kMmaM * warpgroups;
  if (blockM <= 0 || blockM % rowsPerProgram != 0)
    return emitError() << "block_m must be a positive multiple of "
                       << rowsPerProgram << " (" << kMmaM
                       << " rows per warpgroup x " << warpgroups
                       << " warpgroups), got " << blockM;
  if (blockN <= 0 || blockN % kMmaK != 0)
    return emitError() << "block_n must be a positive multiple of " << kMmaK
                       << ", got " << blockN;
  if (blockN > kMaxMmaN)
    return emitError() << "block_n must be at most " << kMaxMmaN << ", got "
                       << blockN;
  if (stages < 1 || stages > 8)
    return emitError() << "stages must be between 1 and 8, got " << stages;
  return success();
}

ConfigAttr ConfigAttr::getDefault(MLIRContext *context, int64_t headDim) {
  int64_t blockN = headDim <= 128 ? 128 : 64;
  return ConfigAttr::get(context, /*block_m=*/128, blockN, /*stages=*/2,
                         /*warpgroups=*/2, flashc::ScheduleSwitches());
}

//===----------------------------------------------------------------------===//
// #flash.schedule
//===----------------------------------------------------------------------===//

Attribute ScheduleAttr::parse(AsmParser &parser, Type) {
  Entries entries(parser);
  flashc::ScheduleSwitches switches;
  int64_t consumers, producerRegs, consumerRegs, qBuffers;
  GridKind grid = GridKind::Tiles;
  bool lagMax, rematQ, serialMasked, prefetch, probe;
  if (entries.parse() || entries.switches(switches, /*required=*/true) ||
      entries.integer("consumers", consumers) ||
      entries.integer("producer_regs", producerRegs) ||
      entries.integer("consumer_regs", consumerRegs) ||
      entries.integer("q_buffers", qBuffers) ||
      entries.choice<GridKind>("grid", grid,
                               {GridKind::Tiles, GridKind::Sections,
                                GridKind::Persistent, GridKind::Packed},
                               stringifyGridKind) ||
      entries.flag("lag_max", lagMax) ||
      entries.flag("remat_q_descriptors", rematQ) ||
      entries.flag("serial_masked_tiles", serialMasked) ||
      entries.flag("prefetch_next_block", prefetch) ||
      entries.flag("probe_stamps", probe) || entries.finish())
    return {};
  return ScheduleAttr::getChecked(
      [&] { return parser.emitError(parser.getNameLoc()); },
      parser.getContext(), switches, consumers, producerRegs, consumerRegs,
      qBuffers, grid, lagMax, rematQ, serialMasked, prefetch, probe);
}

void ScheduleAttr::print(AsmPrinter &printer) const {
  auto flag = [](bool value) { return value ? "true" : "false"; };
  printer << "<";
  for (const flashc::ScheduleSwitchInfo &info : flashc::scheduleSwitchInfos())
    printer << info.key << " = " << flag(getSwitches().*info.member) << ", ";
  printer << "consumers = " << getConsumers()
          << ", producer_regs = " << getProducerRegs()
          << ", consumer_regs = " << getConsumerRegs()
          << ", q_buffers = " << getQBuffers()
          << ", grid = " << stringifyGridKind(getGrid())
          << ", lag_max = " << flag(getLagMax())
          << ", remat_q_descriptors = " << flag(getRematQDescriptors())
          << ", serial_masked_tiles = " << flag(getSerialMaskedTiles())
          << ", prefetch_next_block = " << flag(getPrefetchNextBlock())
          << ", probe_stamps = " << flag(getProbeStamps()) << ">";
}

LogicalResult ScheduleAttr::verify(
    function_ref<InFlightDiagnostic()> emitError,
    flashc::ScheduleSwitches switches, int64_t consumers, int64_t producerRegs,
    int64_t consumerRegs, int64_t qBuffers, GridKind grid, bool, bool, bool,
    bool prefetchNextBlock, bool) {
  if (consumers < 1 || consumers > 4)
    return emitError() << "consumers must be between 1 and 4, got "
                       << consumers;
  // setmaxnreg takes multiples of 8 in [24, 256].
  for (auto [name, regs] : {std::pair<StringRef, int64_t>{"producer_regs",
                                                           producerRegs},
                            {"consumer_regs", consumerRegs}})
    if (regs < 24 || regs > 256 || regs % 8 != 0)
      return emitError() << name
                         << " must be a multiple of 8 in [24, 256], got "
                         << regs;
  if (qBuffers != 1 && qBuffers != 2)
    return emitError() << "q_buffers must be 1 or 2, got " << qBuffers;
  if (qBuffers == 2 && !switches.persistent)
    return emitError() << "q_buffers = 2 needs a persistent schedule";
  if (switches.persistent != (grid == GridKind::Persistent))
    return emitError() << "grid = " << stringifyGridKind(grid)
                       << " disagrees with persistent = "
                       << (switches.persistent ? "true" : "false");
  if (switches.pingpong && consumers != 2)
    return emitError() << "pingpong needs exactly 2 consumers, got "
                       << consumers;
  if (switches.dynamicSchedule && !switches.persistent)
    return emitError() << "dynamic_schedule needs a persistent schedule";
  if (prefetchNextBlock && grid != GridKind::Tiles)
    return emitError() << "prefetch_next_block needs a tiles grid";
  return success();
}

//===- Config.h - one point of flash-tune's search space --------*- C++ -*-===//
//
// A tuning candidate's knobs (the #flash.config tile sizes and the
// -convert-flash-to-gpu schedule options), a problem shape and the shape
// bucket a tuning database is keyed by. Plain data plus JSON: this header
// is shared by the compiler side (flash-tune, flashc) and the runtime-only
// timer (flash-tune-run), so it uses nothing but LLVM Support.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_AUTOTUNE_CONFIG_H
#define FLASHC_AUTOTUNE_CONFIG_H

#include "flashc/Config/ScheduleSwitches.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <string>
#include <tuple>

namespace flashc::tune {

/// The knobs of one candidate kernel. The tile sizes are those of
/// #flash.config (dialects/Flash/FlashAttrs.td), and so are the schedule
/// switches (include/flashc/Config/ScheduleSwitches.def).
struct TuneConfig {
  int64_t blockM = 0;
  int64_t blockN = 0;
  int64_t stages = 0;
  int64_t warpgroups = 0;
  ScheduleSwitches switches;

  auto tie() const {
    return std::tie(blockM, blockN, stages, warpgroups, switches);
  }
  bool operator==(const TuneConfig &other) const {
    return tie() == other.tie();
  }
  bool operator!=(const TuneConfig &other) const { return !(*this == other); }
  bool operator<(const TuneConfig &other) const { return tie() < other.tie(); }

  /// A short readable name: "bm128 bn128 s2 wg2", then each schedule switch
  /// that differs from its default as its label (" ps") or, when off, the
  /// label after a minus (" -ov").
  std::string str() const;
};

/// {"block_m": .., "block_n": .., "stages": .., "warpgroups": .., and one
///  0|1 per schedule switch under its key} - the same keys kernel.json's
/// "config" uses. Databases from before a switch existed lack it: a missing
/// switch is its default, except "tma_store_o" (what the compiler then did:
/// on with at most two warpgroups) and "dynamic_schedule" (0, the static
/// pairs, in a persistent entry).
llvm::json::Object toJson(const TuneConfig &config);
/// Reads what toJson writes (llvm::json::ObjectMapper: errors name the
/// JSON path of the bad value).
bool fromJSON(const llvm::json::Value &value, TuneConfig &config,
              llvm::json::Path path);
/// fromJSON with `where` as the root of the path errors name.
llvm::Expected<TuneConfig> configFromJson(const llvm::json::Value &value,
                                          llvm::StringRef where);

/// One attention problem: batch x heads x seq x head_dim (seq_q == seq_k).
struct ProblemShape {
  int64_t batch = 0;
  int64_t heads = 0;
  int64_t seq = 0;
  int64_t headDim = 0;

  auto tie() const { return std::tie(batch, heads, seq, headDim); }
  bool operator==(const ProblemShape &other) const {
    return tie() == other.tie();
  }
  bool operator!=(const ProblemShape &other) const { return !(*this == other); }
  bool operator<(const ProblemShape &other) const {
    return tie() < other.tie();
  }
  /// "B,H,N,D", the form --shape takes.
  std::string str() const;
};

/// Parses "B,H,N,D" (positive integers).
llvm::Expected<ProblemShape> parseShape(llvm::StringRef text);
llvm::json::Array toJson(const ProblemShape &shape);
bool fromJSON(const llvm::json::Value &value, ProblemShape &shape,
              llvm::json::Path path);

/// Shapes that share a tuned config: N rounded up to a power of two, D
/// exact, B*H rounded up to a power of two (the number of waves the grid
/// makes depends on it).
struct ShapeBucket {
  int64_t seq = 0;
  int64_t headDim = 0;
  int64_t batchHeads = 0;

  auto tie() const { return std::tie(seq, headDim, batchHeads); }
  bool operator==(const ShapeBucket &other) const {
    return tie() == other.tie();
  }
  bool operator!=(const ShapeBucket &other) const { return !(*this == other); }
  bool operator<(const ShapeBucket &other) const { return tie() < other.tie(); }
  /// "N<=4096 D=128 BH<=32".
  std::string str() const;
};

ShapeBucket bucketOf(const ProblemShape &shape);
llvm::json::Object toJson(const ShapeBucket &bucket);
bool fromJSON(const llvm::json::Value &value, ShapeBucket &bucket,
              llvm::json::Path path);

/// Attention FLOPs of a non-causal forward pass (4 * B * H * N * N * D);
/// halved for causal.
double attentionFlops(const ProblemShape &shape, bool causal);

} // namespace flashc::tune

#endif // FLASHC_AUTOTUNE_CONFIG_H

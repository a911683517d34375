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

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <cstdint>
#include <string>
#include <tuple>

namespace flashc::tune {

/// The knobs of one candidate kernel. The tile sizes are those of
/// #flash.config (dialects/Flash/FlashAttrs.td), and so are the schedule
/// flags.
struct TuneConfig {
  int64_t blockM = 0;
  int64_t blockN = 0;
  int64_t stages = 0;
  int64_t warpgroups = 0;
  bool overlap = true;
  bool pingpong = true;
  bool splitRelease = true;
  bool persistent = false;
  bool tmaStoreO = true;
  bool dynamicSchedule = true;
  bool speculativeExp = false;

  auto tie() const {
    return std::tie(blockM, blockN, stages, warpgroups, overlap, pingpong,
                    splitRelease, persistent, tmaStoreO, dynamicSchedule,
                    speculativeExp);
  }
  bool operator==(const TuneConfig &other) const {
    return tie() == other.tie();
  }
  bool operator!=(const TuneConfig &other) const { return !(*this == other); }
  bool operator<(const TuneConfig &other) const { return tie() < other.tie(); }

  /// A short readable name: "bm128 bn128 s2 wg2 ov pp sr" ("-" for off),
  /// with " ps" appended when persistent, " -tma" without the TMA store
  /// " -dyn" for a persistent kernel without claimed causal tiles and
  /// " spx" with the speculative exp.
  std::string str() const;
};

/// {"block_m": .., "block_n": .., "stages": .., "warpgroups": ..,
///  "overlap": 0|1, "pingpong": 0|1, "split_release": 0|1,
///  "persistent": 0|1, "tma_store_o": 0|1, "dynamic_schedule": 0|1,
///  "speculative_exp": 0|1} - the
/// same keys kernel.json's "config" uses. Databases from before a flag
/// existed lack it: a missing "persistent" is 0, a missing "tma_store_o" is
/// what the compiler then did (on with at most two warpgroups), and a
/// missing "dynamic_schedule" is 0 (the static pairs) in a persistent entry,
/// a missing "speculative_exp" 0.
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

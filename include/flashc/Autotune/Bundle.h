//===- Bundle.h - the candidate bundle flash-tune-run times -----*- C++ -*-===//
//
// `flash-tune --emit-bundle DIR` writes one directory per candidate
// (DIR/<id>/kernel.cubin + kernel.json) and DIR/manifest.json:
//
//   {"format": "flashc-tune-bundle", "format_version": 1,
//    "kernel": "attention", "source": "kernels/attention.mlir",
//    "source_hash": "...", "arch": "sm_90a", "dtype": "bf16",
//    "head_dim": 128, "causal": false,
//    "shapes": [[2, 16, 4096, 128], ...],
//    "candidates": [{"id": "c0007", "binary": "c0007/kernel.cubin",
//                    "config": {...}, "registers": 168, "spill_bytes": 0}],
//    "pruned": [{"config": {...}, "stage": "conversion", "reason": "..."}]}
//
// The bundle holds everything the timer needs, so it can be copied to a GPU
// host that has no LLVM and timed there by flash-tune-run alone.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_AUTOTUNE_BUNDLE_H
#define FLASHC_AUTOTUNE_BUNDLE_H

#include "flashc/Autotune/Config.h"

#include <string>
#include <vector>

namespace flashc::tune {

constexpr llvm::StringLiteral kBundleFormat = "flashc-tune-bundle";
constexpr int64_t kBundleVersion = 1;
constexpr llvm::StringLiteral kManifestName = "manifest.json";

struct BundleCandidate {
  std::string id;     ///< also its directory name
  std::string binary; ///< path of the cubin, relative to the bundle
  TuneConfig config;  ///< the config as the conversion applied it
  int64_t registers = -1;
  int64_t spillBytes = -1;
};

/// A config left out before timing, and why (the verifier's or the
/// conversion's or ptxas's own message).
struct PrunedConfig {
  TuneConfig config;
  std::string stage; ///< "config", "conversion", "duplicate", "ptxas", "spills"
  std::string reason;
};

struct BundleManifest {
  std::string kernel;
  std::string source;
  std::string sourceHash;
  std::string arch;
  std::string dtype;
  int64_t headDim = 0;
  bool causal = false;
  std::vector<ProblemShape> shapes;
  std::vector<BundleCandidate> candidates;
  std::vector<PrunedConfig> pruned;

  llvm::json::Value toJson() const;
  static llvm::Expected<BundleManifest> parse(llvm::StringRef text,
                                              llvm::StringRef path);
  /// Reads DIR/manifest.json.
  static llvm::Expected<BundleManifest> load(llvm::StringRef dir);
  /// Writes DIR/manifest.json atomically.
  llvm::Error save(llvm::StringRef dir) const;
};

} // namespace flashc::tune

#endif // FLASHC_AUTOTUNE_BUNDLE_H

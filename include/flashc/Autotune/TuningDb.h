//===- TuningDb.h - the tuning database flashc --tuning-db reads -*- C++
//-*-===//
//
// A JSON file of winners, one per (kernel source hash, arch, GPU name,
// shape bucket):
//
//   {"format": "flashc-tuning-db", "format_version": 1, "entries": [
//     {"source_hash": "9f2c...", "kernel": "attention", "arch": "sm_90a",
//      "gpu": "NVIDIA H200", "bucket": {"seq": 4096, "head_dim": 128,
//      "batch_heads": 32}, "shape": [2, 16, 4096, 128],
//      "config": {"block_m": 128, ...}, "median_ms": 0.91, "tflops": 600.1,
//      "candidates": 40}]}
//
// A file that is not JSON, not this format or of an unknown version is an
// error naming the file; callers never overwrite such a file.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_AUTOTUNE_TUNINGDB_H
#define FLASHC_AUTOTUNE_TUNINGDB_H

#include "flashc/Autotune/Config.h"

#include "llvm/Support/raw_ostream.h"

#include <string>
#include <vector>

namespace flashc::tune {

constexpr llvm::StringLiteral kTuningDbFormat = "flashc-tuning-db";
constexpr int64_t kTuningDbVersion = 1;

struct TuningEntry {
  // The key.
  std::string sourceHash; ///< flashc::hashSource of the kernel source
  std::string arch;       ///< e.g. sm_90a
  std::string gpu;        ///< the device name the runtime reports
  ShapeBucket bucket;
  // The winner and how it was measured.
  std::string kernel; ///< kernel symbol, for people reading the table
  ProblemShape shape; ///< the shape that was timed
  TuneConfig config;
  double medianMs = 0;
  double tflops = 0;
  int64_t candidates = 0; ///< candidates that passed the check and were timed

  bool sameKey(const TuningEntry &other) const {
    return sourceHash == other.sourceHash && arch == other.arch &&
           gpu == other.gpu && bucket == other.bucket;
  }
};

class TuningDb {
public:
  /// Parses a database; `path` names it in errors.
  static llvm::Expected<TuningDb> parse(llvm::StringRef text,
                                        llvm::StringRef path);
  /// Reads `path`; a missing file is an error.
  static llvm::Expected<TuningDb> load(llvm::StringRef path);
  /// Reads `path` to add entries to it: a missing file gives an empty
  /// database; a corrupt or foreign one an error saying it is left alone.
  static llvm::Expected<TuningDb> loadForUpdate(llvm::StringRef path);

  llvm::json::Value toJson() const;
  /// Writes the database atomically (temporary file + rename).
  llvm::Error save(llvm::StringRef path) const;

  /// Adds `entry`, replacing the entry with the same key.
  void upsert(TuningEntry entry);

  /// Entries for (source hash, arch, bucket), every GPU.
  std::vector<const TuningEntry *> find(llvm::StringRef sourceHash,
                                        llvm::StringRef arch,
                                        const ShapeBucket &bucket) const;

  const std::vector<TuningEntry> &getEntries() const { return entries; }

  /// A table, one line per entry, sorted by key.
  void printTable(llvm::raw_ostream &os) const;

private:
  std::vector<TuningEntry> entries;
};

/// The entry flashc compiles for a kernel and a shape: the one for
/// (hash, arch, bucketOf(shape)) and `gpu`; with `gpu` empty, the only
/// entry whatever its GPU (several GPUs: an error listing them). No entry:
/// an error saying what the database holds for this kernel.
llvm::Expected<const TuningEntry *> lookupTuning(const TuningDb &db,
                                                 llvm::StringRef sourceHash,
                                                 llvm::StringRef arch,
                                                 llvm::StringRef gpu,
                                                 const ProblemShape &shape);

} // namespace flashc::tune

#endif // FLASHC_AUTOTUNE_TUNINGDB_H

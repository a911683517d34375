//===- Selection.h - timings and the choice of winners ----------*- C++ -*-===//
//
// What the timer measured for each (candidate, shape), the rule that picks
// a winner per shape, and the step that records winners in a database.
// Timings are also written as their own JSON file (flashc-tune-timings) so
// the choice can be replayed and tested without a GPU.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_AUTOTUNE_SELECTION_H
#define FLASHC_AUTOTUNE_SELECTION_H

#include "flashc/Autotune/Bundle.h"
#include "flashc/Autotune/TuningDb.h"

#include <optional>
#include <vector>

namespace flashc::tune {

constexpr llvm::StringLiteral kTimingsFormat = "flashc-tune-timings";
constexpr int64_t kTimingsVersion = 1;

enum class TimingStatus {
  Ok,          ///< passed the float64 check, timed
  CheckFailed, ///< wrong results: may never win
  Error,       ///< could not load or launch
};
llvm::StringRef toString(TimingStatus status);

struct CandidateTiming {
  std::string candidate; ///< BundleCandidate::id
  TuneConfig config;
  ProblemShape shape;
  TimingStatus status = TimingStatus::Error;
  std::string message; ///< the check's summary or the error
  double medianMs = 0; ///< only for Ok
  int64_t launches = 0; ///< timed launches behind medianMs (Ok only)
  int device = -1;      ///< the CUDA ordinal it ran on (-1: not recorded)
  /// Ok, but only probed: a short burst of launches is not comparable with
  /// a full measurement (clocks differ), so a screened timing never wins.
  bool screened = false;
};

/// The timings file: the GPU, the bundle it timed and every measurement.
struct TimingsFile {
  std::string gpu;
  BundleManifest manifest; ///< only the header fields are written
  std::vector<CandidateTiming> timings;
  /// Why the run stopped early (a hung kernel); empty when it finished.
  std::string incomplete;

  llvm::json::Value toJson() const;
  static llvm::Expected<TimingsFile> parse(llvm::StringRef text,
                                           llvm::StringRef path);
};

struct Winner {
  ProblemShape shape;
  /// The fastest candidate that passed the check; none if no one did.
  std::optional<CandidateTiming> best;
  int64_t timed = 0;       ///< candidates that passed and were timed
  int64_t checkFailed = 0; ///< candidates that computed wrong results
  int64_t errors = 0;      ///< candidates that could not run
};

/// One winner per shape of `shapes` (in that order): the smallest median
/// among Ok timings that are not screened; a tie goes to the smaller candidate id, so the choice
/// does not depend on the order timings arrive in. Timings for other shapes
/// are ignored.
std::vector<Winner> selectWinners(llvm::ArrayRef<ProblemShape> shapes,
                                  llvm::ArrayRef<CandidateTiming> timings);

/// One line per shape: the winner, its config and median, and how many
/// candidates were timed, wrong or broken. Returns false if some shape has
/// no winner.
bool printWinners(llvm::raw_ostream &os, llvm::ArrayRef<Winner> winners);

/// Records each winner (shapes nobody passed are skipped) under
/// (manifest's source hash and arch, `gpu`, the shape's bucket). When two
/// shapes of one call fall into one bucket, the later one's winner stays.
/// Returns the number of entries written.
size_t recordWinners(TuningDb &db, const BundleManifest &manifest,
                     llvm::StringRef gpu, llvm::ArrayRef<Winner> winners);

} // namespace flashc::tune

#endif // FLASHC_AUTOTUNE_SELECTION_H

//===- Progress.h - progress of a long tuning step --------------*- C++ -*-===//
//
// On a terminal: one line redrawn in place with a bar, the count, the best
// time so far and an estimate of the time left. Otherwise (a log, CI): one
// plain line per finished item.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_AUTOTUNE_PROGRESS_H
#define FLASHC_AUTOTUNE_PROGRESS_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>
#include <mutex>
#include <optional>
#include <string>

namespace flashc::tune {

class Progress {
public:
  /// `interactive`: draw a bar (pass
  /// llvm::sys::Process::StandardOutIsDisplayed()).
  Progress(llvm::StringRef title, size_t total, llvm::raw_ostream &os,
           bool interactive);

  /// One item finished; `line` says what happened to it. `bestMs` updates
  /// the best time shown. Thread-safe.
  void step(llvm::StringRef line, std::optional<double> bestMs = std::nullopt,
            llvm::StringRef bestName = "");
  /// Ends the bar's line (terminal mode).
  void finish();

private:
  std::string title;
  size_t total;
  size_t done = 0;
  llvm::raw_ostream &os;
  bool interactive;
  std::optional<double> best;
  std::string bestName;
  std::chrono::steady_clock::time_point start;
  std::mutex mutex;
};

} // namespace flashc::tune

#endif // FLASHC_AUTOTUNE_PROGRESS_H

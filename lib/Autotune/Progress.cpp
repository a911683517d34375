//===- Progress.cpp - progress of a long tuning step ----------------------===//

#include "flashc/Autotune/Progress.h"

#include "llvm/Support/FormatVariadic.h"

using namespace llvm;
using namespace flashc::tune;

Progress::Progress(StringRef title, size_t total, raw_ostream &os,
                   bool interactive)
    : title(title.str()), total(total), os(os), interactive(interactive),
      start(std::chrono::steady_clock::now()) {}

void Progress::step(StringRef line, std::optional<double> bestMs,
                    StringRef name) {
  std::lock_guard<std::mutex> lock(mutex);
  ++done;
  if (bestMs && (!best || *bestMs < *best)) {
    best = bestMs;
    bestName = name.str();
  }
  if (!interactive) {
    os << formatv("{0} {1}/{2}: {3}\n", title, done, total, line);
    os.flush();
    return;
  }
  double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  double left = done ? elapsed / double(done) * double(total - done) : 0;
  constexpr size_t kWidth = 30;
  size_t filled = total ? kWidth * done / total : kWidth;
  std::string bar(filled, '#');
  bar.resize(kWidth, '.');
  // Only steps that measure something report a best time.
  std::string bestText =
      best ? formatv("  best {0:f4} ms ({1})", *best, bestName).str() : "";
  // \r and a clear-to-end-of-line redraw the one line.
  os << formatv("\r{0} [{1}] {2}/{3}{4}  ~{5:f0} s left\x1b[K", title, bar,
                done, total, bestText, left);
  os.flush();
}

void Progress::finish() {
  std::lock_guard<std::mutex> lock(mutex);
  if (interactive && done) {
    os << "\n";
    os.flush();
  }
}

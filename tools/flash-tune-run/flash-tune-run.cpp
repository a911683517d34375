//===- flash-tune-run.cpp - time a flash-tune bundle on the GPU -----------===//
//
//   flash-tune-run BUNDLE_DIR -o tuning.json [--timings timings.json]
//                  [--device N,...] [--iters N] [--warmup N] [--probe N]
//                  [--rounds N] [--screen X] [--skip ID,...]
//                  [--hang-seconds S] [--flush-l2-mib M]
//
// The runtime half of flash-tune: links libflashrt's C++ library and LLVM
// Support statically, never libLLVM.so, so it runs on a GPU host that has
// only a CUDA driver. It checks each candidate once against the float64
// reference, times the ones that pass on every shape of the bundle, picks
// the winners and writes the tuning database itself (lib/Autotune), so the
// two-step mode needs nothing else on the GPU host. Every GPU it sees gets
// a worker unless --device names some.
// Exit codes: 0 done, 1 no candidate passed for some shape, 2 error (also a
// hung kernel: the timings so far are written, the database is not),
// 77 skipped (no CUDA driver or GPU).
//
//===----------------------------------------------------------------------===//

#include "flashc/Autotune/Files.h"
#include "flashc/Autotune/Selection.h"
#include "flashc/Autotune/Timer.h"

#include "flashc/Runtime/Error.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace flashc::tune;

static cl::OptionCategory category("flash-tune-run options");
static cl::opt<std::string> bundleDir(cl::Positional, cl::Required,
                                      cl::desc("<bundle dir>"),
                                      cl::cat(category));
static cl::opt<std::string> outputFile("o",
                                       cl::desc("Tuning database to update"),
                                       cl::value_desc("tuning.json"),
                                       cl::Required, cl::cat(category));
static cl::opt<std::string>
    timingsFile("timings",
                cl::desc("Also write every measurement (default: "
                         "<bundle>/timings.json)"),
                cl::init(""), cl::cat(category));
static cl::list<int> devices("device",
                             cl::desc("CUDA device ordinals (default: all)"),
                             cl::CommaSeparated, cl::cat(category));
static cl::opt<unsigned> iters("iters", cl::desc("Timed launches per shape"),
                               cl::init(50), cl::cat(category));
static cl::opt<unsigned> warmup("warmup", cl::desc("Untimed launches first"),
                                cl::init(5), cl::cat(category));
static cl::opt<unsigned>
    probe("probe", cl::desc("Launches per shape in the first (probe) pass"),
          cl::init(5), cl::cat(category));
static cl::opt<unsigned>
    rounds("rounds",
           cl::desc("Interleaved rounds the finalists' launches are split "
                    "into"),
           cl::init(TimerOptions().rounds), cl::cat(category));
static cl::opt<double>
    screen("screen",
           cl::desc("Time fully only candidates whose probe is within this "
                    "multiple of the best probe (0: time all fully)"),
           cl::init(1.10), cl::cat(category));
static cl::list<std::string> skip("skip",
                                  cl::desc("Candidate ids not to run (e.g. "
                                           "one that hung)"),
                                  cl::CommaSeparated, cl::cat(category));
static cl::opt<double>
    hangSeconds("hang-seconds",
                cl::desc("Seconds after which a launch counts as hung"),
                cl::init(20), cl::cat(category));
static cl::opt<unsigned>
    flushMiB("flush-l2-mib",
             cl::desc("MiB written before each timed launch, as "
                      "triton.testing.do_bench and bench/compare.py do (0: "
                      "launches back to back)"),
             cl::init(unsigned(TimerOptions().flushBytes >> 20)),
             cl::cat(category));
static cl::opt<unsigned> seed("seed", cl::desc("Random seed of the inputs"),
                              cl::init(1), cl::cat(category));

namespace {
constexpr int kExitNoWinner = 1, kExitError = 2, kExitSkip = 77;

int report(Error err) {
  std::string message;
  int code = flashc::rt::takeErrorMessage(std::move(err), message);
  if (code == int(flashc::rt::ErrorCode::NoDriver) ||
      code == int(flashc::rt::ErrorCode::NoDevice)) {
    outs() << "skipped: " << message << "\n";
    return kExitSkip;
  }
  errs() << "flash-tune-run: error: " << message << "\n";
  return kExitError;
}
} // namespace

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "flash-tune-run: time a flash-tune bundle and "
                              "write the tuning database\n");
  Expected<BundleManifest> manifest = BundleManifest::load(bundleDir);
  if (!manifest)
    return report(manifest.takeError());
  // Refuse a database we could not update before timing anything.
  Expected<TuningDb> db = TuningDb::loadForUpdate(outputFile);
  if (!db)
    return report(db.takeError());

  TimerOptions options;
  options.devices.assign(devices.begin(), devices.end());
  options.iters = iters;
  options.warmup = warmup;
  options.probe = probe;
  options.rounds = rounds;
  options.screenRatio = screen;
  options.hangSeconds = hangSeconds;
  for (const std::string &id : skip)
    options.skip.insert(id);
  options.seed = seed;
  options.flushBytes = size_t(flushMiB) << 20;
  options.progress = &outs();
  options.interactive = sys::Process::StandardOutIsDisplayed();
  Expected<TimingsFile> timings = timeBundle(bundleDir, *manifest, options);
  if (!timings)
    return report(timings.takeError());

  std::string timingsPath = timingsFile;
  if (timingsPath.empty())
    timingsPath = bundleDir + "/timings.json";
  if (Error err = writeJsonAtomically(timingsPath, timings->toJson()))
    return report(std::move(err));
  if (!timings->incomplete.empty()) {
    errs() << formatv("flash-tune-run: error: {0}\nthe timings so far are in "
                      "{1}; {2} was not changed\n",
                      timings->incomplete, timingsPath, outputFile.getValue());
    return kExitError;
  }

  std::vector<Winner> winners =
      selectWinners(manifest->shapes, timings->timings);
  int status = printWinners(outs(), winners) ? 0 : kExitNoWinner;
  size_t written = recordWinners(*db, *manifest, timings->gpu, winners);
  if (Error err = db->save(outputFile))
    return report(std::move(err));
  outs() << formatv("{0} entries for {1} written to {2} (timings: {3})\n",
                    written, timings->gpu, outputFile.getValue(), timingsPath);
  return status;
}

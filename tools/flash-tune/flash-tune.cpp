//===- flash-tune.cpp - the flashc autotuner ------------------------------===//
//
//   flash-tune kernel.mlir --shape B,H,N,D [--shape ...] -o tuning.json
//   flash-tune kernel.mlir --shape ... --emit-bundle DIR   (compile only)
//   flash-tune --run-bundle DIR -o tuning.json             (time only)
//   flash-tune kernel.mlir --shape ... --prune-only        (list the space)
//   flash-tune --show tuning.json
//   flash-tune --select timings.json [--select ...] -o tuning.json
//              (choose the winners again from recorded timings)
//
// The compiler half: enumerate, prune, compile (lib/Autotune). Timing needs
// the runtime, which must not share a binary with libLLVM.so, so it is the
// separate tool flash-tune-run, run here as a child process; on a GPU host
// without LLVM run `flash-tune-run DIR -o tuning.json` directly.
//
//===----------------------------------------------------------------------===//

#include "flashc/Autotune/Compile.h"
#include "flashc/Autotune/Files.h"
#include "flashc/Autotune/SearchSpace.h"
#include "flashc/Autotune/Selection.h"
#include "flashc/Autotune/TuningDb.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/WithColor.h"

#include <algorithm>
#include <chrono>
#include <map>

using namespace llvm;
using namespace flashc::tune;

namespace {

cl::OptionCategory category("flash-tune options");
cl::OptionCategory spaceCategory("search space (comma-separated lists)");

cl::opt<std::string> inputFile(cl::Positional, cl::desc("<kernel.mlir>"),
                               cl::init(""), cl::cat(category));
cl::list<std::string> shapes("shape", cl::desc("Problem shape B,H,N,D"),
                             cl::value_desc("B,H,N,D"), cl::cat(category));
cl::opt<std::string> outputFile("o", cl::desc("Tuning database to update"),
                                cl::value_desc("tuning.json"), cl::init(""),
                                cl::cat(category));
cl::opt<std::string>
    emitBundleDir("emit-bundle",
                  cl::desc("Compile the candidates into DIR and stop"),
                  cl::value_desc("DIR"), cl::init(""), cl::cat(category));
cl::opt<std::string>
    runBundleDir("run-bundle",
                 cl::desc("Time the candidates of DIR (via flash-tune-run)"),
                 cl::value_desc("DIR"), cl::init(""), cl::cat(category));
cl::opt<std::string> bundleDir(
    "bundle-dir",
    cl::desc("Where one-step mode compiles to (default: <-o>.bundle)"),
    cl::value_desc("DIR"), cl::init(""), cl::cat(category));
cl::list<std::string>
    selectFiles("select",
                cl::desc("Pick winners from a timings file that "
                         "flash-tune-run wrote, into -o (no GPU needed)"),
                cl::value_desc("timings.json"), cl::cat(category));
cl::opt<std::string> showFile("show", cl::desc("Print a tuning database"),
                              cl::value_desc("tuning.json"), cl::init(""),
                              cl::cat(category));
cl::opt<bool> pruneOnly("prune-only",
                        cl::desc("Enumerate and prune, print the verdicts, "
                                 "compile nothing"),
                        cl::cat(category));
cl::opt<std::string> arch("arch", cl::desc("GPU architecture"),
                          cl::init("sm_90a"), cl::cat(category));
cl::opt<std::string> cudaRoot("cuda-root",
                              cl::desc("CUDA toolkit (ptxas, libdevice)"),
                              cl::init("/usr/local/cuda"), cl::cat(category));
cl::opt<unsigned> threads("j", cl::desc("Compile threads (0: all cores)"),
                          cl::init(0), cl::cat(category));
cl::opt<bool> keepSpills("keep-spills",
                         cl::desc("Time kernels that ptxas says spill"),
                         cl::cat(category));
cl::opt<bool> keepSerializedWgmma(
    "keep-serialized-wgmma",
    cl::desc("Time kernels whose wgmma chain ptxas serialised (C7513, C7518)"),
    cl::cat(category));
cl::opt<std::string>
    runner("runner",
           cl::desc("flash-tune-run (default: beside flash-tune, or PATH)"),
           cl::init(""), cl::cat(category));
cl::list<std::string>
    runnerArgs("run-arg",
               cl::desc("Extra argument for flash-tune-run (e.g. --iters=50)"),
               cl::cat(category));

// The axes' defaults are SearchSpace's, written as the lists they parse
// from, so --help shows them and they are defined in one place.
std::string defaultList(ArrayRef<int64_t> values) {
  return join(map_range(values, [](int64_t v) { return std::to_string(v); }),
              ",");
}
std::string defaultList(ArrayRef<bool> values) {
  return join(map_range(values, [](bool v) { return v ? "1" : "0"; }), ",");
}
const SearchSpace kDefaultSpace;

cl::opt<std::string> blockM("block-m", cl::desc("block_m values"),
                            cl::init(defaultList(kDefaultSpace.blockM)),
                            cl::cat(spaceCategory));
cl::opt<std::string> blockN("block-n", cl::desc("block_n values"),
                            cl::init(defaultList(kDefaultSpace.blockN)),
                            cl::cat(spaceCategory));
cl::opt<std::string> stages("stages", cl::desc("stages values"),
                            cl::init(defaultList(kDefaultSpace.stages)),
                            cl::cat(spaceCategory));
cl::opt<std::string>
    warpgroups("warpgroups", cl::desc("warpgroups values"),
               cl::init(defaultList(kDefaultSpace.warpgroups)),
               cl::cat(spaceCategory));
cl::opt<std::string> overlap("overlap", cl::desc("overlap schedule (1,0)"),
                             cl::init(defaultList(kDefaultSpace.overlap)),
                             cl::cat(spaceCategory));
// Ping-pong and split release default to on only: each halves the space
// (and the compile time) and neither lost where both were timed
// (docs/decisions.md, "flash-tune's default search space");
// `--pingpong 1,0 --split-release 1,0` searches them too.
cl::opt<std::string> pingpong("pingpong",
                              cl::desc("ping-pong schedule (default 1; 1,0 "
                                       "searches both)"),
                              cl::init(defaultList(kDefaultSpace.pingpong)),
                              cl::cat(spaceCategory));
cl::opt<std::string>
    splitRelease("split-release",
                 cl::desc("split K/V release (default 1; 1,0 searches both)"),
                 cl::init(defaultList(kDefaultSpace.splitRelease)),
                 cl::cat(spaceCategory));
// Persistent kernels win mostly at N <= 4096 (up to 1.17x under a causal
// mask; docs/decisions.md, "Persistent kernels") and searching them doubles
// the compile time: off by default, `--persistent 0,1` searches both.
cl::opt<std::string> persistent("persistent",
                                cl::desc("persistent tile schedule (default "
                                         "0; 0,1 searches both)"),
                                cl::init(defaultList(kDefaultSpace.persistent)),
                                cl::cat(spaceCategory));
// O by TMA won at D = 128/256 and lost at D = 64, with two consumers and
// with four (docs/decisions.md, "O stored by TMA, not at D64");
// `--tma-store-o 1,0` searches global stores too.
cl::opt<std::string> tmaStoreO("tma-store-o",
                               cl::desc("O stored by TMA (default 1; 1,0 "
                                        "searches both)"),
                               cl::init(defaultList(kDefaultSpace.tmaStoreO)),
                               cl::cat(spaceCategory));
// Claimed causal tiles won at D = 128 and lost at D = 64 for N <= 1024
// (docs/decisions.md, "Causal pairs and claimed tiles");
// `--dynamic-schedule 1,0` searches the static pairs too (persistent causal
// kernels only).
cl::opt<std::string>
    dynamicSchedule("dynamic-schedule",
                    cl::desc("causal tiles claimed from a counter (default "
                             "1; 1,0 searches both)"),
                    cl::init(defaultList(kDefaultSpace.dynamicSchedule)),
                    cl::cat(spaceCategory));
// P before the tile's max made the D = 64 persistent ping-pong causal picks
// 2-5% faster on randn inputs and 13-20% slower on the timing inputs here
// (rows with logits near 1e3), and spills most other configs
// (docs/decisions.md, "Speculative exp off"); `--speculative-exp 0,1`
// searches both.
cl::opt<std::string>
    speculativeExp("speculative-exp",
                   cl::desc("P before the tile's max (default 0; 0,1 "
                            "searches both)"),
                   cl::init(defaultList(kDefaultSpace.speculativeExp)),
                   cl::cat(spaceCategory));

int fail(const Twine &message) {
  WithColor::error(errs(), "flash-tune") << message << "\n";
  return 1;
}

Expected<SearchSpace> parseSpace() {
  SearchSpace space;
  std::pair<cl::opt<std::string> *, SmallVector<int64_t> *> ints[] = {
      {&blockM, &space.blockM},
      {&blockN, &space.blockN},
      {&stages, &space.stages},
      {&warpgroups, &space.warpgroups}};
  for (auto [option, axis] : ints) {
    Expected<SmallVector<int64_t>> values = parseIntList(*option);
    if (!values)
      return createStringError(inconvertibleErrorCode(), "--%s: %s",
                               option->ArgStr.str().c_str(),
                               toString(values.takeError()).c_str());
    *axis = std::move(*values);
  }
  std::pair<cl::opt<std::string> *, SmallVector<bool> *> flags[] = {
      {&overlap, &space.overlap},
      {&pingpong, &space.pingpong},
      {&splitRelease, &space.splitRelease},
      {&persistent, &space.persistent},
      {&tmaStoreO, &space.tmaStoreO},
      {&dynamicSchedule, &space.dynamicSchedule},
      {&speculativeExp, &space.speculativeExp}};
  for (auto [option, axis] : flags) {
    Expected<SmallVector<bool>> values = parseFlagList(*option);
    if (!values)
      return createStringError(inconvertibleErrorCode(), "--%s: %s",
                               option->ArgStr.str().c_str(),
                               toString(values.takeError()).c_str());
    *axis = std::move(*values);
  }
  return space;
}

/// flash-tune-run: --runner, else beside this executable, else on PATH.
Expected<std::string> findRunner(const char *argv0) {
  if (!runner.empty())
    return runner.getValue();
  std::string self = sys::fs::getMainExecutable(argv0, (void *)&findRunner);
  SmallString<256> beside(sys::path::parent_path(self));
  sys::path::append(beside, "flash-tune-run");
  if (sys::fs::can_execute(beside))
    return std::string(beside);
  if (ErrorOr<std::string> onPath = sys::findProgramByName("flash-tune-run"))
    return *onPath;
  return createStringError(inconvertibleErrorCode(),
                           "flash-tune-run not found beside flash-tune or on "
                           "PATH (it is built only where cuda.h is); pass "
                           "--runner, or --emit-bundle here and run "
                           "flash-tune-run on the GPU host");
}

/// Runs flash-tune-run on `dir`, writing `output`; returns its exit code.
int runBundle(const char *argv0, StringRef dir, StringRef output) {
  Expected<std::string> program = findRunner(argv0);
  if (!program)
    return fail(toString(program.takeError()));
  SmallVector<StringRef> args = {*program, dir, "-o", output};
  for (const std::string &arg : runnerArgs)
    args.push_back(arg);
  std::string error;
  int status =
      sys::ExecuteAndWait(*program, args, std::nullopt, {}, 0, 0, &error);
  if (status < 0)
    return fail("cannot run " + *program + ": " + error);
  return status;
}

int show() {
  Expected<TuningDb> db = TuningDb::load(showFile);
  if (!db)
    return fail(toString(db.takeError()));
  db->printTable(outs());
  return 0;
}

/// --select: the selection flash-tune-run makes, replayed on its timings.
int selectFromTimings() {
  if (outputFile.empty())
    return fail("--select needs -o tuning.json");
  Expected<TuningDb> db = TuningDb::loadForUpdate(outputFile);
  if (!db)
    return fail(toString(db.takeError()));
  size_t written = 0;
  for (const std::string &path : selectFiles) {
    Expected<std::string> text = readFile(path);
    if (!text)
      return fail(toString(text.takeError()));
    Expected<TimingsFile> timings = TimingsFile::parse(*text, path);
    if (!timings)
      return fail(toString(timings.takeError()));
    if (!timings->incomplete.empty())
      return fail(path + " is from a run that stopped early (" +
                  timings->incomplete + "): its winners would be partial");
    std::vector<ProblemShape> shapes;
    for (const CandidateTiming &t : timings->timings)
      if (!llvm::is_contained(shapes, t.shape))
        shapes.push_back(t.shape);
    std::vector<Winner> winners = selectWinners(shapes, timings->timings);
    printWinners(outs(), winners);
    written += recordWinners(*db, timings->manifest, timings->gpu, winners);
  }
  if (Error err = db->save(outputFile))
    return fail(toString(std::move(err)));
  outs() << formatv("{0} entries written to {1}\n", written,
                    outputFile.getValue());
  return 0;
}

void printVerdicts(const BundleManifest &manifest, size_t total) {
  std::map<std::string, size_t> byStage;
  for (const PrunedConfig &p : manifest.pruned)
    ++byStage[p.stage];
  outs() << formatv("{0} configs: {1} candidates", total,
                    manifest.candidates.size());
  for (auto &[stage, count] : byStage)
    outs() << formatv(", {0} pruned ({1})", count, stage);
  outs() << "\n";
  for (const BundleCandidate &c : manifest.candidates)
    outs() << formatv("candidate {0} {1}\n", c.id, c.config.str());
  for (const PrunedConfig &p : manifest.pruned) {
    std::string reason = p.reason;
    std::replace(reason.begin(), reason.end(), '\n', ' ');
    outs() << formatv("pruned [{0}] {1}: {2}\n", p.stage, p.config.str(),
                      reason);
  }
}

} // namespace

int main(int argc, char **argv) {
  InitLLVM initLLVM(argc, argv);
  cl::HideUnrelatedOptions({&category, &spaceCategory});
  cl::ParseCommandLineOptions(
      argc, argv,
      "flash-tune: find the fastest tile config of a flash kernel\n");

  if (!showFile.empty())
    return show();
  if (!selectFiles.empty())
    return selectFromTimings();
  if (!runBundleDir.empty()) {
    if (outputFile.empty())
      return fail("--run-bundle needs -o tuning.json");
    return runBundle(argv[0], runBundleDir, outputFile);
  }
  if (inputFile.empty())
    return fail("no kernel given (flash-tune kernel.mlir --shape B,H,N,D "
                "-o tuning.json; see --help)");
  if (shapes.empty())
    return fail("give at least one --shape B,H,N,D");
  if (emitBundleDir.empty() && outputFile.empty() && !pruneOnly)
    return fail("give -o tuning.json, --emit-bundle DIR or --prune-only");

  Expected<KernelSource> source = loadKernelSource(inputFile);
  if (!source)
    return fail(toString(source.takeError()));
  std::vector<ProblemShape> problemShapes;
  for (const std::string &text : shapes) {
    Expected<ProblemShape> shape = parseShape(text);
    if (!shape)
      return fail("--shape: " + toString(shape.takeError()));
    if (shape->headDim != source->headDim)
      return fail(formatv("--shape {0}: D = {1}, but {2} is a head dim {3} "
                          "kernel",
                          text, shape->headDim, inputFile.getValue(),
                          source->headDim));
    problemShapes.push_back(*shape);
  }
  Expected<SearchSpace> space = parseSpace();
  if (!space)
    return fail(toString(space.takeError()));
  // Refuse a database we could not update before compiling for minutes.
  if (!outputFile.empty()) {
    Expected<TuningDb> db = TuningDb::loadForUpdate(outputFile);
    if (!db)
      return fail(toString(db.takeError()));
  }

  std::vector<TuneConfig> configs = enumerateConfigs(*space);
  CompileOptions options;
  options.arch = arch;
  options.cudaRoot = cudaRoot;
  options.threads = threads;
  options.keepSpills = keepSpills;
  options.keepSerializedWgmma = keepSerializedWgmma;
  options.pruneOnly = pruneOnly;
  options.progress = &outs();
  options.interactive = sys::Process::StandardOutIsDisplayed();

  std::string dir = emitBundleDir;
  if (dir.empty())
    dir = bundleDir.empty() ? outputFile + ".bundle" : bundleDir.getValue();
  if (pruneOnly && emitBundleDir.empty()) {
    options.progress = nullptr;
    SmallString<128> temp;
    if (std::error_code ec =
            sys::fs::createUniqueDirectory("flash-tune-prune", temp))
      return fail("cannot create a temporary directory: " + ec.message());
    dir = std::string(temp);
  }
  auto start = std::chrono::steady_clock::now();
  Expected<BundleManifest> manifest =
      emitBundle(*source, configs, problemShapes, dir, options);
  if (!manifest)
    return fail(toString(manifest.takeError()));
  if (pruneOnly) {
    printVerdicts(*manifest, configs.size());
    if (emitBundleDir.empty())
      sys::fs::remove_directories(dir);
    return 0;
  }
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  outs() << formatv("{0} configs -> {1} candidates in {2} ({3} pruned, "
                    "reasons in {4}) in {5:f1} s\n",
                    configs.size(), manifest->candidates.size(), dir,
                    manifest->pruned.size(), kManifestName, seconds);
  outs().flush();
  if (manifest->candidates.empty())
    return fail("no candidate survived pruning");
  if (!emitBundleDir.empty())
    return 0;
  return runBundle(argv[0], dir, outputFile);
}

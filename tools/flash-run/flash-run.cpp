//===- flash-run.cpp - Run, check and time one flashc kernel --------------===//
//
// flash-run kernel.cubin --batch B --heads H [--kv-heads Hkv] --seq N
//           [--seq-k M] [--seed S] [--check] [--bench [--iters N]]
//           [--layout bhsd|bshd] [--repeat R]
//
// Seeded random inputs (never zeros; every 16th query row scaled so its
// logits reach ~1e3), outputs poisoned with NaN before the launch, results
// checked against a float64 CPU reference (every row of small problems, a
// random sample of large ones; fully-masked rows must give O = 0 and
// LSE = -inf), PASS/FAIL with the dtype's tolerance (exit 1 on FAIL). With
// --bench: median time of many launches after warm-up (CUDA events),
// rotating among input sets larger than L2, and TFLOP/s. --repeat R launches
// R times before the checked launch.
// Exit codes: 0 pass, 1 check failed, 2 error, 77 skipped (no driver/GPU).
// Option parsing and exit codes only; the run is lib/Run's.
//
//===----------------------------------------------------------------------===//

#include "flashc/Run/RunKernel.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;
using namespace flashc::rt;
namespace run = flashc::run;

static cl::OptionCategory category("flash-run options");
static cl::opt<std::string> kernelPath(cl::Positional, cl::Required,
                                       cl::desc("<kernel.cubin|.ptx|.json>"),
                                       cl::cat(category));
static cl::opt<int64_t> batch("batch", cl::desc("batch size B"), cl::init(1),
                              cl::cat(category));
static cl::opt<int64_t> heads("heads", cl::desc("heads H"), cl::init(1),
                              cl::cat(category));
static cl::opt<int64_t>
    kvHeads("kv-heads",
            cl::desc("K/V heads (grouped-query attention; default H)"),
            cl::init(0), cl::cat(category));
static cl::opt<int64_t> seq("seq", cl::desc("query sequence length N"),
                            cl::init(128), cl::cat(category));
static cl::opt<int64_t> seqK("seq-k",
                             cl::desc("key/value sequence length (default N)"),
                             cl::init(-1), cl::cat(category));
static cl::list<int64_t>
    seqlens("seqlens",
            cl::desc("packed sequences' lengths, comma-separated (a kernel "
                     "with a packed grid; --batch and --seq are ignored)"),
            cl::CommaSeparated, cl::cat(category));
static cl::list<int64_t>
    seqlensK("seqlens-k", cl::desc("their key lengths (default: --seqlens)"),
             cl::CommaSeparated, cl::cat(category));
static cl::opt<unsigned> seed("seed", cl::desc("random seed"), cl::init(1),
                              cl::cat(category));
static cl::opt<bool> check("check", cl::desc("check against float64 reference"),
                           cl::cat(category));
static cl::opt<bool> bench("bench", cl::desc("time the kernel"),
                           cl::cat(category));
static cl::opt<unsigned> iters("iters", cl::desc("timed launches (--bench)"),
                               cl::init(100), cl::cat(category));
static cl::opt<unsigned> warmup("warmup", cl::desc("untimed launches first"),
                                cl::init(10), cl::cat(category));
static cl::opt<unsigned>
    repeat("repeat",
           cl::desc("launches before the checked one (a kernel that keeps "
                    "state across launches must still be right after them)"),
           cl::init(0), cl::cat(category));
static cl::opt<int> deviceOrdinal("device", cl::desc("CUDA device ordinal"),
                                  cl::init(0), cl::cat(category));
static cl::opt<std::string>
    layout("layout",
           cl::desc("memory layout of q/k/v/o: bhsd or bshd (o stays "
                    "bhsd where the kernel takes it as a plain pointer)"),
           cl::init("bhsd"), cl::cat(category));
static cl::opt<unsigned> sampleRows("sample-rows",
                                    cl::desc("rows checked in large problems"),
                                    cl::init(256), cl::cat(category));
static cl::opt<bool> noHard("no-hard", cl::desc("no rows with logits near 1e3"),
                            cl::cat(category));
static cl::opt<double> tolerance("tol",
                                 cl::desc("relative error tolerance (default "
                                          "1e-2 bf16, 5e-3 f16)"),
                                 cl::init(0), cl::cat(category));
static cl::opt<bool> skipUnsupported(
    "skip-unsupported",
    cl::desc("exit 77 (skipped) also when the GPU cannot run the kernel"),
    cl::cat(category));

namespace {
constexpr int kExitFail = 1, kExitError = 2, kExitSkip = 77;

int report(Error err, bool allowSkip = false) {
  std::string msg;
  int code = takeErrorMessage(std::move(err), msg);
  bool skip = code == int(ErrorCode::NoDriver) ||
              (code == int(ErrorCode::NoDevice) &&
               (allowSkip || StringRef(msg).starts_with("no GPU")));
  if (skip) {
    outs() << "skipped: " << msg << "\n";
    return kExitSkip;
  }
  errs() << "flash-run: error: " << msg << "\n";
  return kExitError;
}
} // namespace

int main(int argc, char **argv) {
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "flash-run: run, check and time a flashc "
                              "kernel\n");
  if (layout != "bhsd" && layout != "bshd") {
    errs() << "flash-run: error: --layout must be bhsd or bshd\n";
    return kExitError;
  }
  // kernel.json first: a bad file is named even where there is no driver.
  if (Expected<KernelMetadata> meta = loadMetadataFile(kernelPath); !meta)
    return report(meta.takeError());
  if (Expected<const DriverApi *> driver = getDriver(); !driver)
    return report(driver.takeError());
  Expected<std::unique_ptr<Kernel>> kernelOrErr =
      Kernel::load(kernelPath, deviceOrdinal);
  if (!kernelOrErr)
    return report(kernelOrErr.takeError(), skipUnsupported);
  Kernel &kernel = **kernelOrErr;
  const KernelMetadata &meta = kernel.getMetadata();
  ScopedContext scope(kernel.getContext());

  run::RunShape shape{batch, heads, seq, seqK, kvHeads};
  shape.seqlensQ.assign(seqlens.begin(), seqlens.end());
  shape.seqlensK.assign(seqlensK.begin(), seqlensK.end());
  for (int64_t n : shape.seqlensQ)
    if (n < 0) {
      errs() << "flash-run: error: --seqlens must not be negative\n";
      return kExitError;
    }
  for (int64_t n : shape.seqlensK)
    if (n < 0) {
      errs() << "flash-run: error: --seqlens-k must not be negative\n";
      return kExitError;
    }
  if (!shape.seqlensK.empty() &&
      shape.seqlensK.size() != shape.seqlensQ.size()) {
    errs() << "flash-run: error: --seqlens-k must give one length per "
              "sequence of --seqlens\n";
    return kExitError;
  }
  run::Problem problem = run::Problem::make(
      meta, shape, layout == "bshd" ? run::Layout::BSHD : run::Layout::BHSD);
  run::printRunHeader(outs(), meta, kernel.getDevice(), problem);
  if (Error err = run::checkProblem(meta, problem, deviceOrdinal))
    return report(std::move(err));

  // The same generator then samples the checked rows of a large problem.
  std::mt19937_64 rng(seed);
  run::HostInputs inputs = run::generateInputs(problem, rng, !noHard);
  // One input set for --check, several for --bench so L2 cannot hold them.
  unsigned numSets = bench ? run::benchInputSets(problem.setBytes()) : 1;
  Expected<std::unique_ptr<run::DeviceRun>> device =
      run::DeviceRun::create(kernel, problem, inputs, numSets, deviceOrdinal);
  if (!device)
    return report(device.takeError());
  if (Error err = (*device)->launchRepeated(repeat))
    return report(std::move(err));
  if (Error err = (*device)->launchChecked())
    return report(std::move(err));

  int exitCode = 0;
  if (check) {
    Expected<run::DeviceOutputs> outputs = (*device)->readOutputs();
    if (!outputs)
      return report(outputs.takeError());
    run::CheckResult result = run::checkOutputs(problem, meta, inputs, *outputs,
                                                rng, {sampleRows, tolerance});
    run::printCheck(outs(), result);
    if (!result.pass)
      exitCode = kExitFail;
  }
  if (bench) {
    Expected<run::BenchResult> result =
        (*device)->bench(warmup, iters, meta.causal);
    if (!result)
      return report(result.takeError());
    run::printBench(outs(), *result);
  }
  return exitCode;
}

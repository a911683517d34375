//===- flashc.cpp - the flashc compiler driver ----------------------------===//
//
// flashc attention.mlir -o kernel.ptx: parses a kernel (kernel level, or an
// already lowered gpu.module), runs the shared pipelines of lib/Pipeline (the
// NVVM lowering included), and writes the artefact with lib/Target (ptxas,
// kernel.json beside it). With --target=cpu -o kernel.so it writes the same
// tile program compiled for the host CPU as a shared library. With
// --tuning-db tuning.json --shape B,H,N,D it compiles the config flash-tune
// chose for that shape (lib/Autotune).
//
//===----------------------------------------------------------------------===//

#include "flashc/Autotune/TunedPipeline.h"
#include "flashc/Autotune/TuningDb.h"
#include "flashc/InitAll.h"
#include "flashc/Pipeline/CompileKernel.h"
#include "flashc/Pipeline/Pipelines.h"
#include "flashc/Target/GpuTarget.h"
#include "flashc/Target/KernelMetadata.h"

#include "Flash/FlashOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace mlir;
namespace cl = llvm::cl;

namespace {

using flashc::KernelStage;
using flashc::TargetKind;

cl::OptionCategory category("flashc options");

cl::opt<std::string> inputFile(cl::Positional, cl::Required,
                               cl::desc("<kernel.mlir>"), cl::cat(category));
cl::opt<std::string> outputFile("o",
                                cl::desc("Output file (default: stdout, "
                                         "or kernel.cubin for cubin)"),
                                cl::value_desc("file"), cl::init(""),
                                cl::cat(category));
cl::opt<KernelStage> emitKind(
    "emit",
    cl::desc("What to write (default: from -o's extension, else ptx, or so "
             "for --target=cpu)"),
    cl::values(clEnumValN(KernelStage::Tile, "tile", "the fused tile program"),
               clEnumValN(KernelStage::Mlir, "mlir", "the GPU kernel in MLIR"),
               clEnumValN(KernelStage::LlvmIr, "llvm",
                          "the kernel's LLVM IR (NVVM)"),
               clEnumValN(KernelStage::Ptx, "ptx", "PTX assembly"),
               clEnumValN(KernelStage::Cubin, "cubin",
                          "a cubin, through ptxas"),
               clEnumValN(KernelStage::SharedLibrary, "so",
                          "a host shared library (--target=cpu)")),
    cl::cat(category));
cl::opt<TargetKind> targetKind(
    "target", cl::desc("What the kernel runs on"),
    cl::values(clEnumValN(TargetKind::Gpu, "gpu",
                          "the GPU (--arch); PTX or cubin"),
               clEnumValN(TargetKind::Cpu, "cpu",
                          "the host CPU: the same tile program as loops, "
                          "in a shared library (slow; for tests and "
                          "machines without a GPU)")),
    cl::init(TargetKind::Gpu), cl::cat(category));
cl::opt<std::string> hostCpu(
    "host-cpu",
    cl::desc("The CPU a --target=cpu library is compiled for: generic (the "
             "triple's baseline, runs on every host), native (this host's "
             "CPU and features) or an LLVM CPU name"),
    cl::init("generic"), cl::cat(category));
cl::opt<std::string> arch("arch", cl::desc("GPU architecture"),
                          cl::init("sm_90a"), cl::cat(category));
cl::opt<std::string> cudaRoot("cuda-root",
                              cl::desc("CUDA toolkit (ptxas, libdevice)"),
                              cl::init("/usr/local/cuda"), cl::cat(category));
cl::opt<int64_t> blockM("block-m", cl::desc("Override block_m"), cl::init(0),
                        cl::cat(category));
cl::opt<int64_t> blockN("block-n", cl::desc("Override block_n"), cl::init(0),
                        cl::cat(category));
cl::opt<int64_t> stages("stages", cl::desc("Override stages"), cl::init(0),
                        cl::cat(category));
cl::opt<int64_t> warpgroups("warpgroups", cl::desc("Override warpgroups"),
                            cl::init(0), cl::cat(category));
// The schedule switches of #flash.config (ScheduleSwitches.def): 1 on, 0
// off, unset keeps.
#define FLASH_SCHEDULE_SWITCH(Name, field, key, flag, dflt, tune, label,        \
                              summary)                                         \
  cl::opt<int> switch##Name(flag,                                              \
                            cl::desc("Override " key ", " summary              \
                                     " (1 or 0)"),                             \
                            cl::init(-1), cl::cat(category));
#include "flashc/Config/ScheduleSwitches.def"
cl::opt<int> *const switchFlags[] = {
#define FLASH_SCHEDULE_SWITCH(Name, ...) &switch##Name,
#include "flashc/Config/ScheduleSwitches.def"
};
cl::opt<bool> probeStamps(
    "probe-stamps",
    cl::desc("Developer probe: per tile program and consumer, clock64 "
             "stamps written over the LSE buffer instead of LSE "
             "(bench/stamps.py reads them)"),
    cl::init(false), cl::cat(category));
cl::opt<std::string> tuningDb(
    "tuning-db",
    cl::desc("Compile the config flash-tune chose for --shape (and --gpu)"),
    cl::value_desc("tuning.json"), cl::init(""), cl::cat(category));
cl::opt<std::string> tuneShape("shape",
                               cl::desc("Problem shape to look up in "
                                        "--tuning-db"),
                               cl::value_desc("B,H,N,D"), cl::init(""),
                               cl::cat(category));
cl::opt<std::string>
    tuneGpu("gpu",
            cl::desc("GPU name of the --tuning-db entry (default: the only "
                     "one)"),
            cl::init(""), cl::cat(category));
cl::opt<bool> resourceUsage(
    "resource-usage",
    cl::desc("Print ptxas's register/shared-memory/spill report (cubin)"),
    cl::init(false), cl::cat(category));

cl::opt<bool> backwardPass(
    "backward",
    cl::desc("Compile the backward pass of the input's forward attention "
             "function (derived with its mods, captures and sinks) instead "
             "of the forward"),
    cl::init(false), cl::cat(category));

int fail(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "flashc") << message << "\n";
  return 1;
}

KernelStage inferEmit() {
  if (emitKind.getNumOccurrences())
    return emitKind;
  llvm::StringRef extension = llvm::sys::path::extension(outputFile);
  return llvm::StringSwitch<KernelStage>(extension)
      .Case(".cubin", KernelStage::Cubin)
      .Case(".ptx", KernelStage::Ptx)
      .Case(".ll", KernelStage::LlvmIr)
      .Case(".mlir", KernelStage::Mlir)
      .Case(".so", KernelStage::SharedLibrary)
      .Default(targetKind == TargetKind::Cpu ? KernelStage::SharedLibrary
                                             : KernelStage::Ptx);
}

/// The --tuning-db entry for --shape, or nothing without --tuning-db.
FailureOr<std::optional<flashc::tune::TuningEntry>>
lookupTuningEntry(llvm::StringRef sourceHash) {
  if (tuningDb.empty()) {
    if (!tuneShape.empty() || !tuneGpu.empty()) {
      fail("--shape and --gpu select a --tuning-db entry: give --tuning-db");
      return failure();
    }
    return std::optional<flashc::tune::TuningEntry>();
  }
  if (tuneShape.empty()) {
    fail("--tuning-db needs --shape B,H,N,D to pick an entry");
    return failure();
  }
  bool anySwitch = llvm::any_of(
      switchFlags, [](cl::opt<int> *flag) { return *flag >= 0; });
  if (blockM || blockN || stages || warpgroups || anySwitch) {
    std::string flags = "--block-m/--block-n/--stages/--warpgroups";
    for (cl::opt<int> *flag : switchFlags)
      flags += ("/--" + flag->ArgStr).str();
    fail("--tuning-db and " + flags +
         " both choose the config: give one of them");
    return failure();
  }
  llvm::Expected<flashc::tune::ProblemShape> shape =
      flashc::tune::parseShape(tuneShape);
  if (!shape) {
    fail("--shape: " + llvm::toString(shape.takeError()));
    return failure();
  }
  llvm::Expected<flashc::tune::TuningDb> db =
      flashc::tune::TuningDb::load(tuningDb);
  if (!db) {
    fail(llvm::toString(db.takeError()));
    return failure();
  }
  llvm::Expected<const flashc::tune::TuningEntry *> entry =
      flashc::tune::lookupTuning(*db, sourceHash, arch, tuneGpu, *shape);
  if (!entry) {
    fail(tuningDb + ": " + llvm::toString(entry.takeError()));
    return failure();
  }
  return std::optional<flashc::tune::TuningEntry>(**entry);
}

/// Writes `contents` to `path` ("-" or empty: stdout).
int writeOutput(llvm::StringRef path, llvm::StringRef contents) {
  std::string error;
  std::unique_ptr<llvm::ToolOutputFile> out =
      openOutputFile(path.empty() ? "-" : path, &error);
  if (!out)
    return fail(error);
  out->os() << contents;
  out->keep();
  return 0;
}

/// kernel.cubin -> kernel.json, written beside the artefact.
int writeMetadata(llvm::json::Object metadata) {
  llvm::SmallString<256> path(outputFile);
  llvm::sys::path::replace_extension(path, "json");
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(metadata))) << "\n";
  return writeOutput(path, text);
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "flashc: compile a flash attention kernel to PTX or cubin for Hopper, "
      "or to a host shared library (--target=cpu)\n");

  KernelStage emit = inferEmit();
  bool cpu = targetKind == TargetKind::Cpu;
  if (!cpu) {
    if (llvm::Error error = flashc::checkSupportedArch(arch))
      return fail(llvm::toString(std::move(error)));
  }
  if (cpu && (emit == KernelStage::Ptx || emit == KernelStage::Cubin))
    return fail("--target=cpu writes --emit=tile, mlir, llvm or so, not "
                "PTX or cubin");
  if (!cpu && emit == KernelStage::SharedLibrary)
    return fail("a shared library (--emit=so, -o *.so) is built for "
                "--target=cpu only");
  if (cpu && probeStamps)
    return fail("--probe-stamps instruments the GPU kernel: not with "
                "--target=cpu");
  bool binary = emit == KernelStage::Ptx || emit == KernelStage::Cubin ||
                emit == KernelStage::SharedLibrary;
  if (binary && (outputFile.empty() || outputFile == "-"))
    return fail("-o <file> is required for --emit=ptx, cubin and so: "
                "kernel.json is written beside it");

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> input = openInputFile(inputFile, &error);
  if (!input)
    return fail(error);
  std::string sourceHash = flashc::hashSource(input->getBuffer());
  FailureOr<std::optional<flashc::tune::TuningEntry>> tuned =
      lookupTuningEntry(sourceHash);
  if (failed(tuned))
    return 1;

  DialectRegistry registry;
  flashc::registerAllDialects(registry);
  registerAllToLLVMIRTranslations(registry);
  MLIRContext context(registry);
  // A diagnostic names its location; the thousands of lines of a kernel
  // after lowering would bury it.
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;

  flashc::TileOverrides overrides{blockM, blockN, stages, warpgroups};
  for (auto [flag, value] :
       llvm::zip_equal(switchFlags, overrides.switches.values)) {
    if (*flag < -1 || *flag > 1)
      return fail("--" + flag->ArgStr + " takes 1 (on) or 0 (off), got " +
                  std::to_string(*flag));
    value = *flag;
  }
  if (!flashc::isKernelLevel(*module)) {
    if (emit == KernelStage::Tile)
      return fail("--emit=tile needs a kernel-level input (flash.attention)");
    if (*tuned)
      return fail("--tuning-db needs a kernel-level input (flash.attention)");
  }

  flashc::KernelCompileOptions options;
  options.overrides =
      *tuned ? flashc::tune::toTileOverrides((*tuned)->config) : overrides;
  options.stage = emit;
  options.targetKind = targetKind;
  options.target.arch = arch;
  options.host.cpu = hostCpu;
  options.target.cudaRoot = cudaRoot;
  options.probeStamps = probeStamps;
  options.backward = backwardPass;
  options.binaryName = llvm::sys::path::filename(outputFile).str();
  options.sourceHash = sourceHash;
  llvm::Expected<flashc::CompiledKernel> compiled =
      flashc::compileKernel(*module, options);
  if (!compiled) {
    int status = 1;
    llvm::handleAllErrors(
        compiled.takeError(), [](const flashc::DiagnosedFailure &) {},
        [&](const llvm::ErrorInfoBase &error) {
          status = fail(error.message());
        });
    return status;
  }
  if (emit == KernelStage::Cubin && resourceUsage)
    llvm::errs() << compiled->resourceReport;
  if (int status = writeOutput(outputFile, compiled->artefact))
    return status;
  if (!compiled->metadata)
    return 0;
  // Which tuning entry chose the config, so a runner can match the binary
  // to the shape it was tuned for.
  if (*tuned)
    (*compiled->metadata)["tuned_for"] =
        llvm::json::Object{{"tuning_db", tuningDb.getValue()},
                           {"shape", flashc::tune::toJson((*tuned)->shape)}};
  return writeMetadata(std::move(*compiled->metadata));
}

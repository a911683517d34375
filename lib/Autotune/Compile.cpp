//===- Compile.cpp - prune, deduplicate and compile candidates ------------===//

#include "flashc/Autotune/Compile.h"
#include "flashc/Autotune/PtxasReport.h"
#include "flashc/Pipeline/CompileKernel.h"
#include "flashc/Pipeline/Pipelines.h"
#include "flashc/Target/GpuTarget.h"
#include "flashc/Target/KernelMetadata.h"

#include "flashc/Autotune/Files.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/ThreadPool.h"
#include "llvm/Support/Threading.h"

#include <map>
#include <optional>

using namespace llvm;
using namespace flashc;
using namespace flashc::tune;

/// "c0007": candidate ids sort like their indices.
static std::string candidateId(size_t index) {
  char id[16];
  snprintf(id, sizeof(id), "c%04zu", index);
  return id;
}

static ThreadPoolStrategy strategyFor(unsigned threads) {
  return threads ? hardware_concurrency(threads) : hardware_concurrency();
}

PruneResult flashc::tune::pruneConfigs(const KernelSource &source,
                                       ArrayRef<TuneConfig> configs,
                                       const CompileOptions &options) {
  PruneResult result;
  // 1. The dialect's verifier: cheap, one context.
  std::unique_ptr<mlir::MLIRContext> context = createTuneContext();
  std::vector<TuneConfig> valid;
  for (const TuneConfig &config : configs) {
    if (std::optional<std::string> why = checkConfigAttr(*context, config))
      result.pruned.push_back({config, "config", *why});
    else
      valid.push_back(config);
  }

  // 2. The conversion, in parallel: its diagnostics prune, its flash.launch
  //    says what it applied.
  std::vector<std::optional<TuneConfig>> lowered(valid.size());
  std::vector<std::string> errors(valid.size());
  std::vector<std::optional<std::string>> overBudget(valid.size());
  // Lowering takes milliseconds per config: a bar on a terminal, but no
  // line per config in a log (the verdicts are summed up afterwards).
  std::optional<Progress> progress;
  if (options.progress && options.interactive)
    progress.emplace("lowering", valid.size(), *options.progress,
                     options.interactive);
  {
    DefaultThreadPool pool(strategyFor(options.threads));
    for (size_t i = 0; i < valid.size(); ++i)
      pool.async([&, i] {
        std::unique_ptr<mlir::MLIRContext> ctx = createTuneContext();
        Expected<LoweredKernel> kernel =
            lowerCandidate(*ctx, source, valid[i], options.arch);
        std::string line = valid[i].str();
        if (kernel) {
          lowered[i] = kernel->applied;
          overBudget[i] = checkRegisterFit(kernel->accumulatorRegs,
                                           kernel->consumerRegs);
        } else {
          line += ": pruned";
          errors[i] = toString(kernel.takeError());
        }
        if (progress)
          progress->step(line);
      });
    pool.wait();
  }
  if (progress)
    progress->finish();

  // 3. One candidate per distinct kernel, in the order of `configs`.
  std::map<TuneConfig, TuneConfig> firstRequest;
  for (size_t i = 0; i < valid.size(); ++i) {
    if (!lowered[i]) {
      result.pruned.push_back({valid[i], "conversion", errors[i]});
      continue;
    }
    if (overBudget[i]) {
      result.pruned.push_back({valid[i], "registers", *overBudget[i]});
      continue;
    }
    auto [it, inserted] = firstRequest.try_emplace(*lowered[i], valid[i]);
    if (inserted) {
      result.kept.push_back(*lowered[i]);
      continue;
    }
    result.pruned.push_back({valid[i], "duplicate",
                             "the conversion applies it as " +
                                 lowered[i]->str() + ", the same kernel as " +
                                 it->second.str()});
  }
  return result;
}

namespace {
/// What compiling one candidate gave.
struct Compiled {
  std::optional<BundleCandidate> candidate;
  std::optional<PrunedConfig> pruned;
};
} // namespace

static Compiled compileOne(const KernelSource &source, const TuneConfig &config,
                           StringRef id, StringRef dir,
                           const CompileOptions &options) {
  auto prune = [&](StringRef stage, const Twine &why) {
    Compiled c;
    c.pruned = PrunedConfig{config, stage.str(), why.str()};
    return c;
  };
  std::unique_ptr<mlir::MLIRContext> context = createTuneContext();
  Expected<LoweredKernel> lowered =
      lowerCandidate(*context, source, config, options.arch);
  if (!lowered)
    return prune("conversion", toString(lowered.takeError()));
  // Diagnostics of the NVVM lowering land in the collector-less context:
  // catch them for the reason.
  std::string diagnostics;
  mlir::ScopedDiagnosticHandler handler(context.get(),
                                        [&](mlir::Diagnostic &diag) {
                                          diagnostics += diag.str() + "\n";
                                          return mlir::success();
                                        });
  KernelCompileOptions compile;
  compile.stage = KernelStage::Cubin;
  compile.target.arch = options.arch;
  compile.target.cudaRoot = options.cudaRoot;
  compile.binaryName = "kernel.cubin";
  compile.sourceHash = source.hash;
  Expected<CompiledKernel> cubin = compileKernel(*lowered->module, compile);
  if (!cubin) {
    std::string stage = "ptxas", why;
    handleAllErrors(
        cubin.takeError(),
        [&](const DiagnosedFailure &failure) {
          stage = failure.stage;
          why = diagnostics;
        },
        [&](const ErrorInfoBase &error) { why = error.message(); });
    return prune(stage, why);
  }
  PtxasResources resources = parsePtxasReport(cubin->resourceReport);
  if (std::optional<PtxasVerdict> verdict = ptxasPruneReason(
          resources, options.keepSpills, options.keepSerializedWgmma))
    return prune(verdict->stage, verdict->reason);

  // Only candidates that survive get a directory.
  SmallString<256> candidateDir(dir);
  sys::path::append(candidateDir, id);
  if (std::error_code ec = sys::fs::create_directories(candidateDir))
    return prune("io", "cannot create " + candidateDir + ": " + ec.message());
  SmallString<256> binaryPath(candidateDir), metadataPath(candidateDir);
  sys::path::append(binaryPath, "kernel.cubin");
  sys::path::append(metadataPath, "kernel.json");
  if (Error err = writeFileAtomically(binaryPath, cubin->artefact))
    return prune("io", toString(std::move(err)));
  if (Error err = writeJsonAtomically(metadataPath, std::move(*cubin->metadata)))
    return prune("io", toString(std::move(err)));

  Compiled c;
  c.candidate = BundleCandidate{id.str(), (id + "/kernel.cubin").str(), config,
                                resources.registers, resources.spillBytes};
  return c;
}

/// Creates `dir`, or empties an earlier bundle there (its candidates, its
/// timings), so no stale kernel is left beside the new manifest. A directory
/// that holds anything else is refused, never cleaned.
static Error prepareBundleDir(StringRef dir) {
  if (!sys::fs::exists(dir)) {
    if (std::error_code ec = sys::fs::create_directories(dir))
      return createStringError(ec, "cannot create '%s': %s", dir.str().c_str(),
                               ec.message().c_str());
    return Error::success();
  }
  std::error_code ec;
  bool empty =
      sys::fs::directory_iterator(dir, ec) == sys::fs::directory_iterator();
  if (ec)
    return createStringError(ec, "cannot read '%s': %s", dir.str().c_str(),
                             ec.message().c_str());
  if (empty)
    return Error::success();
  Expected<BundleManifest> old = BundleManifest::load(dir);
  if (!old)
    return createStringError(inconvertibleErrorCode(),
                             "'%s' is not empty and holds no flash-tune bundle "
                             "(%s): pick another directory",
                             dir.str().c_str(),
                             toString(old.takeError()).c_str());
  for (const BundleCandidate &c : old->candidates) {
    SmallString<256> path(dir);
    sys::path::append(path, c.id);
    sys::fs::remove_directories(path);
  }
  SmallString<256> timings(dir);
  sys::path::append(timings, "timings.json");
  sys::fs::remove(timings);
  return Error::success();
}

Expected<BundleManifest>
flashc::tune::emitBundle(const KernelSource &source,
                         ArrayRef<TuneConfig> configs,
                         ArrayRef<ProblemShape> shapes, StringRef dir,
                         const CompileOptions &options) {
  if (Error err = prepareBundleDir(dir))
    return std::move(err);
  if (!options.pruneOnly) {
    if (Error err = checkSupportedArch(options.arch))
      return std::move(err);
    if (!findPtxas(options.cudaRoot))
      return createStringError(inconvertibleErrorCode(),
                               "ptxas not found (under '%s', on PATH or "
                               "CUDA_HOME): flash-tune needs it to compile "
                               "candidates (--prune-only does not)",
                               options.cudaRoot.c_str());
  }

  BundleManifest manifest;
  manifest.kernel = source.kernel;
  manifest.source = source.path;
  manifest.sourceHash = source.hash;
  manifest.arch = options.arch;
  manifest.dtype = source.dtype;
  manifest.headDim = source.headDim;
  manifest.causal = source.causal;
  manifest.shapes.assign(shapes.begin(), shapes.end());

  PruneResult pruned = pruneConfigs(source, configs, options);
  manifest.pruned = std::move(pruned.pruned);
  if (options.pruneOnly) {
    for (auto [i, config] : enumerate(pruned.kept))
      manifest.candidates.push_back({candidateId(i), "", config, -1, -1});
  } else {
    std::vector<Compiled> compiled(pruned.kept.size());
    std::optional<Progress> progress;
    if (options.progress)
      progress.emplace("compiling", pruned.kept.size(), *options.progress,
                       options.interactive);
    {
      DefaultThreadPool pool(strategyFor(options.threads));
      for (size_t i = 0; i < pruned.kept.size(); ++i)
        pool.async([&, i] {
          std::string id = candidateId(i);
          compiled[i] = compileOne(source, pruned.kept[i], id, dir, options);
          if (progress)
            progress->step(id + " " + pruned.kept[i].str() +
                           (compiled[i].pruned
                                ? ": " + compiled[i].pruned->stage
                                : std::string(": ok")));
        });
      pool.wait();
    }
    if (progress)
      progress->finish();
    for (Compiled &c : compiled) {
      if (c.candidate)
        manifest.candidates.push_back(std::move(*c.candidate));
      else
        manifest.pruned.push_back(std::move(*c.pruned));
    }
  }
  if (Error err = manifest.save(dir))
    return std::move(err);
  return manifest;
}

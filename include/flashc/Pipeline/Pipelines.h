//===- Pipelines.h - the named pass pipelines -------------------*- C++ -*-===//
//
// The pipelines flashc, flash-tune and the tests share, so a kernel compiled
// by any of them went through the same passes.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_PIPELINE_PIPELINES_H
#define FLASHC_PIPELINE_PIPELINES_H

#include "flashc/Target/GpuTarget.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include "flashc/Config/ScheduleSwitches.h"

#include <string>

namespace flashc {

/// Tile-config overrides: 0 (sizes) or -1 (schedule switches) keeps the
/// kernel's own #flash.config.
struct TileOverrides {
  int64_t blockM = 0;
  int64_t blockN = 0;
  int64_t stages = 0;
  int64_t warpgroups = 0;
  ScheduleOverrides switches;
};

/// flash.attention -> the fused tile program (-flash-tile, -flash-fuse).
void buildTilePipeline(mlir::OpPassManager &pm, const TileOverrides &overrides);

/// flash.attention -> a gpu.module kernel for `chip` (the fused tile
/// program, -flash-gpu-schedule, then -convert-flash-to-gpu);
/// buildNVVMLoweringPipeline takes it from there. `probeStamps` builds the
/// developer probe (flash-gpu-schedule's probe-stamps: clock64 records over
/// the LSE buffer).
void buildGpuKernelPipeline(mlir::OpPassManager &pm,
                            const TileOverrides &overrides,
                            llvm::StringRef chip, bool probeStamps = false);

/// A module holding one gpu.module (buildGpuKernelPipeline's output) ->
/// NVVM -> the gpu.module serialized by gpu-module-to-binary into a
/// gpu.binary holding PTX or LLVM bitcode for `options.arch`.
void buildNVVMLoweringPipeline(mlir::OpPassManager &pm,
                               const GpuTargetOptions &options,
                               GpuArtefact artefact);

/// Runs buildNVVMLoweringPipeline on `module` after lib/Target's checks and
/// returns the text of its single gpu.module (PTX or LLVM IR). Errors are
/// emitted as diagnostics on the module.
mlir::FailureOr<std::string> serializeGpuModule(mlir::ModuleOp module,
                                                const GpuTargetOptions &options,
                                                GpuArtefact artefact);

/// flash.attention -> LLVM dialect for the host CPU: the tile program run as
/// loops, for MLIR's execution engine. Functions that should be callable
/// from C need the `llvm.emit_c_interface` attribute before this runs.
void buildCpuReferencePipeline(mlir::OpPassManager &pm,
                               const TileOverrides &overrides);

/// Registers `flash-tile-pipeline` and `flash-cpu-pipeline` for flash-opt.
void registerPipelines();

} // namespace flashc

#endif // FLASHC_PIPELINE_PIPELINES_H

//===- TunedPipeline.h - the GPU pipeline for a tuned config ----*- C++ -*-===//
//
// flash-tune compiles candidates and flashc --tuning-db compiles winners
// through this one function, so the kernel that was timed is the kernel that
// ships. It is lib/Pipeline's buildGpuKernelPipeline with every field of
// the config (sizes and schedule switches) as -flash-tile overrides, so the
// tiled function's #flash.config is the tuned config.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_AUTOTUNE_TUNEDPIPELINE_H
#define FLASHC_AUTOTUNE_TUNEDPIPELINE_H

#include "flashc/Autotune/Config.h"
#include "flashc/Pipeline/Pipelines.h"

namespace flashc::tune {

/// `config` as flash-tile overrides.
TileOverrides toTileOverrides(const TuneConfig &config);

/// flash.attention -> gpu.module kernel for `chip` with `config` (and
/// the developer probe, see buildGpuKernelPipeline).
void buildTunedKernelPipeline(mlir::OpPassManager &pm, const TuneConfig &config,
                              llvm::StringRef chip, bool probeStamps = false);

} // namespace flashc::tune

#endif // FLASHC_AUTOTUNE_TUNEDPIPELINE_H

//===- TunedPipeline.cpp - the GPU pipeline for a tuned config ------------===//

#include "flashc/Autotune/TunedPipeline.h"

using namespace mlir;

flashc::TileOverrides flashc::tune::toTileOverrides(const TuneConfig &config) {
  TileOverrides overrides{config.blockM, config.blockN, config.stages,
                          config.warpgroups};
  for (auto [info, value] :
       llvm::zip_equal(scheduleSwitchInfos(), overrides.switches.values))
    value = config.switches.*info.member;
  return overrides;
}

void flashc::tune::buildTunedKernelPipeline(OpPassManager &pm,
                                            const TuneConfig &config,
                                            llvm::StringRef chip,
                                            bool probeStamps) {
  buildGpuKernelPipeline(pm, toTileOverrides(config), chip, probeStamps);
}

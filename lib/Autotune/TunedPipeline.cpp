//===- TunedPipeline.cpp - the GPU pipeline for a tuned config ------------===//

#include "flashc/Autotune/TunedPipeline.h"

using namespace mlir;

flashc::TileOverrides flashc::tune::toTileOverrides(const TuneConfig &config) {
  return {config.blockM,
          config.blockN,
          config.stages,
          config.warpgroups,
          int(config.overlap),
          int(config.pingpong),
          int(config.splitRelease),
          int(config.persistent),
          int(config.tmaStoreO),
          int(config.dynamicSchedule),
          int(config.speculativeExp)};
}

void flashc::tune::buildTunedKernelPipeline(OpPassManager &pm,
                                            const TuneConfig &config,
                                            llvm::StringRef chip,
                                            bool probeStamps) {
  buildGpuKernelPipeline(pm, toTileOverrides(config), chip, probeStamps);
}

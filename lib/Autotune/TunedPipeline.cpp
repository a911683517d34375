//===- TunedPipeline.cpp - the GPU pipeline for a tuned config ------------===//

#include "flashc/Autotune/TunedPipeline.h"
#include "flashc/Conversion/Passes.h"

using namespace mlir;

flashc::TileOverrides flashc::tune::toTileOverrides(const TuneConfig &config) {
  return {config.blockM, config.blockN, config.stages, config.warpgroups};
}

void flashc::tune::buildTunedKernelPipeline(OpPassManager &pm,
                                            const TuneConfig &config,
                                            llvm::StringRef chip) {
  buildTilePipeline(pm, toTileOverrides(config));
  flash::ConvertFlashToGPUOptions options;
  options.chip = chip.str();
  options.overlap = config.overlap;
  options.pingpong = config.pingpong;
  options.splitRelease = config.splitRelease;
  pm.addPass(flash::createConvertFlashToGPU(options));
}

//===- Pipelines.cpp - the named pass pipelines ---------------------------===//
//
// Pipelines are built from pass constructors, so a library user needs no
// pass registration.
//
//===----------------------------------------------------------------------===//

#include "flashc/Pipeline/Pipelines.h"
#include "flashc/Conversion/Passes.h"
#include "flashc/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace flashc {

namespace {

struct PipelineOptions : public PassPipelineOptions<PipelineOptions> {
  Option<int64_t> blockM{*this, "block-m",
                         llvm::cl::desc("Override block_m (0: keep)"),
                         llvm::cl::init(0)};
  Option<int64_t> blockN{*this, "block-n",
                         llvm::cl::desc("Override block_n (0: keep)"),
                         llvm::cl::init(0)};
  Option<int64_t> stages{*this, "stages",
                         llvm::cl::desc("Override stages (0: keep)"),
                         llvm::cl::init(0)};
  Option<int64_t> warpgroups{*this, "warpgroups",
                             llvm::cl::desc("Override warpgroups (0: keep)"),
                             llvm::cl::init(0)};

  TileOverrides overrides() const {
    return {blockM, blockN, stages, warpgroups};
  }
};

} // namespace

void buildTilePipeline(OpPassManager &pm, const TileOverrides &overrides) {
  flash::FlashTileOptions options;
  options.blockM = overrides.blockM;
  options.blockN = overrides.blockN;
  options.stages = overrides.stages;
  options.warpgroups = overrides.warpgroups;
  pm.addNestedPass<func::FuncOp>(
      flash::createFlashTile(options, overrides.switches));
  pm.addNestedPass<func::FuncOp>(flash::createFlashFuse());
}

void buildGpuKernelPipeline(OpPassManager &pm, const TileOverrides &overrides,
                            llvm::StringRef chip, bool probeStamps) {
  buildTilePipeline(pm, overrides);
  flash::FlashGpuScheduleOptions options;
  options.chip = chip.str();
  options.probeStamps = probeStamps;
  pm.addPass(flash::createFlashGpuSchedule(options));
  pm.addPass(flash::createConvertFlashToGPU());
}

void buildCpuReferencePipeline(OpPassManager &pm,
                               const TileOverrides &overrides) {
  buildTilePipeline(pm, overrides);
  pm.addPass(flash::createConvertFlashGridToLoops());
  pm.addPass(flash::createConvertFlashTilesToLinalg());
  pm.addNestedPass<func::FuncOp>(createConvertElementwiseToLinalgPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  // The loop carries (acc, m, l) as fresh tiles each iteration.
  bufferize.allowReturnAllocsFromLoops = true;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  // Every intermediate tile is an allocation; without this each loop
  // iteration would leak its tiles.
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createConvertLinalgToLoopsPass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void registerPipelines() {
  PassPipelineRegistration<PipelineOptions>(
      "flash-tile-pipeline",
      "flash.attention to the fused tile program (flash-tile, flash-fuse)",
      [](OpPassManager &pm, const PipelineOptions &options) {
        buildTilePipeline(pm, options.overrides());
      });
  PassPipelineRegistration<PipelineOptions>(
      "flash-cpu-pipeline",
      "flash.attention to LLVM for the host CPU (reference path)",
      [](OpPassManager &pm, const PipelineOptions &options) {
        buildCpuReferencePipeline(pm, options.overrides());
      });
}

} // namespace flashc

//===- ChooseGpuSchedule.cpp - the -flash-gpu-schedule pass ---------------===//
//
// Chooses the GPU schedule of each attention tile program for its target and
// records it as `flash.schedule` (#flash.schedule) on the function: which of
// the switches its #flash.config asks for apply, the warp roles and their
// registers, the Q buffers, the grid and the register-saving variants. The
// lowering (-convert-flash-to-gpu) takes this attribute as it is, so a
// schedule is chosen in one place and shows in the IR; the reasons behind
// each rule are in docs/decisions.md.
//
//===----------------------------------------------------------------------===//

#include "BackwardKernels.h"
#include "FlashToGPU.h"

#include "Flash/FlashAttrs.h"
#include "Flash/FlashOps.h"
#include "flashc/Conversion/Passes.h"

namespace mlir::flash {
#define GEN_PASS_DEF_FLASHGPUSCHEDULE
#include "flashc/Conversion/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;

int64_t KernelSpec::launchRegs() const {
  // 64K registers over the threads, in multiples of 8, at most 240.
  return std::min<int64_t>(240, 65536 / threads() / 8 * 8);
}

/// The producer keeps 24 registers; a persistent one keeps its tile
/// schedule live beside the copy loop, where 24 spill: 40, or 32 beside four
/// consumers (which then get 112 instead of 104, measurably faster at D64).
static int64_t producerRegsFor(const KernelSpec &spec) {
  if (!spec.sw.persistent)
    return 24;
  return spec.warpgroups == 4 ? 32 : 40;
}

/// setmaxnreg moves registers only within the block's launch allocation:
/// what the producer gives up is all the consumers can take. Asking for more
/// blocks the consumers' setmaxnreg.inc forever (a hang seen on the GPU with
/// 4 consumers at 120 where 112 is all there is). Multiples of 8, at most
/// 240 (headroom under the 255 limit).
static int64_t consumerRegsFor(const KernelSpec &spec) {
  int64_t pool =
      spec.launchRegs() * (spec.warpgroups + 1) - spec.producerRegCount;
  return std::min<int64_t>(240, pool / spec.warpgroups / 8 * 8);
}

void mlir::flash::gpu_lowering::applySchedule(KernelSpec &spec,
                                              ScheduleAttr schedule) {
  spec.sw = schedule.getSwitches();
  spec.qBuffers = schedule.getQBuffers();
  spec.lagMax = schedule.getLagMax();
  spec.rematQDescriptors = schedule.getRematQDescriptors();
  spec.serialMaskedTiles = schedule.getSerialMaskedTiles();
  spec.prefetchNextBlock = schedule.getPrefetchNextBlock();
  spec.probeStamps = schedule.getProbeStamps();
  spec.producerRegCount = schedule.getProducerRegs();
  spec.consumerRegCount = schedule.getConsumerRegs();
}

ScheduleAttr mlir::flash::gpu_lowering::scheduleAttrOf(MLIRContext *ctx,
                                                       const KernelSpec &spec) {
  return ScheduleAttr::get(ctx, spec.sw, spec.warpgroups,
                           spec.producerRegCount, spec.consumerRegCount,
                           spec.qBuffers, spec.gridKind(), spec.lagMax,
                           spec.rematQDescriptors, spec.serialMaskedTiles,
                           spec.prefetchNextBlock, spec.probeStamps);
}

namespace {

struct FlashGpuSchedulePass
    : public mlir::flash::impl::FlashGpuScheduleBase<FlashGpuSchedulePass> {
  using Base::Base;
  // The switch options below are members of this class, not of Passes.td's
  // base, and options cannot be copied: a clone builds them afresh and
  // clonePass copies their values.
  FlashGpuSchedulePass() = default;
  FlashGpuSchedulePass(const FlashGpuSchedulePass &other) : Base(other) {}

  // One option per schedule switch (ScheduleSwitches.def): `false` turns
  // the switch off for every kernel, to compare schedules.
#define FLASH_SCHEDULE_SWITCH(Name, field, key, flag, dflt, tune, label, summary)     \
  Option<bool> allow##Name{                                                    \
      *this, flag,                                                             \
      llvm::cl::desc("Allow the configs' " summary " (false: off everywhere)"), \
      llvm::cl::init(true)};
#include "flashc/Config/ScheduleSwitches.def"

  flashc::ScheduleSwitches allowed() const {
    flashc::ScheduleSwitches allowed;
#define FLASH_SCHEDULE_SWITCH(Name, field, key, flag, dflt, tune, label, summary)     \
  allowed.field = allow##Name;
#include "flashc/Config/ScheduleSwitches.def"
    return allowed;
  }

  /// The schedule of `spec` (the switches its config asks for): every rule
  /// of what applies where.
  void choose(KernelSpec &spec) const {
    flashc::ScheduleSwitches allow = allowed();
    flashc::ScheduleSwitches &sw = spec.sw;
    sw.splitRelease = sw.splitRelease && allow.splitRelease;
    // Overlap issues S_{j+1} before P_j V_j; without split release K_{j+1}
    // can only land once V_j's slot is released, after P_j V_j, so with a
    // single stage the two would wait on each other (a hang seen on the
    // GPU).
    sw.overlap = sw.overlap && allow.overlap &&
                 (sw.splitRelease || spec.stages >= 2);
    // At D = 256 (128 O registers) the overlapped schedule spills unless
    // Q's descriptors are rebuilt per key tile and the masked tiles run
    // serially; at D <= 128 neither is needed and both cost instructions.
    spec.rematQDescriptors = spec.headDim > 128;
    spec.serialMaskedTiles = spec.headDim > 128;
    sw.pingpong = sw.pingpong && allow.pingpong && spec.warpgroups == 2;
    // Packed sequences: a block per (sequence, head) query block, ranked
    // longest first by the grid (flash.wg.packed_tile).
    sw.persistent =
        sw.persistent && allow.persistent && !spec.packed && !spec.decode;
    // Claimed tiles (and their shared-memory slots) only where a block
    // walks several tiles and causal ones differ in cost; without the mask
    // the static round robin is already balanced.
    sw.dynamicSchedule = sw.dynamicSchedule && allow.dynamicSchedule &&
                         sw.persistent && spec.causal;
    // A persistent kernel loads the next tile's Q into a second buffer
    // where shared memory allows.
    spec.qBuffers = 1;
    if (sw.persistent) {
      spec.qBuffers = 2;
      if (spec.blockSharedMemoryBytes() > kMaxSharedMemory)
        spec.qBuffers = 1;
    }
    // Under the causal mask short rows move their max on most tiles, so a
    // lagging max pays only without it.
    spec.lagMax = !spec.causal;
    sw.speculativeExp = sw.speculativeExp && allow.speculativeExp;
    // O is staged in the tile's Q buffer; with a single one a persistent
    // kernel's next Q load would wait for the store.
    // (A packed sequence stores by TMA only the 64-row slabs inside it: its
    // last rows are followed by the next sequence's.)
    // (A decoding split stores f32 O to its scratch, by pointer.)
    sw.tmaStoreO = sw.tmaStoreO && allow.tmaStoreO && !spec.decode &&
                   (!sw.persistent || spec.qBuffers == 2);
    // A tiles grid only: persistent kernels load the next tile's Q into
    // their second buffer, and a sections grid's blocks differ in length.
    spec.prefetchNextBlock =
        prefetchNextBlock && spec.tilesGrid() && !spec.decode;
    spec.probeStamps = probeStamps && !spec.packed && !spec.decode;
    spec.producerRegCount = producerRegsFor(spec);
    spec.consumerRegCount = consumerRegsFor(spec);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (chip != "sm_90a") {
      module.emitError("flash-gpu-schedule: chip ")
          << chip << " is not supported (the kernel uses wgmma, TMA and "
          << "setmaxnreg: sm_90a only)";
      return signalPassFailure();
    }
    bool failedAny = false;
    for (auto func : module.getOps<func::FuncOp>()) {
      // The backward kernels have one fixed schedule of their own
      // (BackwardKernels.h).
      if (!holdsFlashOps(func) || isBackwardTileProgram(func))
        continue;
      FailureOr<KernelSpec> spec = matchAttentionTileProgram(func);
      if (failed(spec)) {
        failedAny = true;
        continue;
      }
      choose(*spec);
      ScheduleAttr schedule = scheduleAttrOf(&getContext(), *spec);
      if (failed(verifySchedule(func, *spec, schedule))) {
        failedAny = true;
        continue;
      }
      func->setAttr(kScheduleAttrName, schedule);
    }
    if (failedAny)
      signalPassFailure();
  }
};

} // namespace

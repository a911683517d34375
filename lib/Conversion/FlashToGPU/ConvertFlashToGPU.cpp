//===- ConvertFlashToGPU.cpp - the -convert-flash-to-gpu pass -------------===//
//
// Replaces each function holding an attention tile program with
// `gpu.module @<func>_kernels { gpu.func @<func>(...) kernel }`, the module
// becoming a `gpu.container_module`. The kernel's launch contract is the
// `flash.launch` dictionary on the gpu.func (docs/kernel-metadata.md minus
// provenance); launching is the runtime's job, so no host code remains.
//
//===----------------------------------------------------------------------===//

#include "FlashToGPU.h"

#include "Flash/FlashOps.h"
#include "flashc/Conversion/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::flash {
#define GEN_PASS_DEF_CONVERTFLASHTOGPU
#include "flashc/Conversion/Passes.h.inc"
} // namespace mlir::flash

using namespace mlir;
using namespace mlir::flash;
using namespace mlir::flash::gpu_lowering;

DictionaryAttr
mlir::flash::gpu_lowering::buildLaunchAttr(MLIRContext *ctx,
                                           const KernelSpec &spec) {
  Builder b(ctx);
  auto dict = [&](ArrayRef<std::pair<StringRef, Attribute>> entries) {
    SmallVector<NamedAttribute> attrs;
    for (auto [name, value] : entries)
      attrs.push_back(b.getNamedAttr(name, value));
    return b.getDictionaryAttr(attrs);
  };
  auto i64 = [&](int64_t v) { return b.getI64IntegerAttr(v); };
  auto str = [&](StringRef s) { return b.getStringAttr(s); };
  auto tmaPtr = [&](StringRef tensor, int64_t rows) {
    return dict({{"kind", str("tma_ptr")},
                 {"tensor", str(tensor)},
                 {"box", b.getDenseI64ArrayAttr({rows, 64})},
                 {"swizzle", i64(128)},
                 {"rank", i64(3)}});
  };
  SmallVector<Attribute> params = {
      tmaPtr("q", spec.blockM), tmaPtr("k", spec.blockN),
      tmaPtr("v", spec.blockN),
      spec.tmaStoreO ? tmaPtr("o", 64)
                     : dict({{"kind", str("ptr")}, {"tensor", str("o")}})};
  if (spec.hasLse)
    params.push_back(dict({{"kind", str("ptr")}, {"tensor", str("lse")}}));
  params.push_back(dict({{"kind", str("i32")}, {"value", str("seq_q")}}));
  params.push_back(dict({{"kind", str("i32")}, {"value", str("seq_k")}}));
  params.push_back(dict({{"kind", str("f32")}, {"value", str("scale_log2")}}));
  if (spec.persistent) {
    params.push_back(dict({{"kind", str("i32")}, {"value", str("batch")}}));
    params.push_back(dict({{"kind", str("i32")}, {"value", str("heads")}}));
  }
  if (spec.dynamicSchedule)
    params.push_back(dict({{"kind", str("tile_counter")}}));
  DictionaryAttr grid =
      spec.persistent ? dict({{"kind", str("persistent")}})
      : spec.sectionsGrid()
          ? dict({{"kind", str("sections")},
                  {"block_m", i64(spec.blockM)},
                  {"section_keys", i64(spec.sectionKeys())}})
          : dict({{"kind", str("tiles")}, {"block_m", i64(spec.blockM)}});

  return dict(
      {{"dtype", str(isa<BFloat16Type>(spec.elementType) ? "bf16" : "f16")},
       {"head_dim", i64(spec.headDim)},
       {"causal", b.getBoolAttr(spec.causal)},
       {"scale", b.getF64FloatAttr(spec.scale)},
       {"has_lse", b.getBoolAttr(spec.hasLse)},
       {"block", b.getDenseI64ArrayAttr({spec.threads(), 1, 1})},
       {"cluster", b.getDenseI64ArrayAttr({1, 1, 1})},
       {"shared_memory_bytes", i64(spec.sharedMemoryBytes())},
       {"grid", grid},
       {"config", dict({{"accumulator_regs", i64(spec.liveAccumulatorRegs())},
                        {"block_m", i64(spec.blockM)},
                        {"block_n", i64(spec.blockN)},
                        {"stages", i64(spec.stages)},
                        {"warpgroups", i64(spec.warpgroups)},
                        {"producer_warpgroups", i64(1)},
                        {"producer_regs", i64(spec.producerRegs())},
                        {"consumer_regs", i64(spec.consumerRegs())},
                        {"overlap", i64(spec.overlap)},
                        {"pingpong", i64(spec.pingpong)},
                        {"split_release", i64(spec.split)},
                        {"persistent", i64(spec.persistent)},
                        {"tma_store_o", i64(spec.tmaStoreO)},
                        {"dynamic_schedule", i64(spec.dynamicSchedule)},
                        {"speculative_exp", i64(spec.speculativeExp)}})},
       {"params", b.getArrayAttr(params)}});
}

/// Builds the gpu.module holding the kernel of `spec` next to `func`.
static void buildKernelModule(func::FuncOp func, const KernelSpec &spec) {
  MLIRContext *ctx = func.getContext();
  ImplicitLocOpBuilder b(func.getLoc(), func);
  auto module =
      gpu::GPUModuleOp::create(b, b.getStringAttr(spec.name + "_kernels"));
  b.setInsertionPointToStart(module.getBody());

  auto genericPtr = LLVM::LLVMPointerType::get(ctx);
  auto globalPtr = LLVM::LLVMPointerType::get(ctx, 1);
  SmallVector<Type> args = {genericPtr, genericPtr, genericPtr,
                            spec.tmaStoreO ? Type(genericPtr) : globalPtr};
  if (spec.hasLse)
    args.push_back(globalPtr);
  args.append({b.getI32Type(), b.getI32Type(), b.getF32Type()});
  if (spec.persistent)
    args.append({b.getI32Type(), b.getI32Type()});
  if (spec.dynamicSchedule)
    args.push_back(globalPtr);
  auto kernel =
      gpu::GPUFuncOp::create(b, spec.name, b.getFunctionType(args, {}));
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  kernel->setAttr(NVVM::NVVMDialect::getMaxntidAttrName(),
                  b.getDenseI32ArrayAttr({int32_t(spec.threads()), 1, 1}));
  kernel->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                  b.getI32IntegerAttr(1));
  kernel->setAttr("flash.launch", buildLaunchAttr(ctx, spec));

  ImplicitLocOpBuilder kb(func.getLoc(), ctx);
  KernelEmitter emitter(kb, spec, &kernel.getBody().front());
  emitter.emitKernel();
}

namespace {

struct ConvertFlashToGPUPass
    : public mlir::flash::impl::ConvertFlashToGPUBase<ConvertFlashToGPUPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (chip != "sm_90a") {
      module.emitError("flash-to-gpu: chip ")
          << chip << " is not supported (the kernel uses wgmma, TMA and "
          << "setmaxnreg: sm_90a only)";
      return signalPassFailure();
    }
    // Functions that hold flash ops; others are left alone.
    SmallVector<func::FuncOp> funcs;
    for (auto func : module.getOps<func::FuncOp>()) {
      bool hasFlash = func.walk([](Operation *op) {
                            return isa<FlashDialect>(op->getDialect())
                                       ? WalkResult::interrupt()
                                       : WalkResult::advance();
                          })
                          .wasInterrupted();
      if (hasFlash)
        funcs.push_back(func);
    }
    bool failedAny = false;
    for (func::FuncOp func : funcs) {
      FailureOr<KernelSpec> spec = matchAttentionTileProgram(func);
      if (failed(spec)) {
        failedAny = true;
        continue;
      }
      // The config asks for a schedule; a pass option set to false turns a
      // switch off for every kernel (to compare schedules).
      spec->split = spec->split && splitRelease;
      // Overlap issues S_{j+1} before P_j V_j; without split release
      // K_{j+1} can only land once V_j's slot is released, after P_j V_j, so
      // with a single stage the two wait on each other (a hang seen on the
      // GPU).
      spec->overlap =
          spec->overlap && overlap && (spec->split || spec->stages >= 2);
      // The overlapped schedule carries P_j beside S_{j+1} and O. At D = 256
      // (128 O registers) the hoisted Q descriptors and the masked
      // overlapped body are what made ptxas spill; at D <= 128 neither is
      // needed and both cost instructions.
      spec->rematQDescriptors = spec->headDim > 128;
      spec->serialMaskedTiles = spec->headDim > 128;
      spec->pingpong = spec->pingpong && pingpong && spec->warpgroups == 2;
      spec->persistent = spec->persistent && persistent;
      if (spec->persistent) {
        spec->qBuffers = 2;
        if (spec->blockSharedMemoryBytes() > kMaxSharedMemory)
          spec->qBuffers = 1;
      }
      // The matcher applied the config's flag to persistent causal kernels;
      // the options can still turn either off.
      spec->dynamicSchedule =
          spec->dynamicSchedule && dynamicSchedule && spec->persistent;
      spec->lagMax = !spec->causal;
      spec->speculativeExp = spec->speculativeExp && speculativeExp;
      // O is staged in the tile's Q buffer; with a single one the next
      // tile's Q load would wait for the store.
      spec->tmaStoreO = spec->tmaStoreO && tmaStoreO &&
                        (!spec->persistent || spec->qBuffers == 2);
      // A tiles grid only: persistent kernels load the next tile's Q into
      // their second buffer, and a sections grid's blocks differ in length.
      spec->prefetchNextBlock = prefetchNextBlock && spec->tilesGrid();
      if (probeStamps && !spec->hasLse) {
        func.emitError("probe-stamps writes its records over the LSE "
                       "buffer: the kernel has none");
        failedAny = true;
        continue;
      }
      spec->probeStamps = probeStamps;
      buildKernelModule(func, *spec);
      func.erase();
    }
    if (failedAny)
      return signalPassFailure();
    if (!funcs.empty())
      module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                      UnitAttr::get(&getContext()));
  }
};

} // namespace

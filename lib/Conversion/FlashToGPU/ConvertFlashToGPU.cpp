//===- ConvertFlashToGPU.cpp - the -convert-flash-to-gpu pass -------------===//
//
// Replaces each function holding an attention tile program with
// `gpu.module @<func>_kernels { gpu.func @<func>(...) kernel }`, the module
// becoming a `gpu.container_module`. The kernel's launch contract is the
// `flash.launch` dictionary on the gpu.func (docs/kernel-metadata.md minus
// provenance); launching is the runtime's job, so no host code remains. The
// roles write the warpgroup level as flash.wg ops, lowered here by the
// patterns of lib/Conversion/FlashWarpgroupToNVVM/ unless
// lower-warpgroup-ops=0 keeps them for a reader.
//
//===----------------------------------------------------------------------===//

#include "BackwardKernels.h"
#include "FlashToGPU.h"

#include "Flash/FlashOps.h"
#include "flashc/Config/LaunchAttr.h"
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

DictionaryAttr mlir::flash::gpu_lowering::launchDict(
    Builder &b, ArrayRef<std::pair<StringRef, Attribute>> entries) {
  SmallVector<NamedAttribute> attrs;
  for (auto [name, value] : entries)
    attrs.push_back(b.getNamedAttr(name, value));
  return b.getDictionaryAttr(attrs);
}

DictionaryAttr
mlir::flash::gpu_lowering::buildLaunchAttr(MLIRContext *ctx,
                                           const KernelSpec &spec) {
  Builder b(ctx);
  auto dict = [&](ArrayRef<std::pair<StringRef, Attribute>> entries) {
    return launchDict(b, entries);
  };
  auto i64 = [&](int64_t v) { return b.getI64IntegerAttr(v); };
  auto str = [&](StringRef s) { return b.getStringAttr(s); };
  // A CUtensorMap by value (a __grid_constant__ parameter, see
  // -flash-grid-constant-tensor-maps), 4-D over [B, H, N, D] with the
  // tensor's own strides.
  auto tensorMap = [&](StringRef tensor, int64_t rows, int64_t rank) {
    SmallVector<std::pair<StringRef, Attribute>> entries = {
        {"kind", str("tma")},
        {"tensor", str(tensor)},
        {"box", b.getDenseI64ArrayAttr({rows, 64})},
        {"swizzle", i64(128)},
        {"rank", i64(rank)}};
    // A packed decoding program reads Q as [B, H_kv, G x seq_q, D].
    if (spec.packGqa && tensor == "q")
      entries.push_back({"view", str("group_rows")});
    return dict(entries);
  };
  auto value = [&](StringRef kind, StringRef name) {
    return dict({{"kind", str(kind)}, {"value", str(name)}});
  };
  SmallVector<Attribute> params;
  if (spec.decode) {
    params = {tensorMap("q", spec.blockM, 4),
              tensorMap("k", spec.kvBoxRows(), 4),
              tensorMap("v", spec.kvBoxRows(), 4),
              dict({{"kind", str("workspace")}, {"name", str("partial_out")}}),
              dict({{"kind", str("workspace")}, {"name", str("partial_lse")}})};
    if (spec.pageSize) {
      params.push_back(
          dict({{"kind", str("ptr")}, {"tensor", str("page_table")}}));
      params.push_back(
          dict({{"kind", str("ptr")}, {"tensor", str("cache_seqlens")}}));
    }
    params.push_back(value("i32", "seq_q"));
    params.push_back(value("i32", "seq_k"));
    params.push_back(value("f32", "scale_log2"));
    params.push_back(value("i32", "kv_group"));
    params.push_back(value("i32", "heads"));
    if (spec.pageSize) {
      params.push_back(value("i32", "num_pages"));
      params.push_back(value("i32", "page_table_cols"));
    }
  } else {
    params = {tensorMap("q", spec.blockM, 4), tensorMap("k", spec.blockN, 4),
              tensorMap("v", spec.blockN, 4),
              spec.sw.tmaStoreO
                  ? tensorMap("o", 64, 4)
                  : dict({{"kind", str("ptr")}, {"tensor", str("o")}})};
    if (spec.hasLse)
      params.push_back(dict({{"kind", str("ptr")}, {"tensor", str("lse")}}));
    params.push_back(value("i32", "seq_q"));
    params.push_back(value("i32", "seq_k"));
    params.push_back(value("f32", "scale_log2"));
    params.push_back(value("i32", "kv_group"));
    if (spec.sw.persistent)
      params.push_back(value("i32", "batch"));
    params.push_back(value("i32", "heads"));
  }
  if (spec.sw.dynamicSchedule)
    params.push_back(dict({{"kind", str("tile_counter")}}));
  if (spec.packed) {
    // seq_q and seq_k above are the packed tensors' rows.
    params.push_back(
        dict({{"kind", str("ptr")}, {"tensor", str("cu_seqlens_q")}}));
    params.push_back(
        dict({{"kind", str("ptr")}, {"tensor", str("cu_seqlens_k")}}));
    // With the TMA store of O above, the rows past a sequence's last full
    // 64-row slab still go out by pointer.
    if (spec.sw.tmaStoreO)
      params.push_back(dict({{"kind", str("ptr")}, {"tensor", str("o")}}));
    params.push_back(
        dict({{"kind", str("i64")}, {"value", str("stride_o_h")}}));
    params.push_back(
        dict({{"kind", str("i64")}, {"value", str("stride_o_n")}}));
  }
  for (auto [i, capture] : llvm::enumerate(spec.captures))
    params.push_back(captureParamAttr(b, i, capture));
  // The tile sizes, the roles' registers and every schedule switch as
  // applied (kernel.json's "config").
  auto configDict = [&] {
    SmallVector<std::pair<StringRef, Attribute>> entries = {
        {"accumulator_regs", i64(spec.liveAccumulatorRegs())},
        {"block_m", i64(spec.blockM)},
        {"block_n", i64(spec.blockN)},
        {"stages", i64(spec.stages)},
        {"warpgroups", i64(spec.warpgroups)},
        {"producer_warpgroups", i64(1)},
        {"producer_regs", i64(spec.producerRegs())},
        {"consumer_regs", i64(spec.consumerRegs())}};
    for (const flashc::ScheduleSwitchInfo &info :
         flashc::scheduleSwitchInfos())
      entries.push_back({info.key, i64(spec.sw.*info.member)});
    return dict(entries);
  };
  StringAttr gridKind = str(stringifyGridKind(spec.gridKind()));
  DictionaryAttr grid =
      spec.decode                               ? dict({{"kind", str("decode")},
                                                        {"block_m", i64(spec.blockM)},
                                                        {"splits", b.getBoolAttr(true)}})
      : spec.gridKind() == GridKind::Persistent ? dict({{"kind", gridKind}})
      : spec.gridKind() == GridKind::Sections
          ? dict({{"kind", gridKind},
                  {"block_m", i64(spec.blockM)},
                  {"section_keys", i64(spec.sectionKeys())}})
          : dict({{"kind", gridKind}, {"block_m", i64(spec.blockM)}});

  SmallVector<std::pair<StringRef, Attribute>> entries = {
      {"dtype", str(isa<BFloat16Type>(spec.elementType) ? "bf16" : "f16")},
      {"head_dim", i64(spec.headDim)},
      {"causal", b.getBoolAttr(spec.causal)},
      {"scale", b.getF64FloatAttr(spec.scale)},
      {"has_lse", b.getBoolAttr(spec.hasLse)},
      {"block", b.getDenseI64ArrayAttr({spec.threads(), 1, 1})},
      {"cluster", b.getDenseI64ArrayAttr({1, 1, 1})},
      {"shared_memory_bytes", i64(spec.sharedMemoryBytes())},
      {"grid", grid},
      {"config", configDict()},
      {"params", b.getArrayAttr(params)}};
  // A decoding program's split kernel; the combine's launch is
  // buildCombineLaunchAttr's.
  if (spec.decode)
    entries.append({{"pass", str("decode")},
                    {"role", str("split")},
                    {"pack_gqa", b.getBoolAttr(spec.packGqa)},
                    {"page_size", i64(spec.pageSize)}});
  // Head counts the source fixes: the runtime holds launches to them.
  if (spec.heads)
    entries.push_back({"heads", i64(spec.heads)});
  if (spec.kvHeads)
    entries.push_back({"kv_heads", i64(spec.kvHeads)});
  if (!spec.captures.empty())
    entries.push_back({"captures", capturesAttr(b, spec.captures)});
  return dict(entries);
}

/// Builds the gpu.module holding the kernel of `spec` next to `func`.
static FailureOr<gpu::GPUModuleOp> buildKernelModule(func::FuncOp func,
                                          const KernelSpec &spec,
                                          ScheduleAttr schedule) {
  MLIRContext *ctx = func.getContext();
  ImplicitLocOpBuilder b(func.getLoc(), func);
  auto module =
      gpu::GPUModuleOp::create(b, b.getStringAttr(spec.name + "_kernels"));
  b.setInsertionPointToStart(module.getBody());

  auto genericPtr = LLVM::LLVMPointerType::get(ctx);
  auto globalPtr = LLVM::LLVMPointerType::get(ctx, 1);
  SmallVector<Type> args = {genericPtr, genericPtr, genericPtr};
  if (spec.decode) {
    // KernelContext's order: partial O and LSE, a paged cache's table and
    // lengths, seq_q, seq_k, scale_log2, kv_group, heads, its pages and
    // table columns.
    args.append({globalPtr, globalPtr});
    if (spec.pageSize)
      args.append({globalPtr, globalPtr});
    args.append({b.getI32Type(), b.getI32Type(), b.getF32Type(), b.getI32Type(),
                 b.getI32Type()});
    if (spec.pageSize)
      args.append({b.getI32Type(), b.getI32Type()});
  } else {
    args.push_back(spec.sw.tmaStoreO ? Type(genericPtr) : globalPtr);
    if (spec.hasLse)
      args.push_back(globalPtr);
    args.append(
        {b.getI32Type(), b.getI32Type(), b.getF32Type(), b.getI32Type()});
    if (spec.sw.persistent)
      args.push_back(b.getI32Type());
    args.push_back(b.getI32Type());
  }
  if (spec.sw.dynamicSchedule)
    args.push_back(globalPtr);
  if (spec.packed) {
    args.append({globalPtr, globalPtr});
    if (spec.sw.tmaStoreO)
      args.push_back(globalPtr);
    args.append({b.getI64Type(), b.getI64Type()});
  }
  for (const CaptureArg &capture : spec.captures)
    args.push_back(capture.type);
  auto kernel =
      gpu::GPUFuncOp::create(b, spec.name, b.getFunctionType(args, {}));
  kernel->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
  kernel->setAttr(NVVM::NVVMDialect::getMaxntidAttrName(),
                  b.getDenseI32ArrayAttr({int32_t(spec.threads()), 1, 1}));
  kernel->setAttr(NVVM::NVVMDialect::getMinctasmAttrName(),
                  b.getI32IntegerAttr(1));
  kernel->setAttr(flashc::kLaunchAttrName, buildLaunchAttr(ctx, spec));
  kernel->setAttr(kScheduleAttrName, schedule);

  ImplicitLocOpBuilder kb(func.getLoc(), ctx);
  KernelContext kernelContext(kb, spec, &kernel.getBody().front());
  if (failed(emitKernel(kernelContext))) {
    module.erase();
    return failure();
  }
  // A decoding program's second grid: the combine kernel.
  if (spec.decode) {
    b.setInsertionPointToEnd(module.getBody());
    auto combine = gpu::GPUFuncOp::create(
        b, spec.name + "_combine",
        b.getFunctionType(combineKernelArgs(ctx, spec), {}));
    combine->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
    combine->setAttr(NVVM::NVVMDialect::getMaxntidAttrName(),
                     b.getDenseI32ArrayAttr({int32_t(kCombineThreads), 1, 1}));
    combine->setAttr(flashc::kLaunchAttrName,
                     buildCombineLaunchAttr(ctx, spec));
    ImplicitLocOpBuilder cb(func.getLoc(), ctx);
    emitCombineKernel(cb, spec, &combine.getBody().front());
  }
  return module;
}

namespace {

struct ConvertFlashToGPUPass
    : public mlir::flash::impl::ConvertFlashToGPUBase<ConvertFlashToGPUPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> funcs;
    for (auto func : module.getOps<func::FuncOp>())
      if (holdsFlashOps(func))
        funcs.push_back(func);
    bool failedAny = false;
    // The function's kernel module replaces it, lowered to NVVM unless
    // lower-warpgroup-ops=0.
    auto replace = [&](func::FuncOp func,
                       FailureOr<gpu::GPUModuleOp> kernelModule) {
      if (failed(kernelModule)) {
        failedAny = true;
        return;
      }
      func.erase();
      if (lowerWarpgroupOps && failed(lowerFlashWarpgroupOps(*kernelModule)))
        failedAny = true;
    };
    for (func::FuncOp func : funcs) {
      if (isBackwardTileProgram(func)) {
        FailureOr<BackwardSpec> spec = matchBackwardTileProgram(func);
        replace(func, succeeded(spec) ? buildBackwardKernelModule(func, *spec)
                                      : FailureOr<gpu::GPUModuleOp>(failure()));
        continue;
      }
      FailureOr<KernelSpec> spec = matchAttentionTileProgram(func);
      if (failed(spec)) {
        failedAny = true;
        continue;
      }
      auto schedule = func->getAttrOfType<ScheduleAttr>(kScheduleAttrName);
      if (!schedule) {
        func.emitError("flash-to-gpu: no flash.schedule on the function "
                       "(run -flash-gpu-schedule first)");
        failedAny = true;
        continue;
      }
      applySchedule(*spec, schedule);
      if (failed(verifySchedule(func, *spec, schedule))) {
        failedAny = true;
        continue;
      }
      replace(func, buildKernelModule(func, *spec, schedule));
    }
    if (failedAny)
      return signalPassFailure();
    if (!funcs.empty())
      module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                      UnitAttr::get(&getContext()));
  }
};

} // namespace

bool mlir::flash::gpu_lowering::holdsFlashOps(func::FuncOp func) {
  return func
      .walk([](Operation *op) {
        return isa<FlashDialect>(op->getDialect()) ? WalkResult::interrupt()
                                                   : WalkResult::advance();
      })
      .wasInterrupted();
}

LogicalResult
mlir::flash::gpu_lowering::verifySchedule(func::FuncOp func,
                                          const KernelSpec &spec,
                                          ScheduleAttr schedule) {
  // A schedule written by hand (or for another program) must still fit the
  // program and the target.
  if (schedule.getConsumers() != spec.warpgroups)
    return func.emitError("flash-to-gpu: the schedule's ")
           << schedule.getConsumers() << " consumers disagree with the "
           << "config's " << spec.warpgroups << " warpgroups";
  if (schedule.getGrid() != spec.gridKind())
    return func.emitError("flash-to-gpu: the schedule's grid = ")
           << stringifyGridKind(schedule.getGrid()) << " is not this "
           << "program's (" << stringifyGridKind(spec.gridKind()) << ")";
  if (spec.sw.dynamicSchedule && !spec.causal)
    return func.emitError("flash-to-gpu: the schedule's dynamic_schedule "
                          "needs the causal mask");
  if (spec.prefetchNextBlock && !spec.tilesGrid())
    return func.emitError("flash-to-gpu: the schedule's prefetch_next_block "
                          "needs a tiles grid (no causal mask, not "
                          "persistent)");
  if (spec.sw.overlap && !spec.sw.splitRelease && spec.stages < 2)
    return func.emitError("flash-to-gpu: the schedule's overlap with one "
                          "stage needs split_release");
  if (spec.sw.tmaStoreO && spec.sw.persistent && spec.qBuffers != 2)
    return func.emitError("flash-to-gpu: the schedule's tma_store_o in a "
                          "persistent kernel needs q_buffers = 2");
  if (spec.packed &&
      (spec.sw.persistent || spec.prefetchNextBlock || spec.probeStamps))
    return func.emitError("flash-to-gpu: packed sequences take one block "
                          "per tile (no persistent, prefetch_next_block or "
                          "probe_stamps)");
  if (spec.probeStamps && !spec.hasLse)
    return func.emitError("probe-stamps writes its records over the LSE "
                          "buffer: the kernel has none");
  if (spec.blockSharedMemoryBytes() > kMaxSharedMemory)
    return func.emitError("flash-to-gpu: the config needs ")
           << spec.blockSharedMemoryBytes()
           << " bytes of shared memory, more than the " << kMaxSharedMemory
           << " an sm_90a block may use (lower stages or block_n)";
  if (spec.producerRegs() * 128 + spec.consumerRegs() * 128 * spec.warpgroups >
          spec.launchRegs() * spec.threads())
    return func.emitError("flash-to-gpu: the schedule's registers (producer ")
           << spec.producerRegs() << ", consumers " << spec.consumerRegs()
           << ") exceed the block's " << spec.launchRegs()
           << " per thread at launch";
  return success();
}

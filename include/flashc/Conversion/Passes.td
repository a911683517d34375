//===- Passes.td - flashc conversions -----------------------*- tablegen -*-===//
//
// Passes that leave the flash dialect: the tile program to loops and linalg
// (the CPU reference path) and, later, to the GPU dialect and NVVM.
//
//===----------------------------------------------------------------------===//

#ifndef FLASHC_CONVERSION_PASSES_TD
#define FLASHC_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertFlashGridToLoops : Pass<"convert-flash-grid-to-loops"> {
  let summary = "Run every flash.grid as a sequential scf.for loop nest";
  let description = [{
    The CPU reference path's launcher: each `flash.grid` becomes one
    `scf.for` per axis (axis 0 outermost) and each `flash.program_id` the
    induction variable of its axis. Programs do not communicate, so running
    them in order computes what the GPU computes.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect",
                           "::mlir::arith::ArithDialect"];
}

def ConvertFlashTilesToLinalg : Pass<"convert-flash-tiles-to-linalg"> {
  let summary = "Lower the tile ops to linalg, tensor and scf on tensors";
  let description = [{
    The CPU reference path: every tile op becomes `linalg.generic` ops on
    tensors (load_tile reads with a bounds check per row, store_tile writes
    the rows that exist, dot and the online-softmax ops become parallel and
    reduction generics). One-shot bufferization and upstream lowering take it
    from there to LLVM. The math is the op's definition, with natural exp
    and log; nothing here is tuned for speed.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::math::MathDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::tensor::TensorDialect"
  ];
}

def FlashGpuSchedule : Pass<"flash-gpu-schedule", "ModuleOp"> {
  let summary = "Choose the GPU schedule of each attention tile program";
  let description = [{
    For each function holding a `flash.grid` attention tile program (the
    form `-flash-tile -flash-fuse` produce, with its `flash.config`), chooses
    the schedule of its GPU kernel for the target chip and records it on the
    function as `flash.schedule = #flash.schedule<...>`: which of the
    config's schedule switches apply (ping-pong needs two consumer
    warpgroups, overlap with one stage needs split release, claimed tiles a
    persistent causal kernel, ...), the producer and consumer warpgroups and
    the registers each keeps after `setmaxnreg`, the Q buffers, the launch
    grid, and the variants that keep head dim 256 in registers. A program
    whose config does not fit the target (shared memory) gets an error
    here. `-convert-flash-to-gpu` lowers the recorded schedule and decides
    nothing itself.

    Besides the options below there is one `bool` option per schedule switch
    of include/flashc/Config/ScheduleSwitches.def, named as flashc's flag
    (`overlap`, `pingpong`, `split-release`, `persistent`, `tma-store-o`,
    `dynamic-schedule`, `speculative-exp`): `false` turns that switch off
    for every kernel, to compare schedules.
  }];
  let options = [
    Option<"chip", "chip", "std::string", "\"sm_90a\"",
           "GPU architecture the kernel is written for">,
    Option<"prefetchNextBlock", "prefetch-next-block", "bool", "true",
           "Tiles grids (one block per tile, no causal mask): prefetch into "
           "L2 the Q and first K/V tile of the block that starts when this "
           "one ends (false: off)">,
    Option<"probeStamps", "probe-stamps", "bool", "false",
           "Developer probe: thread 0 of every consumer warpgroup reads "
           "clock64 at seven points of each tile program and writes them, "
           "with smid and globaltimer, over the LSE buffer instead of LSE "
           "(bench/stamps.py reads them). O is unchanged">,
  ];
  let dependentDialects = ["::mlir::flash::FlashDialect"];
}

def ConvertFlashToGPU : Pass<"convert-flash-to-gpu", "ModuleOp"> {
  let summary = "Lower scheduled attention tile programs to a Hopper kernel";
  let description = [{
    Each function holding a `flash.grid` attention tile program with its
    `flash.schedule` (from `-flash-gpu-schedule`) becomes a `gpu.func`
    kernel in a `gpu.module` of upstream dialects (gpu, nvgpu, nvvm, llvm,
    arith, math, scf, memref): TMA loads of Q, K and V into swizzled
    shared-memory rings completed on mbarriers, `wgmma` for both products
    with P fed from registers, a producer warpgroup and consumer warpgroups
    with `setmaxnreg`, the online softmax on the accumulator layout with
    exp2, all as the schedule says. The kernel carries its launch contract
    (threads, shared memory, grid rule, parameters) as the `flash.launch`
    attribute, which the target layer writes into the kernel's metadata
    JSON. The host function is removed: launching is the runtime's job.

    The warpgroup MMAs, the TMA tile loads and the rings' waits and
    releases are emitted as `flash.wg` ops and lowered here by the patterns
    of `-convert-flash-wg-to-nvvm`; `lower-warpgroup-ops=0` leaves them in
    the kernel, to read or test.
  }];
  let options = [
    Option<"lowerWarpgroupOps", "lower-warpgroup-ops", "bool", "true",
           "Lower the flash.wg ops the kernel is written with (false: keep "
           "them, as the warp-specialised level)">,
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect", "::mlir::scf::SCFDialect",
    "::mlir::vector::VectorDialect", "::mlir::flash::FlashDialect"
  ];
}

def ConvertFlashWarpgroupToNVVM : Pass<"convert-flash-wg-to-nvvm"> {
  let summary = "Lower the warp-specialised flash.wg ops to NVVM and LLVM";
  let description = [{
    Lowers every `flash.wg` op by its own pattern
    (lib/Conversion/FlashWarpgroupToNVVM/, one file per op family):
    `flash.wg.mma` with A in shared memory to `nvvm.wgmma.mma_async`, with A
    in registers to the inline PTX wgmma; the online softmax's row
    reductions (a register tree and quad shuffles), its per-row ops (mask,
    exp2, rescale) and the rounding of P to the A operand to arithmetic on
    each thread's registers; fragments to the registers they stand for (an
    accumulator to the LLVM struct of f32 wgmma carries, a register A
    operand or a row vector to its list of registers); descriptors to their
    i64; a TMA tile to its expect and box loads and the ring ops to the
    nvgpu mbarrier waits and arrivals their slot arithmetic picks; the
    epilogue's stores of fragments to global memory (bound-checked rows)
    and to 128B-swizzled shared memory; the roles and ping-pong turns to
    the warpgroup branch and named barriers. Other ops are left alone.
    `-convert-flash-to-gpu` runs the same patterns on the kernel it emits.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::gpu::GPUDialect",
    "::mlir::LLVM::LLVMDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::NVVM::NVVMDialect",
    "::mlir::nvgpu::NVGPUDialect", "::mlir::scf::SCFDialect"
  ];
}

def ExternDynamicSharedMemory
    : Pass<"flash-extern-dynamic-shared-memory", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Make the dynamic shared memory global an extern declaration";
  let description = [{
    Upstream's gpu-to-nvvm lowers `gpu.dynamic_shared_memory` to an
    internal zero-length `addrspace(3)` global. The NVPTX backend prints that
    as a one-byte static variable (`.shared .align 16 .b8 x;`), so ptxas
    places it at the start of the static window, before the kernel's
    mbarriers, and the "dynamic" tiles laid out from it overlap them. A
    declaration prints as `.extern .shared .align 16 .b8 x[];`, which ptxas
    puts after all static shared memory, as CUDA's `extern __shared__` is.
    Every zero-length `addrspace(3)` global of the module becomes one; other
    globals are left alone.
  }];
}

def GridConstantTensorMaps
    : Pass<"flash-grid-constant-tensor-maps", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Pass a kernel's tensor maps by value, as __grid_constant__ "
                "parameters";
  let description = [{
    Runs after gpu-to-nvvm, on the kernels' `llvm.func`s. Every parameter
    the kernel's `flash.launch` lists with kind `tma` (a `CUtensorMap` by
    value, docs/kernel-metadata.md) becomes `byval([128 x i8]) align 64`
    and `nvvm.grid_constant`: PTX's `.param .align 64 .b8 p[128]`, whose
    generic address (`cvta.param`) the TMA instructions take, as CUDA's
    `const __grid_constant__ CUtensorMap` is. The kernel body keeps its
    `!llvm.ptr` argument. (gpu-to-nvvm drops argument attributes it does
    not know, so they are set here.) Kernels without `flash.launch` are
    left alone; a `tma` parameter whose argument is not a pointer is an
    error.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect"];
}

#endif // FLASHC_CONVERSION_PASSES_TD

// Which GPU schedule -flash-gpu-schedule chooses for which tile program.
// The lowering of each schedule is tested in test/Conversion.

// The default config without a mask: every switch the config asks for
// applies, one block per query tile (a tiles grid) that prefetches the next
// block's first loads, the lagging max, 24 registers for the producer and
// 240 for each of two consumers.
// RUN: flash-opt %kernels/attention.mlir -flash-tile -flash-fuse -flash-gpu-schedule | FileCheck %s --check-prefix=DENSE
// DENSE: func.func @attention
// DENSE-SAME: flash.schedule = #flash.schedule<overlap = true, pingpong = true, split_release = true, persistent = false, tma_store_o = true, dynamic_schedule = false, speculative_exp = false, consumers = 2, producer_regs = 24, consumer_regs = 240, q_buffers = 1, grid = tiles, lag_max = true, remat_q_descriptors = false, serial_masked_tiles = false, prefetch_next_block = true, probe_stamps = false>

// Causal: a sections grid, no lag (short rows move their max on most
// tiles), no prefetch; claimed tiles need a persistent kernel.
// RUN: flash-opt %kernels/attention_causal.mlir -flash-tile -flash-fuse -flash-gpu-schedule | FileCheck %s --check-prefix=CAUSAL
// CAUSAL: flash.schedule = #flash.schedule<overlap = true, pingpong = true, split_release = true, persistent = false, tma_store_o = true, dynamic_schedule = false, speculative_exp = false, consumers = 2, producer_regs = 24, consumer_regs = 240, q_buffers = 1, grid = sections, lag_max = false, remat_q_descriptors = false, serial_masked_tiles = false, prefetch_next_block = false, probe_stamps = false>

// Persistent and causal: claimed tiles, two Q buffers where they fit, a
// producer that keeps 40 registers for its tile loop.
// RUN: flash-opt %kernels/attention_causal.mlir -flash-tile="persistent=1" -flash-fuse -flash-gpu-schedule | FileCheck %s --check-prefix=PERSIST
// PERSIST: flash.schedule = #flash.schedule<overlap = true, pingpong = true, split_release = true, persistent = true, tma_store_o = true, dynamic_schedule = true, speculative_exp = false, consumers = 2, producer_regs = 40, consumer_regs = 232, q_buffers = 2, grid = persistent, lag_max = false,

// Persistent with one Q buffer (two do not fit beside three stages of
// 128-key tiles at D = 128): O is stored from registers, since the next
// tile's Q would wait on a TMA store through the only Q buffer.
// RUN: flash-opt %kernels/attention.mlir -flash-tile="persistent=1 stages=3" -flash-fuse -flash-gpu-schedule | FileCheck %s --check-prefix=ONEQ
// ONEQ: flash.schedule = #flash.schedule<overlap = true, pingpong = true, split_release = true, persistent = true, tma_store_o = false, dynamic_schedule = false, speculative_exp = false, consumers = 2, producer_regs = 40, consumer_regs = 232, q_buffers = 1, grid = persistent, lag_max = true,

// Four consumers: ping-pong needs exactly two; the producer beside four
// consumers of a persistent kernel keeps 32.
// RUN: flash-opt %kernels/attention_d64.mlir -flash-tile="block-m=256 block-n=64 warpgroups=4 pingpong=1 persistent=1" -flash-fuse -flash-gpu-schedule | FileCheck %s --check-prefix=WG4
// WG4: #flash.schedule<overlap = false, pingpong = false, {{.*}} consumers = 4, producer_regs = 32, consumer_regs = 112,

// One stage: overlap needs split release there (K_{j+1} would wait for V_j's
// slot, and V_j's release for S_{j+1}).
// RUN: flash-opt %kernels/attention_d64.mlir -flash-tile="block-m=64 block-n=64 stages=1 warpgroups=1 overlap=1 split-release=0" -flash-fuse -flash-gpu-schedule | FileCheck %s --check-prefix=ONESTAGE
// ONESTAGE: #flash.schedule<overlap = false, pingpong = false, split_release = false,
// RUN: flash-opt %kernels/attention_d64.mlir -flash-tile="block-m=64 block-n=64 stages=1 warpgroups=1 overlap=1" -flash-fuse -flash-gpu-schedule | FileCheck %s --check-prefix=ONESTAGESPLIT
// ONESTAGESPLIT: #flash.schedule<overlap = true, pingpong = false, split_release = true,

// Head dim 256: Q's descriptors rebuilt per key tile and the masked tiles
// run serially, or the overlapped consumers spill.
// RUN: flash-opt %kernels/attention_d256_causal.mlir -flash-tile -flash-fuse -flash-gpu-schedule | FileCheck %s --check-prefix=D256
// D256: remat_q_descriptors = true, serial_masked_tiles = true,

// The options turn a switch off everywhere, whatever the configs ask.
// RUN: flash-opt %kernels/attention.mlir -flash-tile -flash-fuse -flash-gpu-schedule="overlap=false tma-store-o=false prefetch-next-block=false" | FileCheck %s --check-prefix=OFF
// OFF: #flash.schedule<overlap = false, pingpong = true, split_release = true, persistent = false, tma_store_o = false, {{.*}} prefetch_next_block = false, probe_stamps = false>
// RUN: flash-opt %kernels/attention.mlir -flash-tile -flash-fuse -flash-gpu-schedule="probe-stamps=true" | FileCheck %s --check-prefix=PROBE
// PROBE: probe_stamps = true>

// The lowering keeps the schedule on the kernel.
// RUN: flash-opt %kernels/attention.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=KERNEL
// KERNEL: gpu.func @attention
// KERNEL-SAME: flash.schedule = #flash.schedule<overlap = true,

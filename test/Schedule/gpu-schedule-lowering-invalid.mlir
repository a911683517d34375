// RUN: flash-opt %s -split-input-file -flash-tile -flash-fuse -convert-flash-to-gpu -verify-diagnostics

// The lowering decides nothing: a program without a schedule is refused.
// expected-error @+1 {{flash-to-gpu: no flash.schedule on the function (run -flash-gpu-schedule first)}}
func.func @unscheduled(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
  flash.attention %q, %k, %v -> %o {config = #flash.config<block_m = 128, block_n = 128, warpgroups = 2>}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16> -> memref<?x?x?x128xbf16>
  return
}

// -----

// A schedule written by hand must fit its program: two consumers where the
// config has one warpgroup.
// expected-error @+1 {{flash-to-gpu: the schedule's 2 consumers disagree with the config's 1 warpgroups}}
func.func @wrong_schedule(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) attributes {flash.schedule = #flash.schedule<overlap = true, pingpong = true, split_release = true, persistent = false, tma_store_o = true, dynamic_schedule = false, speculative_exp = false, consumers = 2, producer_regs = 24, consumer_regs = 240, q_buffers = 1, grid = tiles, lag_max = true, remat_q_descriptors = false, serial_masked_tiles = false, prefetch_next_block = true, probe_stamps = false>} {
  flash.attention %q, %k, %v -> %o {config = #flash.config<block_m = 64, block_n = 128, warpgroups = 1>}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16> -> memref<?x?x?x128xbf16>
  return
}

// -----

// Another program's schedule: the causal claimed tiles of a kernel without
// the mask.
// expected-error @+1 {{flash-to-gpu: the schedule's dynamic_schedule needs the causal mask}}
func.func @claimed_without_mask(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) attributes {flash.schedule = #flash.schedule<overlap = true, pingpong = true, split_release = true, persistent = true, tma_store_o = true, dynamic_schedule = true, speculative_exp = false, consumers = 2, producer_regs = 40, consumer_regs = 232, q_buffers = 2, grid = persistent, lag_max = true, remat_q_descriptors = false, serial_masked_tiles = false, prefetch_next_block = false, probe_stamps = false>} {
  flash.attention %q, %k, %v -> %o {config = #flash.config<block_m = 128, block_n = 128, warpgroups = 2>}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16> -> memref<?x?x?x128xbf16>
  return
}

// -----

// The grid is the program's: a sections grid belongs to a causal program.
// expected-error @+1 {{flash-to-gpu: the schedule's grid = sections is not this program's (tiles)}}
func.func @sections_without_mask(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) attributes {flash.schedule = #flash.schedule<overlap = true, pingpong = true, split_release = true, persistent = false, tma_store_o = true, dynamic_schedule = false, speculative_exp = false, consumers = 2, producer_regs = 24, consumer_regs = 240, q_buffers = 1, grid = sections, lag_max = true, remat_q_descriptors = false, serial_masked_tiles = false, prefetch_next_block = false, probe_stamps = false>} {
  flash.attention %q, %k, %v -> %o {config = #flash.config<block_m = 128, block_n = 128, warpgroups = 2>}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16> -> memref<?x?x?x128xbf16>
  return
}

// -----

// Packed sequences: a block per query block of a (sequence, head). A
// hand-written schedule with the probe (or persistent tiles) is refused.
// expected-error @+1 {{flash-to-gpu: packed sequences take one block per tile (no persistent, prefetch_next_block or probe_stamps)}}
func.func @packed_probe(%q: memref<1x?x?x128xbf16>, %k: memref<1x?x?x128xbf16>, %v: memref<1x?x?x128xbf16>, %o: memref<1x?x?x128xbf16>, %cq: memref<?xi32>, %ck: memref<?xi32>, %max: index) attributes {flash.schedule = #flash.schedule<overlap = true, pingpong = true, split_release = true, persistent = false, tma_store_o = false, dynamic_schedule = false, speculative_exp = false, consumers = 2, producer_regs = 24, consumer_regs = 240, q_buffers = 1, grid = packed, lag_max = true, remat_q_descriptors = false, serial_masked_tiles = false, prefetch_next_block = false, probe_stamps = true>} {
  flash.attention %q, %k, %v -> %o packed(%cq : memref<?xi32>, %ck : memref<?xi32>, max_q %max)
      {config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2>}
      : memref<1x?x?x128xbf16>, memref<1x?x?x128xbf16>, memref<1x?x?x128xbf16> -> memref<1x?x?x128xbf16>
  return
}

// -----

// A dense program's schedule on packed sequences: its grid is not theirs.
// expected-error @+1 {{flash-to-gpu: the schedule's grid = tiles is not this program's (packed)}}
func.func @packed_tiles_grid(%q: memref<1x?x?x128xbf16>, %k: memref<1x?x?x128xbf16>, %v: memref<1x?x?x128xbf16>, %o: memref<1x?x?x128xbf16>, %cq: memref<?xi32>, %ck: memref<?xi32>, %max: index) attributes {flash.schedule = #flash.schedule<overlap = true, pingpong = true, split_release = true, persistent = false, tma_store_o = false, dynamic_schedule = false, speculative_exp = false, consumers = 2, producer_regs = 24, consumer_regs = 240, q_buffers = 1, grid = tiles, lag_max = true, remat_q_descriptors = false, serial_masked_tiles = false, prefetch_next_block = false, probe_stamps = false>} {
  flash.attention %q, %k, %v -> %o packed(%cq : memref<?xi32>, %ck : memref<?xi32>, max_q %max)
      {config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2>}
      : memref<1x?x?x128xbf16>, memref<1x?x?x128xbf16>, memref<1x?x?x128xbf16> -> memref<1x?x?x128xbf16>
  return
}

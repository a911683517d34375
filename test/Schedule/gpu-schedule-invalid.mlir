// RUN: flash-opt %s -split-input-file -verify-diagnostics

// A schedule the lowering would have to second-guess is refused where it is
// written.

// expected-error @+1 {{pingpong needs exactly 2 consumers, got 3}}
func.func @pingpong_three() attributes {s = #flash.schedule<overlap = true, pingpong = true, split_release = true, persistent = false, tma_store_o = true, dynamic_schedule = false, speculative_exp = false, consumers = 3, producer_regs = 24, consumer_regs = 152, q_buffers = 1, grid = tiles, lag_max = true, remat_q_descriptors = false, serial_masked_tiles = false, prefetch_next_block = false, probe_stamps = false>} {
  return
}

// -----

// expected-error @+1 {{q_buffers = 2 needs a persistent schedule}}
func.func @two_q_buffers() attributes {s = #flash.schedule<overlap = true, pingpong = true, split_release = true, persistent = false, tma_store_o = true, dynamic_schedule = false, speculative_exp = false, consumers = 2, producer_regs = 24, consumer_regs = 240, q_buffers = 2, grid = tiles, lag_max = true, remat_q_descriptors = false, serial_masked_tiles = false, prefetch_next_block = false, probe_stamps = false>} {
  return
}

// -----

// expected-error @+1 {{grid = tiles disagrees with persistent = true}}
func.func @grid_mismatch() attributes {s = #flash.schedule<overlap = true, pingpong = true, split_release = true, persistent = true, tma_store_o = true, dynamic_schedule = false, speculative_exp = false, consumers = 2, producer_regs = 40, consumer_regs = 232, q_buffers = 2, grid = tiles, lag_max = true, remat_q_descriptors = false, serial_masked_tiles = false, prefetch_next_block = false, probe_stamps = false>} {
  return
}

// -----

// expected-error @+1 {{dynamic_schedule needs a persistent schedule}}
func.func @claimed_not_persistent() attributes {s = #flash.schedule<overlap = true, pingpong = true, split_release = true, persistent = false, tma_store_o = true, dynamic_schedule = true, speculative_exp = false, consumers = 2, producer_regs = 24, consumer_regs = 240, q_buffers = 1, grid = sections, lag_max = false, remat_q_descriptors = false, serial_masked_tiles = false, prefetch_next_block = false, probe_stamps = false>} {
  return
}

// -----

// expected-error @+1 {{producer_regs must be a multiple of 8 in [24, 256], got 20}}
func.func @few_registers() attributes {s = #flash.schedule<overlap = true, pingpong = true, split_release = true, persistent = false, tma_store_o = true, dynamic_schedule = false, speculative_exp = false, consumers = 2, producer_regs = 20, consumer_regs = 240, q_buffers = 1, grid = tiles, lag_max = true, remat_q_descriptors = false, serial_masked_tiles = false, prefetch_next_block = false, probe_stamps = false>} {
  return
}

// -----

// expected-error @+1 {{prefetch_next_block needs a tiles grid}}
func.func @prefetch_sections() attributes {s = #flash.schedule<overlap = true, pingpong = true, split_release = true, persistent = false, tma_store_o = true, dynamic_schedule = false, speculative_exp = false, consumers = 2, producer_regs = 24, consumer_regs = 240, q_buffers = 1, grid = sections, lag_max = false, remat_q_descriptors = false, serial_masked_tiles = false, prefetch_next_block = true, probe_stamps = false>} {
  return
}

// -----

// Every parameter is spelled out: a missing one is an error, not a default.
// expected-error @+1 {{missing 'probe_stamps'}}
func.func @missing() attributes {s = #flash.schedule<overlap = true, pingpong = true, split_release = true, persistent = false, tma_store_o = true, dynamic_schedule = false, speculative_exp = false, consumers = 2, producer_regs = 24, consumer_regs = 240, q_buffers = 1, grid = tiles, lag_max = true, remat_q_descriptors = false, serial_masked_tiles = false, prefetch_next_block = true>} {
  return
}

// -----

// expected-error @+1 {{'grid' takes tiles, sections, persistent or packed}}
func.func @bad_grid() attributes {s = #flash.schedule<overlap = true, pingpong = true, split_release = true, persistent = false, tma_store_o = true, dynamic_schedule = false, speculative_exp = false, consumers = 2, producer_regs = 24, consumer_regs = 240, q_buffers = 1, grid = rows, lag_max = true, remat_q_descriptors = false, serial_masked_tiles = false, prefetch_next_block = true, probe_stamps = false>} {
  return
}

// -----

// expected-error @+1 {{unknown key 'warp_roles'}}
func.func @unknown_key() attributes {s = #flash.schedule<overlap = true, pingpong = true, split_release = true, persistent = false, tma_store_o = true, dynamic_schedule = false, speculative_exp = false, consumers = 2, producer_regs = 24, consumer_regs = 240, q_buffers = 1, grid = tiles, lag_max = true, remat_q_descriptors = false, serial_masked_tiles = false, prefetch_next_block = true, probe_stamps = false, warp_roles = 2>} {
  return
}

// -----

// expected-error @+1 {{'overlap' given twice}}
func.func @twice() attributes {c = #flash.config<block_m = 128, block_n = 128, overlap = true, overlap = false>} {
  return
}

// -----

// expected-error @+1 {{unknown key 'ovelap' (expected one of block_m, block_n, stages, warpgroups, overlap, pingpong, split_release, persistent, tma_store_o, dynamic_schedule, speculative_exp)}}
func.func @typo() attributes {c = #flash.config<block_m = 128, block_n = 128, ovelap = false>} {
  return
}

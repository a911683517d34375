// RUN: flash-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{block_m must be a positive multiple of 64 (64 rows per warpgroup x 1 warpgroups), got 96}}
func.func @block_m_not_mma_multiple() attributes {c = #flash.config<block_m = 96, block_n = 64>} {
  return
}

// -----

// expected-error @+1 {{block_m must be a positive multiple of 128 (64 rows per warpgroup x 2 warpgroups), got 64}}
func.func @block_m_too_small_for_warpgroups() attributes {c = #flash.config<block_m = 64, block_n = 64, warpgroups = 2>} {
  return
}

// -----

// expected-error @+1 {{block_m must be a positive multiple of 64 (64 rows per warpgroup x 1 warpgroups), got 0}}
func.func @block_m_zero() attributes {c = #flash.config<block_m = 0, block_n = 64>} {
  return
}

// -----

// expected-error @+1 {{block_n must be a positive multiple of 16, got -16}}
func.func @block_n_negative() attributes {c = #flash.config<block_m = 64, block_n = -16>} {
  return
}

// -----

// expected-error @+1 {{block_n must be a positive multiple of 16, got 24}}
func.func @block_n_not_mma_multiple() attributes {c = #flash.config<block_m = 64, block_n = 24>} {
  return
}

// -----

// expected-error @+1 {{block_n must be at most 256, got 512}}
func.func @block_n_too_large() attributes {c = #flash.config<block_m = 64, block_n = 512>} {
  return
}

// -----

// expected-error @+1 {{stages must be between 1 and 8, got 0}}
func.func @no_stages() attributes {c = #flash.config<block_m = 64, block_n = 64, stages = 0>} {
  return
}

// -----

// expected-error @+1 {{warpgroups must be between 1 and 4, got 5}}
func.func @too_many_warpgroups() attributes {c = #flash.config<block_m = 320, block_n = 64, warpgroups = 5>} {
  return
}

// -----

// expected-error @+1 {{missing 'block_n'}}
func.func @missing_block_n() attributes {c = #flash.config<block_m = 64>} {
  return
}

// -----

// expected-error @+1 {{unknown key 'tile' (expected one of block_m, block_n, stages, warpgroups, overlap, pingpong, split_release, persistent, tma_store_o, dynamic_schedule, speculative_exp)}}
func.func @unknown_parameter() attributes {c = #flash.config<block_m = 64, block_n = 64, tile = 3>} {
  return
}

// -----

// expected-error @+1 {{'overlap' takes 'true' or 'false'}}
func.func @schedule_flag_not_bool() attributes {c = #flash.config<block_m = 64, block_n = 64, overlap = 1>} {
  return
}

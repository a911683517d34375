// RUN: flash-opt %s -split-input-file | FileCheck %s

// Defaults (stages = 2, warpgroups = 1) are elided when printed.
// CHECK-LABEL: func.func @defaults
// CHECK: config = #flash.config<block_m = 64, block_n = 16>
func.func @defaults(%q: memref<1x1x64x64xbf16>, %o: memref<1x1x64x64xbf16>) {
  flash.attention %q, %q, %q -> %o {config = #flash.config<block_m = 64, block_n = 16, stages = 2, warpgroups = 1>}
      : memref<1x1x64x64xbf16>, memref<1x1x64x64xbf16>, memref<1x1x64x64xbf16> -> memref<1x1x64x64xbf16>
  return
}

// -----

// The largest shapes the MMA rules allow.
// CHECK-LABEL: func.func @largest
// CHECK: config = #flash.config<block_m = 256, block_n = 256, stages = 8, warpgroups = 4>
func.func @largest(%q: memref<1x1x64x64xbf16>, %o: memref<1x1x64x64xbf16>) {
  flash.attention %q, %q, %q -> %o {config = #flash.config<block_m = 256, block_n = 256, stages = 8, warpgroups = 4>}
      : memref<1x1x64x64xbf16>, memref<1x1x64x64xbf16>, memref<1x1x64x64xbf16> -> memref<1x1x64x64xbf16>
  return
}

// -----

// A config may also stand alone, as flash-tune attaches it to functions.
// CHECK-LABEL: func.func @on_a_function
// CHECK-SAME: flash.config = #flash.config<block_m = 192, block_n = 112, stages = 1, warpgroups = 3>
func.func @on_a_function() attributes {flash.config = #flash.config<block_m = 192, block_n = 112, stages = 1, warpgroups = 3>} {
  return
}

// -----

// Schedule switches: `true` is the default and elided, `false` is printed.
// CHECK-LABEL: func.func @schedule
// CHECK-SAME: flash.config = #flash.config<block_m = 256, block_n = 96, stages = 1, warpgroups = 4, overlap = false, split_release = false>
func.func @schedule() attributes {flash.config = #flash.config<block_m = 256, block_n = 96, stages = 1, warpgroups = 4, overlap = false, pingpong = true, split_release = false>} {
  return
}

// -----

// `persistent` is the one switch that defaults to `false`: `false` is elided,
// `true` is printed.
// CHECK-LABEL: func.func @persistent
// CHECK-SAME: flash.config = #flash.config<block_m = 128, block_n = 128, warpgroups = 2, persistent = true>
func.func @persistent() attributes {flash.config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2, persistent = true>} {
  return
}
// CHECK-LABEL: func.func @not_persistent
// CHECK-SAME: flash.config = #flash.config<block_m = 128, block_n = 128, warpgroups = 2>}
func.func @not_persistent() attributes {flash.config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2, persistent = false>} {
  return
}

// -----

// `tma_store_o` defaults to `true`: `false` is printed, `true` elided.
// CHECK-LABEL: func.func @global_store_o
// CHECK-SAME: flash.config = #flash.config<block_m = 256, block_n = 64, warpgroups = 4, tma_store_o = false>
func.func @global_store_o() attributes {flash.config = #flash.config<block_m = 256, block_n = 64, stages = 2, warpgroups = 4, tma_store_o = false>} {
  return
}
// `dynamic_schedule` defaults to `true` as well.
// CHECK-LABEL: func.func @static_pairs
// CHECK-SAME: flash.config = #flash.config<block_m = 128, block_n = 128, warpgroups = 2, persistent = true, dynamic_schedule = false>
func.func @static_pairs() attributes {flash.config = #flash.config<block_m = 128, block_n = 128, warpgroups = 2, persistent = true, dynamic_schedule = false>} {
  return
}
// CHECK-LABEL: func.func @claimed_tiles
// CHECK-SAME: flash.config = #flash.config<block_m = 128, block_n = 128, warpgroups = 2, persistent = true>}
func.func @claimed_tiles() attributes {flash.config = #flash.config<block_m = 128, block_n = 128, warpgroups = 2, persistent = true, dynamic_schedule = true>} {
  return
}
// `speculative_exp` defaults to `false`, as `persistent` does: `true` is
// printed, `false` elided.
// CHECK-LABEL: func.func @speculative_exp
// CHECK-SAME: flash.config = #flash.config<block_m = 128, block_n = 128, warpgroups = 2, persistent = true, speculative_exp = true>}
func.func @speculative_exp() attributes {flash.config = #flash.config<block_m = 128, block_n = 128, warpgroups = 2, persistent = true, speculative_exp = true>} {
  return
}
// CHECK-LABEL: func.func @max_first
// CHECK-SAME: flash.config = #flash.config<block_m = 128, block_n = 128, warpgroups = 2>}
func.func @max_first() attributes {flash.config = #flash.config<block_m = 128, block_n = 128, warpgroups = 2, speculative_exp = false>} {
  return
}
// CHECK-LABEL: func.func @tma_store_o
// CHECK-SAME: flash.config = #flash.config<block_m = 128, block_n = 128, warpgroups = 2>}
func.func @tma_store_o() attributes {flash.config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2, tma_store_o = true>} {
  return
}

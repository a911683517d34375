// RUN: flash-opt %s -flash-tile="block-m=128 block-n=16" | FileCheck %s
// RUN: not flash-opt %s -flash-tile="block-n=24" 2>&1 | FileCheck %s --check-prefix=BAD
// RUN: flash-opt %s -flash-tile="overlap=0 split-release=0" | FileCheck %s --check-prefix=SCHED
// RUN: flash-opt %s -flash-tile="pingpong=1" | FileCheck %s --check-prefix=KEEP
// RUN: flash-opt %s -flash-tile="persistent=1" | FileCheck %s --check-prefix=PERSIST
// RUN: not flash-opt %s -flash-tile="overlap=2" 2>&1 | FileCheck %s --check-prefix=FLAG
// RUN: not flash-opt %s -flash-tile="persistent=-3" 2>&1 | FileCheck %s --check-prefix=FLAG2
// RUN: flash-opt %s -flash-tile="tma-store-o=0" | FileCheck %s --check-prefix=GSTORE
// FLAG: -flash-tile: overlap takes 1 (on) or 0 (off), got 2
// FLAG2: -flash-tile: persistent takes 1 (on) or 0 (off), got -3

// Schedule switches override too (1 on, 0 off): here pingpong=1 turns the
// op's pingpong = false back on, and all-default switches print as nothing.
// SCHED: flash.config = #flash.config<block_m = 256, block_n = 64, stages = 3, warpgroups = 2, overlap = false, pingpong = false, split_release = false>
// KEEP: flash.config = #flash.config<block_m = 256, block_n = 64, stages = 3, warpgroups = 2>}
// PERSIST: flash.config = #flash.config<block_m = 256, block_n = 64, stages = 3, warpgroups = 2, pingpong = false, persistent = true>}
// GSTORE: flash.config = #flash.config<block_m = 256, block_n = 64, stages = 3, warpgroups = 2, pingpong = false, tma_store_o = false>}

// Options override the op's config, keeping what they do not name.
// CHECK: flash.config = #flash.config<block_m = 128, block_n = 16, stages = 3, warpgroups = 2, pingpong = false>
// CHECK: flash.load_tile {{.*}} -> tensor<128x64xbf16>
// CHECK: flash.load_tile {{.*}} -> tensor<16x64xbf16>

// A bad override is reported against the op, and the pass fails.
// BAD: error: 'flash.attention' op with -flash-tile options: block_n must be a positive multiple of 16, got 24
func.func @overridden(%q: memref<1x1x64x64xbf16>) {
  flash.attention %q, %q, %q -> %q {config = #flash.config<block_m = 256, block_n = 64, stages = 3, warpgroups = 2, pingpong = false>}
      : memref<1x1x64x64xbf16>, memref<1x1x64x64xbf16>, memref<1x1x64x64xbf16> -> memref<1x1x64x64xbf16>
  return
}

// RUN: flash-opt %s -split-input-file -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu -verify-diagnostics
// RUN: not flash-opt %s -split-input-file -flash-tile -flash-fuse -flash-gpu-schedule=chip=sm_80 -convert-flash-to-gpu 2>&1 \
// RUN:   | FileCheck %s --check-prefix=CHIP

// CHIP: error: flash-gpu-schedule: chip sm_80 is not supported (the kernel uses wgmma, TMA and setmaxnreg: sm_90a only)

// Kernels whose tiling the GPU kernel does not implement, one diagnostic
// each. (f32 is refused by flash.attention's own verifier; the tile-level
// f32 case is in flash-to-gpu-invalid-tiles.mlir.)

// expected-error @+1 {{flash-to-gpu: head dim 96 is not supported (64, 128 or 256: whole 128-byte TMA boxes)}}
func.func @head_dim_96(%q: memref<?x?x?x96xbf16>, %k: memref<?x?x?x96xbf16>, %v: memref<?x?x?x96xbf16>, %o: memref<?x?x?x96xbf16>) {
  flash.attention %q, %k, %v -> %o {config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2>}
      : memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16> -> memref<?x?x?x96xbf16>
  return
}

// -----

// expected-error @+1 {{flash-to-gpu: block_m = 128 with warpgroups = 1 is not supported: each consumer warpgroup owns 64 query rows (block_m = 64 * warpgroups)}}
func.func @two_mmas_per_warpgroup(%q: memref<?x?x?x128xbf16>, %k: memref<?x?x?x128xbf16>, %v: memref<?x?x?x128xbf16>, %o: memref<?x?x?x128xbf16>) {
  flash.attention %q, %k, %v -> %o {config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 1>}
      : memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16> -> memref<?x?x?x128xbf16>
  return
}

// -----

// 2 x 64 KiB of K and V per stage, 64 KiB of Q, 1 KiB of alignment slack and
// 9 mbarriers of 8 bytes.
// expected-error @+1 {{flash-to-gpu: the config needs 328776 bytes of shared memory, more than the 232448 an sm_90a block may use (lower stages or block_n)}}
func.func @too_much_smem(%q: memref<?x?x?x256xbf16>, %k: memref<?x?x?x256xbf16>, %v: memref<?x?x?x256xbf16>, %o: memref<?x?x?x256xbf16>) {
  flash.attention %q, %k, %v -> %o {config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2>}
      : memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16> -> memref<?x?x?x256xbf16>
  return
}

// -----

// Packed sequences lower (flash-to-gpu-packed.mlir); their schedule is
// checked in ../Schedule/gpu-schedule-lowering-invalid.mlir.
func.func @packed(%q: memref<1x?x?x128xbf16>, %k: memref<1x?x?x128xbf16>, %v: memref<1x?x?x128xbf16>, %o: memref<1x?x?x128xbf16>, %cq: memref<?xi32>, %ck: memref<?xi32>, %max: index) {
  flash.attention %q, %k, %v -> %o packed(%cq : memref<?xi32>, %ck : memref<?xi32>, max_q %max)
      {config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2>}
      : memref<1x?x?x128xbf16>, memref<1x?x?x128xbf16>, memref<1x?x?x128xbf16> -> memref<1x?x?x128xbf16>
  return
}

// RUN: flash-opt %s -split-input-file -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu -verify-diagnostics

// A paged cache is lowered as a decoding kernel, which splits the keys.
!q = memref<?x?x?x128xbf16>
!kv = memref<?x?x64x128xbf16, strided<[?, ?, ?, 1]>>
// expected-error @+1 {{flash-to-gpu: a paged K/V cache is lowered to the GPU as a decoding kernel: give flash.attention splits(...)}}
func.func @paged_unsplit(%q: !q, %k: !kv, %v: !kv, %o: !q,
                         %t: memref<?x?xi32>, %l: memref<?xi32>) {
  flash.attention %q, %k, %v -> %o paged(%t : memref<?x?xi32>, %l : memref<?xi32>)
      {config = #flash.config<block_m = 64, block_n = 64, stages = 4, warpgroups = 1>}
      : !q, !kv, !kv -> !q
  return
}

// -----

!q = memref<?x?x?x128xbf16>
// expected-error @+1 {{flash-to-gpu: pack_gqa is lowered to the GPU as a decoding kernel: give flash.attention splits(...)}}
func.func @packed_unsplit(%q: !q, %k: !q, %v: !q, %o: !q) {
  flash.attention %q, %k, %v -> %o
      {pack_gqa, config = #flash.config<block_m = 64, block_n = 64, stages = 4, warpgroups = 1>}
      : !q, !q, !q -> !q
  return
}

// -----

// One consumer warpgroup: a decoding tile is 64 rows.
!q = memref<?x?x?x128xbf16>
// expected-error @+1 {{flash-to-gpu: a decoding kernel has one consumer warpgroup (block_m = 64), got 2}}
func.func @two_consumers(%q: !q, %k: !q, %v: !q, %o: !q,
                         %po: memref<?x?x?x?x128xf32>, %pl: memref<?x?x?x?xf32>) {
  flash.attention %q, %k, %v -> %o
      splits(%po : memref<?x?x?x?x128xf32>, %pl : memref<?x?x?x?xf32>)
      {config = #flash.config<block_m = 128, block_n = 64, stages = 2, warpgroups = 2>}
      : !q, !q, !q -> !q
  return
}

// -----

// The kernels take the sinks as their last parameter.
!q = memref<?x?x?x128xbf16>
// expected-error @+1 {{flash-to-gpu: the captures and sinks must be the function's last arguments; argument #4 is not}}
func.func @sinks(%q: !q, %k: !q, %v: !q, %o: !q, %sinks: memref<?xf32>,
                 %po: memref<?x?x?x?x128xf32>, %pl: memref<?x?x?x?xf32>) {
  flash.attention %q, %k, %v -> %o
      splits(%po : memref<?x?x?x?x128xf32>, %pl : memref<?x?x?x?xf32>)
      sinks(%sinks : memref<?xf32>)
      {config = #flash.config<block_m = 64, block_n = 64, stages = 4, warpgroups = 1>}
      : !q, !q, !q -> !q
  return
}

// -----

// Key tiles of 32: the GPU's are 64 and more (pages of 32 gathered into
// them).
!q = memref<?x?x?x128xbf16>
!kv = memref<?x?x32x128xbf16, strided<[?, ?, ?, 1]>>
// expected-error @+1 {{flash-to-gpu: a decoding kernel's block_n must be a multiple of 64, got 32}}
func.func @small_pages(%q: !q, %k: !kv, %v: !kv, %o: !q,
                       %t: memref<?x?xi32>, %l: memref<?xi32>,
                       %po: memref<?x?x?x?x128xf32>, %pl: memref<?x?x?x?xf32>) {
  flash.attention %q, %k, %v -> %o paged(%t : memref<?x?xi32>, %l : memref<?xi32>)
      splits(%po : memref<?x?x?x?x128xf32>, %pl : memref<?x?x?x?xf32>)
      {config = #flash.config<block_m = 64, block_n = 32, stages = 4, warpgroups = 1>}
      : !q, !kv, !kv -> !q
  return
}

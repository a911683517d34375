// A decoding step over a paged K/V cache (flashc-cpu-errors.mlir).
!q = memref<?x8x?x128xbf16>
!kv = memref<?x2x64x128xbf16, strided<[?, ?, ?, 1]>>
func.func @paged(%q: !q, %k: !kv, %v: !kv, %o: !q, %lse: memref<?x8x?xf32>,
                 %t: memref<?x?xi32>, %l: memref<?xi32>) {
  flash.attention %q, %k, %v -> %o, lse %lse
      paged(%t : memref<?x?xi32>, %l : memref<?xi32>) {causal}
      : !q, !kv, !kv -> !q, memref<?x8x?xf32>
  return
}

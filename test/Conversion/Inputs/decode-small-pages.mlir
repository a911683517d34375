// A decoding step over vLLM's default pages of 16 keys: each key tile of
// 128 keys gathers 8 pages (flash-to-gpu-decode.mlir).
!q = memref<?x?x?x128xbf16>
!kv = memref<?x?x16x128xbf16, strided<[?, ?, ?, 1]>>
func.func @decode_small_pages(%q: !q, %k: !kv, %v: !kv, %o: !q, %lse: memref<?x?x?xf32>,
                              %t: memref<?x?xi32>, %l: memref<?xi32>,
                              %po: memref<?x?x?x?x128xf32>, %pl: memref<?x?x?x?xf32>) {
  flash.attention %q, %k, %v -> %o, lse %lse
      paged(%t : memref<?x?xi32>, %l : memref<?xi32>)
      splits(%po : memref<?x?x?x?x128xf32>, %pl : memref<?x?x?x?xf32>)
      {causal, pack_gqa, config = #flash.config<block_m = 64, block_n = 128, stages = 3, warpgroups = 1>}
      : !q, !kv, !kv -> !q, memref<?x?x?xf32>
  return
}

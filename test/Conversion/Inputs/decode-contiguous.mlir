// A decoding step on the GPU over a contiguous cache: split-KV without
// paging or packing, no LSE (flash-to-gpu-decode.mlir).
!q = memref<?x?x?x64xf16>
func.func @decode_contiguous(%q: !q, %k: !q, %v: !q, %o: !q,
                             %po: memref<?x?x?x?x64xf32>,
                             %pl: memref<?x?x?x?xf32>) {
  flash.attention %q, %k, %v -> %o
      splits(%po : memref<?x?x?x?x64xf32>, %pl : memref<?x?x?x?xf32>)
      {config = #flash.config<block_m = 64, block_n = 64, stages = 4, warpgroups = 1>}
      : !q, !q, !q -> !q
  return
}

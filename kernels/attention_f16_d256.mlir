// Forward attention, f16, head dim 256, with the
// row log-sum-exp. Batch, heads and both sequence lengths are chosen at launch.
func.func @attention_f16_d256(%q: memref<?x?x?x256xf16>, %k: memref<?x?x?x256xf16>,
    %v: memref<?x?x?x256xf16>, %o: memref<?x?x?x256xf16>, %lse: memref<?x?x?xf32>) {
  flash.attention %q, %k, %v -> %o, lse %lse
      {config = #flash.config<block_m = 128, block_n = 64, stages = 2, warpgroups = 2>}
      : memref<?x?x?x256xf16>, memref<?x?x?x256xf16>, memref<?x?x?x256xf16>
      -> memref<?x?x?x256xf16>, memref<?x?x?xf32>
  return
}

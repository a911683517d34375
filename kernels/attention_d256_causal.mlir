// Forward attention, bf16, head dim 256, causal (bottom-right aligned when seq_q != seq_k), with the
// row log-sum-exp. Batch, heads and both sequence lengths are chosen at launch.
func.func @attention_d256_causal(%q: memref<?x?x?x256xbf16>, %k: memref<?x?x?x256xbf16>,
    %v: memref<?x?x?x256xbf16>, %o: memref<?x?x?x256xbf16>, %lse: memref<?x?x?xf32>) {
  flash.attention %q, %k, %v -> %o, lse %lse
      {causal, config = #flash.config<block_m = 128, block_n = 64, stages = 2, warpgroups = 2>}
      : memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>
      -> memref<?x?x?x256xbf16>, memref<?x?x?xf32>
  return
}

// Forward attention, bf16, head dim 64, causal (bottom-right aligned when seq_q != seq_k), with the
// row log-sum-exp. Batch, heads and both sequence lengths are chosen at launch.
// The config is flash-tune's (bench/RESULTS.md, H200, FA3 shapes N = 512..16384):
// the best single config over the six shapes, within 2.4% of each shape's own
// winner on geometric mean; 128 x 128 with two warpgroups was 8% slower. O goes
// by global stores: the TMA store was 3-5% slower with four consumers
// (2026-12-03).
func.func @attention_d64_causal(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
    %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>, %lse: memref<?x?x?xf32>) {
  flash.attention %q, %k, %v -> %o, lse %lse
      {causal, config = #flash.config<block_m = 256, block_n = 96, stages = 1,
                                 warpgroups = 4, overlap = false,
                                 tma_store_o = false>}
      : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>
      -> memref<?x?x?x64xbf16>, memref<?x?x?xf32>
  return
}

// A fixed kernel for flash-tune's tests (bf16, head dim 64, non-causal):
// Inputs/tuning.json is keyed by the SHA-256 of this file, so do not edit
// it without updating that file's source_hash.
func.func @attention_d64(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
    %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>, %lse: memref<?x?x?xf32>) {
  flash.attention %q, %k, %v -> %o, lse %lse
      {config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2>}
      : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>
      -> memref<?x?x?x64xbf16>, memref<?x?x?xf32>
  return
}

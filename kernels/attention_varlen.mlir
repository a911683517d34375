// Forward attention over packed sequences (FlashAttention's varlen API),
// bf16, head dim 128, non-causal, with the row log-sum-exp. Q, K, V and O
// hold every sequence's rows one after another (T x H x D, viewed as
// 1 x H x T x D with any strides); sequence s is rows
// [cu_seqlens[s], cu_seqlens[s + 1]) of them, with its own lengths. K and V
// may have fewer heads (grouped-query attention). A consumer's 64 rows of O
// that lie inside their sequence are stored by TMA, the rest (and the LSE)
// by rows under the sequence's bound.
func.func @attention_varlen(%q: memref<1x?x?x128xbf16>, %k: memref<1x?x?x128xbf16>,
                            %v: memref<1x?x?x128xbf16>, %o: memref<1x?x?x128xbf16>,
                            %lse: memref<1x?x?xf32>, %cu_seqlens_q: memref<?xi32>,
                            %cu_seqlens_k: memref<?xi32>, %max_seqlen_q: index) {
  flash.attention %q, %k, %v -> %o, lse %lse
      packed(%cu_seqlens_q : memref<?xi32>, %cu_seqlens_k : memref<?xi32>, max_q %max_seqlen_q)
      {config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2>}
      : memref<1x?x?x128xbf16>, memref<1x?x?x128xbf16>, memref<1x?x?x128xbf16>
      -> memref<1x?x?x128xbf16>, memref<1x?x?xf32>
  return
}

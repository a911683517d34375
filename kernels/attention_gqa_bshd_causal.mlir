// Causal forward attention with grouped-query heads in the layout
// `transformers` hands attention (Llama 3 8B's: 32 query heads over 8 K/V
// heads, head dim 128, bf16), with the row log-sum-exp. Q, K, V and O are
// B x S x H x D storage viewed as B x H x S x D (any strides, the last
// dimension contiguous); query head h reads K/V head h / 4, and no K/V head
// is copied. Batch and both sequence lengths are chosen at launch; the
// runtime refuses other head counts (kernel.json's heads and kv_heads).
func.func @attention_gqa_bshd_causal(
    %q: memref<?x32x?x128xbf16, strided<[?, ?, ?, 1]>>,
    %k: memref<?x8x?x128xbf16, strided<[?, ?, ?, 1]>>,
    %v: memref<?x8x?x128xbf16, strided<[?, ?, ?, 1]>>,
    %o: memref<?x32x?x128xbf16, strided<[?, ?, ?, 1]>>,
    %lse: memref<?x32x?xf32>) {
  flash.attention %q, %k, %v -> %o, lse %lse
      {causal, config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2>}
      : memref<?x32x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x8x?x128xbf16, strided<[?, ?, ?, 1]>>,
        memref<?x8x?x128xbf16, strided<[?, ?, ?, 1]>>
      -> memref<?x32x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x32x?xf32>
  return
}

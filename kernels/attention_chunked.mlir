// Forward attention, bf16, head dim 128, causal, with chunked local
// attention (Llama 4's attention_chunk_size): a query sees only the keys
// of its own chunk of 8192 positions, q_idx / 8192 == kv_idx / 8192. The
// compiler reads the chunk from the mask_mod (MaskAnalysis.h): each query
// tile's key tiles run over its rows' chunks only, and a key tile inside
// the chunk of its rows skips the mask_mod.
!t = memref<?x?x?x128xbf16>
func.func @attention_chunked(%q: !t, %k: !t, %v: !t, %o: !t,
                             %lse: memref<?x?x?xf32>) {
  flash.attention %q, %k, %v -> %o, lse %lse
      {causal, config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2>}
      : !t, !t, !t -> !t, memref<?x?x?xf32>
    mask_mod {
    ^bb0(%b: index, %h: index, %q_idx: index, %kv_idx: index):
      %chunk = arith.constant 8192 : index
      %q_chunk = arith.divui %q_idx, %chunk : index
      %kv_chunk = arith.divui %kv_idx, %chunk : index
      %same = arith.cmpi eq, %q_chunk, %kv_chunk : index
      flash.yield %same : i1
    }
  return
}

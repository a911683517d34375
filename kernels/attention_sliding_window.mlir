// Forward attention, bf16, head dim 128, causal with a sliding window, as
// Mistral and Gemma's local layers use it: query q_idx sees the keys
// q_idx - 1024 .. q_idx (FlashAttention's window_size = (1024, 0)).
!t = memref<?x?x?x128xbf16>
func.func @attention_sliding_window(%q: !t, %k: !t, %v: !t, %o: !t,
                                    %lse: memref<?x?x?xf32>) {
  flash.attention %q, %k, %v -> %o, lse %lse
      {causal, config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2>}
      : !t, !t, !t -> !t, memref<?x?x?xf32>
    mask_mod {
    ^bb0(%b: index, %h: index, %q_idx: index, %kv_idx: index):
      %window = arith.constant 1024 : index
      %reach = arith.addi %kv_idx, %window : index
      %inside = arith.cmpi uge, %reach, %q_idx : index
      flash.yield %inside : i1
    }
  return
}

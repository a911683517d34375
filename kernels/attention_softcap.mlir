// Forward attention, bf16, head dim 128, causal, with logit soft-capping as
// Gemma 2 does it: each scaled logit s becomes 50 * tanh(s / 50), so no
// logit leaves (-50, 50).
!t = memref<?x?x?x128xbf16>
func.func @attention_softcap(%q: !t, %k: !t, %v: !t, %o: !t,
                             %lse: memref<?x?x?xf32>) {
  flash.attention %q, %k, %v -> %o, lse %lse
      {causal, config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2>}
      : !t, !t, !t -> !t, memref<?x?x?xf32>
    score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %q_idx: index, %kv_idx: index):
      %cap = arith.constant 50.0 : f32
      %x = arith.divf %s, %cap : f32
      %t = math.tanh %x : f32
      %capped = arith.mulf %t, %cap : f32
      flash.yield %capped : f32
    }
  return
}

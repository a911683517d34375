// Forward attention, bf16, head dim 128, causal, with ALiBi (Press et al.):
// head h adds slopes[h] * (kv_idx - q_idx) to each scaled logit, a penalty
// growing with the distance. `slopes` has one f32 per query head.
!t = memref<?x?x?x128xbf16>
func.func @attention_alibi(%q: !t, %k: !t, %v: !t, %o: !t,
                           %lse: memref<?x?x?xf32>, %slopes: memref<?xf32>) {
  flash.attention %q, %k, %v -> %o, lse %lse captures(%slopes : memref<?xf32>)
      {causal, config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2>}
      : !t, !t, !t -> !t, memref<?x?x?xf32>
    score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %q_idx: index, %kv_idx: index,
         %slope_of: memref<?xf32>):
      %slope = memref.load %slope_of[%h] : memref<?xf32>
      %kv = arith.index_cast %kv_idx : index to i64
      %qi = arith.index_cast %q_idx : index to i64
      %distance = arith.subi %kv, %qi : i64
      %d = arith.sitofp %distance : i64 to f32
      %bias = arith.mulf %slope, %d : f32
      %biased = arith.addf %s, %bias : f32
      flash.yield %biased : f32
    }
  return
}

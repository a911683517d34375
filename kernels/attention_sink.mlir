// Forward attention, bf16, head dim 64, causal, with attention sinks (as
// gpt-oss uses them): `sinks` holds one learned f32 logit per query head
// that joins every row's softmax denominator and adds nothing to the
// output, so a row may give most of its weight to no key at all.
!t = memref<?x?x?x64xbf16>
func.func @attention_sink(%q: !t, %k: !t, %v: !t, %o: !t,
                          %lse: memref<?x?x?xf32>, %sinks: memref<?xf32>) {
  flash.attention %q, %k, %v -> %o, lse %lse sinks(%sinks : memref<?xf32>)
      {causal, config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2>}
      : !t, !t, !t -> !t, memref<?x?x?xf32>
  return
}

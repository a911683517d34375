// The backward pass of attention_d64_causal.mlir (bf16, D 64, causal), with
// the forward's config; test/python/test_flashc_cpu_kernel.py runs its CPU
// library.
!t = memref<?x?x?x64xbf16>
func.func @attention_backward_d64_causal(
    %q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: memref<?x?x?xf32>,
    %dq: !t, %dk: !t, %dv: !t) {
  flash.attention_backward %q, %k, %v, %o, %do, %lse -> %dq, %dk, %dv
      {causal, config = #flash.config<block_m = 64, block_n = 64>}
      : !t, !t, !t, !t, !t, memref<?x?x?xf32> -> !t, !t, !t
  return
}

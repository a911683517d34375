// Forward attention, bf16, head dim 128, prefix-LM (as T5's and PaliGemma's
// prefix): every query sees the first prefix[b] keys of its batch (the
// prompt, bidirectionally) and, past them, the keys up to itself.
// `key_ranges` is its block mask (flashc.prefix_lm_key_ranges): for each
// batch and block of 128 query rows, the keys up to max(prefix, the
// block's last row) and those every row keeps, so the GPU kernel skips the
// key tiles past the diagonal and the mask_mod on the prefix's.
!t = memref<?x?x?x128xbf16>
func.func @attention_prefix_lm(%q: !t, %k: !t, %v: !t, %o: !t,
                               %lse: memref<?x?x?xf32>,
                               %prefix: memref<?xi32>,
                               %key_ranges: memref<?x?x4xi32>) {
  flash.attention %q, %k, %v -> %o, lse %lse
      captures(%prefix, %key_ranges : memref<?xi32>, memref<?x?x4xi32>)
      {key_ranges = array<i64: 1, 128>,
       config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2>}
      : !t, !t, !t -> !t, memref<?x?x?xf32>
    mask_mod {
    ^bb0(%b: index, %h: index, %q_idx: index, %kv_idx: index,
         %prefix_of: memref<?xi32>, %ranges: memref<?x?x4xi32>):
      %p = memref.load %prefix_of[%b] : memref<?xi32>
      %len = arith.index_cast %p : i32 to index
      %in_prefix = arith.cmpi ult, %kv_idx, %len : index
      %past = arith.cmpi ule, %kv_idx, %q_idx : index
      %seen = arith.ori %in_prefix, %past : i1
      flash.yield %seen : i1
    }
  return
}

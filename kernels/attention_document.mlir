// Forward attention, bf16, head dim 128, causal, with document masking
// (FlexAttention's document mask over a packed batch): `document` holds
// the document id of every row of each batch (B x N, i32), and a query
// sees only the keys of its own document. `key_ranges` is the block mask
// computed once per input (flashc.document_key_ranges(ids, full=True)):
// for each batch and block of 128 query rows the [lo, hi) keys its rows'
// documents span and the [full_lo, full_hi) keys all of them keep, so the
// GPU kernel skips the key tiles of other documents and the mask_mod on
// those inside the block's one document.
!t = memref<?x?x?x128xbf16>
func.func @attention_document(%q: !t, %k: !t, %v: !t, %o: !t,
                              %lse: memref<?x?x?xf32>,
                              %document: memref<?x?xi32>,
                              %key_ranges: memref<?x?x4xi32>) {
  flash.attention %q, %k, %v -> %o, lse %lse
      captures(%document, %key_ranges : memref<?x?xi32>, memref<?x?x4xi32>)
      {causal, key_ranges = array<i64: 1, 128>,
       config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2>}
      : !t, !t, !t -> !t, memref<?x?x?xf32>
    mask_mod {
    ^bb0(%b: index, %h: index, %q_idx: index, %kv_idx: index,
         %doc: memref<?x?xi32>, %ranges: memref<?x?x4xi32>):
      %dq = memref.load %doc[%b, %q_idx] : memref<?x?xi32>
      %dk = memref.load %doc[%b, %kv_idx] : memref<?x?xi32>
      %same = arith.cmpi eq, %dq, %dk : i32
      flash.yield %same : i1
    }
  return
}

// A decoding step with the mods of serving models: soft-capping, a window
// of 200 keys and a sink per query head, over a paged cache with the GQA
// heads packed (flash-to-gpu-decode.mlir, Target/flashc-decode.mlir).
!q = memref<?x?x?x128xbf16>
!kv = memref<?x?x256x128xbf16, strided<[?, ?, ?, 1]>>
func.func @decode_mods(%q: !q, %k: !kv, %v: !kv, %o: !q,
                       %lse: memref<?x?x?xf32>, %t: memref<?x?xi32>,
                       %l: memref<?xi32>, %po: memref<?x?x?x?x128xf32>,
                       %pl: memref<?x?x?x?xf32>, %sinks: memref<?xf32>) {
  flash.attention %q, %k, %v -> %o, lse %lse
      paged(%t : memref<?x?xi32>, %l : memref<?xi32>)
      splits(%po : memref<?x?x?x?x128xf32>, %pl : memref<?x?x?x?xf32>)
      sinks(%sinks : memref<?xf32>)
      {causal, pack_gqa, config = #flash.config<block_m = 64, block_n = 128, stages = 3, warpgroups = 1>}
      : !q, !kv, !kv -> !q, memref<?x?x?xf32>
    score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %q_idx: index, %kv_idx: index):
      %cap = arith.constant 30.0 : f32
      %x = arith.divf %s, %cap : f32
      %th = math.tanh %x : f32
      %capped = arith.mulf %th, %cap : f32
      flash.yield %capped : f32
    }
    mask_mod {
    ^bb0(%b: index, %h: index, %q_idx: index, %kv_idx: index):
      %window = arith.constant 200 : index
      %reach = arith.addi %kv_idx, %window : index
      %inside = arith.cmpi uge, %reach, %q_idx : index
      flash.yield %inside : i1
    }
  return
}

// RUN: flash-opt %s | flash-opt | FileCheck %s

// The block-level schedule ops parse, print and parse again.

!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 10>
!smem = memref<?xi8, #gpu.address_space<workgroup>>

// CHECK-LABEL: func.func @one_tile_per_block
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = flash.wg.block_tile{{$}}
// CHECK: flash.wg.block_tile sections
// CHECK: flash.wg.tile_bounds %{{.*}} of %{{.*}}, %{{.*}}, %{{.*}} block_m = 128 block_n = 128{{$}}
// CHECK: flash.wg.tile_bounds %{{.*}} of %{{.*}}, %{{.*}}, %{{.*}} block_m = 192 block_n = 112 causal align_to_end
// CHECK: flash.wg.key_tiles_seen %{{.*}}, %{{.*}}, %{{.*}} block_n = 112
// CHECK: flash.wg.warp_uniform %{{.*}} : i32
func.func @one_tile_per_block(%seq_q: i32, %seq_k: i32, %rows_end: i32) -> (i32, i32) {
  %x, %head, %num_m = flash.wg.block_tile
  %xs, %heads, %levels = flash.wg.block_tile sections
  %m0, %n_full, %n_hi = flash.wg.tile_bounds %x of %num_m, %seq_q, %seq_k block_m = 128 block_n = 128
  %m0c, %n_fullc, %n_hic = flash.wg.tile_bounds %xs of %levels, %seq_q, %seq_k block_m = 192 block_n = 112 causal align_to_end
  %tiles = flash.wg.key_tiles_seen %rows_end, %seq_q, %seq_k block_n = 112
  %uniform = flash.wg.warp_uniform %tiles : i32
  return %n_hi, %uniform : i32, i32
}

// CHECK-LABEL: func.func @persistent
// CHECK: flash.wg.tile_loop %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} block_m = 128 sections = 32768 {
// CHECK: ^bb0(%{{.*}}: i32, %{{.*}}: index, %{{.*}}: i32, %{{.*}}: index, %{{.*}}: !flash.ring_slot<stages = 2>):
// CHECK: flash.wg.yield %{{.*}} : index
// CHECK: flash.wg.tile_loop %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} block_m = 64 {
func.func @persistent(%seq_q: i32, %seq_k: i32, %batch: i32, %heads: i32) {
  flash.wg.tile_loop %seq_q, %seq_k, %batch, %heads block_m = 128 sections = 32768 {
  ^bb0(%x: i32, %head: index, %num_m: i32, %kv_base: index, %q: !flash.ring_slot<stages = 2>):
    %m0, %n_full, %n_hi = flash.wg.tile_bounds %x of %num_m, %seq_q, %seq_k block_m = 128 block_n = 128 causal align_to_end
    %tiles = arith.index_cast %n_hi : i32 to index
    flash.wg.yield %tiles : index
  }
  flash.wg.tile_loop %seq_q, %seq_k, %batch, %heads block_m = 64 {
  ^bb0(%x: i32, %head: index, %num_m: i32, %kv_base: index, %q: !flash.ring_slot<stages = 1>):
    flash.wg.yield %kv_base : index
  }
  return
}

// CHECK-LABEL: func.func @claimed
// CHECK: flash.wg.claimed_tile_loop %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} counter %{{.*}} : !llvm.ptr<1> claims %{{.*}}[%{{.*}} + 98304], %{{.*}}[q_full = 6, q_empty = 8] block_m = 128 sections = 32768 : memref<?xi8, #gpu.address_space<workgroup>>, !nvgpu.mbarrier.group
// CHECK: flash.wg.claimed_tile_loop %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} claims %{{.*}}[%{{.*}} + 98304], %{{.*}}[q_full = 6, q_empty = 8] block_m = 128 sections = 32768 :
func.func @claimed(%seq_q: i32, %seq_k: i32, %batch: i32, %heads: i32,
                   %counter: !llvm.ptr<1>, %smem: !smem, %window: index, %bars: !bars) {
  flash.wg.claimed_tile_loop %seq_q, %seq_k, %batch, %heads counter %counter : !llvm.ptr<1>
      claims %smem[%window + 98304], %bars[q_full = 6, q_empty = 8] block_m = 128 sections = 32768 : !smem, !bars {
  ^bb0(%x: i32, %head: index, %num_m: i32, %kv_base: index, %q: !flash.ring_slot<stages = 2>):
    flash.wg.yield %kv_base : index
  }
  flash.wg.claimed_tile_loop %seq_q, %seq_k, %batch, %heads
      claims %smem[%window + 98304], %bars[q_full = 6, q_empty = 8] block_m = 128 sections = 32768 : !smem, !bars {
  ^bb0(%x: i32, %head: index, %num_m: i32, %kv_base: index, %q: !flash.ring_slot<stages = 2>):
    flash.wg.yield %kv_base : index
  }
  return
}

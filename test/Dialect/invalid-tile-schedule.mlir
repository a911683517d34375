// RUN: flash-opt %s -split-input-file -verify-diagnostics

func.func @region_args(%s: i32) {
  // expected-error @+1 {{'flash.wg.tile_loop' op the region takes a tile's (query_block: i32, head: index, query_blocks: i32, kv_base: index, q_slot: !flash.ring_slot)}}
  flash.wg.tile_loop %s, %s, %s, %s block_m = 128 {
  ^bb0(%x: i32, %head: i32, %num_m: i32, %kv_base: index, %q: !flash.ring_slot<stages = 1>):
    flash.wg.yield %kv_base : index
  }
  return
}

// -----

func.func @no_slot(%s: i32) {
  // expected-error @+1 {{'flash.wg.tile_loop' op the region takes a tile's}}
  flash.wg.tile_loop %s, %s, %s, %s block_m = 128 {
  ^bb0(%x: i32, %head: index, %num_m: i32, %kv_base: index):
    flash.wg.yield %kv_base : index
  }
  return
}

// -----

func.func @q_ring(%s: i32) {
  // expected-error @+1 {{'flash.wg.tile_loop' op the Q buffers' ring needs a power-of-two number of stages, got 3}}
  flash.wg.tile_loop %s, %s, %s, %s block_m = 128 {
  ^bb0(%x: i32, %head: index, %num_m: i32, %kv_base: index, %q: !flash.ring_slot<stages = 3>):
    flash.wg.yield %kv_base : index
  }
  return
}

// -----

func.func @yield_type(%s: i32) {
  // expected-error @+1 {{'flash.wg.tile_loop' op the region must end in flash.wg.yield of the tile's key tiles (one index)}}
  flash.wg.tile_loop %s, %s, %s, %s block_m = 128 {
  ^bb0(%x: i32, %head: index, %num_m: i32, %kv_base: index, %q: !flash.ring_slot<stages = 1>):
    flash.wg.yield %x : i32
  }
  return
}

// -----

func.func @block_m(%s: i32) {
  // expected-error @+1 {{'flash.wg.tile_loop' op attribute 'block_m' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  flash.wg.tile_loop %s, %s, %s, %s block_m = 0 {
  ^bb0(%x: i32, %head: index, %num_m: i32, %kv_base: index, %q: !flash.ring_slot<stages = 1>):
    flash.wg.yield %kv_base : index
  }
  return
}

// -----

!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 10>
!smem = memref<?xi8, #gpu.address_space<workgroup>>

func.func @claims_offset(%s: i32, %counter: !llvm.ptr<1>, %smem: !smem, %window: index, %bars: !bars) {
  // expected-error @+1 {{'flash.wg.claimed_tile_loop' op claims_offset must be a multiple of 4 bytes, got 98306}}
  flash.wg.claimed_tile_loop %s, %s, %s, %s counter %counter : !llvm.ptr<1>
      claims %smem[%window + 98306], %bars[q_full = 6, q_empty = 8] block_m = 128 sections = 32768 : !smem, !bars {
  ^bb0(%x: i32, %head: index, %num_m: i32, %kv_base: index, %q: !flash.ring_slot<stages = 2>):
    flash.wg.yield %kv_base : index
  }
  return
}

// -----

!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 9>
!smem = memref<?xi8, #gpu.address_space<workgroup>>

func.func @q_empty_barriers(%s: i32, %counter: !llvm.ptr<1>, %smem: !smem, %window: index, %bars: !bars) {
  // expected-error @+1 {{'flash.wg.claimed_tile_loop' op ring barriers [8, 10) exceed the group's 9 barriers}}
  flash.wg.claimed_tile_loop %s, %s, %s, %s counter %counter : !llvm.ptr<1>
      claims %smem[%window + 98304], %bars[q_full = 6, q_empty = 8] block_m = 128 sections = 32768 : !smem, !bars {
  ^bb0(%x: i32, %head: index, %num_m: i32, %kv_base: index, %q: !flash.ring_slot<stages = 2>):
    flash.wg.yield %kv_base : index
  }
  return
}

// -----

!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>
!smem = memref<?xi8, #gpu.address_space<workgroup>>

func.func @q_full_barriers(%s: i32, %smem: !smem, %window: index, %bars: !bars) {
  // expected-error @+1 {{'flash.wg.claimed_tile_loop' op ring barriers [6, 8) exceed the group's 7 barriers}}
  flash.wg.claimed_tile_loop %s, %s, %s, %s
      claims %smem[%window + 98304], %bars[q_full = 6, q_empty = 8] block_m = 128 sections = 32768 : !smem, !bars {
  ^bb0(%x: i32, %head: index, %num_m: i32, %kv_base: index, %q: !flash.ring_slot<stages = 2>):
    flash.wg.yield %kv_base : index
  }
  return
}

// -----

func.func @align_without_mask(%s: i32) -> i32 {
  // expected-error @+1 {{'flash.wg.tile_bounds' op align_to_end needs the causal mask: without it every block sees all keys and the ragged block is the last}}
  %m0, %n_full, %n_hi = flash.wg.tile_bounds %s of %s, %s, %s block_m = 128 block_n = 128 align_to_end
  return %n_hi : i32
}

// -----

func.func @block_n(%s: i32) -> i32 {
  // expected-error @+1 {{'flash.wg.key_tiles_seen' op attribute 'block_n' failed to satisfy constraint: 64-bit signless integer attribute whose value is positive}}
  %t = flash.wg.key_tiles_seen %s, %s, %s block_n = -64
  return %t : i32
}

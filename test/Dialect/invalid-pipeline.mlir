// RUN: flash-opt %s -split-input-file -verify-diagnostics

!smem = memref<?xi8, #gpu.address_space<workgroup>>
!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>
!map = !nvgpu.tensormap.descriptor<tensor = memref<1x128x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>

func.func @columns(%map: !map, %smem: !smem, %bars: !bars, %i: index) {
  // expected-error @+1 {{'flash.wg.tma_load_tile' op columns must be a positive multiple of 64 (the box width), got 96}}
  flash.wg.tma_load_tile %map[%i, %i], %smem[%i], %bars[%i] columns 96 : !map, !smem, !bars
  return
}

// -----

!smem = memref<?xi8, #gpu.address_space<workgroup>>
!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>
!map = !nvgpu.tensormap.descriptor<tensor = memref<1x128x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>

func.func @negative_columns(%map: !map, %smem: !smem, %bars: !bars, %i: index) {
  // expected-error @+1 {{'flash.wg.tma_load_tile' op columns must be a positive multiple of 64 (the box width), got -64}}
  flash.wg.tma_load_tile %map[%i, %i], %smem[%i], %bars[%i] columns -64 : !map, !smem, !bars
  return
}

// -----

!smem = memref<?xi8, #gpu.address_space<workgroup>>
!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>
!map = !nvgpu.tensormap.descriptor<tensor = memref<1x128x32xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_64b, l2promo = l2promo_256b, oob = zero, interleave = none>

func.func @box(%map: !map, %smem: !smem, %bars: !bars, %i: index) {
  // expected-error @+1 {{'flash.wg.tma_load_tile' op tensor map box must be 1 x rows x 64 or 1 x 1 x rows x 64 of a 16-bit type, got 'memref<1x128x32xbf16, #gpu.address_space<workgroup>>'}}
  flash.wg.tma_load_tile %map[%i, %i], %smem[%i], %bars[%i] columns 128 : !map, !smem, !bars
  return
}

// -----

!smem = memref<?xi8, #gpu.address_space<workgroup>>
!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>
!map = !nvgpu.tensormap.descriptor<tensor = memref<1x128x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_64b, l2promo = l2promo_256b, oob = zero, interleave = none>

func.func @swizzle(%map: !map, %smem: !smem, %bars: !bars, %i: index) {
  // expected-error @+1 {{'flash.wg.tma_load_tile' op tensor map must use the 128-byte swizzle, got swizzle_64b}}
  flash.wg.tma_load_tile %map[%i, %i], %smem[%i], %bars[%i] columns 128 : !map, !smem, !bars
  return
}

// -----

!smem = memref<?xi8>
!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>
!map = !nvgpu.tensormap.descriptor<tensor = memref<1x128x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>

func.func @global(%map: !map, %smem: !smem, %bars: !bars, %i: index) {
  // expected-error @+1 {{'flash.wg.tma_load_tile' op destination must be workgroup (shared) memory, got 'memref<?xi8>'}}
  flash.wg.tma_load_tile %map[%i, %i], %smem[%i], %bars[%i] columns 128 : !map, !smem, !bars
  return
}

// -----

// expected-error @+1 {{a ring needs at least one stage, got 0}}
func.func private @stages(!flash.ring_slot<stages = 0>)

// -----

!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>

func.func @full_past_group(%bars: !bars, %pos: index) {
  %slot = flash.wg.ring_slot %pos : index -> !flash.ring_slot<stages = 3>
  // expected-error @+1 {{'flash.wg.ring_wait_full' op ring barriers [6, 9) exceed the group's 7 barriers}}
  flash.wg.ring_wait_full %slot, %bars[6] : !flash.ring_slot<stages = 3>, !bars
  return
}

// -----

!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>

func.func @release_past_group(%bars: !bars, %pos: index) {
  %slot = flash.wg.ring_slot %pos : index -> !flash.ring_slot<stages = 4>
  // expected-error @+1 {{'flash.wg.ring_release' op ring barriers [4, 8) exceed the group's 7 barriers}}
  flash.wg.ring_release %slot, %bars[4] : !flash.ring_slot<stages = 4>, !bars
  return
}

// -----

!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>

func.func @empty_past_group(%bars: !bars, %pos: index) {
  // expected-error @+1 {{'flash.wg.ring_wait_empty' op ring barriers [6, 8) exceed the group's 7 barriers}}
  flash.wg.ring_wait_empty %pos, %bars[6] : !flash.ring_slot<stages = 2>, !bars
  return
}

// -----

!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>

func.func @negative_base(%bars: !bars, %pos: index) {
  // expected-error @+1 {{'flash.wg.ring_wait_empty' op barrier base must be non-negative, got -1}}
  flash.wg.ring_wait_empty %pos, %bars[-1] : !flash.ring_slot<stages = 2>, !bars
  return
}

// -----

func.func @i32_stages(%tile: i32) {
  // expected-error @+1 {{'flash.wg.ring_slot' op an i32 position needs a power-of-two number of stages, got 3}}
  %slot = flash.wg.ring_slot %tile : i32 -> !flash.ring_slot<stages = 3>
  return
}

// -----

!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>

func.func @released_past_group(%bars: !bars, %tile: i32) {
  %slot = flash.wg.ring_slot %tile : i32 -> !flash.ring_slot<stages = 2>
  // expected-error @+1 {{'flash.wg.ring_wait_released' op ring barriers [6, 8) exceed the group's 7 barriers}}
  flash.wg.ring_wait_released %slot, %bars[6] : !flash.ring_slot<stages = 2>, !bars
  return
}

// -----

!smem = memref<?xi8, #gpu.address_space<workgroup>>
!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>
!map = !nvgpu.tensormap.descriptor<tensor = memref<1x128x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>

func.func @buffer_bytes(%map: !map, %smem: !smem, %bars: !bars, %i: index) {
  // expected-error @+1 {{'flash.wg.tma_load_tile' op buffer size must be positive, got 0}}
  flash.wg.tma_load_tile %map[%i, %i], %smem[%i + %i * 0], %bars[%i] columns 128 : !map, !smem, !bars
  return
}

// -----

func.func @window_align() {
  // expected-error @+1 {{'flash.wg.shared_window' op align must be a power of two from 16 to 1024, got 48}}
  %w, %s, %f = flash.wg.shared_window align 48 : memref<?xi8, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @window_global() {
  // expected-error @+1 {{'flash.wg.shared_window' op window must be a memref<?xi8> in workgroup memory, got 'memref<?xi8>'}}
  %w, %s, %f = flash.wg.shared_window align 1024 : memref<?xi8>
  return
}

// -----

func.func @barriers_count_mismatch() {
  // expected-error @+1 {{'flash.wg.init_barriers' op has 2 arrival count(s) for 3 barrier(s)}}
  %b = flash.wg.init_barriers counts [1, 256] : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 3>
  return
}

// -----

func.func @barriers_zero_count() {
  // expected-error @+1 {{'flash.wg.init_barriers' op barrier 1's arrival count must be from 1 to 2^20 - 1, got 0}}
  %b = flash.wg.init_barriers counts [1, 0] : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 2>
  return
}

// -----

!smem = memref<?xi8, #gpu.address_space<workgroup>>
!box = memref<1x1x128x64xbf16, #gpu.address_space<workgroup>>
!map = !nvgpu.tensormap.descriptor<tensor = !box, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>
!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>

// A rank-4 map over [B, H, N, D] names its plane by head and batch.
func.func @rank4_one_plane(%map: !map, %smem: !smem, %bars: !bars, %i: index) {
  // expected-error @+1 {{'flash.wg.tma_load_tile' op a rank-4 tensor map takes 2 plane coordinate(s) after the row, got 1}}
  flash.wg.tma_load_tile %map[%i, %i], %smem[%i], %bars[%i] columns 128 : !map, !smem, !bars
  return
}

// -----

!smem = memref<?xi8, #gpu.address_space<workgroup>>
!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>
!map = !nvgpu.tensormap.descriptor<tensor = memref<1x1x16x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>

func.func @gather_group(%map: !map, %smem: !smem, %bars: !bars, %i: index) {
  // expected-error @+1 {{'flash.wg.tma_load_tile' op gather takes a row and 2 plane coordinate(s) per chunk, got 2 values}}
  flash.wg.tma_load_tile %map[%i, %i, %i] gather [%i, %i], %smem[%i], %bars[%i] columns 128 : !map, !smem, !bars
  return
}

// -----

!smem = memref<?xi8, #gpu.address_space<workgroup>>
!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>
!map = !nvgpu.tensormap.descriptor<tensor = memref<1x1x4x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>

func.func @gather_rows(%map: !map, %smem: !smem, %bars: !bars, %i: index) {
  // expected-error @+1 {{'flash.wg.tma_load_tile' op gathered chunks must be multiples of 8 rows (the 128-byte swizzle's period), got 4}}
  flash.wg.tma_load_tile %map[%i, %i, %i] gather [%i, %i, %i], %smem[%i], %bars[%i] columns 64 : !map, !smem, !bars
  return
}

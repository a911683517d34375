// RUN: flash-opt %s | flash-opt | FileCheck %s
// RUN: flash-opt %s -mlir-print-op-generic | flash-opt | FileCheck %s

// The warp-specialised level's producer family: a tile loaded by TMA onto
// an mbarrier, and the ring discipline of the K/V slots.

!smem = memref<?xi8, #gpu.address_space<workgroup>>
!box = memref<1x128x64xbf16, #gpu.address_space<workgroup>>
!map = !nvgpu.tensormap.descriptor<tensor = !box, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>
!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>

// CHECK-LABEL: func.func @tile
// CHECK-SAME: (%[[MAP:.*]]: !nvgpu.tensormap.descriptor<{{.*}}>, %[[SMEM:.*]]: memref<?xi8, #gpu.address_space<workgroup>>, %[[BARS:.*]]: !nvgpu.mbarrier.group<{{.*}}>, %[[ROW:.*]]: index, %[[PLANE:.*]]: index, %[[OFF:.*]]: index, %[[BAR:.*]]: index)
// CHECK: flash.wg.tma_load_tile %[[MAP]][%[[ROW]], %[[PLANE]]], %[[SMEM]][%[[OFF]]], %[[BARS]][%[[BAR]]] columns 256 : !nvgpu.tensormap.descriptor<tensor = memref<1x128x64xbf16, #gpu.address_space<workgroup>>, {{.*}}>, memref<?xi8, #gpu.address_space<workgroup>>, !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>
func.func @tile(%map: !map, %smem: !smem, %bars: !bars, %row: index,
                %plane: index, %offset: index, %barrier: index) {
  flash.wg.tma_load_tile %map[%row, %plane], %smem[%offset], %bars[%barrier] columns 256 : !map, !smem, !bars
  return
}

// CHECK-LABEL: func.func @ring
// CHECK-SAME: (%[[BARS:.*]]: !nvgpu.mbarrier.group<{{.*}}>, %[[POS:.*]]: index)
// CHECK: flash.wg.ring_wait_empty %[[POS]], %[[BARS]][4] : !flash.ring_slot<stages = 2>, !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>
// CHECK: %[[SLOT:.*]] = flash.wg.ring_slot %[[POS]] : index -> !flash.ring_slot<stages = 2>
// CHECK: %[[INDEX:.*]] = flash.wg.ring_slot_index %[[SLOT]] : !flash.ring_slot<stages = 2>
// CHECK: flash.wg.ring_wait_full %[[SLOT]], %[[BARS]][0] : !flash.ring_slot<stages = 2>, !nvgpu.mbarrier.group<{{.*}}>
// CHECK: flash.wg.ring_release %[[SLOT]], %[[BARS]][4] : !flash.ring_slot<stages = 2>, !nvgpu.mbarrier.group<{{.*}}>
// CHECK: return %[[INDEX]]
func.func @ring(%bars: !bars, %pos: index) -> index {
  flash.wg.ring_wait_empty %pos, %bars[4] : !flash.ring_slot<stages = 2>, !bars
  %slot = flash.wg.ring_slot %pos : index -> !flash.ring_slot<stages = 2>
  %index = flash.wg.ring_slot_index %slot : !flash.ring_slot<stages = 2>
  flash.wg.ring_wait_full %slot, %bars[0] : !flash.ring_slot<stages = 2>, !bars
  flash.wg.ring_release %slot, %bars[4] : !flash.ring_slot<stages = 2>, !bars
  return %index : index
}

// The Q buffers: two buffers of 32 KiB, a ring counted in i32 tiles.
// CHECK-LABEL: func.func @q_buffers
// CHECK-SAME: (%[[MAP:.*]]: !nvgpu.tensormap.descriptor<{{.*}}>, %[[SMEM:.*]]: memref<?xi8, #gpu.address_space<workgroup>>, %[[BARS:.*]]: !nvgpu.mbarrier.group<{{.*}}>, %[[TILE:.*]]: i32, %[[I:.*]]: index)
// CHECK: %[[SLOT:.*]] = flash.wg.ring_slot %[[TILE]] : i32 -> !flash.ring_slot<stages = 2>
// CHECK: %[[BUF:.*]] = flash.wg.ring_slot_index %[[SLOT]] : !flash.ring_slot<stages = 2>
// CHECK: flash.wg.ring_wait_released %[[SLOT]], %[[BARS]][5] : !flash.ring_slot<stages = 2>, !nvgpu.mbarrier.group<{{.*}}>
// CHECK: flash.wg.tma_load_tile %[[MAP]][%[[I]], %[[I]]], %[[SMEM]][%[[I]] + %[[BUF]] * 32768], %[[BARS]][%[[I]]] columns 128 :
// A K slot: the slot's bytes, then the K region's offset, in the window.
// CHECK: flash.wg.tma_load_tile %[[MAP]][%[[I]], %[[I]]], %[[SMEM]][%[[I]] + %[[BUF]] + 65536], %[[BARS]][%[[I]]] columns 128 :
func.func @q_buffers(%map: !map, %smem: !smem, %bars: !bars, %tile: i32, %i: index) {
  %slot = flash.wg.ring_slot %tile : i32 -> !flash.ring_slot<stages = 2>
  %buf = flash.wg.ring_slot_index %slot : !flash.ring_slot<stages = 2>
  flash.wg.ring_wait_released %slot, %bars[5] : !flash.ring_slot<stages = 2>, !bars
  flash.wg.tma_load_tile %map[%i, %i], %smem[%i + %buf * 32768], %bars[%i] columns 128 : !map, !smem, !bars
  flash.wg.tma_load_tile %map[%i, %i], %smem[%i + %buf + 65536], %bars[%i] columns 128 : !map, !smem, !bars
  return
}

// The dynamic window from its first 1 KiB-aligned byte.
// CHECK-LABEL: func.func @window
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = flash.wg.shared_window align 1024 : memref<?xi8, #gpu.address_space<workgroup>>
func.func @window() -> (!smem, index, i64) {
  %window, %shift, %field = flash.wg.shared_window align 1024 : !smem
  return %window, %shift, %field : !smem, index, i64
}

// The block's barriers with their arrival counts.
// CHECK-LABEL: func.func @barriers
// CHECK: flash.wg.init_barriers counts [1, 1, 256] : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 3>
func.func @barriers() {
  %b = flash.wg.init_barriers counts [1, 1, 256] : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 3>
  return
}

// -----

// A rank-4 map over [B, H, N, D]: the plane is the head and the batch.
// CHECK-LABEL: func.func @load_tile_rank4
// CHECK: flash.wg.tma_load_tile %{{.*}}[%[[ROW:.*]], %[[HEAD:.*]], %[[BATCH:.*]]], %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}] columns 128 : !nvgpu.tensormap.descriptor<tensor = memref<1x1x128x64xbf16, #gpu.address_space<workgroup>>
func.func @load_tile_rank4(%map: !nvgpu.tensormap.descriptor<tensor = memref<1x1x128x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>,
                           %smem: memref<?xi8, #gpu.address_space<workgroup>>,
                           %bars: !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>,
                           %row: index, %head: index, %batch: index, %offset: index, %barrier: index) {
  flash.wg.tma_load_tile %map[%row, %head, %batch], %smem[%offset], %bars[%barrier] columns 128
      : !nvgpu.tensormap.descriptor<tensor = memref<1x1x128x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>,
        memref<?xi8, #gpu.address_space<workgroup>>,
        !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>
  return
}

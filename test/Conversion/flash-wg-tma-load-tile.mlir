// RUN: flash-opt %s -split-input-file -convert-flash-wg-to-nvvm | FileCheck %s

// flash.wg.tma_load_tile and what it becomes: the expect of the whole
// tile's bytes on its barrier, then one view and one TMA load per 64-column
// box, each box rows * 128 bytes after the previous one.

!smem = memref<?xi8, #gpu.address_space<workgroup>>
!box = memref<1x128x64xbf16, #gpu.address_space<workgroup>>
!map = !nvgpu.tensormap.descriptor<tensor = !box, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>
!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>

// A 128 x 128 tile: two boxes of 16 KiB, 32 KiB expected.
// CHECK-LABEL: func.func @two_boxes
// CHECK-SAME: (%[[MAP:.*]]: !nvgpu.tensormap.descriptor<{{.*}}>, %[[SMEM:.*]]: memref<?xi8, #gpu.address_space<workgroup>>, %[[BARS:.*]]: !nvgpu.mbarrier.group<{{.*}}>, %[[ROW:.*]]: index, %[[PLANE:.*]]: index, %[[OFF:.*]]: index, %[[BAR:.*]]: index)
// The constants go to the function's entry block, where the kernel keeps
// them.
// CHECK-DAG: %[[BYTES:.*]] = arith.constant 32768 : index
// CHECK-DAG: %[[COL0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[STEP:.*]] = arith.constant 16384 : index
// CHECK-DAG: %[[COL1:.*]] = arith.constant 64 : index
// CHECK: nvgpu.mbarrier.arrive.expect_tx %[[BARS]][%[[BAR]]], %[[BYTES]] : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>
// CHECK: %[[BOX0:.*]] = memref.view %[[SMEM]][%[[OFF]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<1x128x64xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.tma.async.load %[[MAP]][%[[COL0]], %[[ROW]], %[[PLANE]]], %[[BARS]][%[[BAR]]] to %[[BOX0]]
// CHECK: %[[OFF1:.*]] = arith.addi %[[OFF]], %[[STEP]] : index
// CHECK: %[[BOX1:.*]] = memref.view %[[SMEM]][%[[OFF1]]][]
// CHECK: nvgpu.tma.async.load %[[MAP]][%[[COL1]], %[[ROW]], %[[PLANE]]], %[[BARS]][%[[BAR]]] to %[[BOX1]]
// CHECK-NOT: nvgpu.tma.async.load
// CHECK-NOT: flash.wg
func.func @two_boxes(%map: !map, %smem: !smem, %bars: !bars, %row: index,
                     %plane: index, %offset: index, %barrier: index) {
  flash.wg.tma_load_tile %map[%row, %plane], %smem[%offset], %bars[%barrier] columns 128 : !map, !smem, !bars
  return
}

// -----

!smem = memref<?xi8, #gpu.address_space<workgroup>>
!box = memref<1x64x64xf16, #gpu.address_space<workgroup>>
!map = !nvgpu.tensormap.descriptor<tensor = !box, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>
!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>

// A 64 x 64 tile is one box: nothing is added to the offset.
// CHECK-LABEL: func.func @one_box
// CHECK-SAME: (%[[MAP:.*]]: !nvgpu.tensormap.descriptor<{{.*}}>, %[[SMEM:.*]]: memref<?xi8, #gpu.address_space<workgroup>>, %[[BARS:.*]]: !nvgpu.mbarrier.group<{{.*}}>, %[[I:.*]]: index)
// CHECK-DAG: %[[BYTES:.*]] = arith.constant 8192 : index
// CHECK: nvgpu.mbarrier.arrive.expect_tx %[[BARS]][%[[I]]], %[[BYTES]]
// CHECK-NOT: arith.addi
// CHECK: %[[BOX:.*]] = memref.view %[[SMEM]][%[[I]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<1x64x64xf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.tma.async.load %[[MAP]][%{{.*}}, %[[I]], %[[I]]], %[[BARS]][%[[I]]] to %[[BOX]]
// CHECK-NOT: nvgpu.tma.async.load
func.func @one_box(%map: !map, %smem: !smem, %bars: !bars, %i: index) {
  flash.wg.tma_load_tile %map[%i, %i], %smem[%i], %bars[%i] columns 64 : !map, !smem, !bars
  return
}

// -----

!smem = memref<?xi8, #gpu.address_space<workgroup>>
!box = memref<1x128x64xbf16, #gpu.address_space<workgroup>>
!map = !nvgpu.tensormap.descriptor<tensor = !box, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>
!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>

// Into buffer %buf of 32 KiB buffers (the Q buffers): the buffer's start
// after the expect, then each box from it.
// CHECK-LABEL: func.func @buffer
// CHECK-SAME: (%[[MAP:.*]]: !nvgpu.tensormap.descriptor<{{.*}}>, %[[SMEM:.*]]: memref<?xi8, #gpu.address_space<workgroup>>, %[[BARS:.*]]: !nvgpu.mbarrier.group<{{.*}}>, %[[WIN:.*]]: index, %[[BUF:.*]]: index, %[[I:.*]]: index)
// 32768 is both the tile's bytes and the buffers' size.
// CHECK-DAG: %[[BYTES:.*]] = arith.constant 32768 : index
// CHECK-DAG: %[[STEP:.*]] = arith.constant 16384 : index
// CHECK: nvgpu.mbarrier.arrive.expect_tx %[[BARS]][%[[I]]], %[[BYTES]]
// CHECK: %[[MUL:.*]] = arith.muli %[[BUF]], %[[BYTES]] : index
// CHECK: %[[START:.*]] = arith.addi %[[WIN]], %[[MUL]] : index
// CHECK: memref.view %[[SMEM]][%[[START]]][]
// CHECK: nvgpu.tma.async.load
// CHECK: %[[OFF1:.*]] = arith.addi %[[START]], %[[STEP]] : index
// CHECK: memref.view %[[SMEM]][%[[OFF1]]][]
// CHECK: nvgpu.tma.async.load
func.func @buffer(%map: !map, %smem: !smem, %bars: !bars, %window: index,
                  %buf: index, %i: index) {
  flash.wg.tma_load_tile %map[%i, %i], %smem[%window + %buf * 32768], %bars[%i] columns 128 : !map, !smem, !bars
  return
}

// -----

!smem = memref<?xi8, #gpu.address_space<workgroup>>
!box = memref<1x80x64xbf16, #gpu.address_space<workgroup>>
!map = !nvgpu.tensormap.descriptor<tensor = !box, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>
!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>

// A K/V ring slot: box c at (slot bytes + region + c * 10240) + window,
// each after the expect.
// CHECK-LABEL: func.func @slot
// CHECK-SAME: (%[[MAP:.*]]: !nvgpu.tensormap.descriptor<{{.*}}>, %[[SMEM:.*]]: memref<?xi8, #gpu.address_space<workgroup>>, %[[BARS:.*]]: !nvgpu.mbarrier.group<{{.*}}>, %[[WIN:.*]]: index, %[[SLOT:.*]]: index, %[[I:.*]]: index)
// CHECK-DAG: %[[C0:.*]] = arith.constant 49152 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 59392 : index
// CHECK: nvgpu.mbarrier.arrive.expect_tx %[[BARS]][%[[I]]]
// CHECK: %[[IN0:.*]] = arith.addi %[[SLOT]], %[[C0]] : index
// CHECK: %[[OFF0:.*]] = arith.addi %[[IN0]], %[[WIN]] : index
// CHECK: memref.view %[[SMEM]][%[[OFF0]]][]
// CHECK: nvgpu.tma.async.load
// CHECK: %[[IN1:.*]] = arith.addi %[[SLOT]], %[[C1]] : index
// CHECK: %[[OFF1:.*]] = arith.addi %[[IN1]], %[[WIN]] : index
// CHECK: memref.view %[[SMEM]][%[[OFF1]]][]
// CHECK: nvgpu.tma.async.load
func.func @slot(%map: !map, %smem: !smem, %bars: !bars, %window: index,
                %slot: index, %i: index) {
  flash.wg.tma_load_tile %map[%i, %i], %smem[%window + %slot + 49152], %bars[%i] columns 128 : !map, !smem, !bars
  return
}

// -----

!smem = memref<?xi8, #gpu.address_space<workgroup>>
!box = memref<1x1x128x64xbf16, #gpu.address_space<workgroup>>
!map = !nvgpu.tensormap.descriptor<tensor = !box, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>
!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>

// A rank-4 map over [B, H, N, D] (any strides: B x N x H x D storage too):
// each box at (64c, row, head, batch).
// CHECK-LABEL: func.func @rank4_map
// CHECK-SAME: (%[[MAP:.*]]: !nvgpu.tensormap.descriptor<{{.*}}>, %[[SMEM:[^:]*]]: memref<?xi8, #gpu.address_space<workgroup>>, %[[BARS:[^:]*]]: !nvgpu.mbarrier.group<{{.*}}>, %[[ROW:[^:]*]]: index, %[[HEAD:[^:]*]]: index, %[[BATCH:[^:]*]]: index, %[[OFF:[^:]*]]: index, %[[BAR:[^:]*]]: index)
// CHECK: %[[BOX0:.*]] = memref.view %[[SMEM]][%[[OFF]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<1x1x128x64xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.tma.async.load %[[MAP]][%{{.*}}, %[[ROW]], %[[HEAD]], %[[BATCH]]], %[[BARS]][%[[BAR]]] to %[[BOX0]]
// CHECK: nvgpu.tma.async.load %[[MAP]][%{{.*}}, %[[ROW]], %[[HEAD]], %[[BATCH]]], %[[BARS]][%[[BAR]]] to
// CHECK-NOT: nvgpu.tma.async.load
func.func @rank4_map(%map: !map, %smem: !smem, %bars: !bars, %row: index,
                     %head: index, %batch: index, %offset: index, %barrier: index) {
  flash.wg.tma_load_tile %map[%row, %head, %batch], %smem[%offset], %bars[%barrier] columns 128 : !map, !smem, !bars
  return
}

// -----

!smem = memref<?xi8, #gpu.address_space<workgroup>>
!box = memref<1x1x16x64xbf16, #gpu.address_space<workgroup>>
!map = !nvgpu.tensormap.descriptor<tensor = !box, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>
!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>

// A 32 x 128 tile gathered from two pages of 16 rows: the whole tile's
// 8 KiB expected once, then per 64-column box each page's 2 KiB where one
// box of 32 rows would put its rows (box c of chunk i at (2c + i) x 2048).
// CHECK-LABEL: func.func @gathered_pages
// CHECK-SAME: (%[[MAP:.*]]: !nvgpu.tensormap.descriptor<{{.*}}>, %[[SMEM:.*]]: memref<?xi8, #gpu.address_space<workgroup>>, %[[BARS:.*]]: !nvgpu.mbarrier.group<{{.*}}>, %[[ROW:.*]]: index, %[[HEAD:.*]]: index, %[[P0:.*]]: index, %[[P1:.*]]: index, %[[OFF:.*]]: index, %[[BAR:.*]]: index)
// CHECK-DAG: %[[BYTES:.*]] = arith.constant 8192 : index
// CHECK-DAG: %[[C2K:.*]] = arith.constant 2048 : index
// CHECK-DAG: %[[C4K:.*]] = arith.constant 4096 : index
// CHECK-DAG: %[[C6K:.*]] = arith.constant 6144 : index
// CHECK: nvgpu.mbarrier.arrive.expect_tx %[[BARS]][%[[BAR]]], %[[BYTES]]
// CHECK-NOT: nvgpu.mbarrier.arrive.expect_tx
// CHECK: %[[B0:.*]] = memref.view %[[SMEM]][%[[OFF]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<1x1x16x64xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.tma.async.load %[[MAP]][%{{.*}}, %[[ROW]], %[[HEAD]], %[[P0]]], %[[BARS]][%[[BAR]]] to %[[B0]]
// CHECK: %[[O1:.*]] = arith.addi %[[OFF]], %[[C2K]] : index
// CHECK: %[[B1:.*]] = memref.view %[[SMEM]][%[[O1]]][]
// CHECK: nvgpu.tma.async.load %[[MAP]][%{{.*}}, %[[ROW]], %[[HEAD]], %[[P1]]], %[[BARS]][%[[BAR]]] to %[[B1]]
// CHECK: %[[O2:.*]] = arith.addi %[[OFF]], %[[C4K]] : index
// CHECK: %[[B2:.*]] = memref.view %[[SMEM]][%[[O2]]][]
// CHECK: nvgpu.tma.async.load %[[MAP]][%{{.*}}, %[[ROW]], %[[HEAD]], %[[P0]]], %[[BARS]][%[[BAR]]] to %[[B2]]
// CHECK: %[[O3:.*]] = arith.addi %[[OFF]], %[[C6K]] : index
// CHECK: %[[B3:.*]] = memref.view %[[SMEM]][%[[O3]]][]
// CHECK: nvgpu.tma.async.load %[[MAP]][%{{.*}}, %[[ROW]], %[[HEAD]], %[[P1]]], %[[BARS]][%[[BAR]]] to %[[B3]]
// CHECK-NOT: nvgpu.tma.async.load
func.func @gathered_pages(%map: !map, %smem: !smem, %bars: !bars, %row: index,
                          %head: index, %page0: index, %page1: index,
                          %offset: index, %barrier: index) {
  flash.wg.tma_load_tile %map[%row, %head, %page0] gather [%row, %head, %page1], %smem[%offset], %bars[%barrier] columns 128 : !map, !smem, !bars
  return
}

// RUN: flash-opt %s -split-input-file -flash-tile | FileCheck %s
// RUN: not flash-opt %s -split-input-file -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu 2>&1 | FileCheck %s --check-prefix=GPU
// RUN: not flash-opt %s -split-input-file -flash-derive-backward 2>&1 | FileCheck %s --check-prefix=BWD

// Decoding over a paged cache: the program's keys are its batch's cached
// length (clamped to its table's pages); key tile `col` is read from page
// page_table[b, col / 64] (clamped into the cache) viewed up to that
// length, at row col % 64 of the page.
// CHECK-LABEL: func.func @paged
// CHECK-SAME: attributes {flash.config = {{.*}}, flash.paged}
// CHECK: flash.program_id 1
// CHECK-NEXT: %[[BATCH:.*]] = arith.divui
// CHECK: %[[LEN32:.*]] = memref.load %arg6[%[[BATCH]]] : memref<?xi32>
// CHECK: %[[LEN:.*]] = arith.index_cast %[[LEN32]] : i32 to index
// CHECK: %[[PAGES:.*]] = memref.dim %arg5, %{{.*}} : memref<?x?xi32>
// CHECK: %[[CAPACITY:.*]] = arith.muli %[[PAGES]], %{{.*}} : index
// CHECK: %[[NONNEG:.*]] = arith.maxsi %[[LEN]], %{{.*}} : index
// CHECK: %[[SEQK:.*]] = arith.minsi %[[NONNEG]], %[[CAPACITY]] : index
// CHECK: scf.for %[[COL:.*]] = %{{.*}} to %{{.*}} step
// CHECK: %[[SLOT:.*]] = arith.divui %[[COL]], %[[P:.*]] : index
// CHECK: %[[START:.*]] = arith.muli %[[SLOT]], %[[P]] : index
// CHECK: %[[ENTRY:.*]] = memref.load %arg5[%[[BATCH]], %[[SLOT]]] : memref<?x?xi32>
// CHECK: %[[PAGE0:.*]] = arith.index_cast %[[ENTRY]] : i32 to index
// CHECK: %[[LEFT:.*]] = arith.subi %[[SEQK]], %[[START]] : index
// CHECK: %[[ROWS:.*]] = arith.minsi %[[P]], %[[LEFT]] : index
// CHECK: %[[INPAGE:.*]] = arith.subi %[[COL]], %[[START]] : index
// CHECK: %[[NUMPAGES:.*]] = memref.dim %arg1
// CHECK: %[[LAST:.*]] = arith.subi %[[NUMPAGES]]
// CHECK: %[[PAGE1:.*]] = arith.maxsi %[[PAGE0]]
// CHECK: %[[PAGE:.*]] = arith.minsi %[[PAGE1]], %[[LAST]] : index
// CHECK: %[[VIEW:.*]] = memref.subview %arg1[%[[PAGE]], 0, 0, 0] [1, %{{.*}}, %[[ROWS]], 128] [1, 1, 1, 1]
// CHECK: flash.load_tile %[[VIEW]][%{{.*}}, %{{.*}}, %[[INPAGE]]]
// The values' page is the keys': one table load per key tile.
// CHECK-NOT: memref.load %arg5
// CHECK: memref.subview %arg2[%{{.*}}, 0, 0, 0] [1, %{{.*}}, %[[ROWS]], 128]
// GPU: error: flash-to-gpu: a paged K/V cache is lowered to the GPU as a decoding kernel: give flash.attention splits(...)
// BWD: error: 'flash.attention' op -flash-derive-backward: a paged K/V cache is read by decoding, which has no backward pass
!q = memref<?x32x?x128xbf16>
!kv = memref<?x8x64x128xbf16, strided<[?, ?, ?, 1]>>
func.func @paged(%q: !q, %k: !kv, %v: !kv, %o: !q, %lse: memref<?x32x?xf32>,
                 %t: memref<?x?xi32>, %l: memref<?xi32>) {
  flash.attention %q, %k, %v -> %o, lse %lse
      paged(%t : memref<?x?xi32>, %l : memref<?xi32>)
      {causal, config = #flash.config<block_m = 64, block_n = 64, warpgroups = 1>}
      : !q, !kv, !kv -> !q, memref<?x32x?xf32>
  return
}

// -----

// Pages smaller than the key tile: K and V are read through the table
// (load_tile's pages form), up to the program's keys, no page view.
// CHECK-LABEL: func.func @small_pages
// CHECK: flash.program_id 1
// CHECK-NEXT: %[[BATCH:.*]] = arith.divui
// CHECK: %[[NONNEG:.*]] = arith.maxsi
// CHECK-NEXT: %[[SEQK:.*]] = arith.minsi %[[NONNEG]]
// CHECK: scf.for %[[COL:.*]] = %{{.*}} to %{{.*}} step
// CHECK-NOT: memref.subview
// CHECK: flash.load_tile %arg1[%[[BATCH]], %{{.*}}, %[[COL]]] pages(%arg5 : memref<?x?xi32>, %[[SEQK]]) : memref<?x8x16x128xbf16, strided<[?, ?, ?, 1]>> -> tensor<64x128xbf16>
// CHECK: flash.load_tile %arg2[%[[BATCH]], %{{.*}}, %[[COL]]] pages(%arg5 : memref<?x?xi32>, %[[SEQK]])
!q = memref<?x32x?x128xbf16>
!kv = memref<?x8x16x128xbf16, strided<[?, ?, ?, 1]>>
func.func @small_pages(%q: !q, %k: !kv, %v: !kv, %o: !q, %lse: memref<?x32x?xf32>,
                       %t: memref<?x?xi32>, %l: memref<?xi32>) {
  flash.attention %q, %k, %v -> %o, lse %lse
      paged(%t : memref<?x?xi32>, %l : memref<?xi32>)
      {causal, config = #flash.config<block_m = 64, block_n = 64, warpgroups = 1>}
      : !q, !kv, !kv -> !q, memref<?x32x?xf32>
  return
}

// RUN: flash-opt %s -split-input-file -flash-tile | FileCheck %s
// RUN: flash-opt %s -split-input-file -flash-tile -flash-fuse -convert-flash-tiles-to-linalg | FileCheck %s --check-prefix=CPU
// RUN: not flash-opt %s -split-input-file -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu 2>&1 >/dev/null | FileCheck %s --check-prefix=GPU

// GQA packing: one program per (batch, K/V head), ceil(G * seq_q / 64)
// query tiles; Q, O and LSE viewed batch x H_kv x G x seq [x D] and read
// and written `grouped` (the tile's rows run through the G = 4 heads'
// queries); K and V of the program's own K/V head; the causal mask takes
// each row as query r % seq_q.
// CHECK-LABEL: func.func @pack
// CHECK-SAME: flash.pack_gqa
// CHECK: %[[G:.*]] = arith.divui %{{.*}}, %{{.*}} : index
// CHECK: %[[SEQQ:.*]] = memref.dim %arg0, %c2
// CHECK: %[[KVH:.*]] = memref.dim %arg1, %c1
// CHECK: %[[ROWS:.*]] = arith.muli %[[SEQQ]], %[[G]] : index
// CHECK: %[[TILES:.*]] = arith.ceildivui %[[ROWS]], %c64 : index
// CHECK: %[[BH:.*]] = arith.muli %{{.*}}, %[[KVH]] : index
// CHECK: flash.grid %[[TILES]], %[[BH]] {
// CHECK: %[[P:.*]] = flash.program_id 1
// CHECK: %[[B:.*]] = arith.divui %[[P]], %[[KVH]] : index
// CHECK: %[[H:.*]] = arith.remui %[[P]], %[[KVH]] : index
// CHECK: %[[QV:.*]] = memref.expand_shape %arg0 {{\[}}[0], [1, 2], [3], [4]] output_shape [%{{.*}}, 8, 4, %{{.*}}, 128] : memref<?x32x?x128xbf16> into memref<?x8x4x?x128xbf16>
// CHECK: %[[OV:.*]] = memref.expand_shape %arg3
// CHECK: %[[LV:.*]] = memref.expand_shape %arg4 {{\[}}[0], [1, 2], [3]] output_shape [%{{.*}}, 8, 4, %{{.*}}] : memref<?x32x?xf32> into memref<?x8x4x?xf32>
// CHECK: flash.load_tile %[[QV]][%[[B]], %[[H]], %{{.*}}] grouped : memref<?x8x4x?x128xbf16> -> tensor<64x128xbf16>
// CHECK: scf.for
// CHECK: flash.load_tile %arg1[%[[B]], %[[H]], %{{.*}}] : memref<?x8x?x128xbf16>
// CHECK: flash.mask %{{.*}} causal grouped_rows
// CHECK: flash.store_tile %{{.*}}, %[[OV]][%[[B]], %[[H]], %{{.*}}] grouped
// CHECK: flash.store_tile %{{.*}}, %[[LV]][%[[B]], %[[H]], %{{.*}}] grouped

// On the CPU path a grouped row r is (r / seq, r % seq) of its group, and
// only the group's G * seq rows exist.
// CPU-LABEL: func.func @pack
// CPU: %[[SEQ:.*]] = memref.dim %{{.*}}, %c3 : memref<?x8x4x?x128xbf16>
// CPU-NEXT: %[[GROUP_ROWS:.*]] = arith.muli %[[SEQ]], %c4 : index
// CPU: arith.cmpi ult, %{{.*}}, %[[GROUP_ROWS]] : index
// CPU: %[[SEQ2:.*]] = memref.dim %{{.*}}, %c3 : memref<?x8x4x?x128xbf16>
// CPU-NEXT: %[[G:.*]] = arith.divui %{{.*}}, %[[SEQ2]] : index
// CPU-NEXT: %[[I:.*]] = arith.remui %{{.*}}, %[[SEQ2]] : index
// CPU-NEXT: memref.load %{{.*}}[%{{.*}}, %{{.*}}, %[[G]], %[[I]], %{{.*}}] : memref<?x8x4x?x128xbf16>
// GPU: error: flash-to-gpu: pack_gqa is lowered to the GPU as a decoding kernel: give flash.attention splits(...)
// GPU-NOT: pack_split_paged
// GPU: error: flash-to-gpu: pack_gqa is lowered to the GPU as a decoding kernel
!q = memref<?x32x?x128xbf16>
!kv = memref<?x8x?x128xbf16>
func.func @pack(%q: !q, %k: !kv, %v: !kv, %o: !q, %lse: memref<?x32x?xf32>) {
  flash.attention %q, %k, %v -> %o, lse %lse
      {causal, pack_gqa, config = #flash.config<block_m = 64, block_n = 64, warpgroups = 1>}
      : !q, !kv, !kv -> !q, memref<?x32x?xf32>
  return
}

// -----

// With split-KV over a paged cache and dynamic head counts: a dynamic G
// views the heads through their strides (the head stride times G for the
// K/V heads: MLIR 22's -expand-strided-metadata crashes on an
// expand_shape into two dynamic sizes); the splits' scratch slices are
// grouped the same way, and the combine runs over the same (batch, K/V
// head) programs.
// CHECK-LABEL: func.func @pack_split_paged
// CHECK-SAME: flash.pack_gqa
// CHECK: %[[G:.*]] = arith.divui
// CHECK: flash.grid %{{.*}}, %{{.*}}, %{{.*}} {
// CHECK: %[[BASE:.*]], %[[OFF:.*]], %{{.*}}:4, %[[STR:.*]]:4 = memref.extract_strided_metadata %arg0
// CHECK: %[[KVSTRIDE:.*]] = arith.muli %[[STR]]#1, %[[G]] : index
// CHECK: memref.reinterpret_cast %[[BASE]] to offset: [%[[OFF]]], sizes: [%{{.*}}, %{{.*}}, %[[G]], %{{.*}}, 128], strides: [%[[STR]]#0, %[[KVSTRIDE]], %[[STR]]#1, %[[STR]]#2, %[[STR]]#3]
// CHECK: %[[S:.*]] = flash.program_id 2
// CHECK: memref.subview %arg7[%[[S]], 0, 0, 0, 0]
// CHECK: memref.reinterpret_cast {{.*}} to memref<?x?x?x?x128xf32, strided<[?, ?, ?, ?, ?], offset: ?>>
// CHECK: flash.store_tile %{{.*}} grouped : tensor<64x128xf32>
// CHECK: flash.store_tile %{{.*}} grouped : tensor<64xf32>
// CHECK: flash.grid
// CHECK: flash.load_tile %{{.*}} grouped : memref<?x?x?x?x128xf32
// CHECK: flash.merge_split
// CHECK: flash.store_tile %{{.*}} grouped : tensor<64x128xbf16>
!q = memref<?x?x?x128xbf16>
!kv = memref<?x?x64x128xbf16, strided<[?, ?, ?, 1]>>
func.func @pack_split_paged(%q: !q, %k: !kv, %v: !kv, %o: !q,
                            %lse: memref<?x?x?xf32>, %t: memref<?x?xi32>,
                            %l: memref<?xi32>, %po: memref<?x?x?x?x128xf32>,
                            %pl: memref<?x?x?x?xf32>) {
  flash.attention %q, %k, %v -> %o, lse %lse
      paged(%t : memref<?x?xi32>, %l : memref<?xi32>)
      splits(%po : memref<?x?x?x?x128xf32>, %pl : memref<?x?x?x?xf32>)
      {causal, pack_gqa, config = #flash.config<block_m = 64, block_n = 64, warpgroups = 1>}
      : !q, !kv, !kv -> !q, memref<?x?x?xf32>
  return
}

// -----

// Sinks with packing: a grouped tile's rows each take their head's sink,
// read through a view of the sinks with stride 0 across batch and queries,
// and folded in as one more split of output 0; the finalize takes none.
// CHECK-LABEL: func.func @pack_sinks
// CHECK: flash.grid
// CHECK: scf.for
// CHECK: %[[BASE:.*]], %[[OFF:.*]], %{{.*}}, %[[STRIDE:.*]] = memref.extract_strided_metadata %arg5 : memref<32xf32>
// CHECK: %[[GSTRIDE:.*]] = arith.muli %[[STRIDE]], %{{.*}} : index
// CHECK: %[[VIEW:.*]] = memref.reinterpret_cast %[[BASE]] to offset: [%[[OFF]]], sizes: [1, %{{.*}}, %{{.*}}, %{{.*}}], strides: [0, %[[GSTRIDE]], %[[STRIDE]], 0] : memref<f32> to memref<1x?x?x?xf32, strided<[0, ?, ?, 0], offset: ?>>
// CHECK: %[[SINKS:.*]] = flash.load_tile %[[VIEW]][%{{.*}}, %{{.*}}, %{{.*}}] grouped : memref<1x?x?x?xf32, strided<[0, ?, ?, 0], offset: ?>> -> tensor<64xf32>
// CHECK: %[[A:.*]], %[[M:.*]], %[[L:.*]] = flash.merge_split %{{.*}}, %[[SINKS]] into
// CHECK: flash.finalize %[[A]], %[[M]], %[[L]] : tensor<64x128xf32>, tensor<64xf32>
!q = memref<?x32x?x128xbf16>
!kv = memref<?x8x?x128xbf16>
func.func @pack_sinks(%q: !q, %k: !kv, %v: !kv, %o: !q, %lse: memref<?x32x?xf32>,
                      %sinks: memref<32xf32>) {
  flash.attention %q, %k, %v -> %o, lse %lse sinks(%sinks : memref<32xf32>)
      {causal, pack_gqa, config = #flash.config<block_m = 64, block_n = 64, warpgroups = 1>}
      : !q, !kv, !kv -> !q, memref<?x32x?xf32>
  return
}

// -----

// Mods with packing: flash.mod_scores' grouped form, from the group's
// first query head (K/V head times G), rows per head the step's queries,
// over a paged cache seq_q the step's queries plus the cache's offset; the
// window's key tiles are skipped from before the step's first position.
// CHECK-LABEL: func.func @pack_mods_paged
// CHECK: %[[G:.*]] = arith.divui
// CHECK: %[[SEQQ:.*]] = memref.dim %arg0, %c2
// CHECK: flash.grid
// CHECK: %[[KVH:.*]] = arith.remui
// CHECK: %[[EXCESS:.*]] = arith.subi %{{.*}}, %[[SEQQ]] : index
// CHECK-NEXT: %[[OFFSET:.*]] = arith.maxsi %[[EXCESS]], %{{.*}} : index
// CHECK-NEXT: %[[MODSEQQ:.*]] = arith.addi %[[SEQQ]], %[[OFFSET]] : index
// CHECK: %[[REACH:.*]] = arith.subi %[[OFFSET]], %c100 : index
// CHECK: %[[FIRSTHEAD:.*]] = arith.muli %[[KVH]], %[[G]] : index
// CHECK: scf.for
// CHECK: flash.mod_scores %{{.*}}, %{{.*}}, %[[FIRSTHEAD]], %{{.*}}, %{{.*}}, %[[MODSEQQ]], %{{.*}} grouped(%[[SEQQ]], %[[G]])
!q = memref<?x32x?x128xbf16>
!kv = memref<?x8x64x128xbf16, strided<[?, ?, ?, 1]>>
func.func @pack_mods_paged(%q: !q, %k: !kv, %v: !kv, %o: !q,
                           %t: memref<?x?xi32>, %l: memref<?xi32>) {
  flash.attention %q, %k, %v -> %o
      paged(%t : memref<?x?xi32>, %l : memref<?xi32>)
      {causal, pack_gqa, config = #flash.config<block_m = 64, block_n = 64, warpgroups = 1>}
      : !q, !kv, !kv -> !q
    mask_mod {
    ^bb0(%b: index, %h: index, %qi: index, %kv: index):
      %w = arith.constant 100 : index
      %reach = arith.addi %kv, %w : index
      %in = arith.cmpi uge, %reach, %qi : index
      flash.yield %in : i1
    }
  return
}

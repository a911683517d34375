// RUN: flash-opt %s -split-input-file -flash-tile | FileCheck %s

// The backward pass: three grids. Deltas and a cleared f32 dQ accumulator
// per query tile; per key tile and K/V head, a loop over the group's query
// heads and, inside, over the query tiles from the first one that sees the
// key tile, recomputing P from the LSE; dQ rounded from the accumulator.
// CHECK-LABEL: func.func @causal_gqa
// CHECK-SAME: (%[[Q:[^:]*]]: memref<?x?x?x64xbf16>, %[[K:[^:]*]]: memref<?x?x?x64xbf16>, %[[V:[^:]*]]: memref<?x?x?x64xbf16>, %[[O:[^:]*]]: memref<?x?x?x64xbf16>, %[[DO:[^:]*]]: memref<?x?x?x64xbf16>, %[[LSE:[^:]*]]: memref<?x?x?xf32>, %[[DQARG:[^:]*]]: memref<?x?x?x64xbf16>, %[[DKARG:[^:]*]]: memref<?x?x?x64xbf16>, %[[DVARG:[^:]*]]: memref<?x?x?x64xbf16>)
// CHECK-SAME: attributes {flash.config = #flash.config<block_m = 64, block_n = 32>}
// CHECK-DAG: %[[B:.*]] = memref.dim %[[Q]], %c0
// CHECK-DAG: %[[H:.*]] = memref.dim %[[Q]], %c1
// CHECK-DAG: %[[HKV:.*]] = memref.dim %[[K]], %c1
// CHECK-DAG: %[[G:.*]] = arith.divui %[[H]], %[[HKV]]
// CHECK-DAG: %[[NQ:.*]] = memref.dim %[[Q]], %c2
// CHECK-DAG: %[[NK:.*]] = memref.dim %[[K]], %c2
// CHECK: %[[DELTA:.*]] = memref.alloc(%[[B]], %[[H]], %[[NQ]]) : memref<?x?x?xf32>
// CHECK: %[[ACC:.*]] = memref.alloc(%[[B]], %[[H]], %[[NQ]]) : memref<?x?x?x64xf32>
// CHECK: %[[QTILES:.*]] = arith.ceildivui %[[NQ]], %c64
// CHECK: %[[BH:.*]] = arith.muli %[[B]], %[[H]]
// CHECK: %[[BHKV:.*]] = arith.muli %[[B]], %[[HKV]]
// CHECK: flash.grid %[[QTILES]], %[[BH]] {
// CHECK:   %[[OT:.*]] = flash.load_tile %[[O]]
// CHECK:   %[[DOT:.*]] = flash.load_tile %[[DO]]
// CHECK:   %[[RD:.*]] = flash.row_dot %[[DOT]], %[[OT]] : tensor<64x64xbf16> -> tensor<64xf32>
// CHECK:   flash.store_tile %[[RD]], %[[DELTA]]
// CHECK:   flash.store_tile %{{.*}}, %[[ACC]]{{.*}} : tensor<64x64xf32> -> memref<?x?x?x64xf32>
// CHECK: }
// CHECK: %[[KTILES:.*]] = arith.ceildivui %[[NK]], %c32
// CHECK: flash.grid %[[KTILES]], %[[BHKV]] {
// CHECK:   %[[COL:.*]] = arith.muli %{{.*}}, %c32{{[_0-9]*}}
// CHECK:   %[[KVH:.*]] = arith.remui %{{.*}}, %[[HKV]]
// CHECK:   %[[KT:.*]] = flash.load_tile %[[K]][%{{.*}}, %[[KVH]], %[[COL]]] : memref<?x?x?x64xbf16> -> tensor<32x64xbf16>
// CHECK:   %[[VT:.*]] = flash.load_tile %[[V]][%{{.*}}, %[[KVH]], %[[COL]]]
// CHECK:   %[[SHIFT:.*]] = arith.subi %[[NK]], %[[NQ]]
// CHECK:   %[[FIRST:.*]] = arith.subi %[[COL]], %[[SHIFT]]
// CHECK:   %[[CLAMPED:.*]] = arith.maxsi %[[FIRST]], %c0
// CHECK:   %[[TILE:.*]] = arith.divui %[[CLAMPED]], %c64{{[_0-9]*}}
// CHECK:   %[[START:.*]] = arith.muli %[[TILE]], %c64{{[_0-9]*}}
// CHECK:   %[[GRADS:.*]]:2 = scf.for %[[MEMBER:.*]] = %c0 to %[[G]] step %c1 iter_args(
// CHECK:     %[[HEAD:.*]] = arith.addi %{{.*}}, %[[MEMBER]]
// CHECK:     scf.for %[[ROW:.*]] = %[[START]] to %[[NQ]] step %c64{{[_0-9]*}} iter_args(%[[DKA:.*]] = %{{.*}}, %[[DVA:.*]] = %{{.*}})
// CHECK:       %[[QT:.*]] = flash.load_tile %[[Q]][%{{.*}}, %[[HEAD]], %[[ROW]]]
// CHECK:       %[[DOT2:.*]] = flash.load_tile %[[DO]][%{{.*}}, %[[HEAD]], %[[ROW]]]
// CHECK:       %[[LSET:.*]] = flash.load_tile %[[LSE]][%{{.*}}, %[[HEAD]], %[[ROW]]] : memref<?x?x?xf32> -> tensor<64xf32>
// CHECK:       %[[DT:.*]] = flash.load_tile %[[DELTA]][%{{.*}}, %[[HEAD]], %[[ROW]]] : memref<?x?x?xf32> -> tensor<64xf32>
// CHECK:       %[[S:.*]] = flash.dot %[[QT]], %[[KT]], %{{.*}} transpose_b : tensor<64x64xbf16>, tensor<32x64xbf16> -> tensor<64x32xf32>
// CHECK:       %[[SM:.*]] = flash.mask %[[S]], %[[ROW]], %[[COL]], %[[NQ]], %[[NK]] causal
// CHECK:       %[[P:.*]] = flash.softmax_recompute %[[SM]], %[[LSET]] {scale = 1.250000e-01 : f32} : tensor<64x32xf32>, tensor<64xf32>
// CHECK:       %[[PB:.*]] = arith.truncf %[[P]] : tensor<64x32xf32> to tensor<64x32xbf16>
// CHECK:       %[[DV:.*]] = flash.dot %[[PB]], %[[DOT2]], %[[DVA]] transpose_a : tensor<64x32xbf16>, tensor<64x64xbf16> -> tensor<32x64xf32>
// CHECK:       %[[DP:.*]] = flash.dot %[[DOT2]], %[[VT]], %{{.*}} transpose_b
// CHECK:       %[[DS:.*]] = flash.softmax_grad %[[P]], %[[DP]], %[[DT]] : tensor<64x32xf32>, tensor<64xf32>
// CHECK:       %[[DSB:.*]] = arith.truncf %[[DS]]
// CHECK:       %[[DK:.*]] = flash.dot %[[DSB]], %[[QT]], %[[DKA]] transpose_a
// CHECK:       %[[DQP:.*]] = flash.dot %[[DSB]], %[[KT]], %{{.*}} : tensor<64x32xbf16>, tensor<32x64xbf16> -> tensor<64x64xf32>
// CHECK:       flash.store_tile %[[DQP]], %[[ACC]][%{{.*}}, %[[HEAD]], %[[ROW]]] accumulate
// CHECK:       scf.yield %[[DK]], %[[DV]]
// CHECK:   %[[DKS:.*]] = arith.mulf %[[GRADS]]#0, %{{.*}} : tensor<32x64xf32>
// CHECK:   %[[DKB:.*]] = arith.truncf %[[DKS]]
// CHECK:   flash.store_tile %[[DKB]], %[[DKARG]][%{{.*}}, %[[KVH]], %[[COL]]]
// CHECK:   %[[DVB:.*]] = arith.truncf %[[GRADS]]#1
// CHECK:   flash.store_tile %[[DVB]], %[[DVARG]][%{{.*}}, %[[KVH]], %[[COL]]]
// CHECK: }
// CHECK: flash.grid %[[QTILES]], %[[BH]] {
// CHECK:   %[[AT:.*]] = flash.load_tile %[[ACC]]{{.*}} : memref<?x?x?x64xf32> -> tensor<64x64xf32>
// CHECK:   %[[DQS:.*]] = arith.mulf %[[AT]], %{{.*}} : tensor<64x64xf32>
// CHECK:   %[[DQB:.*]] = arith.truncf %[[DQS]]
// CHECK:   flash.store_tile %[[DQB]], %[[DQARG]]
// CHECK-NOT: flash.attention_backward
!t = memref<?x?x?x64xbf16>
func.func @causal_gqa(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: memref<?x?x?xf32>,
                      %dq: !t, %dk: !t, %dv: !t) {
  flash.attention_backward %q, %k, %v, %o, %do, %lse -> %dq, %dk, %dv
      {causal, config = #flash.config<block_m = 64, block_n = 32>}
      : !t, !t, !t, !t, !t, memref<?x?x?xf32> -> !t, !t, !t
  return
}

// -----

// Non-causal: every query tile, from row 0. Packed: each grid's program
// reads its sequence's rows, the key grid as many key tiles as max_k needs.
// CHECK-LABEL: func.func @packed
// CHECK-SAME: %[[MQ:[^:]*]]: index, %[[MK:[^:]*]]: index)
// CHECK: flash.grid
// CHECK:   memref.load
// CHECK:   scf.if
// CHECK:     memref.subview
// CHECK:     flash.row_dot
// CHECK: %[[KTILES:.*]] = arith.ceildivui %[[MK]], %c32
// CHECK: flash.grid %[[KTILES]]
// CHECK:   memref.load
// CHECK:   %[[IN:.*]] = arith.cmpi ult
// CHECK:   scf.if %[[IN]] {
// CHECK:     scf.for
// CHECK:       scf.for %{{.*}} = %c0 to
// CHECK-NOT:     causal
// CHECK:         flash.softmax_recompute
// CHECK: flash.grid
// CHECK:   scf.if
// CHECK:     flash.store_tile
!t = memref<1x4x?x64xbf16>
func.func @packed(%q: !t, %lse: memref<1x4x?xf32>, %cq: memref<?xi32>, %ck: memref<?xi32>,
                  %mq: index, %mk: index) {
  flash.attention_backward %q, %q, %q, %q, %q, %lse -> %q, %q, %q
      packed(%cq : memref<?xi32>, %ck : memref<?xi32>, max_q %mq, max_k %mk)
      {config = #flash.config<block_m = 64, block_n = 32>}
      : !t, !t, !t, !t, !t, memref<1x4x?xf32> -> !t, !t, !t
  return
}

// RUN: flash-opt %s -flash-derive-backward | FileCheck %s --check-prefix=DERIVE
// RUN: flash-opt %s -flash-derive-backward -flash-tile | FileCheck %s
// RUN: flash-opt %s -flash-derive-backward -flash-tile -flash-fuse | FileCheck %s --check-prefix=FUSED

// A forward with soft-capping, a 256-key window and sinks; the backward
// -flash-derive-backward adds, and its tile program.

// DERIVE-LABEL: func.func @softcap_window_sink(
// DERIVE-LABEL: func.func @softcap_window_sink_backward(
// DERIVE-SAME: %[[Q:[^:]*]]: memref<?x?x?x64xbf16>, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[LSE:[^:]*]]: memref<?x?x?xf32>, %{{.*}}, %{{.*}}, %[[DV:[^:]*]]: memref<?x?x?x64xbf16>, %[[S:[^:]*]]: memref<?xf32>, %[[DS:[^:]*]]: memref<?xf32>)
// DERIVE: flash.attention_backward %[[Q]], {{.*}}, %[[LSE]] -> {{.*}}, %[[DV]] sinks(%[[S]] : memref<?xf32> -> %[[DS]] : memref<?xf32>) {causal, scale = 1.250000e-01 : f32}
// DERIVE: score_mod {
// DERIVE:   math.tanh
// DERIVE: } mask_mod {
// DERIVE:   arith.cmpi uge

// The forward's sink joins at flash.finalize.
// CHECK-LABEL: func.func @softcap_window_sink(
// CHECK-SAME: %[[FS:[^:]*]]: memref<?xf32>)
// CHECK: flash.grid
// CHECK:   %[[HEAD:.*]] = arith.remui
// CHECK:   flash.mod_scores
// CHECK:   %[[SINK:.*]] = memref.load %[[FS]][%[[HEAD]]]
// CHECK:   flash.finalize %{{.*}}#0, %{{.*}}#1, %{{.*}}#2 sink %[[SINK]] :

// The backward: the delta grid, the key-tile grid with the mods on the
// recomputed logits (the softmax then takes scale 1), dS through the score
// mod's derivative, the query loop ending 256 + 64 rows past the key tile;
// the dQ grid; and the sinks' grid, one program per head.
// CHECK-LABEL: func.func @softcap_window_sink_backward(
// CHECK-SAME: %[[DSINKS:[^:]*]]: memref<?xf32>)
// CHECK: flash.grid
// CHECK:   flash.row_dot
// CHECK: flash.grid
// CHECK:   %[[COL:.*]] = arith.muli
// CHECK:   %[[END:.*]] = arith.addi %[[COL]], %c320
// CHECK:   %[[ROWEND:.*]] = arith.minsi %[[END]], %{{.*}}
// CHECK:   scf.for
// CHECK:     scf.for %[[ROW:.*]] = %{{.*}} to %[[ROWEND]] step %c64
// CHECK:       %[[S:.*]] = flash.dot
// CHECK:       %[[X:.*]] = flash.mod_scores %[[S]], {{.*}} {scale = 1.250000e-01 : f32}
// CHECK:       flash.mask %[[X]]
// CHECK:       %[[P:.*]] = flash.softmax_recompute %{{.*}}, %{{.*}} : tensor<64x64xf32>
// CHECK:       %[[DSM:.*]] = flash.softmax_grad %[[P]]
// CHECK:       flash.mod_scores_grad %[[DSM]], %[[S]], {{.*}} {scale = 1.250000e-01 : f32} : tensor<64x64xf32> score_mod {
// CHECK:         math.tanh
// CHECK-NOT:     arith.cmpi
// CHECK:         flash.yield
// CHECK: flash.grid
// CHECK: flash.grid %{{.*}} {
// CHECK:   %[[H:.*]] = flash.program_id 0
// CHECK:   %[[SK:.*]] = memref.load %{{.*}}[%[[H]]] : memref<?xf32>
// CHECK:   %[[TOTAL:.*]] = scf.for {{.*}} -> (f32)
// CHECK:     scf.for {{.*}} -> (f32)
// CHECK:       flash.sink_grad %{{.*}}, %{{.*}}, %[[SK]], %{{.*}}, %{{.*}} : tensor<64xf32>
// CHECK:   memref.store %[[TOTAL]], %[[DSINKS]][%[[H]]] : memref<?xf32>

// -flash-fuse splits the query loop; both halves keep the mods and their
// derivative.
// FUSED-LABEL: func.func @softcap_window_sink_backward(
// FUSED: flash.mod_scores
// FUSED: flash.mod_scores_grad
// FUSED: flash.mod_scores
// FUSED: flash.mod_scores_grad

!t = memref<?x?x?x64xbf16>
!l = memref<?x?x?xf32>
func.func @softcap_window_sink(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !l, %s: memref<?xf32>) {
  flash.attention %q, %k, %v -> %o, lse %lse sinks(%s : memref<?xf32>) {causal, scale = 0.125 : f32}
      : !t, !t, !t -> !t, !l
    score_mod {
    ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
      %c = arith.constant 30.0 : f32
      %y = arith.divf %x, %c : f32
      %t = math.tanh %y : f32
      %r = arith.mulf %t, %c : f32
      flash.yield %r : f32
    }
    mask_mod {
    ^bb0(%b: index, %h: index, %i: index, %j: index):
      %w = arith.constant 256 : index
      %jw = arith.addi %j, %w : index
      %in = arith.cmpi uge, %jw, %i : index
      flash.yield %in : i1
    }
  return
}

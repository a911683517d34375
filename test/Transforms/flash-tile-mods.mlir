// RUN: flash-opt %s -split-input-file -flash-tile | FileCheck %s
// RUN: flash-opt %s -split-input-file -flash-tile-pipeline | FileCheck %s --check-prefix=FUSED

// The mods survive tiling as flash.mod_scores on each key tile's scores:
// the logits scaled there (so the softmax takes scale 1), the regions
// cloned with the captures, the bounds mask after them.
// CHECK-LABEL: func.func @alibi_window
// CHECK-SAME: %[[SLOPES:[^:]*]]: memref<?xf32>
// CHECK: flash.grid
// CHECK:   %[[PBH:.*]] = flash.program_id 1
// CHECK:   %[[BI:.*]] = arith.divui %[[PBH]], %{{.*}}
// CHECK:   %[[HI:.*]] = arith.remui %[[PBH]], %{{.*}}
// CHECK:   %[[ROW:.*]] = arith.muli
// CHECK:   scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step
// CHECK:     %[[S:.*]] = flash.dot
// CHECK:     %[[X:.*]] = flash.mod_scores %[[S]], %[[BI]], %[[HI]], %[[ROW]], %[[J]], %{{.*}}, %{{.*}} captures(%[[SLOPES]] : memref<?xf32>) {scale = 1.250000e-01 : f32} : tensor<64x32xf32> score_mod {
// CHECK:     ^bb0(%{{.*}}: f32, %{{.*}}: index, %[[H:.*]]: index, %{{.*}}: index, %{{.*}}: index, %[[SL:.*]]: memref<?xf32>):
// CHECK:       memref.load %[[SL]][%[[H]]]
// CHECK:       flash.yield %{{.*}} : f32
// CHECK:     } mask_mod {
// CHECK:       flash.yield %{{.*}} : i1
// CHECK:     }
// CHECK:     %[[M:.*]] = flash.mask %[[X]], %[[ROW]], %[[J]], %{{.*}}, %{{.*}} causal
// CHECK:     flash.softmax_update %[[M]], %{{.*}}, %{{.*}} : tensor<64x32xf32>
// CHECK-NOT: flash.attention

// After -flash-fuse both key loops (without and with the bounds mask)
// apply the mods; the softmax's scale is log2(e) alone.
// FUSED-LABEL: func.func @alibi_window
// FUSED: scf.for
// FUSED:   flash.mod_scores {{.*}} {scale = 1.250000e-01 : f32}
// FUSED-NOT: flash.mask
// FUSED:   flash.softmax_update {{.*}} base2 {scale = 1.44269502 : f32}
// FUSED: scf.for
// FUSED:   flash.mod_scores {{.*}} {scale = 1.250000e-01 : f32}
// FUSED:   flash.mask
// FUSED:   flash.softmax_update {{.*}} base2 {scale = 1.44269502 : f32}
!t = memref<?x?x?x64xbf16>
func.func @alibi_window(%q: !t, %k: !t, %v: !t, %o: !t, %slopes: memref<?xf32>) {
  flash.attention %q, %k, %v -> %o captures(%slopes : memref<?xf32>)
      {causal, config = #flash.config<block_m = 64, block_n = 32>}
      : !t, !t, !t -> !t
    score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index,
         %sl: memref<?xf32>):
      %m = memref.load %sl[%h] : memref<?xf32>
      %r = arith.addf %s, %m : f32
      flash.yield %r : f32
    }
    mask_mod {
    ^bb0(%b: index, %h: index, %qi: index, %kv: index, %sl: memref<?xf32>):
      %w = arith.constant 100 : index
      %reach = arith.addi %kv, %w : index
      %in = arith.cmpi uge, %reach, %qi : index
      flash.yield %in : i1
    }
  return
}

// -----

// Packed sequences: the regions' batch index is the sequence.
// CHECK-LABEL: func.func @packed_mask
// CHECK: flash.grid
// CHECK:   %[[PBH:.*]] = flash.program_id 1
// CHECK:   %[[SEQ:.*]] = arith.divui %[[PBH]], %{{.*}}
// CHECK:   scf.if
// CHECK:     flash.mod_scores %{{.*}}, %[[SEQ]], %{{.*}} mask_mod {
!p = memref<1x?x?x64xbf16>
func.func @packed_mask(%q: !p, %k: !p, %v: !p, %o: !p, %cq: memref<?xi32>,
                       %ck: memref<?xi32>, %max: index) {
  flash.attention %q, %k, %v -> %o
      packed(%cq : memref<?xi32>, %ck : memref<?xi32>, max_q %max)
      : !p, !p, !p -> !p
    mask_mod {
    ^bb0(%b: index, %h: index, %qi: index, %kv: index):
      %even = arith.constant 1 : index
      %bit = arith.andi %kv, %even : index
      %zero = arith.constant 0 : index
      %keep = arith.cmpi eq, %bit, %zero : index
      flash.yield %keep : i1
    }
  return
}

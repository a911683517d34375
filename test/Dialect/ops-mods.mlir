// RUN: flash-opt %s -split-input-file | flash-opt -split-input-file | FileCheck %s
// RUN: flash-opt %s -split-input-file -mlir-print-op-generic | flash-opt -split-input-file | FileCheck %s

// Soft-capping and a sliding window, the regions of flash.attention.
// CHECK-LABEL: func.func @softcap_window
// CHECK: flash.attention %{{.*}}, %{{.*}}, %{{.*}} -> %{{.*}} {causal}
// CHECK-SAME: score_mod {
// CHECK: ^bb0(%[[S:.*]]: f32, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index, %{{.*}}: index):
// CHECK: math.tanh
// CHECK: flash.yield %{{.*}} : f32
// CHECK: } mask_mod {
// CHECK: ^bb0(%{{.*}}: index, %{{.*}}: index, %[[QI:.*]]: index, %[[KV:.*]]: index):
// CHECK: arith.subi %[[QI]], %[[KV]] : index
// CHECK: flash.yield %{{.*}} : i1
!t = memref<?x?x?x64xbf16>
func.func @softcap_window(%q: !t, %k: !t, %v: !t, %o: !t) {
  flash.attention %q, %k, %v -> %o {causal} : !t, !t, !t -> !t
    score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
      %cap = arith.constant 30.0 : f32
      %x = arith.divf %s, %cap : f32
      %t = math.tanh %x : f32
      %r = arith.mulf %t, %cap : f32
      flash.yield %r : f32
    }
    mask_mod {
    ^bb0(%b: index, %h: index, %qi: index, %kv: index):
      %w = arith.constant 256 : index
      %d = arith.subi %qi, %kv : index
      %in = arith.cmpi slt, %d, %w : index
      flash.yield %in : i1
    }
  return
}

// -----

// ALiBi: a capture (the per-head slopes) read in the score mod.
// CHECK-LABEL: func.func @alibi
// CHECK-SAME: %[[SLOPES:[^:]*]]: memref<?xf32>)
// CHECK: flash.attention {{.*}} captures(%[[SLOPES]] : memref<?xf32>)
// CHECK: score_mod {
// CHECK: ^bb0(%{{.*}}: f32, %{{.*}}: index, %[[H:.*]]: index, %{{.*}}: index, %{{.*}}: index, %[[SL:.*]]: memref<?xf32>):
// CHECK: memref.load %[[SL]][%[[H]]] : memref<?xf32>
// CHECK-NOT: mask_mod
!t = memref<?x?x?x64xbf16>
func.func @alibi(%q: !t, %k: !t, %v: !t, %o: !t, %slopes: memref<?xf32>) {
  flash.attention %q, %k, %v -> %o captures(%slopes : memref<?xf32>)
      : !t, !t, !t -> !t
    score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index,
         %sl: memref<?xf32>):
      %m = memref.load %sl[%h] : memref<?xf32>
      %d = arith.subi %kv, %qi : index
      %di = arith.index_cast %d : index to i64
      %df = arith.sitofp %di : i64 to f32
      %bias = arith.mulf %m, %df : f32
      %r = arith.addf %s, %bias : f32
      flash.yield %r : f32
    }
  return
}

// -----

// The tile-level op: document ids compared in a mask mod.
// CHECK-LABEL: func.func @tile_document_mask
// CHECK: flash.mod_scores %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} captures(%{{.*}} : memref<?xi32>) {scale = 1.250000e-01 : f32} : tensor<64x32xf32> mask_mod {
// CHECK: memref.load
// CHECK: arith.cmpi eq
func.func @tile_document_mask(%s: tensor<64x32xf32>, %i: index, %doc: memref<?xi32>) -> tensor<64x32xf32> {
  %r = flash.mod_scores %s, %i, %i, %i, %i, %i, %i captures(%doc : memref<?xi32>)
      {scale = 0.125 : f32} : tensor<64x32xf32>
    mask_mod {
    ^bb0(%b: index, %h: index, %qi: index, %kv: index, %d: memref<?xi32>):
      %dq = memref.load %d[%qi] : memref<?xi32>
      %dk = memref.load %d[%kv] : memref<?xi32>
      %same = arith.cmpi eq, %dq, %dk : i32
      flash.yield %same : i1
    }
  return %r : tensor<64x32xf32>
}

// -----

// The grouped form (GQA packing): rows per head and the group's heads.
// CHECK-LABEL: func.func @tile_grouped_rows
// CHECK: flash.mod_scores %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} grouped(%{{.*}}, %{{.*}}) {scale = 1.250000e-01 : f32} : tensor<64x32xf32> score_mod {
func.func @tile_grouped_rows(%s: tensor<64x32xf32>, %i: index, %r: index,
                             %g: index) -> tensor<64x32xf32> {
  %x = flash.mod_scores %s, %i, %i, %i, %i, %i, %i grouped(%r, %g)
      {scale = 0.125 : f32} : tensor<64x32xf32>
    score_mod {
    ^bb0(%v: f32, %b: index, %h: index, %qi: index, %kv: index):
      flash.yield %v : f32
    }
  return %x : tensor<64x32xf32>
}

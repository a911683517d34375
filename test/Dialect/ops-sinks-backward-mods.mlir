// RUN: flash-opt %s | flash-opt | FileCheck %s
// RUN: flash-opt %s -mlir-print-op-generic | flash-opt | FileCheck %s

// Attention sinks on the forward, and the backward with the forward's
// sinks, captures and mods; the tile ops of their backward.

!t = memref<?x?x?x64xbf16>
!l = memref<?x?x?xf32>
// CHECK-LABEL: func.func @sinks
// CHECK: flash.attention %{{.*}} -> %{{.*}}, lse %{{.*}} sinks(%{{.*}} : memref<?xf32>) {causal}
func.func @sinks(%q: !t, %k: !t, %v: !t, %o: !t, %lse: !l, %s: memref<?xf32>) {
  flash.attention %q, %k, %v -> %o, lse %lse sinks(%s : memref<?xf32>) {causal}
      : !t, !t, !t -> !t, !l
  return
}

// CHECK-LABEL: func.func @backward_mods_sinks
// CHECK: flash.attention_backward %{{.*}} -> %{{.*}}, %{{.*}}, %{{.*}} captures(%{{.*}} : memref<?xf32>) sinks(%{{.*}} : memref<?xf32> -> %{{.*}} : memref<?xf32>) {causal}
// CHECK: score_mod {
// CHECK:   math.tanh
// CHECK: } mask_mod {
// CHECK:   arith.cmpi
func.func @backward_mods_sinks(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !l,
                               %dq: !t, %dk: !t, %dv: !t, %bias: memref<?xf32>,
                               %s: memref<?xf32>, %ds: memref<?xf32>) {
  flash.attention_backward %q, %k, %v, %o, %do, %lse -> %dq, %dk, %dv
      captures(%bias : memref<?xf32>)
      sinks(%s : memref<?xf32> -> %ds : memref<?xf32>) {causal}
      : !t, !t, !t, !t, !t, !l -> !t, !t, !t
    score_mod {
    ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index, %bi: memref<?xf32>):
      %c = memref.load %bi[%h] : memref<?xf32>
      %t = math.tanh %x : f32
      %r = arith.addf %t, %c : f32
      flash.yield %r : f32
    }
    mask_mod {
    ^bb0(%b: index, %h: index, %i: index, %j: index, %bi: memref<?xf32>):
      %in = arith.cmpi ule, %j, %i : index
      flash.yield %in : i1
    }
  return
}

// The forward's block mask table, kept by the backward.
// CHECK-LABEL: func.func @backward_key_ranges
// CHECK: flash.attention_backward {{.*}} captures(%{{.*}}, %{{.*}} : memref<?x?xi32>, memref<?x?x4xi32>) {causal, key_ranges = array<i64: 1, 128>}
func.func @backward_key_ranges(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !l,
                               %dq: !t, %dk: !t, %dv: !t, %doc: memref<?x?xi32>,
                               %r: memref<?x?x4xi32>) {
  flash.attention_backward %q, %k, %v, %o, %do, %lse -> %dq, %dk, %dv
      captures(%doc, %r : memref<?x?xi32>, memref<?x?x4xi32>)
      {causal, key_ranges = array<i64: 1, 128>}
      : !t, !t, !t, !t, !t, !l -> !t, !t, !t
    mask_mod {
    ^bb0(%b: index, %h: index, %i: index, %j: index, %d: memref<?x?xi32>,
         %t: memref<?x?x4xi32>):
      %x = memref.load %d[%b, %i] : memref<?x?xi32>
      %y = memref.load %d[%b, %j] : memref<?x?xi32>
      %same = arith.cmpi eq, %x, %y : i32
      flash.yield %same : i1
    }
  return
}

// CHECK-LABEL: func.func @tile_ops
// CHECK: flash.mod_scores_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.250000e-01 : f32} : tensor<64x32xf32> score_mod {
// CHECK: flash.sink_grad %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<64xf32>
// CHECK: flash.finalize %{{.*}}, %{{.*}}, %{{.*}} sink %{{.*}} base2 : tensor<64x64xf32>, tensor<64xf32>
func.func @tile_ops(%ds: tensor<64x32xf32>, %s: tensor<64x32xf32>, %i: index,
                    %lse: tensor<64xf32>, %delta: tensor<64xf32>, %sink: f32,
                    %acc: tensor<64x64xf32>) -> (f32, tensor<64x32xf32>, tensor<64x64xf32>) {
  %g = flash.mod_scores_grad %ds, %s, %i, %i, %i, %i, %i, %i {scale = 0.125 : f32}
      : tensor<64x32xf32>
    score_mod {
    ^bb0(%x: f32, %b: index, %h: index, %r: index, %c: index):
      %t = math.tanh %x : f32
      flash.yield %t : f32
    }
  %share = flash.sink_grad %lse, %delta, %sink, %i, %i : tensor<64xf32>
  %out, %l = flash.finalize %acc, %lse, %delta sink %sink base2
      : tensor<64x64xf32>, tensor<64xf32>
  return %share, %g, %out : f32, tensor<64x32xf32>, tensor<64x64xf32>
}

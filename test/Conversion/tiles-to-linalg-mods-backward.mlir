// RUN: flash-opt %s -split-input-file -convert-flash-tiles-to-linalg -canonicalize | FileCheck %s

// The score mod's derivative, formed by the chain rule op by op as the
// region is inlined: for 30 tanh(x / 30), (1 - t^2) (1 / 30) 30 with
// x = 0.125 s; the gradient where dS is 0 (a masked key) stays 0.
// CHECK-LABEL: func.func @softcap
// CHECK-DAG: %[[INV:.*]] = arith.constant 0.0333333351 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[SCALE:.*]] = arith.constant 1.250000e-01 : f32
// CHECK-DAG: %[[CAP:.*]] = arith.constant 3.000000e+01 : f32
// CHECK: linalg.generic
// CHECK: ^bb0(%[[DS:.*]]: f32, %[[S:.*]]: f32, %{{.*}}: f32):
// CHECK:   %[[X:.*]] = arith.mulf %[[S]], %[[SCALE]]
// CHECK:   %[[Y:.*]] = arith.divf %[[X]], %[[CAP]]
// CHECK:   %[[T:.*]] = math.tanh %[[Y]]
// CHECK:   %[[T2:.*]] = arith.mulf %[[T]], %[[T]]
// CHECK:   %[[D1:.*]] = arith.subf %[[ONE]], %[[T2]]
// CHECK:   %[[D2:.*]] = arith.mulf %[[D1]], %[[INV]]
// CHECK:   %[[D:.*]] = arith.mulf %[[D2]], %[[CAP]]
// CHECK:   %[[NONE:.*]] = arith.cmpf oeq, %[[DS]], %[[ZERO]]
// CHECK:   %[[G:.*]] = arith.mulf %[[DS]], %[[D]]
// CHECK:   %[[R:.*]] = arith.select %[[NONE]], %[[ZERO]], %[[G]]
// CHECK:   linalg.yield %[[R]]
func.func @softcap(%ds: tensor<4x8xf32>, %s: tensor<4x8xf32>, %b: index, %h: index, %row: index, %col: index, %n: index) -> tensor<4x8xf32> {
  %g = flash.mod_scores_grad %ds, %s, %b, %h, %row, %col, %n, %n {scale = 0.125 : f32}
      : tensor<4x8xf32>
    score_mod {
    ^bb0(%x: f32, %bb: index, %hh: index, %i: index, %j: index):
      %c = arith.constant 30.0 : f32
      %y = arith.divf %x, %c : f32
      %t = math.tanh %y : f32
      %r = arith.mulf %t, %c : f32
      flash.yield %r : f32
    }
  return %g : tensor<4x8xf32>
}

// -----

// exp(x) with a floor of a capture's bias: the derivative follows the
// operand maximumf chose (exp's is exp itself), and an index-only bias
// carries none.
// (With scale 1 the product folds away, and so does the maximumf itself:
// only its derivative is used.)
// CHECK-LABEL: func.func @exp_floor
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: linalg.generic
// CHECK: ^bb0(%[[DS:.*]]: f32, %[[S:.*]]: f32, %{{.*}}: f32):
// CHECK:   %[[E:.*]] = math.exp %[[S]]
// CHECK:   %[[BIAS:.*]] = memref.load
// CHECK:   %[[FIRST:.*]] = arith.cmpf oge, %[[E]], %[[BIAS]]
// CHECK:   %[[D:.*]] = arith.select %[[FIRST]], %[[E]], %[[ZERO]]
// CHECK:   arith.mulf %[[DS]], %[[D]]
func.func @exp_floor(%ds: tensor<4x8xf32>, %s: tensor<4x8xf32>, %b: index, %h: index, %row: index, %col: index, %n: index, %bias: memref<?xf32>) -> tensor<4x8xf32> {
  %g = flash.mod_scores_grad %ds, %s, %b, %h, %row, %col, %n, %n captures(%bias : memref<?xf32>) {scale = 1.0 : f32}
      : tensor<4x8xf32>
    score_mod {
    ^bb0(%x: f32, %bb: index, %hh: index, %i: index, %j: index, %bi: memref<?xf32>):
      %e = math.exp %x : f32
      %c = memref.load %bi[%hh] : memref<?xf32>
      %r = arith.maximumf %e, %c : f32
      flash.yield %r : f32
    }
  return %g : tensor<4x8xf32>
}

// -----

// A sink's share of its gradient: -sum exp(sink - lse) delta over the rows
// inside the sequence.
// CHECK-LABEL: func.func @sink_grad
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["reduction"]
// CHECK:   %[[ROW:.*]] = arith.addi %{{.*}}, %{{.*}} : index
// CHECK:   %[[INSIDE:.*]] = arith.cmpi ult, %[[ROW]], %{{.*}}
// CHECK:   %[[D:.*]] = arith.subf %{{.*}}, %{{.*}} : f32
// CHECK:   %[[P:.*]] = math.exp %[[D]]
// CHECK:   %[[T:.*]] = arith.mulf %[[P]], %{{.*}}
// CHECK:   %[[NEXT:.*]] = arith.subf %{{.*}}, %[[T]]
// CHECK:   arith.select %[[INSIDE]], %[[NEXT]], %{{.*}}
// CHECK: tensor.extract %[[SUM]][] : tensor<f32>
func.func @sink_grad(%lse: tensor<4xf32>, %delta: tensor<4xf32>, %sink: f32, %row: index, %n: index) -> f32 {
  %g = flash.sink_grad %lse, %delta, %sink, %row, %n : tensor<4xf32>
  return %g : f32
}

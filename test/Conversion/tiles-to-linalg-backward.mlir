// RUN: flash-opt %s -convert-flash-tiles-to-linalg | FileCheck %s

// The backward pass's tile ops on the CPU path: delta as a row reduction of
// widened products, P from the LSE with masked logits and rows that saw no
// key at 0, dS = P * (dP - delta), and dV = P^T dO reading `a` transposed.
// CHECK-DAG: #[[TILE:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0)>
// CHECK-DAG: #[[KI:.*]] = affine_map<(d0, d1, d2) -> (d2, d0)>
// CHECK-DAG: #[[KJ:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK-LABEL: func.func @backward_ops
// CHECK-DAG: %[[SCALE:.*]] = arith.constant 1.250000e-01 : f32
// CHECK-DAG: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[FILLED:.*]] = linalg.fill ins(%[[ZERO]] : f32)
// CHECK: %[[DELTA:.*]] = linalg.generic {indexing_maps = [#[[TILE]], #[[TILE]], #[[ROW]]], iterator_types = ["parallel", "reduction"]}
// CHECK-SAME: outs(%[[FILLED]] : tensor<4xf32>)
// CHECK:   arith.extf
// CHECK:   arith.extf
// CHECK:   arith.mulf
// CHECK:   arith.addf
// CHECK: %[[P:.*]] = linalg.generic {indexing_maps = [#[[TILE]], #[[ROW]], #[[TILE]]]
// CHECK: ^bb0(%[[S:.*]]: f32, %[[LSE:.*]]: f32, %{{.*}}: f32):
// CHECK:   %[[MASKED:.*]] = arith.cmpf oeq, %[[S]], %[[NEGINF]]
// CHECK:   %[[EMPTY:.*]] = arith.cmpf oeq, %[[LSE]], %[[NEGINF]]
// CHECK:   %[[HIDDEN:.*]] = arith.ori %[[MASKED]], %[[EMPTY]]
// CHECK:   %[[X:.*]] = arith.mulf %[[S]], %[[SCALE]]
// CHECK:   %[[SHIFTED:.*]] = arith.subf %[[X]], %[[LSE]]
// CHECK:   %[[E:.*]] = math.exp %[[SHIFTED]]
// CHECK:   arith.select %[[HIDDEN]], %[[ZERO]], %[[E]]
// CHECK: linalg.generic {indexing_maps = [#[[TILE]], #[[TILE]], #[[ROW]], #[[TILE]]]
// CHECK-SAME: ins(%[[P]], %{{.*}}, %[[DELTA]] :
// CHECK: ^bb0(%[[PE:.*]]: f32, %[[DPE:.*]]: f32, %[[DE:.*]]: f32, %{{.*}}: f32):
// CHECK:   %[[CENTRED:.*]] = arith.subf %[[DPE]], %[[DE]]
// CHECK:   arith.mulf %[[PE]], %[[CENTRED]]
// CHECK: linalg.generic {indexing_maps = [#[[KI]], #[[KJ]], #{{.*}}], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<4x2xbf16>, tensor<4x8xbf16>) outs(%{{.*}} : tensor<2x8xf32>)
// CHECK-NOT: flash.
func.func @backward_ops(%do: tensor<4x8xbf16>, %o: tensor<4x8xbf16>, %s: tensor<4x2xf32>,
                        %lse: tensor<4xf32>, %dp: tensor<4x2xf32>, %pb: tensor<4x2xbf16>,
                        %acc: tensor<2x8xf32>) -> (tensor<4xf32>, tensor<4x2xf32>, tensor<2x8xf32>) {
  %delta = flash.row_dot %do, %o : tensor<4x8xbf16> -> tensor<4xf32>
  %p = flash.softmax_recompute %s, %lse {scale = 0.125 : f32} : tensor<4x2xf32>, tensor<4xf32>
  %ds = flash.softmax_grad %p, %dp, %delta : tensor<4x2xf32>, tensor<4xf32>
  %dv = flash.dot %pb, %do, %acc transpose_a : tensor<4x2xbf16>, tensor<4x8xbf16> -> tensor<2x8xf32>
  return %delta, %ds, %dv : tensor<4xf32>, tensor<4x2xf32>, tensor<2x8xf32>
}

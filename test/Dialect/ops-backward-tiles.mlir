// RUN: flash-opt %s | flash-opt | FileCheck %s

// The backward pass's tile ops: delta = rowsum(dO * O), P from the LSE,
// dS = P * (dP - delta).
// CHECK-LABEL: func.func @backward_step
// CHECK-SAME: (%[[DO:.*]]: tensor<64x128xbf16>, %[[O:.*]]: tensor<64x128xbf16>, %[[S:.*]]: tensor<64x32xf32>, %[[LSE:.*]]: tensor<64xf32>, %[[DP:.*]]: tensor<64x32xf32>)
// CHECK: %[[D:.*]] = flash.row_dot %[[DO]], %[[O]] : tensor<64x128xbf16> -> tensor<64xf32>
// CHECK: %[[P:.*]] = flash.softmax_recompute %[[S]], %[[LSE]] {scale = 1.250000e-01 : f32} : tensor<64x32xf32>, tensor<64xf32>
// CHECK: %[[P2:.*]] = flash.softmax_recompute %[[S]], %[[LSE]] base2 {scale = 0.180336878 : f32}
// CHECK: %[[DS:.*]] = flash.softmax_grad %[[P]], %[[DP]], %[[D]] : tensor<64x32xf32>, tensor<64xf32>
func.func @backward_step(%do: tensor<64x128xbf16>, %o: tensor<64x128xbf16>,
                         %s: tensor<64x32xf32>, %lse: tensor<64xf32>,
                         %dp: tensor<64x32xf32>)
    -> (tensor<64x32xf32>, tensor<64x32xf32>) {
  %delta = flash.row_dot %do, %o : tensor<64x128xbf16> -> tensor<64xf32>
  %p = flash.softmax_recompute %s, %lse {scale = 0.125 : f32} : tensor<64x32xf32>, tensor<64xf32>
  %p2 = flash.softmax_recompute %s, %lse base2 {scale = 0.180336878 : f32} : tensor<64x32xf32>, tensor<64xf32>
  %ds = flash.softmax_grad %p, %dp, %delta : tensor<64x32xf32>, tensor<64xf32>
  return %ds, %p2 : tensor<64x32xf32>, tensor<64x32xf32>
}

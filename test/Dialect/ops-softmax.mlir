// RUN: flash-opt %s | flash-opt | FileCheck %s

// CHECK-LABEL: func.func @online_softmax_step
// CHECK-SAME: (%[[S:.*]]: tensor<128x64xf32>, %[[ACC:.*]]: tensor<128x128xf32>, %[[M:.*]]: tensor<128xf32>, %[[L:.*]]: tensor<128xf32>)
// CHECK: %[[P:.*]], %[[MN:.*]], %[[LN:.*]], %[[A:.*]] = flash.softmax_update %[[S]], %[[M]], %[[L]] {scale = 1.250000e-01 : f32} : tensor<128x64xf32>, tensor<128xf32>
// CHECK: %[[R:.*]] = flash.rescale %[[ACC]], %[[A]] : tensor<128x128xf32>, tensor<128xf32>
// CHECK: %[[OUT:.*]], %[[LSE:.*]] = flash.finalize %[[R]], %[[MN]], %[[LN]] : tensor<128x128xf32>, tensor<128xf32>
// CHECK: return %[[P]], %[[OUT]], %[[LSE]]
func.func @online_softmax_step(%s: tensor<128x64xf32>, %acc: tensor<128x128xf32>,
                               %m: tensor<128xf32>, %l: tensor<128xf32>)
    -> (tensor<128x64xf32>, tensor<128x128xf32>, tensor<128xf32>) {
  %p, %m_new, %l_new, %alpha = flash.softmax_update %s, %m, %l {scale = 0.125 : f32}
      : tensor<128x64xf32>, tensor<128xf32>
  %acc_rescaled = flash.rescale %acc, %alpha : tensor<128x128xf32>, tensor<128xf32>
  %out, %lse = flash.finalize %acc_rescaled, %m_new, %l_new : tensor<128x128xf32>, tensor<128xf32>
  return %p, %out, %lse : tensor<128x64xf32>, tensor<128x128xf32>, tensor<128xf32>
}

// The default scale (1.0) is elided.
// CHECK-LABEL: func.func @default_scale
// CHECK: flash.softmax_update %{{.*}}, %{{.*}}, %{{.*}} : tensor<64x16xf32>, tensor<64xf32>
func.func @default_scale(%s: tensor<64x16xf32>, %m: tensor<64xf32>, %l: tensor<64xf32>) -> tensor<64x16xf32> {
  %p, %m_new, %l_new, %alpha = flash.softmax_update %s, %m, %l : tensor<64x16xf32>, tensor<64xf32>
  return %p : tensor<64x16xf32>
}

// Split-KV's combine: one split's output and LSE folded into the running
// rows.
// CHECK-LABEL: func.func @merge_one_split
// CHECK: %{{.*}}, %{{.*}}, %{{.*}} = flash.merge_split %{{.*}}, %{{.*}} into %{{.*}}, %{{.*}}, %{{.*}} : tensor<16x128xf32>, tensor<16xf32>
func.func @merge_one_split(%part: tensor<16x128xf32>, %lse: tensor<16xf32>,
                           %acc: tensor<16x128xf32>, %m: tensor<16xf32>,
                           %l: tensor<16xf32>) -> tensor<16x128xf32> {
  %a, %mm, %ll = flash.merge_split %part, %lse into %acc, %m, %l
      : tensor<16x128xf32>, tensor<16xf32>
  %out, %final = flash.finalize %a, %mm, %ll : tensor<16x128xf32>, tensor<16xf32>
  return %out : tensor<16x128xf32>
}

// RUN: flash-opt %s -split-input-file -flash-fuse | FileCheck %s

// The scale takes log2(e) (0.125 * 1.4427 = 0.18034) and both the update
// and the finalize move to base 2.
// CHECK-LABEL: func.func @loop_carried_max
// CHECK: flash.softmax_update %{{.*}}, %{{.*}}, %{{.*}} base2 {scale = 0.180336878 : f32}
// CHECK: flash.finalize %{{.*}}, %{{.*}}, %{{.*}} base2
func.func @loop_carried_max(%s: tensor<64x32xf32>, %n: index) -> tensor<64xf32> {
  %c0 = arith.constant 0 : index
  %c32 = arith.constant 32 : index
  %acc0 = arith.constant dense<0.0> : tensor<64x16xf32>
  %m0 = arith.constant dense<0xFF800000> : tensor<64xf32>
  %l0 = arith.constant dense<0.0> : tensor<64xf32>
  %r:3 = scf.for %j = %c0 to %n step %c32 iter_args(%acc = %acc0, %m = %m0, %l = %l0)
      -> (tensor<64x16xf32>, tensor<64xf32>, tensor<64xf32>) {
    %p, %mn, %ln, %a = flash.softmax_update %s, %m, %l {scale = 0.125 : f32} : tensor<64x32xf32>, tensor<64xf32>
    %acc1 = flash.rescale %acc, %a : tensor<64x16xf32>, tensor<64xf32>
    scf.yield %acc1, %mn, %ln : tensor<64x16xf32>, tensor<64xf32>, tensor<64xf32>
  }
  %o, %lse = flash.finalize %r#0, %r#1, %r#2 : tensor<64x16xf32>, tensor<64xf32>
  return %lse : tensor<64xf32>
}

// -----

// A max that comes from elsewhere (an argument) could be in either base:
// nothing changes.
// CHECK-LABEL: func.func @foreign_max
// CHECK: flash.softmax_update %{{.*}}, %{{.*}}, %{{.*}} {scale = 1.250000e-01 : f32}
// CHECK-NOT: base2
func.func @foreign_max(%s: tensor<64x32xf32>, %m: tensor<64xf32>, %l: tensor<64xf32>, %acc: tensor<64x16xf32>) -> tensor<64xf32> {
  %p, %mn, %ln, %a = flash.softmax_update %s, %m, %l {scale = 0.125 : f32} : tensor<64x32xf32>, tensor<64xf32>
  %o, %lse = flash.finalize %acc, %mn, %ln : tensor<64x16xf32>, tensor<64xf32>
  return %lse : tensor<64xf32>
}

// -----

// Running the pass twice does not scale twice.
// CHECK-LABEL: func.func @already_base2
// CHECK: base2 {scale = 5.000000e-01 : f32}
func.func @already_base2(%s: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %m0 = arith.constant dense<0xFF800000> : tensor<64xf32>
  %l0 = arith.constant dense<0.0> : tensor<64xf32>
  %p, %mn, %ln, %a = flash.softmax_update %s, %m0, %l0 base2 {scale = 0.5 : f32} : tensor<64x32xf32>, tensor<64xf32>
  return %p : tensor<64x32xf32>
}

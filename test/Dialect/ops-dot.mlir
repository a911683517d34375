// RUN: flash-opt %s | flash-opt | FileCheck %s

// CHECK-LABEL: func.func @scores
// CHECK: flash.dot %{{.*}}, %{{.*}}, %{{.*}} transpose_b : tensor<128x64xbf16>, tensor<32x64xbf16> -> tensor<128x32xf32>
func.func @scores(%q: tensor<128x64xbf16>, %k: tensor<32x64xbf16>, %acc: tensor<128x32xf32>) -> tensor<128x32xf32> {
  %s = flash.dot %q, %k, %acc transpose_b : tensor<128x64xbf16>, tensor<32x64xbf16> -> tensor<128x32xf32>
  return %s : tensor<128x32xf32>
}

// CHECK-LABEL: func.func @values
// CHECK: flash.dot %{{.*}}, %{{.*}}, %{{.*}} : tensor<128x32xf16>, tensor<32x64xf16> -> tensor<128x64xf32>
// CHECK-NOT: transpose_b
func.func @values(%p: tensor<128x32xf16>, %v: tensor<32x64xf16>, %acc: tensor<128x64xf32>) -> tensor<128x64xf32> {
  %o = flash.dot %p, %v, %acc : tensor<128x32xf16>, tensor<32x64xf16> -> tensor<128x64xf32>
  return %o : tensor<128x64xf32>
}

// CHECK-LABEL: func.func @f32_operands
// CHECK: flash.dot {{.*}} : tensor<16x16xf32>, tensor<16x16xf32> -> tensor<16x16xf32>
func.func @f32_operands(%a: tensor<16x16xf32>, %acc: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %r = flash.dot %a, %a, %acc : tensor<16x16xf32>, tensor<16x16xf32> -> tensor<16x16xf32>
  return %r : tensor<16x16xf32>
}

// The backward pass's dV = P^T dO: `a` read transposed.
// CHECK-LABEL: func.func @transposed_a
// CHECK: flash.dot %{{.*}}, %{{.*}}, %{{.*}} transpose_a : tensor<64x32xbf16>, tensor<64x128xbf16> -> tensor<32x128xf32>
func.func @transposed_a(%p: tensor<64x32xbf16>, %do: tensor<64x128xbf16>, %acc: tensor<32x128xf32>) -> tensor<32x128xf32> {
  %dv = flash.dot %p, %do, %acc transpose_a : tensor<64x32xbf16>, tensor<64x128xbf16> -> tensor<32x128xf32>
  return %dv : tensor<32x128xf32>
}

// CHECK-LABEL: func.func @both_transposed
// CHECK: flash.dot {{.*}} transpose_a transpose_b : tensor<16x32xf32>, tensor<8x16xf32> -> tensor<32x8xf32>
func.func @both_transposed(%a: tensor<16x32xf32>, %b: tensor<8x16xf32>, %acc: tensor<32x8xf32>) -> tensor<32x8xf32> {
  %r = flash.dot %a, %b, %acc transpose_a transpose_b : tensor<16x32xf32>, tensor<8x16xf32> -> tensor<32x8xf32>
  return %r : tensor<32x8xf32>
}

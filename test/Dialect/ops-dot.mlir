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

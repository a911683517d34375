// RUN: flash-opt %s | flash-opt | FileCheck %s

// CHECK-LABEL: func.func @tiles
// CHECK-SAME: (%[[Q:.*]]: memref<?x?x?x64xf16>, %[[O:.*]]: memref<?x?x?x64xf16>, %[[LSE:.*]]: memref<?x?x?xf32>, %[[B:.*]]: index, %[[H:.*]]: index, %[[R:.*]]: index)
// CHECK: %[[T:.*]] = flash.load_tile %[[Q]][%[[B]], %[[H]], %[[R]]] : memref<?x?x?x64xf16> -> tensor<64x64xf16>
// CHECK: flash.store_tile %[[T]], %[[O]][%[[B]], %[[H]], %[[R]]] : tensor<64x64xf16> -> memref<?x?x?x64xf16>
// CHECK: flash.store_tile %{{.*}}, %[[LSE]][%[[B]], %[[H]], %[[R]]] : tensor<64xf32> -> memref<?x?x?xf32>
func.func @tiles(%q: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>, %lse: memref<?x?x?xf32>,
                 %b: index, %h: index, %row: index) {
  %tile = flash.load_tile %q[%b, %h, %row] : memref<?x?x?x64xf16> -> tensor<64x64xf16>
  flash.store_tile %tile, %o[%b, %h, %row] : tensor<64x64xf16> -> memref<?x?x?x64xf16>
  %rows = arith.constant dense<1.0> : tensor<64xf32>
  flash.store_tile %rows, %lse[%b, %h, %row] : tensor<64xf32> -> memref<?x?x?xf32>
  return
}

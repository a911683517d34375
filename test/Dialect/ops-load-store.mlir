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

// The backward pass: the LSE loaded as a row vector, dQ's f32 rows added to.
// CHECK-LABEL: func.func @backward_tiles
// CHECK: flash.load_tile %{{.*}} : memref<?x?x?xf32> -> tensor<64xf32>
// CHECK: flash.store_tile %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] accumulate : tensor<64x64xf32> -> memref<?x?x?x64xf32>
func.func @backward_tiles(%lse: memref<?x?x?xf32>, %dq: memref<?x?x?x64xf32>,
                          %b: index, %h: index, %row: index) {
  %rows = flash.load_tile %lse[%b, %h, %row] : memref<?x?x?xf32> -> tensor<64xf32>
  %part = arith.constant dense<1.0> : tensor<64x64xf32>
  flash.store_tile %part, %dq[%b, %h, %row] accumulate : tensor<64x64xf32> -> memref<?x?x?x64xf32>
  return
}

// GQA packing: a K/V head's query heads as a group dimension, the tile's
// rows running through them.
// CHECK-LABEL: func.func @grouped_tiles
// CHECK: %[[T:.*]] = flash.load_tile %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] grouped : memref<?x8x4x?x128xbf16> -> tensor<64x128xbf16>
// CHECK: flash.store_tile %[[T]], %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] grouped : tensor<64x128xbf16> -> memref<?x8x4x?x128xbf16>
// CHECK: flash.store_tile %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] grouped : tensor<64xf32> -> memref<?x8x4x?xf32>
func.func @grouped_tiles(%q: memref<?x8x4x?x128xbf16>,
                         %o: memref<?x8x4x?x128xbf16>,
                         %lse: memref<?x8x4x?xf32>, %b: index, %h: index,
                         %row: index) {
  %tile = flash.load_tile %q[%b, %h, %row] grouped
      : memref<?x8x4x?x128xbf16> -> tensor<64x128xbf16>
  flash.store_tile %tile, %o[%b, %h, %row] grouped
      : tensor<64x128xbf16> -> memref<?x8x4x?x128xbf16>
  %rows = arith.constant dense<1.0> : tensor<64xf32>
  flash.store_tile %rows, %lse[%b, %h, %row] grouped
      : tensor<64xf32> -> memref<?x8x4x?xf32>
  return
}

// A key tile through a paged cache's table: keys %col.. of sequence %b,
// over pages of 16 rows (the tile spans eight).
// CHECK-LABEL: func.func @paged_keys
// CHECK: flash.load_tile %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] pages(%{{.*}} : memref<?x?xi32>, %{{.*}}) : memref<?x8x16x128xbf16> -> tensor<128x128xbf16>
func.func @paged_keys(%cache: memref<?x8x16x128xbf16>, %table: memref<?x?xi32>,
                      %b: index, %h: index, %col: index, %keys: index)
    -> tensor<128x128xbf16> {
  %tile = flash.load_tile %cache[%b, %h, %col] pages(%table : memref<?x?xi32>, %keys)
      : memref<?x8x16x128xbf16> -> tensor<128x128xbf16>
  return %tile : tensor<128x128xbf16>
}

// RUN: flash-opt %s -split-input-file -cse -canonicalize | FileCheck %s

// Tile math is pure: duplicates fold into one, unused results vanish.
// CHECK-LABEL: func.func @pure_tile_math
// CHECK-COUNT-1: flash.dot
// CHECK-NOT: flash.dot
// CHECK-NOT: flash.rescale
func.func @pure_tile_math(%a: tensor<64x16xbf16>, %b: tensor<16x16xbf16>, %acc: tensor<64x16xf32>,
                          %alpha: tensor<64xf32>) -> (tensor<64x16xf32>, tensor<64x16xf32>) {
  %x = flash.dot %a, %b, %acc : tensor<64x16xbf16>, tensor<16x16xbf16> -> tensor<64x16xf32>
  %y = flash.dot %a, %b, %acc : tensor<64x16xbf16>, tensor<16x16xbf16> -> tensor<64x16xf32>
  %unused = flash.rescale %acc, %alpha : tensor<64x16xf32>, tensor<64xf32>
  return %x, %y : tensor<64x16xf32>, tensor<64x16xf32>
}

// -----

// Stores write memory and stay; a load whose result is unused goes; the
// attention op writes its output and stays.
// CHECK-LABEL: func.func @memory_ops
// CHECK-NOT: flash.load_tile
// CHECK: flash.store_tile
// CHECK: flash.attention
func.func @memory_ops(%m: memref<?x?x?x64xbf16>, %t: tensor<64x64xbf16>, %i: index) {
  %unused = flash.load_tile %m[%i, %i, %i] : memref<?x?x?x64xbf16> -> tensor<64x64xbf16>
  flash.store_tile %t, %m[%i, %i, %i] : tensor<64x64xbf16> -> memref<?x?x?x64xbf16>
  flash.attention %m, %m, %m -> %m : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>,
      memref<?x?x?x64xbf16> -> memref<?x?x?x64xbf16>
  return
}

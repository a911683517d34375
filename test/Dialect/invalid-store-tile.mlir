// RUN: flash-opt %s -split-input-file -verify-diagnostics

func.func @rank2_dest(%t: tensor<64x64xbf16>, %m: memref<?x64xbf16>, %i: index) {
  // expected-error @+1 {{'flash.store_tile' op destination must be a rank-4 memref (batch x heads x seq x head dim) or a rank-3 one (batch x heads x seq), got rank 2}}
  flash.store_tile %t, %m[%i, %i, %i] : tensor<64x64xbf16> -> memref<?x64xbf16>
  return
}

// -----

func.func @four_indices(%t: tensor<64x64xbf16>, %m: memref<?x?x?x64xbf16>, %i: index) {
  // expected-error @+1 {{expects 3 indices [batch, head, row], got 4}}
  flash.store_tile %t, %m[%i, %i, %i, %i] : tensor<64x64xbf16> -> memref<?x?x?x64xbf16>
  return
}

// -----

func.func @matrix_into_lse(%t: tensor<64x64xf32>, %m: memref<?x?x?xf32>, %i: index) {
  // expected-error @+1 {{'value' must be a rank-1 tile, got rank 2}}
  flash.store_tile %t, %m[%i, %i, %i] : tensor<64x64xf32> -> memref<?x?x?xf32>
  return
}

// -----

func.func @element_type(%t: tensor<64x64xf32>, %m: memref<?x?x?x64xbf16>, %i: index) {
  // expected-error @+1 {{value element type 'f32' does not match destination element type 'bf16'}}
  flash.store_tile %t, %m[%i, %i, %i] : tensor<64x64xf32> -> memref<?x?x?x64xbf16>
  return
}

// -----

func.func @head_dim(%t: tensor<64x32xbf16>, %m: memref<?x?x?x64xbf16>, %i: index) {
  // expected-error @+1 {{tile has 32 columns but the destination head dim is 64}}
  flash.store_tile %t, %m[%i, %i, %i] : tensor<64x32xbf16> -> memref<?x?x?x64xbf16>
  return
}

// -----

func.func @accumulate_bf16(%t: tensor<64x64xbf16>, %m: memref<?x?x?x64xbf16>, %i: index) {
  // expected-error @+1 {{accumulates only into f32, got 'bf16'}}
  flash.store_tile %t, %m[%i, %i, %i] accumulate : tensor<64x64xbf16> -> memref<?x?x?x64xbf16>
  return
}

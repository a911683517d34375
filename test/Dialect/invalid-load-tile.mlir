// RUN: flash-opt %s -split-input-file -verify-diagnostics

func.func @rank3_source(%m: memref<?x?x64xbf16>, %i: index) {
  // expected-error @+1 {{'flash.load_tile' op source must be a rank-4 memref (batch x heads x seq x head dim), got rank 3}}
  %t = flash.load_tile %m[%i, %i, %i] : memref<?x?x64xbf16> -> tensor<64x64xbf16>
  return
}

// -----

func.func @two_indices(%m: memref<?x?x?x64xbf16>, %i: index) {
  // expected-error @+1 {{expects 3 indices [batch, head, row], got 2}}
  %t = flash.load_tile %m[%i, %i] : memref<?x?x?x64xbf16> -> tensor<64x64xbf16>
  return
}

// -----

func.func @rank1_tile(%m: memref<?x?x?x64xbf16>, %i: index) {
  // expected-error @+1 {{'result' must be a rank-2 tile, got rank 1}}
  %t = flash.load_tile %m[%i, %i, %i] : memref<?x?x?x64xbf16> -> tensor<64xbf16>
  return
}

// -----

func.func @dynamic_tile(%m: memref<?x?x?x64xbf16>, %i: index) {
  // expected-error @+1 {{'result' must be a tile of static shape, got 'tensor<?x64xbf16>'}}
  %t = flash.load_tile %m[%i, %i, %i] : memref<?x?x?x64xbf16> -> tensor<?x64xbf16>
  return
}

// -----

func.func @element_type(%m: memref<?x?x?x64xbf16>, %i: index) {
  // expected-error @+1 {{result element type 'f16' does not match source element type 'bf16'}}
  %t = flash.load_tile %m[%i, %i, %i] : memref<?x?x?x64xbf16> -> tensor<64x64xf16>
  return
}

// -----

func.func @head_dim(%m: memref<?x?x?x64xbf16>, %i: index) {
  // expected-error @+1 {{tile has 128 columns but the source head dim is 64}}
  %t = flash.load_tile %m[%i, %i, %i] : memref<?x?x?x64xbf16> -> tensor<64x128xbf16>
  return
}

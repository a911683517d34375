// RUN: flash-opt %s -split-input-file -verify-diagnostics

func.func @rank2_source(%m: memref<?x64xbf16>, %i: index) {
  // expected-error @+1 {{'flash.load_tile' op source must be a rank-4 memref (batch x heads x seq x head dim) or a rank-3 one (batch x heads x seq), got rank 2}}
  %t = flash.load_tile %m[%i, %i, %i] : memref<?x64xbf16> -> tensor<64x64xbf16>
  return
}

// -----

// A rank-3 source (the LSE) loads a row vector.
func.func @matrix_from_lse(%m: memref<?x?x?xf32>, %i: index) {
  // expected-error @+1 {{'result' must be a rank-1 tile, got rank 2}}
  %t = flash.load_tile %m[%i, %i, %i] : memref<?x?x?xf32> -> tensor<64x64xf32>
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

// -----

// A paged load reads a sequence's keys through its table, not a group.
func.func @paged_grouped(%m: memref<?x?x?x?x64xbf16>, %t: memref<?x?xi32>, %i: index) {
  // expected-error @+1 {{'flash.load_tile' op a load through pages is not grouped}}
  %x = flash.load_tile %m[%i, %i, %i] grouped pages(%t : memref<?x?xi32>, %i) : memref<?x?x?x?x64xbf16> -> tensor<64x64xbf16>
  return
}

// -----

func.func @paged_lse(%m: memref<?x?x16xf32>, %t: memref<?x?xi32>, %i: index) {
  // expected-error @+1 {{'flash.load_tile' op a load through pages reads a rank-4 cache (pages x heads x page_size x head dim) into a 2-D tile}}
  %x = flash.load_tile %m[%i, %i, %i] pages(%t : memref<?x?xi32>, %i) : memref<?x?x16xf32> -> tensor<64xf32>
  return
}

// -----

func.func @paged_table(%m: memref<?x?x16x64xbf16>, %t: memref<?xi32>, %i: index) {
  // expected-error @+1 {{must be 2D memref of 32-bit signless integer values}}
  %x = flash.load_tile %m[%i, %i, %i] pages(%t : memref<?xi32>, %i) : memref<?x?x16x64xbf16> -> tensor<64x64xbf16>
  return
}

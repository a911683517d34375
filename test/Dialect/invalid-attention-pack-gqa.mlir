// RUN: flash-opt %s -split-input-file -verify-diagnostics

// GQA packing: not with packed sequences yet.

!t = memref<1x8x?x64xbf16>
func.func @with_packed(%q: !t, %k: !t, %v: !t, %o: !t, %cq: memref<?xi32>,
                       %ck: memref<?xi32>, %max: index) {
  // expected-error @+1 {{pack_gqa does not go with packed sequences yet}}
  flash.attention %q, %k, %v -> %o
      packed(%cq : memref<?xi32>, %ck : memref<?xi32>, max_q %max)
      {pack_gqa} : !t, !t, !t -> !t
  return
}

// -----

// The mods' grouped form takes its rows per head and group size together.
func.func @mods_half_grouped(%s: tensor<64x64xf32>, %i: index) {
  // expected-error @+1 {{takes rows_per_head and group_size together}}
  %r = "flash.mod_scores"(%s, %i, %i, %i, %i, %i, %i, %i) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 1, 1, 0, 1, 0>, scale = 1.0 : f32}> ({}, {}) : (tensor<64x64xf32>, index, index, index, index, index, index, index) -> tensor<64x64xf32>
  return
}

// -----

// A grouped tile's memory has a group dimension after the heads.
func.func @grouped_load_rank(%src: memref<?x8x?xbf16>, %b: index,
                             %h: index, %r: index) {
  // expected-error @+1 {{source must be a rank-5 memref (batch x heads x group x seq x head dim) or a rank-4 one (batch x heads x group x seq), got rank 3}}
  %t = flash.load_tile %src[%b, %h, %r] grouped
      : memref<?x8x?xbf16> -> tensor<64xbf16>
  return
}

// -----

func.func @grouped_store_head_dim(%t: tensor<64x64xbf16>,
                                  %dst: memref<?x2x4x?x128xbf16>, %b: index,
                                  %h: index, %r: index) {
  // expected-error @+1 {{tile has 64 columns but the destination head dim is 128}}
  flash.store_tile %t, %dst[%b, %h, %r] grouped
      : tensor<64x64xbf16> -> memref<?x2x4x?x128xbf16>
  return
}

// -----

func.func @grouped_lse_rank(%t: tensor<64xf32>, %dst: memref<?x2x4x?x8xf32>,
                            %b: index, %h: index, %r: index) {
  // expected-error @+1 {{'value' must be a rank-2 tile, got rank 1}}
  flash.store_tile %t, %dst[%b, %h, %r] grouped
      : tensor<64xf32> -> memref<?x2x4x?x8xf32>
  return
}

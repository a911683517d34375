// RUN: flash-opt %s -split-input-file -verify-diagnostics

// Packed sequences: cu_seqlens are rank-1 i32 prefix sums, one entry per
// sequence plus one, and the sequences lie along the seq dimension of a
// batch of 1.

func.func @cu_seqlens_i64(%q: memref<1x4x?x64xbf16>, %cu: memref<?xi64>, %max: index) {
  // expected-error @+1 {{'cu_seqlens_q' must be a rank-1 memref of i32 (the prefix sums of the sequence lengths), got 'memref<?xi64>'}}
  flash.attention %q, %q, %q -> %q packed(%cu : memref<?xi64>, %cu : memref<?xi64>, max_q %max)
      : memref<1x4x?x64xbf16>, memref<1x4x?x64xbf16>, memref<1x4x?x64xbf16> -> memref<1x4x?x64xbf16>
  return
}

// -----

func.func @cu_seqlens_rank2(%q: memref<1x4x?x64xbf16>, %cq: memref<?xi32>, %ck: memref<2x5xi32>, %max: index) {
  // expected-error @+1 {{'cu_seqlens_k' must be a rank-1 memref of i32 (the prefix sums of the sequence lengths), got 'memref<2x5xi32>'}}
  flash.attention %q, %q, %q -> %q packed(%cq : memref<?xi32>, %ck : memref<2x5xi32>, max_q %max)
      : memref<1x4x?x64xbf16>, memref<1x4x?x64xbf16>, memref<1x4x?x64xbf16> -> memref<1x4x?x64xbf16>
  return
}

// -----

func.func @cu_seqlens_counts_differ(%q: memref<1x4x?x64xbf16>, %cq: memref<5xi32>, %ck: memref<4xi32>, %max: index) {
  // expected-error @+1 {{'cu_seqlens_q' and 'cu_seqlens_k' must have one entry per sequence, plus one, each}}
  flash.attention %q, %q, %q -> %q packed(%cq : memref<5xi32>, %ck : memref<4xi32>, max_q %max)
      : memref<1x4x?x64xbf16>, memref<1x4x?x64xbf16>, memref<1x4x?x64xbf16> -> memref<1x4x?x64xbf16>
  return
}

// -----

func.func @packed_batch_of_two(%q: memref<2x4x?x64xbf16>, %cu: memref<?xi32>, %max: index) {
  // expected-error @+1 {{packed sequences lie along the seq dimension of a batch of 1: 'q' has batch 2}}
  flash.attention %q, %q, %q -> %q packed(%cu : memref<?xi32>, %cu : memref<?xi32>, max_q %max)
      : memref<2x4x?x64xbf16>, memref<2x4x?x64xbf16>, memref<2x4x?x64xbf16> -> memref<2x4x?x64xbf16>
  return
}

// -----

// The generic form can give one without the others.
func.func @cu_seqlens_q_alone(%q: memref<1x4x?x64xbf16>, %cu: memref<?xi32>) {
  // expected-error @+1 {{packed sequences take cu_seqlens_q, cu_seqlens_k and max_seqlen_q together}}
  "flash.attention"(%q, %q, %q, %q, %cu) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0>}
      : (memref<1x4x?x64xbf16>, memref<1x4x?x64xbf16>, memref<1x4x?x64xbf16>, memref<1x4x?x64xbf16>, memref<?xi32>) -> ()
  return
}

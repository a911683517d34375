// RUN: flash-opt %s -split-input-file -verify-diagnostics

// flash.attention_backward shares flash.attention's operand checks and
// names the gradient operands.

!q = memref<2x8x256x64xbf16>
!kv = memref<2x2x300x64xbf16>
func.func @dk_heads(%q: !q, %k: !kv, %lse: memref<2x8x256xf32>, %dk: memref<2x4x300x64xbf16>) {
  // expected-error @+1 {{heads mismatch: 'dk' has 4 but 'k' has 2}}
  flash.attention_backward %q, %k, %k, %q, %q, %lse -> %q, %dk, %k
      : !q, !kv, !kv, !q, !q, memref<2x8x256xf32> -> !q, memref<2x4x300x64xbf16>, !kv
  return
}

// -----

!q = memref<2x8x256x64xbf16>
!kv = memref<2x2x300x64xbf16>
func.func @dq_seq(%q: !q, %k: !kv, %lse: memref<2x8x256xf32>, %dq: memref<2x8x255x64xbf16>) {
  // expected-error @+1 {{seq mismatch: 'dq' has 255 rows but 'q' has 256}}
  flash.attention_backward %q, %k, %k, %q, %q, %lse -> %dq, %k, %k
      : !q, !kv, !kv, !q, !q, memref<2x8x256xf32> -> memref<2x8x255x64xbf16>, !kv, !kv
  return
}

// -----

!q = memref<2x8x256x64xbf16>
!kv = memref<2x2x300x64xbf16>
func.func @do_type(%q: !q, %k: !kv, %lse: memref<2x8x256xf32>, %do: memref<2x8x256x64xf16>) {
  // expected-error @+1 {{element type mismatch: 'do' has 'f16' but 'q' has 'bf16'}}
  flash.attention_backward %q, %k, %k, %q, %do, %lse -> %q, %k, %k
      : !q, !kv, !kv, !q, memref<2x8x256x64xf16>, memref<2x8x256xf32> -> !q, !kv, !kv
  return
}

// -----

!q = memref<2x6x256x64xbf16>
!kv = memref<2x4x300x64xbf16>
func.func @not_grouped(%q: !q, %k: !kv, %lse: memref<2x6x256xf32>) {
  // expected-error @+1 {{'q' has 6 heads, not a multiple of the 4 K/V heads of 'k'}}
  flash.attention_backward %q, %k, %k, %q, %q, %lse -> %q, %k, %k
      : !q, !kv, !kv, !q, !q, memref<2x6x256xf32> -> !q, !kv, !kv
  return
}

// -----

!q = memref<2x8x256x64xbf16>
func.func @lse_f16(%q: !q, %lse: memref<2x8x256xf16>) {
  // expected-error @+1 {{'lse' must have element type f32, got 'f16'}}
  flash.attention_backward %q, %q, %q, %q, %q, %lse -> %q, %q, %q
      : !q, !q, !q, !q, !q, memref<2x8x256xf16> -> !q, !q, !q
  return
}

// -----

!q = memref<2x8x256x64xbf16>
func.func @lse_rows(%q: !q, %lse: memref<2x8x128xf32>) {
  // expected-error @+1 {{seq mismatch: 'lse' has 128 but 'q' has 256}}
  flash.attention_backward %q, %q, %q, %q, %q, %lse -> %q, %q, %q
      : !q, !q, !q, !q, !q, memref<2x8x128xf32> -> !q, !q, !q
  return
}

// -----

!t = memref<1x4x?x64xbf16>
func.func @cu_seqlens_i64(%q: !t, %lse: memref<1x4x?xf32>, %cq: memref<?xi32>, %ck: memref<?xi64>, %m: index) {
  // expected-error @+1 {{'cu_seqlens_k' must be a rank-1 memref of i32 (the prefix sums of the sequence lengths), got 'memref<?xi64>'}}
  flash.attention_backward %q, %q, %q, %q, %q, %lse -> %q, %q, %q
      packed(%cq : memref<?xi32>, %ck : memref<?xi64>, max_q %m, max_k %m)
      : !t, !t, !t, !t, !t, memref<1x4x?xf32> -> !t, !t, !t
  return
}

// -----

!t = memref<2x4x?x64xbf16>
func.func @packed_batch(%q: !t, %lse: memref<2x4x?xf32>, %cu: memref<?xi32>, %m: index) {
  // expected-error @+1 {{packed sequences lie along the seq dimension of a batch of 1: 'q' has batch 2}}
  flash.attention_backward %q, %q, %q, %q, %q, %lse -> %q, %q, %q
      packed(%cu : memref<?xi32>, %cu : memref<?xi32>, max_q %m, max_k %m)
      : !t, !t, !t, !t, !t, memref<2x4x?xf32> -> !t, !t, !t
  return
}

// -----

!q = memref<2x8x256x64xbf16>
func.func @scale(%q: !q, %lse: memref<2x8x256xf32>) {
  // expected-error @+1 {{scale must be a positive finite number, got -1}}
  flash.attention_backward %q, %q, %q, %q, %q, %lse -> %q, %q, %q {scale = -1.0 : f32}
      : !q, !q, !q, !q, !q, memref<2x8x256xf32> -> !q, !q, !q
  return
}

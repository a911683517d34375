// RUN: flash-opt %s -split-input-file -verify-diagnostics

func.func @lse_rank(%q: memref<2x8x256x64xbf16>, %lse: memref<2x8x256x1xf32>) {
  // expected-error @+1 {{'lse' must be a rank-3 memref (batch x heads x seq), got rank 4}}
  flash.attention %q, %q, %q -> %q, lse %lse : memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16> -> memref<2x8x256x64xbf16>, memref<2x8x256x1xf32>
  return
}

// -----

func.func @lse_type(%q: memref<2x8x256x64xbf16>, %lse: memref<2x8x256xbf16>) {
  // expected-error @+1 {{'lse' must have element type f32, got 'bf16'}}
  flash.attention %q, %q, %q -> %q, lse %lse : memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16> -> memref<2x8x256x64xbf16>, memref<2x8x256xbf16>
  return
}

// -----

func.func @lse_rows(%q: memref<2x8x256x64xbf16>, %lse: memref<2x8x128xf32>) {
  // expected-error @+1 {{seq mismatch: 'lse' has 128 but 'q' has 256}}
  flash.attention %q, %q, %q -> %q, lse %lse : memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16> -> memref<2x8x256x64xbf16>, memref<2x8x128xf32>
  return
}

// -----

func.func @lse_heads(%q: memref<2x8x256x64xbf16>, %lse: memref<2x4x256xf32>) {
  // expected-error @+1 {{heads mismatch: 'lse' has 4 but 'q' has 8}}
  flash.attention %q, %q, %q -> %q, lse %lse : memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16> -> memref<2x8x256x64xbf16>, memref<2x4x256xf32>
  return
}

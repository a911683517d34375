// RUN: flash-opt %s -split-input-file -verify-diagnostics

func.func @negative_scale(%q: memref<2x8x256x64xbf16>) {
  // expected-error @+1 {{scale must be a positive finite number, got -1}}
  flash.attention %q, %q, %q -> %q {scale = -1.0 : f32} : memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16> -> memref<2x8x256x64xbf16>
  return
}

// -----

func.func @infinite_scale(%q: memref<2x8x256x64xbf16>) {
  // expected-error @+1 {{scale must be a positive finite number, got INF}}
  flash.attention %q, %q, %q -> %q {scale = 0x7F800000 : f32} : memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16> -> memref<2x8x256x64xbf16>
  return
}

// -----

func.func @f64_scale(%q: memref<2x8x256x64xbf16>) {
  // expected-error @+1 {{attribute 'scale' failed to satisfy constraint: 32-bit float attribute}}
  flash.attention %q, %q, %q -> %q {scale = 0.5 : f64} : memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16> -> memref<2x8x256x64xbf16>
  return
}

// -----

func.func @config_of_wrong_kind(%q: memref<2x8x256x64xbf16>) {
  // expected-error @+1 {{attribute 'config' failed to satisfy constraint}}
  flash.attention %q, %q, %q -> %q {config = 128 : i64} : memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16> -> memref<2x8x256x64xbf16>
  return
}

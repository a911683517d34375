// RUN: flash-opt %s -split-input-file -verify-diagnostics

func.func @f32_inputs(%q: memref<2x8x256x64xf32>) {
  // expected-error @+1 {{'q' has element type 'f32'; supported element types are bf16 and f16}}
  flash.attention %q, %q, %q -> %q : memref<2x8x256x64xf32>, memref<2x8x256x64xf32>, memref<2x8x256x64xf32> -> memref<2x8x256x64xf32>
  return
}

// -----

func.func @mixed_inputs(%q: memref<2x8x256x64xbf16>, %k: memref<2x8x256x64xf16>) {
  // expected-error @+1 {{element type mismatch: 'k' has 'f16' but 'q' has 'bf16'}}
  flash.attention %q, %k, %k -> %q : memref<2x8x256x64xbf16>, memref<2x8x256x64xf16>, memref<2x8x256x64xf16> -> memref<2x8x256x64xbf16>
  return
}

// -----

func.func @f32_output(%q: memref<2x8x256x64xbf16>, %o: memref<2x8x256x64xf32>) {
  // expected-error @+1 {{element type mismatch: 'o' has 'f32' but 'q' has 'bf16'}}
  flash.attention %q, %q, %q -> %o : memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16> -> memref<2x8x256x64xf32>
  return
}

// -----

func.func @tensor_operand(%q: tensor<2x8x256x64xbf16>, %m: memref<2x8x256x64xbf16>) {
  // expected-error @+1 {{operand #0 must be memref of any type values, but got 'tensor<2x8x256x64xbf16>'}}
  "flash.attention"(%q, %m, %m, %m) ({}, {}) {operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0>} : (tensor<2x8x256x64xbf16>, memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16>) -> ()
  return
}

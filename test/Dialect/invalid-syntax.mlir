// RUN: flash-opt %s -split-input-file -verify-diagnostics

func.func @unknown_op(%q: memref<2x8x256x64xbf16>) {
  // expected-error @+1 {{custom op 'flash.attend' is unknown}}
  flash.attend %q : memref<2x8x256x64xbf16>
  return
}

// -----

func.func @missing_arrow(%q: memref<2x8x256x64xbf16>) {
  // expected-error @+1 {{expected '->'}}
  flash.attention %q, %q, %q, %q : memref<2x8x256x64xbf16>
  return
}

// -----

func.func @missing_output_type(%q: memref<2x8x256x64xbf16>) {
  // expected-error @+1 {{expected '->'}}
  flash.attention %q, %q, %q -> %q : memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16>
  return
}

// -----

// expected-error @+1 {{'block_m' takes an integer}}
func.func @config_not_integer() attributes {c = #flash.config<block_m = big, block_n = 64>} {
  return
}

// RUN: flash-opt %s -split-input-file -verify-diagnostics

func.func @rank3_query(%q: memref<8x256x64xbf16>, %k: memref<2x8x256x64xbf16>) {
  // expected-error @+1 {{'flash.attention' op 'q' must be a rank-4 memref (batch x heads x seq x head dim), got rank 3}}
  flash.attention %q, %k, %k -> %k : memref<8x256x64xbf16>, memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16> -> memref<2x8x256x64xbf16>
  return
}

// -----

func.func @rank5_output(%q: memref<2x8x256x64xbf16>, %o: memref<1x2x8x256x64xbf16>) {
  // expected-error @+1 {{'o' must be a rank-4 memref (batch x heads x seq x head dim), got rank 5}}
  flash.attention %q, %q, %q -> %o : memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16> -> memref<1x2x8x256x64xbf16>
  return
}

// -----

func.func @head_dim_mismatch(%q: memref<2x8x256x128xbf16>, %k: memref<2x8x256x64xbf16>, %o: memref<2x8x256x128xbf16>) {
  // expected-error @+1 {{head dim mismatch: 'k' has 64 but 'q' has 128}}
  flash.attention %q, %k, %k -> %o : memref<2x8x256x128xbf16>, memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16> -> memref<2x8x256x128xbf16>
  return
}

// -----

func.func @output_head_dim_mismatch(%q: memref<2x8x256x128xbf16>, %o: memref<2x8x256x64xbf16>) {
  // expected-error @+1 {{head dim mismatch: 'o' has 64 but 'q' has 128}}
  flash.attention %q, %q, %q -> %o : memref<2x8x256x128xbf16>, memref<2x8x256x128xbf16>, memref<2x8x256x128xbf16> -> memref<2x8x256x64xbf16>
  return
}

// -----

func.func @dynamic_head_dim(%q: memref<2x8x256x?xbf16>) {
  // expected-error @+1 {{head dim of 'q' must be static}}
  flash.attention %q, %q, %q -> %q : memref<2x8x256x?xbf16>, memref<2x8x256x?xbf16>, memref<2x8x256x?xbf16> -> memref<2x8x256x?xbf16>
  return
}

// -----

func.func @unsupported_head_dim(%q: memref<2x8x256x100xbf16>) {
  // expected-error @+1 {{head dim 100 is not supported: it must be a multiple of 16 between 16 and 256}}
  flash.attention %q, %q, %q -> %q : memref<2x8x256x100xbf16>, memref<2x8x256x100xbf16>, memref<2x8x256x100xbf16> -> memref<2x8x256x100xbf16>
  return
}

// -----

func.func @too_large_head_dim(%q: memref<2x8x256x512xbf16>) {
  // expected-error @+1 {{head dim 512 is not supported}}
  flash.attention %q, %q, %q -> %q : memref<2x8x256x512xbf16>, memref<2x8x256x512xbf16>, memref<2x8x256x512xbf16> -> memref<2x8x256x512xbf16>
  return
}

// -----

func.func @batch_mismatch(%q: memref<2x8x256x64xbf16>, %k: memref<4x8x256x64xbf16>) {
  // expected-error @+1 {{batch mismatch: 'k' has 4 but 'q' has 2}}
  flash.attention %q, %k, %k -> %q : memref<2x8x256x64xbf16>, memref<4x8x256x64xbf16>, memref<4x8x256x64xbf16> -> memref<2x8x256x64xbf16>
  return
}

// -----

func.func @heads_mismatch(%q: memref<2x8x256x64xbf16>, %v: memref<2x16x256x64xbf16>) {
  // expected-error @+1 {{heads mismatch: 'v' has 16 but 'k' has 8}}
  flash.attention %q, %q, %v -> %q : memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16>, memref<2x16x256x64xbf16> -> memref<2x8x256x64xbf16>
  return
}

// -----

// Grouped-query attention: K and V share their head count, which divides
// Q's.
func.func @kv_heads_mismatch(%q: memref<2x8x256x64xbf16>, %k: memref<2x2x256x64xbf16>, %v: memref<2x4x256x64xbf16>) {
  // expected-error @+1 {{heads mismatch: 'v' has 4 but 'k' has 2}}
  flash.attention %q, %k, %v -> %q : memref<2x8x256x64xbf16>, memref<2x2x256x64xbf16>, memref<2x4x256x64xbf16> -> memref<2x8x256x64xbf16>
  return
}

// -----

func.func @query_heads_not_a_multiple(%q: memref<2x8x256x64xbf16>, %kv: memref<2x3x256x64xbf16>) {
  // expected-error @+1 {{'q' has 8 heads, not a multiple of the 3 K/V heads of 'k'}}
  flash.attention %q, %kv, %kv -> %q : memref<2x8x256x64xbf16>, memref<2x3x256x64xbf16>, memref<2x3x256x64xbf16> -> memref<2x8x256x64xbf16>
  return
}

// -----

func.func @output_heads_follow_q(%q: memref<2x8x256x64xbf16>, %kv: memref<2x2x256x64xbf16>) {
  // expected-error @+1 {{heads mismatch: 'o' has 2 but 'q' has 8}}
  flash.attention %q, %kv, %kv -> %kv : memref<2x8x256x64xbf16>, memref<2x2x256x64xbf16>, memref<2x2x256x64xbf16> -> memref<2x2x256x64xbf16>
  return
}

// -----

func.func @kv_length_mismatch(%q: memref<2x8x256x64xbf16>, %k: memref<2x8x128x64xbf16>, %v: memref<2x8x100x64xbf16>) {
  // expected-error @+1 {{seq mismatch: 'v' has 100 rows but 'k' has 128}}
  flash.attention %q, %k, %v -> %q : memref<2x8x256x64xbf16>, memref<2x8x128x64xbf16>, memref<2x8x100x64xbf16> -> memref<2x8x256x64xbf16>
  return
}

// -----

func.func @output_length_mismatch(%q: memref<2x8x256x64xbf16>, %o: memref<2x8x128x64xbf16>) {
  // expected-error @+1 {{seq mismatch: 'o' has 128 rows but 'q' has 256}}
  flash.attention %q, %q, %q -> %o : memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16> -> memref<2x8x128x64xbf16>
  return
}

// -----

// A dynamic size conflicts with nothing: only known sizes are compared.
func.func @dynamic_sizes_are_compatible(%q: memref<?x8x?x64xbf16>, %k: memref<2x?x77x64xbf16>) {
  flash.attention %q, %k, %k -> %q : memref<?x8x?x64xbf16>, memref<2x?x77x64xbf16>, memref<2x?x77x64xbf16> -> memref<?x8x?x64xbf16>
  return
}

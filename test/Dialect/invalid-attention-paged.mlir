// RUN: flash-opt %s -split-input-file -verify-diagnostics

// A paged K/V cache takes the page table and the lengths together.
!q = memref<?x8x?x128xbf16>
!kv = memref<?x2x64x128xbf16, strided<[?, ?, ?, 1]>>
func.func @lengths_without_table(%q: !q, %k: !kv, %v: !kv, %o: !q,
                                 %t: memref<?x?xi32>, %l: memref<?xi32>) {
  // expected-error @+1 {{a paged cache takes page_table and cache_lens together}}
  "flash.attention"(%q, %k, %v, %o, %l) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0>}> ({}, {}) : (!q, !kv, !kv, !q, memref<?xi32>) -> ()
  return
}

// -----

!q = memref<?x8x?x128xbf16>
!kv = memref<?x2x64x128xbf16, strided<[?, ?, ?, 1]>>
func.func @table_rank(%q: !q, %k: !kv, %v: !kv, %o: !q, %t: memref<?xi32>,
                      %l: memref<?xi32>) {
  // expected-error @+1 {{'page_table' must be a rank-2 memref of i32 (batch x max_pages), got 'memref<?xi32>'}}
  flash.attention %q, %k, %v -> %o paged(%t : memref<?xi32>, %l : memref<?xi32>)
      : !q, !kv, !kv -> !q
  return
}

// -----

!q = memref<?x8x?x128xbf16>
!kv = memref<?x2x64x128xbf16, strided<[?, ?, ?, 1]>>
func.func @lengths_type(%q: !q, %k: !kv, %v: !kv, %o: !q, %t: memref<?x?xi32>,
                        %l: memref<?xi64>) {
  // expected-error @+1 {{'cache_lens' must be a rank-1 memref of i32 (one length per batch), got 'memref<?xi64>'}}
  flash.attention %q, %k, %v -> %o paged(%t : memref<?x?xi32>, %l : memref<?xi64>)
      : !q, !kv, !kv -> !q
  return
}

// -----

!q = memref<4x8x?x128xbf16>
!kv = memref<?x2x64x128xbf16, strided<[?, ?, ?, 1]>>
func.func @table_batch(%q: !q, %k: !kv, %v: !kv, %o: !q, %t: memref<3x?xi32>,
                       %l: memref<?xi32>) {
  // expected-error @+1 {{batch mismatch: 'page_table' has 3 but 'q' has 4}}
  flash.attention %q, %k, %v -> %o paged(%t : memref<3x?xi32>, %l : memref<?xi32>)
      : !q, !kv, !kv -> !q
  return
}

// -----

!q = memref<?x8x?x128xbf16>
!kv = memref<?x2x?x128xbf16, strided<[?, ?, ?, 1]>>
func.func @dynamic_page(%q: !q, %k: !kv, %v: !kv, %o: !q, %t: memref<?x?xi32>,
                        %l: memref<?xi32>) {
  // expected-error @+1 {{the page size (the seq dimension of 'k') must be static}}
  flash.attention %q, %k, %v -> %o paged(%t : memref<?x?xi32>, %l : memref<?xi32>)
      : !q, !kv, !kv -> !q
  return
}

// -----

// The pages of K and V hold as many keys each.
!q = memref<?x8x?x128xbf16>
func.func @page_sizes_differ(%q: !q,
    %k: memref<?x2x64x128xbf16, strided<[?, ?, ?, 1]>>,
    %v: memref<?x2x32x128xbf16, strided<[?, ?, ?, 1]>>, %o: !q,
    %t: memref<?x?xi32>, %l: memref<?xi32>) {
  // expected-error @+1 {{seq mismatch: 'v' has 32 rows but 'k' has 64}}
  flash.attention %q, %k, %v -> %o paged(%t : memref<?x?xi32>, %l : memref<?xi32>)
      : !q, memref<?x2x64x128xbf16, strided<[?, ?, ?, 1]>>,
        memref<?x2x32x128xbf16, strided<[?, ?, ?, 1]>> -> !q
  return
}

// -----

!q = memref<1x8x?x128xbf16>
!kv = memref<1x2x64x128xbf16>
func.func @packed_and_paged(%q: !q, %k: !kv, %v: !kv, %o: !q,
                            %cu: memref<?xi32>, %t: memref<?x?xi32>,
                            %l: memref<?xi32>, %m: index) {
  // expected-error @+1 {{a paged cache and packed sequences do not go together}}
  flash.attention %q, %k, %v -> %o
      packed(%cu : memref<?xi32>, %cu : memref<?xi32>, max_q %m)
      paged(%t : memref<?x?xi32>, %l : memref<?xi32>)
      : !q, !kv, !kv -> !q
  return
}

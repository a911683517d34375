// RUN: flash-opt %s -flash-tile -verify-diagnostics

// A key tile lies in one page: block_n must divide the page size.
!q = memref<?x32x?x128xbf16>
!kv = memref<?x8x16x128xbf16, strided<[?, ?, ?, 1]>>
func.func @tile_spans_pages(%q: !q, %k: !kv, %v: !kv, %o: !q,
                            %t: memref<?x?xi32>, %l: memref<?xi32>) {
  // expected-error @+1 {{-flash-tile: block_n 64 does not divide the page size 16 of the paged cache (a key tile lies in one page); choose a smaller block_n in the config}}
  flash.attention %q, %k, %v -> %o
      paged(%t : memref<?x?xi32>, %l : memref<?xi32>)
      {config = #flash.config<block_m = 64, block_n = 64, warpgroups = 1>}
      : !q, !kv, !kv -> !q
  return
}

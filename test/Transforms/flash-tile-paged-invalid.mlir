// RUN: flash-opt %s -flash-tile -verify-diagnostics

// A key tile lies in one page or spans whole pages: one of block_n and the
// page size must divide the other.
!q = memref<?x32x?x128xbf16>
!kv = memref<?x8x48x128xbf16, strided<[?, ?, ?, 1]>>
func.func @tile_straddles_pages(%q: !q, %k: !kv, %v: !kv, %o: !q,
                                %t: memref<?x?xi32>, %l: memref<?xi32>) {
  // expected-error @+1 {{-flash-tile: block_n 64 and the page size 48 of the paged cache divide neither the other (a key tile lies in one page or spans whole pages); choose another block_n in the config}}
  flash.attention %q, %k, %v -> %o
      paged(%t : memref<?x?xi32>, %l : memref<?xi32>)
      {config = #flash.config<block_m = 64, block_n = 64, warpgroups = 1>}
      : !q, !kv, !kv -> !q
  return
}

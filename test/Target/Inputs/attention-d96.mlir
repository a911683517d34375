func.func @attention(%q: memref<?x?x?x96xbf16>, %k: memref<?x?x?x96xbf16>,
                     %v: memref<?x?x?x96xbf16>, %o: memref<?x?x?x96xbf16>) {
  flash.attention %q, %k, %v -> %o
      : memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16>, memref<?x?x?x96xbf16> -> memref<?x?x?x96xbf16>
  return
}

// Two kernels in one module: the CPU target exports one entry point.
func.func @first(%q: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
  flash.attention %q, %q, %q -> %o
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
      -> memref<?x?x?x64xf16>
  return
}
func.func @second(%q: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) {
  flash.attention %q, %q, %q -> %o
      : memref<?x?x?x64xf16>, memref<?x?x?x64xf16>, memref<?x?x?x64xf16>
      -> memref<?x?x?x64xf16>
  return
}

func.func @attention(%q: memref<?x?x?x64xf32>) {
  flash.attention %q, %q, %q -> %q
      : memref<?x?x?x64xf32>, memref<?x?x?x64xf32>, memref<?x?x?x64xf32> -> memref<?x?x?x64xf32>
  return
}

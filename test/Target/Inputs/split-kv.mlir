// Split-KV over dense K and V (flashc-cpu-errors.mlir).
!t = memref<?x?x?x64xbf16>
func.func @split(%q: !t, %k: !t, %v: !t, %o: !t,
                 %po: memref<?x?x?x?x64xf32>, %pl: memref<?x?x?x?xf32>) {
  flash.attention %q, %k, %v -> %o
      splits(%po : memref<?x?x?x?x64xf32>, %pl : memref<?x?x?x?xf32>)
      : !t, !t, !t -> !t
  return
}

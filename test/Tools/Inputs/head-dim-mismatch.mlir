func.func @f(%q: memref<2x8x256x128xbf16>, %v: memref<2x8x256x64xbf16>) {
  flash.attention %q, %q, %v -> %q
      : memref<2x8x256x128xbf16>, memref<2x8x256x128xbf16>, memref<2x8x256x64xbf16> -> memref<2x8x256x128xbf16>
  return
}

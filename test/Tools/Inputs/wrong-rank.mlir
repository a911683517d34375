func.func @f(%q: memref<8x256x64xbf16>, %k: memref<2x8x256x64xbf16>) {
  flash.attention %q, %k, %k -> %k
      : memref<8x256x64xbf16>, memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16> -> memref<2x8x256x64xbf16>
  return
}

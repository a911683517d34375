func.func @f(%q: memref<2x8x256x64xbf16>) {
  flash.attention %q, %q, %q -> %q {config = #flash.config<block_m = 100, block_n = 64>}
      : memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16> -> memref<2x8x256x64xbf16>
  return
}

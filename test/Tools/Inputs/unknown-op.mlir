func.func @f(%q: memref<2x8x256x64xbf16>) {
  flash.attend %q : memref<2x8x256x64xbf16>
  return
}

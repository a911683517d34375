// RUN: flash-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{fragment of a warpgroup must have 64 rows (the M of wgmma), got 128}}
func.func private @rows(!flash.fragment<128x128xf32, #flash.wgmma_accumulator>)

// -----

// expected-error @+1 {{fragment must be 2-d, got rank 3}}
func.func private @rank(!flash.fragment<64x8x2xf32, #flash.wgmma_accumulator>)

// -----

// expected-error @+1 {{wgmma accumulator N must be a multiple of 8 in [8, 256], got 100}}
func.func private @n_multiple(!flash.fragment<64x100xf32, #flash.wgmma_accumulator>)

// -----

// expected-error @+1 {{wgmma accumulator N must be a multiple of 8 in [8, 256], got 264}}
func.func private @n_range(!flash.fragment<64x264xf32, #flash.wgmma_accumulator>)

// -----

// expected-error @+1 {{wgmma accumulator must be f32, got 'f16'}}
func.func private @acc_element(!flash.fragment<64x64xf16, #flash.wgmma_accumulator>)

// -----

// expected-error @+1 {{wgmma register A operand must be 64x16 (one k16 step), got 64x32}}
func.func private @a_shape(!flash.fragment<64x32xbf16, #flash.wgmma_operand_a>)

// -----

// expected-error @+1 {{wgmma register A operand must be bf16 or f16, got 'f32'}}
func.func private @a_element(!flash.fragment<64x16xf32, #flash.wgmma_operand_a>)

// -----

// expected-error @+1 {{unknown fragment layout 1 : i32 (expected #flash.wgmma_accumulator or #flash.wgmma_operand_a)}}
func.func private @layout(!flash.fragment<64x16xbf16, 1 : i32>)

// -----

// expected-error @+1 {{wgmma shared-memory operand must be bf16 or f16, got 'f32'}}
func.func private @desc_element(!flash.smem_descriptor<f32, major = k, swizzle = 128, lbo = 16, sbo = 1024>)

// -----

// expected-error @+1 {{expected `k` or `mn` for major, got m}}
func.func private @desc_major(!flash.smem_descriptor<bf16, major = m, swizzle = 128, lbo = 16, sbo = 1024>)

// -----

// expected-error @+1 {{swizzle must be 0, 32, 64 or 128 bytes, got 256}}
func.func private @desc_swizzle(!flash.smem_descriptor<bf16, major = k, swizzle = 256, lbo = 16, sbo = 1024>)

// -----

// expected-error @+1 {{lbo must be a positive multiple of 16 below 2^18 bytes, got 8}}
func.func private @desc_lbo(!flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 8, sbo = 1024>)

// -----

// expected-error @+1 {{sbo must be a positive multiple of 16 below 2^18 bytes, got 262144}}
func.func private @desc_sbo(!flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 262144>)

// -----

func.func @from_values_count(%x: f32) {
  // expected-error @+1 {{'flash.wg.fragment_from_values' op expects 4 values for '!flash.fragment<64x8xf32, #flash.wgmma_accumulator>', got 2}}
  %c = flash.wg.fragment_from_values %x, %x : !flash.fragment<64x8xf32, #flash.wgmma_accumulator>
  return
}

// -----

func.func @from_values_type(%x: f32) {
  // expected-error @+1 {{'flash.wg.fragment_from_values' op expects values of type 'i32' for '!flash.fragment<64x16xbf16, #flash.wgmma_operand_a>', got 'f32'}}
  %c = "flash.wg.fragment_from_values"(%x, %x, %x, %x) : (f32, f32, f32, f32) -> !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>
  return
}

// -----

func.func @values_count(%c: !flash.fragment<64x8xf32, #flash.wgmma_accumulator>) {
  // expected-error @+1 {{'flash.wg.fragment_values' op expects 4 results for '!flash.fragment<64x8xf32, #flash.wgmma_accumulator>', got 3}}
  %v:3 = "flash.wg.fragment_values"(%c) : (!flash.fragment<64x8xf32, #flash.wgmma_accumulator>) -> (f32, f32, f32)
  return
}

// -----

func.func @values_type(%c: !flash.fragment<64x8xf32, #flash.wgmma_accumulator>) {
  // expected-error @+1 {{'flash.wg.fragment_values' op expects results of type 'f32' for '!flash.fragment<64x8xf32, #flash.wgmma_accumulator>', got 'i32'}}
  %v:4 = "flash.wg.fragment_values"(%c) : (!flash.fragment<64x8xf32, #flash.wgmma_accumulator>) -> (i32, i32, i32, i32)
  return
}

// -----

func.func @mma_result(%a: !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>,
                      %b: !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>) {
  // expected-error @+1 {{'flash.wg.mma' op result must be a #flash.wgmma_accumulator fragment, got '!flash.fragment<64x16xbf16, #flash.wgmma_operand_a>'}}
  %d = flash.wg.mma %a, %b : !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>, !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024> -> !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>
  return
}

// -----

func.func @mma_register_a(%a: !flash.fragment<64x16xf32, #flash.wgmma_accumulator>,
                          %b: !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>) {
  // expected-error @+1 {{'flash.wg.mma' op A in registers must be a #flash.wgmma_operand_a fragment, got '!flash.fragment<64x16xf32, #flash.wgmma_accumulator>'}}
  %d = flash.wg.mma %a, %b : !flash.fragment<64x16xf32, #flash.wgmma_accumulator>, !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024> -> !flash.fragment<64x64xf32, #flash.wgmma_accumulator>
  return
}

// -----

func.func @mma_elements(%a: !flash.fragment<64x16xf16, #flash.wgmma_operand_a>,
                        %b: !flash.smem_descriptor<bf16, major = mn, swizzle = 128, lbo = 16, sbo = 1024>) {
  // expected-error @+1 {{'flash.wg.mma' op A and B element types differ: 'f16' and 'bf16'}}
  %d = flash.wg.mma %a, %b : !flash.fragment<64x16xf16, #flash.wgmma_operand_a>, !flash.smem_descriptor<bf16, major = mn, swizzle = 128, lbo = 16, sbo = 1024> -> !flash.fragment<64x64xf32, #flash.wgmma_accumulator>
  return
}

// -----

func.func @mma_c_type(%a: !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>,
                      %c: !flash.fragment<64x32xf32, #flash.wgmma_accumulator>) {
  // expected-error @+1 {{'flash.wg.mma' op failed to verify that C has D's type}}
  %d = "flash.wg.mma"(%a, %a, %c) : (!flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>, !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>, !flash.fragment<64x32xf32, #flash.wgmma_accumulator>) -> !flash.fragment<64x64xf32, #flash.wgmma_accumulator>
  return
}

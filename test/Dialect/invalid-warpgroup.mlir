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

// expected-error @+1 {{wgmma register A operand must be 64xK, K a multiple of 16 (k16 steps) in [16, 256], got 64x272}}
func.func private @a_shape(!flash.fragment<64x272xbf16, #flash.wgmma_operand_a>)

// -----

// expected-error @+1 {{wgmma register A operand must be bf16 or f16, got 'f32'}}
func.func private @a_element(!flash.fragment<64x16xf32, #flash.wgmma_operand_a>)

// -----

// expected-error @+1 {{unknown fragment layout 1 : i32 (expected #flash.wgmma_accumulator, #flash.wgmma_operand_a, #flash.wgmma_rows or #flash.wgmma_row_partials)}}
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

// -----

// expected-error @+1 {{a row vector of a warpgroup accumulator must be 64 (one value per row), got 2-d}}
func.func private @rows_2d(!flash.fragment<64x2xf32, #flash.wgmma_rows>)

// -----

// expected-error @+1 {{a row vector must be f32 or i32, got 'bf16'}}
func.func private @rows_bf16(!flash.fragment<64xbf16, #flash.wgmma_row_partials>)

// -----

// expected-error @+1 {{wgmma register A operand must be 64xK, K a multiple of 16 (k16 steps) in [16, 256], got 64x24}}
func.func private @operand_a_k(!flash.fragment<64x24xbf16, #flash.wgmma_operand_a>)

// -----

func.func @mma_two_k_steps(%a: !flash.fragment<64x32xbf16, #flash.wgmma_operand_a>, %b: !flash.smem_descriptor<bf16, major = mn, swizzle = 128, lbo = 16, sbo = 1024>) {
  // expected-error @+1 {{'flash.wg.mma' op A in registers must be one k16 step (64x16), got '!flash.fragment<64x32xbf16, #flash.wgmma_operand_a>'}}
  %d = flash.wg.mma %a, %b : !flash.fragment<64x32xbf16, #flash.wgmma_operand_a>, !flash.smem_descriptor<bf16, major = mn, swizzle = 128, lbo = 16, sbo = 1024> -> !flash.fragment<64x64xf32, #flash.wgmma_accumulator>
  return
}

// -----

func.func @mask_limit_f32(%s: !flash.fragment<64x8xf32, #flash.wgmma_accumulator>, %l: !flash.fragment<64xf32, #flash.wgmma_rows>, %f: i32) {
  // expected-error @+1 {{'flash.wg.mask_columns' op limit must be a 64xi32 #flash.wgmma_rows vector, got '!flash.fragment<64xf32, #flash.wgmma_rows>'}}
  %m = flash.wg.mask_columns %s, %l, %f : !flash.fragment<64x8xf32, #flash.wgmma_accumulator>, !flash.fragment<64xf32, #flash.wgmma_rows>
  return
}

// -----

func.func @mask_operand_a(%s: !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>, %l: !flash.fragment<64xi32, #flash.wgmma_rows>, %f: i32) {
  // expected-error @+1 {{'flash.wg.mask_columns' op scores must be a #flash.wgmma_accumulator fragment, got '!flash.fragment<64x16xbf16, #flash.wgmma_operand_a>'}}
  %m = flash.wg.mask_columns %s, %l, %f : !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>, !flash.fragment<64xi32, #flash.wgmma_rows>
  return
}

// -----

func.func @row_max_of_partials(%p: !flash.fragment<64xf32, #flash.wgmma_row_partials>) {
  // expected-error @+1 {{'flash.wg.row_max' op reduces a #flash.wgmma_accumulator fragment; got '!flash.fragment<64xf32, #flash.wgmma_row_partials>' -> '!flash.fragment<64xf32, #flash.wgmma_rows>'}}
  %m = flash.wg.row_max %p : !flash.fragment<64xf32, #flash.wgmma_row_partials> -> !flash.fragment<64xf32, #flash.wgmma_rows>
  return
}

// -----

func.func @row_sum_rows_to_partials(%r: !flash.fragment<64xf32, #flash.wgmma_rows>) {
  // expected-error @+1 {{'flash.wg.row_sum' op reduces a #flash.wgmma_accumulator fragment, or #flash.wgmma_row_partials to #flash.wgmma_rows; got '!flash.fragment<64xf32, #flash.wgmma_rows>' -> '!flash.fragment<64xf32, #flash.wgmma_row_partials>'}}
  %m = flash.wg.row_sum %r : !flash.fragment<64xf32, #flash.wgmma_rows> -> !flash.fragment<64xf32, #flash.wgmma_row_partials>
  return
}

// -----

func.func @row_sum_into_i32(%s: !flash.fragment<64x8xf32, #flash.wgmma_accumulator>) {
  // expected-error @+1 {{'flash.wg.row_sum' op result must be a 64xf32 #flash.wgmma_rows or #flash.wgmma_row_partials vector, got '!flash.fragment<64xi32, #flash.wgmma_rows>'}}
  %m = flash.wg.row_sum %s : !flash.fragment<64x8xf32, #flash.wgmma_accumulator> -> !flash.fragment<64xi32, #flash.wgmma_rows>
  return
}

// -----

func.func @exp2_bias_partials(%s: !flash.fragment<64x8xf32, #flash.wgmma_accumulator>, %b: !flash.fragment<64xf32, #flash.wgmma_row_partials>, %c: f32) {
  // expected-error @+1 {{'flash.wg.scaled_exp2' op bias must be a 64xf32 #flash.wgmma_rows vector, got '!flash.fragment<64xf32, #flash.wgmma_row_partials>'}}
  %p = flash.wg.scaled_exp2 %s, %b, %c : !flash.fragment<64x8xf32, #flash.wgmma_accumulator>, !flash.fragment<64xf32, #flash.wgmma_row_partials>
  return
}

// -----

func.func @scale_rows_i32(%s: !flash.fragment<64x8xf32, #flash.wgmma_accumulator>, %f: !flash.fragment<64xi32, #flash.wgmma_rows>) {
  // expected-error @+1 {{'flash.wg.scale_rows' op factor must be a 64xf32 #flash.wgmma_rows vector, got '!flash.fragment<64xi32, #flash.wgmma_rows>'}}
  %o = flash.wg.scale_rows %s, %f : !flash.fragment<64x8xf32, #flash.wgmma_accumulator>, !flash.fragment<64xi32, #flash.wgmma_rows>
  return
}

// -----

func.func @mask_keys_f32_rows(%s: !flash.fragment<64x32xf32, #flash.wgmma_accumulator>, %rows: !flash.fragment<64xf32, #flash.wgmma_rows>, %i: i32) {
  // expected-error @+1 {{'flash.wg.mask_keys' op rows must be a 64xi32 #flash.wgmma_rows vector, got '!flash.fragment<64xf32, #flash.wgmma_rows>'}}
  %m = flash.wg.mask_keys %s, %rows, %i, %i, %i causal : !flash.fragment<64x32xf32, #flash.wgmma_accumulator>, !flash.fragment<64xf32, #flash.wgmma_rows>
  return
}

// -----

func.func @softmax_update_sum_rows(%s: !flash.fragment<64x32xf32, #flash.wgmma_accumulator>, %m: !flash.fragment<64xf32, #flash.wgmma_rows>, %l: !flash.fragment<64xf32, #flash.wgmma_rows>, %c: f32) {
  // expected-error @+1 {{'flash.wg.softmax_update' op l_old must be a 64xf32 #flash.wgmma_row_partials vector, got '!flash.fragment<64xf32, #flash.wgmma_rows>'}}
  %p, %m2, %l2, %a, %mv = flash.wg.softmax_update %s, %m, %l, %c : !flash.fragment<64x32xf32, #flash.wgmma_accumulator>, !flash.fragment<64xf32, #flash.wgmma_rows>, !flash.fragment<64xf32, #flash.wgmma_rows> -> !flash.fragment<64x32xbf16, #flash.wgmma_operand_a>
  return
}

// -----

func.func @softmax_update_max_partials(%s: !flash.fragment<64x32xf32, #flash.wgmma_accumulator>, %m: !flash.fragment<64xf32, #flash.wgmma_row_partials>, %l: !flash.fragment<64xf32, #flash.wgmma_row_partials>, %c: f32) {
  // expected-error @+1 {{'flash.wg.softmax_update' op m_old must be a 64xf32 #flash.wgmma_rows vector, got '!flash.fragment<64xf32, #flash.wgmma_row_partials>'}}
  %p, %m2, %l2, %a, %mv = flash.wg.softmax_update %s, %m, %l, %c : !flash.fragment<64x32xf32, #flash.wgmma_accumulator>, !flash.fragment<64xf32, #flash.wgmma_row_partials>, !flash.fragment<64xf32, #flash.wgmma_row_partials> -> !flash.fragment<64x32xbf16, #flash.wgmma_operand_a>
  return
}

// -----

func.func @softmax_update_p_shape(%s: !flash.fragment<64x32xf32, #flash.wgmma_accumulator>, %m: !flash.fragment<64xf32, #flash.wgmma_rows>, %l: !flash.fragment<64xf32, #flash.wgmma_row_partials>, %c: f32) {
  // expected-error @+1 {{'flash.wg.softmax_update' op p must be a #flash.wgmma_operand_a fragment of the scores' shape, got '!flash.fragment<64x16xbf16, #flash.wgmma_operand_a>' for '!flash.fragment<64x32xf32, #flash.wgmma_accumulator>'}}
  %p, %m2, %l2, %a, %mv = flash.wg.softmax_update %s, %m, %l, %c : !flash.fragment<64x32xf32, #flash.wgmma_accumulator>, !flash.fragment<64xf32, #flash.wgmma_rows>, !flash.fragment<64xf32, #flash.wgmma_row_partials> -> !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>
  return
}

// -----

func.func @softmax_update_scores_rows(%s: !flash.fragment<64xf32, #flash.wgmma_rows>, %m: !flash.fragment<64xf32, #flash.wgmma_rows>, %l: !flash.fragment<64xf32, #flash.wgmma_row_partials>, %c: f32) {
  // expected-error @+1 {{'flash.wg.softmax_update' op scores must be a #flash.wgmma_accumulator fragment, got '!flash.fragment<64xf32, #flash.wgmma_rows>'}}
  %p, %m2, %l2, %a, %mv = flash.wg.softmax_update %s, %m, %l, %c : !flash.fragment<64xf32, #flash.wgmma_rows>, !flash.fragment<64xf32, #flash.wgmma_rows>, !flash.fragment<64xf32, #flash.wgmma_row_partials> -> !flash.fragment<64x32xbf16, #flash.wgmma_operand_a>
  return
}

// -----

func.func @softmax_update_two_rules(%s: !flash.fragment<64x32xf32, #flash.wgmma_accumulator>, %m: !flash.fragment<64xf32, #flash.wgmma_rows>, %l: !flash.fragment<64xf32, #flash.wgmma_row_partials>, %c: f32) {
  // expected-error @+1 {{'flash.wg.softmax_update' op takes lag_max or speculative, not both: each is its own rule for when the running max moves}}
  %p, %m2, %l2, %a, %mv = flash.wg.softmax_update %s, %m, %l, %c lag_max speculative : !flash.fragment<64x32xf32, #flash.wgmma_accumulator>, !flash.fragment<64xf32, #flash.wgmma_rows>, !flash.fragment<64xf32, #flash.wgmma_row_partials> -> !flash.fragment<64x32xbf16, #flash.wgmma_operand_a>
  return
}

// -----

func.func @scale_rows_guard_i32(%o: !flash.fragment<64x32xf32, #flash.wgmma_accumulator>, %a: !flash.fragment<64xf32, #flash.wgmma_rows>, %moved: i32) {
  // expected-error @+1 {{'flash.wg.scale_rows' op operand #2 must be 1-bit signless integer, but got 'i32'}}
  %o2 = "flash.wg.scale_rows"(%o, %a, %moved) : (!flash.fragment<64x32xf32, #flash.wgmma_accumulator>, !flash.fragment<64xf32, #flash.wgmma_rows>, i32) -> !flash.fragment<64x32xf32, #flash.wgmma_accumulator>
  return
}

// -----

func.func @truncf_shape(%s: !flash.fragment<64x32xf32, #flash.wgmma_accumulator>) {
  // expected-error @+1 {{'flash.wg.truncf' op result must be a #flash.wgmma_operand_a fragment of the input's shape, got '!flash.fragment<64x16xbf16, #flash.wgmma_operand_a>' for '!flash.fragment<64x32xf32, #flash.wgmma_accumulator>'}}
  %p = flash.wg.truncf %s : !flash.fragment<64x32xf32, #flash.wgmma_accumulator> -> !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>
  return
}

// -----

func.func @store_global_partials(%p: !flash.fragment<64xf32, #flash.wgmma_row_partials>, %out: !llvm.ptr<1>, %i: i32) {
  // expected-error @+1 {{'flash.wg.store_global' op stores a 16-bit #flash.wgmma_operand_a fragment, an f32 #flash.wgmma_accumulator or a 64xf32 #flash.wgmma_rows vector, got '!flash.fragment<64xf32, #flash.wgmma_row_partials>'}}
  flash.wg.store_global %p, %out[%i, %i], %i : !flash.fragment<64xf32, #flash.wgmma_row_partials>, !llvm.ptr<1>
  return
}

// -----

func.func @store_global_not_pointer(%p: !flash.fragment<64xf32, #flash.wgmma_rows>, %out: i64, %i: i32) {
  // expected-error @+1 {{'flash.wg.store_global' op operand #1 must be LLVM pointer, but got 'i64'}}
  "flash.wg.store_global"(%p, %out, %i, %i, %i) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 1, 0, 0, 0>}> : (!flash.fragment<64xf32, #flash.wgmma_rows>, i64, i32, i32, i32) -> ()
  return
}

// -----

// A packed sequence's first row offsets a strided tensor's rows; without
// the strides there is nothing to offset.
func.func @store_global_row_base_without_strides(%p: !flash.fragment<64xf32, #flash.wgmma_rows>, %out: !llvm.ptr<1>, %i: i32) {
  // expected-error @+1 {{'flash.wg.store_global' op row_base needs the tensor's strides}}
  flash.wg.store_global %p, %out[%i, %i], %i row_base %i : !flash.fragment<64xf32, #flash.wgmma_rows>, !llvm.ptr<1>
  return
}

// -----

func.func @store_shared_accumulator(%o: !flash.fragment<64x64xf32, #flash.wgmma_accumulator>, %smem: memref<?xi8, #gpu.address_space<workgroup>>, %off: index) {
  // expected-error @+1 {{'flash.wg.store_shared' op stores a 16-bit #flash.wgmma_operand_a fragment, got '!flash.fragment<64x64xf32, #flash.wgmma_accumulator>'}}
  flash.wg.store_shared %o, %smem[%off] {box_stride = 8192} : !flash.fragment<64x64xf32, #flash.wgmma_accumulator>, memref<?xi8, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @store_shared_partial_box(%o: !flash.fragment<64x32xbf16, #flash.wgmma_operand_a>, %smem: memref<?xi8, #gpu.address_space<workgroup>>, %off: index) {
  // expected-error @+1 {{'flash.wg.store_shared' op writes whole 64-column (128-byte) boxes: K must be a multiple of 64, got '!flash.fragment<64x32xbf16, #flash.wgmma_operand_a>'}}
  flash.wg.store_shared %o, %smem[%off] {box_stride = 8192} : !flash.fragment<64x32xbf16, #flash.wgmma_operand_a>, memref<?xi8, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @store_shared_unaligned_boxes(%o: !flash.fragment<64x128xbf16, #flash.wgmma_operand_a>, %smem: memref<?xi8, #gpu.address_space<workgroup>>, %off: index) {
  // expected-error @+1 {{'flash.wg.store_shared' op box_stride must keep every box 1024-byte aligned (the 128-byte swizzle's period), got 8320}}
  flash.wg.store_shared %o, %smem[%off] {box_stride = 8320} : !flash.fragment<64x128xbf16, #flash.wgmma_operand_a>, memref<?xi8, #gpu.address_space<workgroup>>
  return
}

// -----

func.func @roles_regs() {
  // expected-error @+1 {{'flash.wg.warp_specialize' op consumer_regs must be a multiple of 8 in [24, 256] (what setmaxnreg takes), got 250}}
  flash.wg.warp_specialize consumers = 2, producer_regs = 24, consumer_regs = 250
  producer {
  ^bb0(%t: i32):
  } consumer {
  ^bb0(%c: i32, %t: i32):
  }
  return
}

// -----

func.func @roles_too_many_registers() {
  // expected-error @+1 {{'flash.wg.warp_specialize' op the roles hold 101376 registers, more than an SM's 65536}}
  flash.wg.warp_specialize consumers = 3, producer_regs = 24, consumer_regs = 256
  producer {
  ^bb0(%t: i32):
  } consumer {
  ^bb0(%c: i32, %t: i32):
  }
  return
}

// -----

func.func @roles_consumer_args() {
  // expected-error @+1 {{'flash.wg.warp_specialize' op the consumer region takes (consumer, thread) as i32, got 1 argument(s)}}
  flash.wg.warp_specialize consumers = 2, producer_regs = 24, consumer_regs = 240
  producer {
  ^bb0(%t: i32):
  } consumer {
  ^bb0(%t: i32):
  }
  return
}

// -----

func.func @roles_producer_index(%x: index) {
  // expected-error @+1 {{'flash.wg.warp_specialize' op the producer region takes (thread) as i32, got 1 argument(s)}}
  flash.wg.warp_specialize consumers = 1, producer_regs = 24, consumer_regs = 240
  producer {
  ^bb0(%t: index):
  } consumer {
  ^bb0(%c: i32, %t: i32):
  }
  return
}

// -----

func.func @yield_outside() {
  // expected-error @+1 {{'flash.wg.yield' op expects parent op to be one of 'flash.wg.warp_specialize, flash.wg.pingpong_turn, flash.wg.tile_loop, flash.wg.claimed_tile_loop'}}
  flash.wg.yield
}

// -----

func.func @turn_yields_other_types(%c: i32, %x: f32) {
  // expected-error @+1 {{'flash.wg.pingpong_turn' op the region yields 1 value(s) of other types than the 1 result(s)}}
  %r = flash.wg.pingpong_turn %c -> i32 {
    flash.wg.yield %x : f32
  }
  return
}

// -----

func.func @role_yields_values(%x: f32) {
  // expected-error @+1 {{'flash.wg.warp_specialize' op a role's region yields nothing}}
  flash.wg.warp_specialize consumers = 1, producer_regs = 24, consumer_regs = 240
  producer {
  ^bb0(%t: i32):
    flash.wg.yield %x : f32
  } consumer {
  ^bb0(%c: i32, %t: i32):
  }
  return
}

// -----

func.func @advance_bytes(%d: !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>) {
  // expected-error @+1 {{'flash.wg.advance_descriptor' op bytes must be a multiple of 16 (the start address field counts 16-byte units), got 24}}
  %e = flash.wg.advance_descriptor %d bytes 24 : !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>
  return
}

// -----

func.func @advance_type(%d: !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>) {
  // expected-error @+1 {{'flash.wg.advance_descriptor' op failed to verify that all of {base, result} have same type}}
  %e = "flash.wg.advance_descriptor"(%d) <{bytes = 32 : i64}> : (!flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>) -> !flash.smem_descriptor<bf16, major = mn, swizzle = 128, lbo = 16, sbo = 1024>
  return
}

// -----

func.func @advance_range(%d: !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>) {
  // expected-error @+1 {{'flash.wg.advance_descriptor' op bytes must lie within the 2^18 bytes the start address field spans, got 262144}}
  %e = flash.wg.advance_descriptor %d bytes 262144 : !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>
  return
}

// RUN: flash-opt %s -split-input-file -verify-diagnostics

func.func @contraction(%a: tensor<64x64xbf16>, %b: tensor<32x32xbf16>, %acc: tensor<64x32xf32>) {
  // expected-error @+1 {{'flash.dot' op contraction size mismatch: 'a' is 64x64 but 'b' has 32 rows}}
  %r = flash.dot %a, %b, %acc : tensor<64x64xbf16>, tensor<32x32xbf16> -> tensor<64x32xf32>
  return
}

// -----

func.func @contraction_transposed(%a: tensor<64x64xbf16>, %b: tensor<32x16xbf16>, %acc: tensor<64x32xf32>) {
  // expected-error @+1 {{contraction size mismatch: 'a' is 64x64 but 'b'^T has 16 rows}}
  %r = flash.dot %a, %b, %acc transpose_b : tensor<64x64xbf16>, tensor<32x16xbf16> -> tensor<64x32xf32>
  return
}

// -----

func.func @acc_shape(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, %acc: tensor<64x32xf32>) {
  // expected-error @+1 {{'acc' must be 64x16, got 64x32}}
  %r = flash.dot %a, %b, %acc : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x32xf32>
  return
}

// -----

func.func @acc_type(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, %acc: tensor<64x16xbf16>) {
  // expected-error @+1 {{'acc' must have element type f32, got 'bf16'}}
  %r = flash.dot %a, %b, %acc : tensor<64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xbf16>
  return
}

// -----

func.func @mixed_operands(%a: tensor<64x32xbf16>, %b: tensor<32x16xf16>, %acc: tensor<64x16xf32>) {
  // expected-error @+1 {{'a' has element type 'bf16' but 'b' has 'f16'}}
  %r = flash.dot %a, %b, %acc : tensor<64x32xbf16>, tensor<32x16xf16> -> tensor<64x16xf32>
  return
}

// -----

func.func @integer_operands(%a: tensor<64x32xi8>, %b: tensor<32x16xi8>, %acc: tensor<64x16xf32>) {
  // expected-error @+1 {{operand element type 'i8' is not supported; use bf16, f16 or f32}}
  %r = flash.dot %a, %b, %acc : tensor<64x32xi8>, tensor<32x16xi8> -> tensor<64x16xf32>
  return
}

// -----

func.func @rank3_operand(%a: tensor<2x64x32xbf16>, %b: tensor<32x16xbf16>, %acc: tensor<64x16xf32>) {
  // expected-error @+1 {{'a' must be a rank-2 tile, got rank 3}}
  %r = flash.dot %a, %b, %acc : tensor<2x64x32xbf16>, tensor<32x16xbf16> -> tensor<64x16xf32>
  return
}

// -----

func.func @acc_result_differ(%a: tensor<64x32xbf16>, %b: tensor<32x16xbf16>, %acc: tensor<64x16xf32>) {
  // expected-error @+1 {{failed to verify that all of {acc, result} have same type}}
  %r = "flash.dot"(%a, %b, %acc) : (tensor<64x32xbf16>, tensor<32x16xbf16>, tensor<64x16xf32>) -> tensor<64x32xf32>
  return
}

// -----

func.func @transposed_a_contraction(%a: tensor<64x32xbf16>, %b: tensor<32x128xbf16>, %acc: tensor<32x128xf32>) {
  // expected-error @+1 {{contraction size mismatch: 'a'^T is 32x64 but 'b' has 32 rows}}
  %r = flash.dot %a, %b, %acc transpose_a : tensor<64x32xbf16>, tensor<32x128xbf16> -> tensor<32x128xf32>
  return
}

// RUN: flash-opt %s -split-input-file -verify-diagnostics

func.func @row_count(%s: tensor<64x32xf32>, %m: tensor<128xf32>) {
  // expected-error @+1 {{'flash.softmax_update' op 'row_max' has 128 rows but 'scores' has 64}}
  %p, %mn, %ln, %a = flash.softmax_update %s, %m, %m : tensor<64x32xf32>, tensor<128xf32>
  return
}

// -----

func.func @bf16_scores(%s: tensor<64x32xbf16>, %m: tensor<64xf32>) {
  // expected-error @+1 {{'scores' must have element type f32, got 'bf16'}}
  %p, %mn, %ln, %a = flash.softmax_update %s, %m, %m : tensor<64x32xbf16>, tensor<64xf32>
  return
}

// -----

func.func @zero_scale(%s: tensor<64x32xf32>, %m: tensor<64xf32>) {
  // expected-error @+1 {{scale must be a positive finite number, got 0}}
  %p, %mn, %ln, %a = flash.softmax_update %s, %m, %m {scale = 0.0 : f32} : tensor<64x32xf32>, tensor<64xf32>
  return
}

// -----

func.func @max_and_sum_differ(%s: tensor<64x32xf32>, %m: tensor<64xf32>, %l: tensor<32xf32>) {
  // expected-error @+1 {{failed to verify that all of {row_max, row_sum, new_max, new_sum, alpha} have same type}}
  %p, %mn, %ln, %a = "flash.softmax_update"(%s, %m, %l) : (tensor<64x32xf32>, tensor<64xf32>, tensor<32xf32>) -> (tensor<64x32xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)
  return
}

// -----

func.func @rescale_rows(%acc: tensor<64x128xf32>, %alpha: tensor<32xf32>) {
  // expected-error @+1 {{'flash.rescale' op 'alpha' has 32 rows but 'acc' has 64}}
  %r = flash.rescale %acc, %alpha : tensor<64x128xf32>, tensor<32xf32>
  return
}

// -----

func.func @rescale_matrix_alpha(%acc: tensor<64x128xf32>, %alpha: tensor<64x1xf32>) {
  // expected-error @+1 {{'alpha' must be a rank-1 tile, got rank 2}}
  %r = flash.rescale %acc, %alpha : tensor<64x128xf32>, tensor<64x1xf32>
  return
}

// -----

func.func @finalize_bf16(%acc: tensor<64x128xbf16>, %m: tensor<64xf32>) {
  // expected-error @+1 {{'flash.finalize' op 'acc' must have element type f32, got 'bf16'}}
  %o, %lse = flash.finalize %acc, %m, %m : tensor<64x128xbf16>, tensor<64xf32>
  return
}

// -----

func.func @finalize_rows(%acc: tensor<64x128xf32>, %m: tensor<128xf32>) {
  // expected-error @+1 {{'row_max' has 128 rows but 'acc' has 64}}
  %o, %lse = flash.finalize %acc, %m, %m : tensor<64x128xf32>, tensor<128xf32>
  return
}

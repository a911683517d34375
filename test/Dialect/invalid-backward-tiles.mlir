// RUN: flash-opt %s -split-input-file -verify-diagnostics

func.func @row_dot_rows(%a: tensor<64x128xbf16>) {
  // expected-error @+1 {{'result' has 32 rows but 'a' has 64}}
  %d = flash.row_dot %a, %a : tensor<64x128xbf16> -> tensor<32xf32>
  return
}

// -----

func.func @row_dot_rank(%a: tensor<64xbf16>) {
  // expected-error @+1 {{'a' must be a rank-2 tile, got rank 1}}
  %d = flash.row_dot %a, %a : tensor<64xbf16> -> tensor<64xf32>
  return
}

// -----

func.func @recompute_lse_rows(%s: tensor<64x32xf32>, %lse: tensor<128xf32>) {
  // expected-error @+1 {{'lse' has 128 rows but 'scores' has 64}}
  %p = flash.softmax_recompute %s, %lse : tensor<64x32xf32>, tensor<128xf32>
  return
}

// -----

func.func @recompute_bf16(%s: tensor<64x32xbf16>, %lse: tensor<64xf32>) {
  // expected-error @+1 {{'scores' must have element type f32, got 'bf16'}}
  %p = flash.softmax_recompute %s, %lse : tensor<64x32xbf16>, tensor<64xf32>
  return
}

// -----

func.func @recompute_scale(%s: tensor<64x32xf32>, %lse: tensor<64xf32>) {
  // expected-error @+1 {{scale must be a positive finite number, got 0}}
  %p = flash.softmax_recompute %s, %lse {scale = 0.0 : f32} : tensor<64x32xf32>, tensor<64xf32>
  return
}

// -----

func.func @grad_delta_rows(%p: tensor<64x32xf32>, %delta: tensor<32xf32>) {
  // expected-error @+1 {{'delta' has 32 rows but 'p' has 64}}
  %ds = flash.softmax_grad %p, %p, %delta : tensor<64x32xf32>, tensor<32xf32>
  return
}

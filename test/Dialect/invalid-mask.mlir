// RUN: flash-opt %s -split-input-file -verify-diagnostics

func.func @f16_scores(%s: tensor<64x64xf16>, %i: index) {
  // expected-error @+1 {{'flash.mask' op 'scores' must have element type f32, got 'f16'}}
  %r = flash.mask %s, %i, %i, %i, %i : tensor<64x64xf16>
  return
}

// -----

func.func @rank1_scores(%s: tensor<64xf32>, %i: index) {
  // expected-error @+1 {{'scores' must be a rank-2 tile, got rank 1}}
  %r = flash.mask %s, %i, %i, %i, %i causal : tensor<64xf32>
  return
}

// RUN: flash-opt %s -split-input-file -verify-diagnostics

!t = memref<?x?x?x64xbf16>
func.func @sinks_not_f32(%q: !t, %k: !t, %v: !t, %o: !t, %s: memref<?xbf16>) {
  // expected-error @+1 {{'sinks' must be a rank-1 memref of f32 (one logit per query head), got 'memref<?xbf16>'}}
  flash.attention %q, %k, %v -> %o sinks(%s : memref<?xbf16>) : !t, !t, !t -> !t
  return
}

// -----

!t = memref<?x8x?x64xbf16>
func.func @sinks_per_head(%q: !t, %k: !t, %v: !t, %o: !t, %s: memref<4xf32>) {
  // expected-error @+1 {{heads mismatch: 'sinks' has 4 logits but 'q' has 8 heads}}
  flash.attention %q, %k, %v -> %o sinks(%s : memref<4xf32>) : !t, !t, !t -> !t
  return
}

// -----

!t = memref<?x?x?x64xbf16>
!l = memref<?x?x?xf32>
func.func @dsinks_per_head(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !l,
                           %dq: !t, %dk: !t, %dv: !t, %s: memref<?xf32>,
                           %ds: memref<?x?xf32>) {
  // expected-error @+1 {{'dsinks' must be a rank-1 memref of f32}}
  flash.attention_backward %q, %k, %v, %o, %do, %lse -> %dq, %dk, %dv
      sinks(%s : memref<?xf32> -> %ds : memref<?x?xf32>)
      : !t, !t, !t, !t, !t, !l -> !t, !t, !t
  return
}

// -----

!t = memref<?x?x?x64xbf16>
!l = memref<?x?x?xf32>
func.func @no_derivative(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !l,
                         %dq: !t, %dk: !t, %dv: !t) {
  flash.attention_backward %q, %k, %v, %o, %do, %lse -> %dq, %dk, %dv
      : !t, !t, !t, !t, !t, !l -> !t, !t, !t
    score_mod {
    ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
      // expected-error @+1 {{'math.erf' op in 'score_mod' has no derivative the compiler can form for the backward pass}}
      %e = math.erf %x : f32
      flash.yield %e : f32
    }
  return
}

// -----

// An op the derivative does not need (it computes from the indices only)
// may be anything the forward allows.
!t = memref<?x?x?x64xbf16>
!l = memref<?x?x?xf32>
func.func @index_only_ops_need_no_derivative(%q: !t, %k: !t, %v: !t, %o: !t,
    %do: !t, %lse: !l, %dq: !t, %dk: !t, %dv: !t) {
  flash.attention_backward %q, %k, %v, %o, %do, %lse -> %dq, %dk, %dv
      : !t, !t, !t, !t, !t, !l -> !t, !t, !t
    score_mod {
    ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index):
      %ii = arith.index_cast %i : index to i32
      %f = arith.sitofp %ii : i32 to f32
      %e = math.erf %f : f32
      %r = arith.addf %x, %e : f32
      flash.yield %r : f32
    }
  return
}

// -----

func.func @sink_grad_rows(%lse: tensor<64xf32>, %delta: tensor<32xf32>, %s: f32, %i: index) -> f32 {
  // expected-error @+1 {{all of {lse, delta} have same type}}
  %g = "flash.sink_grad"(%lse, %delta, %s, %i, %i) : (tensor<64xf32>, tensor<32xf32>, f32, index, index) -> f32
  return %g : f32
}

// RUN: flash-opt %s -split-input-file -verify-diagnostics

!t = memref<?x?x?x64xbf16>
func.func @score_mod_wrong_arguments(%q: !t, %k: !t, %v: !t, %o: !t) {
  // expected-error @+1 {{'flash.attention' op 'score_mod' must take (f32, index, index, index, index) (no captures are given), got (f32, index)}}
  flash.attention %q, %k, %v -> %o : !t, !t, !t -> !t
    score_mod {
    ^bb0(%s: f32, %b: index):
      flash.yield %s : f32
    }
  return
}

// -----

!t = memref<?x?x?x64xbf16>
func.func @mask_mod_missing_capture(%q: !t, %k: !t, %v: !t, %o: !t, %doc: memref<?xi32>) {
  // expected-error @+1 {{'mask_mod' must take (index, index, index, index, memref<?xi32>) (the fixed arguments, then the captures), got (index, index, index, index)}}
  flash.attention %q, %k, %v -> %o captures(%doc : memref<?xi32>) : !t, !t, !t -> !t
    mask_mod {
    ^bb0(%b: index, %h: index, %qi: index, %kv: index):
      %t = arith.constant true
      flash.yield %t : i1
    }
  return
}

// -----

!t = memref<?x?x?x64xbf16>
func.func @mask_mod_yields_f32(%q: !t, %k: !t, %v: !t, %o: !t) {
  flash.attention %q, %k, %v -> %o : !t, !t, !t -> !t
    mask_mod {
    ^bb0(%b: index, %h: index, %qi: index, %kv: index):
      %c = arith.constant 1.0 : f32
      // expected-error @+1 {{'flash.yield' op in 'mask_mod' must yield one 'i1'}}
      flash.yield %c : f32
    }
  return
}

// -----

!t = memref<?x?x?x64xbf16>
func.func @score_mod_foreign_op(%q: !t, %k: !t, %v: !t, %o: !t) {
  flash.attention %q, %k, %v -> %o : !t, !t, !t -> !t
    score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
      // expected-error @+1 {{'func.call' op cannot be lowered in 'score_mod': its body may hold only arith and math ops and memref.load of a capture}}
      %r = func.call @bias(%s) : (f32) -> f32
      flash.yield %r : f32
    }
  return
}
func.func private @bias(f32) -> f32

// -----

!t = memref<?x?x?x64xbf16>
func.func @score_mod_uses_outer_value(%q: !t, %k: !t, %v: !t, %o: !t, %x: f32) {
  flash.attention %q, %k, %v -> %o : !t, !t, !t -> !t
    score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
      // expected-error @+1 {{'arith.addf' op in 'score_mod' uses a value defined outside the region (pass memrefs as captures)}}
      %r = arith.addf %s, %x : f32
      flash.yield %r : f32
    }
  return
}

// -----

!t = memref<?x?x?x64xbf16>
func.func @load_not_a_capture(%q: !t, %k: !t, %v: !t, %o: !t, %bias: memref<?xf32>) {
  flash.attention %q, %k, %v -> %o : !t, !t, !t -> !t
    score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
      // expected-error @+1 {{'memref.load' op in 'score_mod' may read only the region's captures}}
      %m = memref.load %bias[%h] : memref<?xf32>
      %r = arith.addf %s, %m : f32
      flash.yield %r : f32
    }
  return
}

// -----

!t = memref<?x?x?x64xbf16>
func.func @unread_captures(%q: !t, %k: !t, %v: !t, %o: !t, %bias: memref<?xf32>) {
  // expected-error @+1 {{'flash.attention' op has captures but no score_mod or mask_mod reads them}}
  flash.attention %q, %k, %v -> %o captures(%bias : memref<?xf32>) : !t, !t, !t -> !t
  return
}

// -----

!t = memref<?x?x?x64xbf16>
func.func @vector_capture(%q: !t, %k: !t, %v: !t, %o: !t, %bias: memref<?xvector<4xf32>>) {
  // expected-error @+1 {{'flash.attention' op capture #0 must be a memref of scalars, got 'memref<?xvector<4xf32>>'}}
  flash.attention %q, %k, %v -> %o captures(%bias : memref<?xvector<4xf32>>) : !t, !t, !t -> !t
    score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index, %x: memref<?xvector<4xf32>>):
      flash.yield %s : f32
    }
  return
}

// -----

!t = memref<?x?x?x64xbf16>
func.func @yield_outside_mods(%x: f32) {
  // expected-error @+1 {{'flash.yield' op expects parent op to be one of 'flash.attention, flash.attention_backward, flash.mod_scores, flash.mod_scores_grad, flash.wg.mod_scores'}}
  flash.yield %x : f32
}

// -----

func.func @tile_scores_f16(%s: tensor<64x32xf16>, %i: index) {
  // expected-error @+1 {{'flash.mod_scores' op 'scores' must have element type f32, got 'f16'}}
  %r = flash.mod_scores %s, %i, %i, %i, %i, %i, %i : tensor<64x32xf16>
  return
}

// -----

// key_ranges names a capture that is an i32 [batch, blocks, 2] table.
!t = memref<?x?x?x64xbf16>
func.func @key_ranges_index(%q: !t, %k: !t, %v: !t, %o: !t, %doc: memref<?x?xi32>) {
  // expected-error @+1 {{'flash.attention' op 'key_ranges' names capture #1 but there are 1}}
  flash.attention %q, %k, %v -> %o captures(%doc : memref<?x?xi32>)
      {key_ranges = array<i64: 1, 128>} : !t, !t, !t -> !t
    mask_mod {
    ^bb0(%b: index, %h: index, %qi: index, %kv: index, %d: memref<?x?xi32>):
      %t = arith.constant true
      flash.yield %t : i1
    }
  return
}

// -----

!t = memref<?x?x?x64xbf16>
func.func @key_ranges_type(%q: !t, %k: !t, %v: !t, %o: !t, %doc: memref<?x?xi32>) {
  // expected-error @+1 {{'flash.attention' op 'key_ranges' capture #0 must be an i32 memref of [batch, query blocks, 2 or 4], got 'memref<?x?xi32>'}}
  flash.attention %q, %k, %v -> %o captures(%doc : memref<?x?xi32>)
      {key_ranges = array<i64: 0, 128>} : !t, !t, !t -> !t
    mask_mod {
    ^bb0(%b: index, %h: index, %qi: index, %kv: index, %d: memref<?x?xi32>):
      %t = arith.constant true
      flash.yield %t : i1
    }
  return
}

// -----

!t = memref<?x?x?x64xbf16>
func.func @key_ranges_rows(%q: !t, %k: !t, %v: !t, %o: !t, %r: memref<?x?x2xi32>) {
  // expected-error @+1 {{'flash.attention' op 'key_ranges' must be [capture, rows] with rows >= 1}}
  flash.attention %q, %k, %v -> %o captures(%r : memref<?x?x2xi32>)
      {key_ranges = array<i64: 0, 0>} : !t, !t, !t -> !t
    mask_mod {
    ^bb0(%b: index, %h: index, %qi: index, %kv: index, %d: memref<?x?x2xi32>):
      %t = arith.constant true
      flash.yield %t : i1
    }
  return
}

// -----

// The backward takes the forward's key_ranges and checks them the same way.
!t = memref<?x?x?x64xbf16>
!l = memref<?x?x?xf32>
func.func @backward_key_ranges_type(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t,
                                    %lse: !l, %dq: !t, %dk: !t, %dv: !t,
                                    %r: memref<?x?x3xi32>) {
  // expected-error @+1 {{'flash.attention_backward' op 'key_ranges' capture #0 must be an i32 memref of [batch, query blocks, 2 or 4], got 'memref<?x?x3xi32>'}}
  flash.attention_backward %q, %k, %v, %o, %do, %lse -> %dq, %dk, %dv
      captures(%r : memref<?x?x3xi32>) {key_ranges = array<i64: 0, 128>}
      : !t, !t, !t, !t, !t, !l -> !t, !t, !t
    mask_mod {
    ^bb0(%b: index, %h: index, %qi: index, %kv: index, %d: memref<?x?x3xi32>):
      %t = arith.constant true
      flash.yield %t : i1
    }
  return
}

// RUN: flash-opt %s -split-input-file -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu -verify-diagnostics

// What the backward kernels do not implement, one diagnostic each.

// expected-error @+1 {{flash-to-gpu: the backward kernels take 64 x 64 tiles (block_m = 64, block_n = 64; got 128 x 64)}}
func.func @wide_tiles(%q: memref<?x?x?x64xbf16>, %lse: memref<?x?x?xf32>) {
  flash.attention_backward %q, %q, %q, %q, %q, %lse -> %q, %q, %q
      {config = #flash.config<block_m = 128, block_n = 64>}
      : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>,
        memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?xf32>
        -> memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>
  return
}

// -----

// expected-error @+1 {{flash-to-gpu: the backward kernels take head dims 64 and 128 (got 256)}}
func.func @head_dim_256(%q: memref<?x?x?x256xbf16>, %lse: memref<?x?x?xf32>) {
  flash.attention_backward %q, %q, %q, %q, %q, %lse -> %q, %q, %q
      : memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>,
        memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?xf32>
        -> memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>, memref<?x?x?x256xbf16>
  return
}

// -----

!t = memref<1x4x?x64xbf16>
// expected-error @+1 {{flash-to-gpu: the backward kernels take dense batches only: packed sequences' backward runs on the CPU target so far}}
func.func @packed(%q: !t, %lse: memref<1x4x?xf32>, %cq: memref<?xi32>,
                  %ck: memref<?xi32>, %mq: index, %mk: index) {
  flash.attention_backward %q, %q, %q, %q, %q, %lse -> %q, %q, %q
      packed(%cq : memref<?xi32>, %ck : memref<?xi32>, max_q %mq, max_k %mk)
      : !t, !t, !t, !t, !t, memref<1x4x?xf32> -> !t, !t, !t
  return
}

// -----

!t = memref<?x?x?x64xbf16>
!l = memref<?x?x?xf32>
func.func @wide_capture(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t, %lse: !l,
                        %dq: !t, %dk: !t, %dv: !t, %slopes: memref<?xf64>) {
  // expected-error @+1 {{flash-to-gpu: a capture must be a row-major memref of rank 1 to 4 of f32, i32, bf16 or f16 on the GPU, got 'memref<?xf64>'}}
  flash.attention_backward %q, %k, %v, %o, %do, %lse -> %dq, %dk, %dv
      captures(%slopes : memref<?xf64>) {causal}
      : !t, !t, !t, !t, !t, !l -> !t, !t, !t
    score_mod {
    ^bb0(%x: f32, %b: index, %h: index, %i: index, %j: index, %sl: memref<?xf64>):
      %m = memref.load %sl[%h] : memref<?xf64>
      %f = arith.truncf %m : f64 to f32
      %r = arith.addf %x, %f : f32
      flash.yield %r : f32
    }
  return
}

// RUN: flash-opt %s -split-input-file -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu -verify-diagnostics

// The runtime passes captures of f32, i32, bf16 and f16.
!t = memref<?x?x?x128xbf16>
func.func @wide(%q: !t, %k: !t, %v: !t, %o: !t, %slopes: memref<?xi64>) {
  // expected-error @+1 {{flash-to-gpu: a capture must be a row-major memref of rank 1 to 4 of f32, i32, bf16 or f16 on the GPU, got 'memref<?xi64>'}}
  flash.attention %q, %k, %v -> %o captures(%slopes : memref<?xi64>)
      {config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2>}
      : !t, !t, !t -> !t
    score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index,
         %sl: memref<?xi64>):
      %m = memref.load %sl[%h] : memref<?xi64>
      %f = arith.sitofp %m : i64 to f32
      %r = arith.addf %s, %f : f32
      flash.yield %r : f32
    }
  return
}

// -----

// The kernel takes its captures after every tensor.
!t = memref<?x?x?x128xbf16>
// expected-error @+1 {{flash-to-gpu: the captures and sinks must be the function's last arguments; argument #4 is not}}
func.func @before_lse(%q: !t, %k: !t, %v: !t, %o: !t, %slopes: memref<?xf32>,
                      %lse: memref<?x?x?xf32>) {
  flash.attention %q, %k, %v -> %o, lse %lse captures(%slopes : memref<?xf32>)
      {config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2>}
      : !t, !t, !t -> !t, memref<?x?x?xf32>
    score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index,
         %sl: memref<?xf32>):
      %m = memref.load %sl[%h] : memref<?xf32>
      %r = arith.addf %s, %m : f32
      flash.yield %r : f32
    }
  return
}

// -----

!p = memref<1x?x?x128xbf16>
func.func @packed(%q: !p, %k: !p, %v: !p, %o: !p, %cq: memref<?xi32>,
                  %ck: memref<?xi32>, %max: index) {
  // expected-error @+1 {{flash-to-gpu: score and mask mods with packed sequences are not lowered to the GPU yet (the CPU path runs them)}}
  flash.attention %q, %k, %v -> %o
      packed(%cq : memref<?xi32>, %ck : memref<?xi32>, max_q %max)
      {config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2>}
      : !p, !p, !p -> !p
    score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
      flash.yield %s : f32
    }
  return
}

// -----

// Sinks over packed sequences are the CPU path's.
!p = memref<1x?x?x128xbf16>
func.func @packed_sinks(%q: !p, %k: !p, %v: !p, %o: !p, %s: memref<?xf32>,
                        %cq: memref<?xi32>, %ck: memref<?xi32>, %max: index) {
  // expected-error @+1 {{flash-to-gpu: captures and sinks with packed sequences are not lowered to the GPU yet (the CPU path runs them)}}
  flash.attention %q, %k, %v -> %o
      packed(%cq : memref<?xi32>, %ck : memref<?xi32>, max_q %max)
      sinks(%s : memref<?xf32>) {causal, config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2>}
      : !p, !p, !p -> !p
  return
}

// RUN: flash-opt %s -split-input-file -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu -verify-diagnostics

// Captures (ALiBi's slopes, document ids) are read on the CPU path only.
!t = memref<?x?x?x128xbf16>
func.func @alibi(%q: !t, %k: !t, %v: !t, %o: !t, %slopes: memref<?xf32>) {
  // expected-error @+1 {{flash-to-gpu: score and mask mods that read captures are not lowered to the GPU yet (the CPU path runs them)}}
  flash.attention %q, %k, %v -> %o captures(%slopes : memref<?xf32>)
      {config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2>}
      : !t, !t, !t -> !t
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

// The sink's memref is one more kernel argument too.
!t = memref<?x?x?x128xbf16>
func.func @sinks(%q: !t, %k: !t, %v: !t, %o: !t, %s: memref<?xf32>) {
  // expected-error @+1 {{flash-to-gpu: attention sinks are not lowered to the GPU yet (the CPU path runs them)}}
  flash.attention %q, %k, %v -> %o sinks(%s : memref<?xf32>)
      {causal, config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2>}
      : !t, !t, !t -> !t
  return
}

// RUN: flash-opt %s -split-input-file | flash-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @dense
// CHECK: flash.attention_backward %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} -> %{{.*}}, %{{.*}}, %{{.*}} {causal, deterministic, scale = 5.000000e-01 : f32}
// CHECK-SAME: : memref<2x8x256x64xbf16>, memref<2x2x300x64xbf16>, memref<2x2x300x64xbf16>, memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16>, memref<2x8x256xf32>
// CHECK-SAME: -> memref<2x8x256x64xbf16>, memref<2x2x300x64xbf16>, memref<2x2x300x64xbf16>
func.func @dense(%q: memref<2x8x256x64xbf16>, %k: memref<2x2x300x64xbf16>,
                 %v: memref<2x2x300x64xbf16>, %o: memref<2x8x256x64xbf16>,
                 %do: memref<2x8x256x64xbf16>, %lse: memref<2x8x256xf32>,
                 %dq: memref<2x8x256x64xbf16>, %dk: memref<2x2x300x64xbf16>,
                 %dv: memref<2x2x300x64xbf16>) {
  flash.attention_backward %q, %k, %v, %o, %do, %lse -> %dq, %dk, %dv
      {causal, deterministic, scale = 0.5 : f32}
      : memref<2x8x256x64xbf16>, memref<2x2x300x64xbf16>, memref<2x2x300x64xbf16>,
        memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16>, memref<2x8x256xf32>
      -> memref<2x8x256x64xbf16>, memref<2x2x300x64xbf16>, memref<2x2x300x64xbf16>
  return
}

// -----

// CHECK-LABEL: func.func @packed
// CHECK: flash.attention_backward
// CHECK-SAME: packed(%{{.*}} : memref<?xi32>, %{{.*}} : memref<?xi32>, max_q %{{.*}}, max_k %{{.*}})
!t = memref<1x4x?x128xf16>
!kv = memref<1x4x?x128xf16>
func.func @packed(%q: !t, %k: !kv, %lse: memref<1x4x?xf32>, %cq: memref<?xi32>,
                  %ck: memref<?xi32>, %mq: index, %mk: index) {
  flash.attention_backward %q, %k, %k, %q, %q, %lse -> %q, %k, %k
      packed(%cq : memref<?xi32>, %ck : memref<?xi32>, max_q %mq, max_k %mk)
      : !t, !kv, !kv, !t, !t, memref<1x4x?xf32> -> !t, !kv, !kv
  return
}

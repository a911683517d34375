// RUN: flash-opt %s -split-input-file | flash-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @static_shapes
// CHECK-SAME: (%[[Q:.*]]: memref<2x8x256x64xbf16>, %[[K:.*]]: memref<2x8x256x64xbf16>, %[[V:.*]]: memref<2x8x256x64xbf16>, %[[O:.*]]: memref<2x8x256x64xbf16>)
// CHECK: flash.attention %[[Q]], %[[K]], %[[V]] -> %[[O]] :
// CHECK-SAME: memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16> -> memref<2x8x256x64xbf16>
// CHECK-NOT: lse
func.func @static_shapes(%q: memref<2x8x256x64xbf16>, %k: memref<2x8x256x64xbf16>,
                         %v: memref<2x8x256x64xbf16>, %o: memref<2x8x256x64xbf16>) {
  flash.attention %q, %k, %v -> %o : memref<2x8x256x64xbf16>, memref<2x8x256x64xbf16>,
      memref<2x8x256x64xbf16> -> memref<2x8x256x64xbf16>
  return
}

// -----

// CHECK-LABEL: func.func @dynamic_with_lse
// CHECK: flash.attention %{{.*}}, %{{.*}}, %{{.*}} -> %{{.*}}, lse %[[LSE:.*]] {causal, scale = 5.000000e-01 : f32}
// CHECK-SAME: -> memref<?x?x?x128xf16>, memref<?x?x?xf32>
func.func @dynamic_with_lse(%q: memref<?x?x?x128xf16>, %k: memref<?x?x?x128xf16>,
                            %v: memref<?x?x?x128xf16>, %o: memref<?x?x?x128xf16>,
                            %lse: memref<?x?x?xf32>) {
  flash.attention %q, %k, %v -> %o, lse %lse {causal, scale = 0.5 : f32}
      : memref<?x?x?x128xf16>, memref<?x?x?x128xf16>, memref<?x?x?x128xf16>
      -> memref<?x?x?x128xf16>, memref<?x?x?xf32>
  return
}

// -----

// Q and K/V sequence lengths differ; the config keeps its explicit values.
// CHECK-LABEL: func.func @cross_lengths_with_config
// CHECK: flash.attention
// CHECK-SAME: config = #flash.config<block_m = 256, block_n = 64, stages = 3, warpgroups = 2>
func.func @cross_lengths_with_config(%q: memref<1x4x1000x256xbf16>, %k: memref<1x4x77x256xbf16>,
                                     %v: memref<1x4x77x256xbf16>, %o: memref<1x4x1000x256xbf16>) {
  flash.attention %q, %k, %v -> %o
      {config = #flash.config<block_m = 256, block_n = 64, stages = 3, warpgroups = 2>}
      : memref<1x4x1000x256xbf16>, memref<1x4x77x256xbf16>, memref<1x4x77x256xbf16>
      -> memref<1x4x1000x256xbf16>
  return
}

// -----

// Strided views (here a head-major layout) are accepted.
// CHECK-LABEL: func.func @strided
// CHECK: flash.attention
// CHECK-SAME: memref<2x4x64x64xbf16, strided<[16384, 64, 256, 1]>>
func.func @strided(%q: memref<2x4x64x64xbf16, strided<[16384, 64, 256, 1]>>,
                   %k: memref<2x4x64x64xbf16>, %v: memref<2x4x64x64xbf16>,
                   %o: memref<2x4x64x64xbf16>) {
  flash.attention %q, %k, %v -> %o
      : memref<2x4x64x64xbf16, strided<[16384, 64, 256, 1]>>, memref<2x4x64x64xbf16>,
        memref<2x4x64x64xbf16> -> memref<2x4x64x64xbf16>
  return
}

// -----

// Grouped-query attention: 32 query heads over 8 K/V heads (and MQA: 1).
// CHECK-LABEL: func.func @grouped_query
// CHECK: flash.attention
// CHECK-SAME: memref<2x32x512x128xbf16>, memref<2x8x512x128xbf16>
// CHECK: flash.attention
// CHECK-SAME: memref<2x32x512x128xbf16>, memref<2x1x512x128xbf16>
func.func @grouped_query(%q: memref<2x32x512x128xbf16>, %k: memref<2x8x512x128xbf16>,
                         %v: memref<2x8x512x128xbf16>, %k1: memref<2x1x512x128xbf16>,
                         %o: memref<2x32x512x128xbf16>) {
  flash.attention %q, %k, %v -> %o
      : memref<2x32x512x128xbf16>, memref<2x8x512x128xbf16>, memref<2x8x512x128xbf16>
      -> memref<2x32x512x128xbf16>
  flash.attention %q, %k1, %k1 -> %o {causal}
      : memref<2x32x512x128xbf16>, memref<2x1x512x128xbf16>, memref<2x1x512x128xbf16>
      -> memref<2x32x512x128xbf16>
  return
}

// -----

// Packed sequences (varlen): the queries and keys of every sequence one
// after another, delimited by cu_seqlens.
// CHECK-LABEL: func.func @packed
// CHECK: flash.attention %{{.*}}, %{{.*}}, %{{.*}} -> %{{.*}}, lse %{{.*}} packed(%[[CQ:.*]] : memref<?xi32>, %[[CK:.*]] : memref<?xi32>, max_q %{{.*}}) {causal}
func.func @packed(%q: memref<1x8x?x128xbf16>, %k: memref<1x2x?x128xbf16>,
                  %v: memref<1x2x?x128xbf16>, %o: memref<1x8x?x128xbf16>,
                  %lse: memref<1x8x?xf32>, %cq: memref<?xi32>, %ck: memref<?xi32>,
                  %max: index) {
  flash.attention %q, %k, %v -> %o, lse %lse
      packed(%cq : memref<?xi32>, %ck : memref<?xi32>, max_q %max) {causal}
      : memref<1x8x?x128xbf16>, memref<1x2x?x128xbf16>, memref<1x2x?x128xbf16>
      -> memref<1x8x?x128xbf16>, memref<1x8x?xf32>
  return
}

// -----

// Decoding over a paged K/V cache: vLLM's num_pages x page_size x H_kv x D
// pages viewed as num_pages x H_kv x page_size x D, the page table and the
// cached lengths; the page count is no batch.
// CHECK-LABEL: func.func @paged_cache
// CHECK: flash.attention %{{.*}}, %{{.*}}, %{{.*}} -> %{{.*}}, lse %{{.*}} paged(%{{.*}} : memref<?x?xi32>, %{{.*}} : memref<?xi32>) {causal} : memref<4x32x?x128xbf16>, memref<1000x8x64x128xbf16, strided<[65536, 128, 1024, 1]>>
func.func @paged_cache(%q: memref<4x32x?x128xbf16>,
    %k: memref<1000x8x64x128xbf16, strided<[65536, 128, 1024, 1]>>,
    %v: memref<1000x8x64x128xbf16, strided<[65536, 128, 1024, 1]>>,
    %o: memref<4x32x?x128xbf16>, %lse: memref<4x32x?xf32>,
    %table: memref<?x?xi32>, %lens: memref<?xi32>) {
  flash.attention %q, %k, %v -> %o, lse %lse
      paged(%table : memref<?x?xi32>, %lens : memref<?xi32>) {causal}
      : memref<4x32x?x128xbf16>,
        memref<1000x8x64x128xbf16, strided<[65536, 128, 1024, 1]>>,
        memref<1000x8x64x128xbf16, strided<[65536, 128, 1024, 1]>>
      -> memref<4x32x?x128xbf16>, memref<4x32x?xf32>
  return
}

// -----

// Split-KV over the paged cache: the caller's f32 scratch, splits first.
// CHECK-LABEL: func.func @paged_cache_splits
// CHECK: paged(%{{.*}} : memref<?x?xi32>, %{{.*}} : memref<?xi32>) splits(%{{.*}} : memref<16x4x32x?x128xf32>, %{{.*}} : memref<16x4x32x?xf32>) sinks(%{{.*}} : memref<32xf32>) {causal}
func.func @paged_cache_splits(%q: memref<4x32x?x128xbf16>,
    %k: memref<1000x8x64x128xbf16, strided<[65536, 128, 1024, 1]>>,
    %v: memref<1000x8x64x128xbf16, strided<[65536, 128, 1024, 1]>>,
    %o: memref<4x32x?x128xbf16>, %lse: memref<4x32x?xf32>,
    %table: memref<?x?xi32>, %lens: memref<?xi32>,
    %po: memref<16x4x32x?x128xf32>, %pl: memref<16x4x32x?xf32>,
    %sinks: memref<32xf32>) {
  flash.attention %q, %k, %v -> %o, lse %lse
      paged(%table : memref<?x?xi32>, %lens : memref<?xi32>)
      splits(%po : memref<16x4x32x?x128xf32>, %pl : memref<16x4x32x?xf32>)
      sinks(%sinks : memref<32xf32>) {causal}
      : memref<4x32x?x128xbf16>,
        memref<1000x8x64x128xbf16, strided<[65536, 128, 1024, 1]>>,
        memref<1000x8x64x128xbf16, strided<[65536, 128, 1024, 1]>>
      -> memref<4x32x?x128xbf16>, memref<4x32x?xf32>
  return
}

// -----

// GQA packing for decoding.
// CHECK-LABEL: func.func @pack_gqa
// CHECK: flash.attention %{{.*}}, %{{.*}}, %{{.*}} -> %{{.*}} {causal, pack_gqa} : memref<?x32x?x128xbf16>, memref<?x8x?x128xbf16>
func.func @pack_gqa(%q: memref<?x32x?x128xbf16>, %k: memref<?x8x?x128xbf16>,
                    %v: memref<?x8x?x128xbf16>, %o: memref<?x32x?x128xbf16>) {
  flash.attention %q, %k, %v -> %o {causal, pack_gqa}
      : memref<?x32x?x128xbf16>, memref<?x8x?x128xbf16>,
        memref<?x8x?x128xbf16> -> memref<?x32x?x128xbf16>
  return
}

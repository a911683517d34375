// RUN: flash-opt %s -split-input-file -flash-tile | FileCheck %s

// CHECK-LABEL: func.func @non_causal
// CHECK-SAME: (%[[Q:[^:]*]]: memref<?x?x?x64xbf16>, %[[K:[^:]*]]: memref<?x?x?x64xbf16>, %[[V:[^:]*]]: memref<?x?x?x64xbf16>, %[[O:[^:]*]]: memref<?x?x?x64xbf16>)
// CHECK-SAME: attributes {flash.config = #flash.config<block_m = 64, block_n = 32>}
// CHECK-DAG: %[[B:.*]] = memref.dim %[[Q]], %c0
// CHECK-DAG: %[[H:.*]] = memref.dim %[[Q]], %c1
// CHECK-DAG: %[[HKV:.*]] = memref.dim %[[K]], %c1
// CHECK-DAG: %[[G:.*]] = arith.divui %[[H]], %[[HKV]]
// CHECK-DAG: %[[NQ:.*]] = memref.dim %[[Q]], %c2
// CHECK-DAG: %[[NK:.*]] = memref.dim %[[K]], %c2
// CHECK: %[[TILES:.*]] = arith.ceildivui %[[NQ]], %c64
// CHECK: %[[BH:.*]] = arith.muli %[[B]], %[[H]]
// CHECK: flash.grid %[[TILES]], %[[BH]] {
// CHECK:   %[[PM:.*]] = flash.program_id 0
// CHECK:   %[[PBH:.*]] = flash.program_id 1
// CHECK:   %[[BI:.*]] = arith.divui %[[PBH]], %[[H]]
// CHECK:   %[[HI:.*]] = arith.remui %[[PBH]], %[[H]]
// CHECK:   %[[HKVI:.*]] = arith.divui %[[HI]], %[[G]]
// CHECK:   %[[ROW:.*]] = arith.muli %[[PM]], %{{.*}}
// CHECK:   %[[QT:.*]] = flash.load_tile %[[Q]][%[[BI]], %[[HI]], %[[ROW]]] : memref<?x?x?x64xbf16> -> tensor<64x64xbf16>
// CHECK-DAG: %[[ACC0:.*]] = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
// CHECK-DAG: %[[M0:.*]] = arith.constant dense<0xFF800000> : tensor<64xf32>
// CHECK-DAG: %[[L0:.*]] = arith.constant dense<0.000000e+00> : tensor<64xf32>
// The non-causal loop runs over every key.
// CHECK:   %[[R:.*]]:3 = scf.for %[[J:.*]] = %{{.*}} to %[[NK]] step %{{.*}} iter_args(%[[ACC:.*]] = %[[ACC0]], %[[M:.*]] = %[[M0]], %[[L:.*]] = %[[L0]])
// CHECK:     %[[KT:.*]] = flash.load_tile %[[K]][%[[BI]], %[[HKVI]], %[[J]]] : memref<?x?x?x64xbf16> -> tensor<32x64xbf16>
// CHECK:     %[[VT:.*]] = flash.load_tile %[[V]][%[[BI]], %[[HKVI]], %[[J]]]
// CHECK:     %[[S:.*]] = flash.dot %[[QT]], %[[KT]], %{{.*}} transpose_b : tensor<64x64xbf16>, tensor<32x64xbf16> -> tensor<64x32xf32>
// CHECK:     %[[SM:.*]] = flash.mask %[[S]], %[[ROW]], %[[J]], %[[NQ]], %[[NK]] : tensor<64x32xf32>
// CHECK:     %[[P:.*]], %[[MN:.*]], %[[LN:.*]], %[[A:.*]] = flash.softmax_update %[[SM]], %[[M]], %[[L]] {scale = 1.250000e-01 : f32}
// CHECK:     %[[RS:.*]] = flash.rescale %[[ACC]], %[[A]]
// CHECK:     %[[PB:.*]] = arith.truncf %[[P]] : tensor<64x32xf32> to tensor<64x32xbf16>
// CHECK:     %[[PV:.*]] = flash.dot %[[PB]], %[[VT]], %[[RS]] : tensor<64x32xbf16>, tensor<32x64xbf16> -> tensor<64x64xf32>
// CHECK:     scf.yield %[[PV]], %[[MN]], %[[LN]]
// CHECK:   %[[OUT:.*]], %{{.*}} = flash.finalize %[[R]]#0, %[[R]]#1, %[[R]]#2
// CHECK:   %[[OB:.*]] = arith.truncf %[[OUT]] : tensor<64x64xf32> to tensor<64x64xbf16>
// CHECK:   flash.store_tile %[[OB]], %[[O]][%[[BI]], %[[HI]], %[[ROW]]]
// CHECK-NOT: flash.store_tile
// CHECK-NOT: flash.attention
func.func @non_causal(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                      %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>) {
  flash.attention %q, %k, %v -> %o {config = #flash.config<block_m = 64, block_n = 32>}
      : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16> -> memref<?x?x?x64xbf16>
  return
}

// -----

// Causal: the loop stops at min(seq_k, max(0, row + block_m + seq_k - seq_q)),
// the masks are causal, and the LSE is stored too.
// CHECK-LABEL: func.func @causal_with_lse
// CHECK: flash.grid
// CHECK:   %[[ROW:.*]] = arith.muli %{{.*}}, %[[BM:.*]] : index
// CHECK:   %[[TILE_END:.*]] = arith.addi %[[ROW]], %[[BM]]
// CHECK:   %[[SHIFT:.*]] = arith.subi %[[NK:.*]], %[[NQ:.*]] : index
// CHECK:   %[[LAST:.*]] = arith.addi %[[TILE_END]], %[[SHIFT]]
// CHECK:   %[[CLAMPED:.*]] = arith.maxsi %[[LAST]], %{{.*}}
// CHECK:   %[[END:.*]] = arith.minsi %[[CLAMPED]], %[[NK]]
// CHECK:   scf.for %{{.*}} = %{{.*}} to %[[END]] step
// CHECK:     flash.mask {{.*}} causal : tensor<128x128xf32>
// CHECK:     flash.softmax_update {{.*}} {scale = 0.0883883461 : f32}
// CHECK:   %{{.*}}, %[[LSE:.*]] = flash.finalize
// CHECK:   flash.store_tile %{{.*}}, %{{.*}} : tensor<128x128xf16> -> memref<2x4x1000x128xf16>
// CHECK:   flash.store_tile %[[LSE]], %{{.*}} : tensor<128xf32> -> memref<2x4x1000xf32>
func.func @causal_with_lse(%q: memref<2x4x1000x128xf16>, %k: memref<2x4x900x128xf16>,
                           %lse: memref<2x4x1000xf32>) {
  flash.attention %q, %k, %k -> %q, lse %lse {causal}
      : memref<2x4x1000x128xf16>, memref<2x4x900x128xf16>, memref<2x4x900x128xf16>
      -> memref<2x4x1000x128xf16>, memref<2x4x1000xf32>
  return
}

// -----

// Without a config the default applies (block_n = 64 for head dim 256), and
// an explicit scale is kept.
// CHECK-LABEL: func.func @defaults
// CHECK-SAME: flash.config = #flash.config<block_m = 128, block_n = 64, warpgroups = 2>
// CHECK: flash.load_tile {{.*}} -> tensor<128x256xbf16>
// CHECK: flash.load_tile {{.*}} -> tensor<64x256xbf16>
// CHECK: flash.softmax_update {{.*}} {scale = 2.000000e+00 : f32}
func.func @defaults(%q: memref<1x1x64x256xbf16>) {
  flash.attention %q, %q, %q -> %q {scale = 2.0 : f32}
      : memref<1x1x64x256xbf16>, memref<1x1x64x256xbf16>, memref<1x1x64x256xbf16> -> memref<1x1x64x256xbf16>
  return
}

// -----

// Grouped-query attention: the program of query head h loads K and V of
// head h / G, G = H_q / H_kv (here 32 / 8).
// CHECK-LABEL: func.func @grouped_query
// CHECK-SAME: (%[[Q:[^:]*]]: memref<2x32x?x128xbf16>, %[[K:[^:]*]]: memref<2x8x?x128xbf16>, %[[V:[^:]*]]: memref<2x8x?x128xbf16>
// CHECK-DAG: %[[H:.*]] = memref.dim %[[Q]], %c1
// CHECK-DAG: %[[HKV:.*]] = memref.dim %[[K]], %c1
// CHECK: %[[G:.*]] = arith.divui %[[H]], %[[HKV]]
// CHECK: flash.grid
// CHECK:   %[[HI:.*]] = arith.remui %{{.*}}, %[[H]]
// CHECK:   %[[HKVI:.*]] = arith.divui %[[HI]], %[[G]]
// CHECK:   flash.load_tile %[[Q]][%{{.*}}, %[[HI]], %{{.*}}]
// CHECK:   scf.for
// CHECK:     flash.load_tile %[[K]][%{{.*}}, %[[HKVI]], %{{.*}}]
// CHECK:     flash.load_tile %[[V]][%{{.*}}, %[[HKVI]], %{{.*}}]
// CHECK:   flash.store_tile %{{.*}}, %{{.*}}[%{{.*}}, %[[HI]], %{{.*}}]
func.func @grouped_query(%q: memref<2x32x?x128xbf16>, %k: memref<2x8x?x128xbf16>,
                         %v: memref<2x8x?x128xbf16>, %o: memref<2x32x?x128xbf16>) {
  flash.attention %q, %k, %v -> %o
      : memref<2x32x?x128xbf16>, memref<2x8x?x128xbf16>, memref<2x8x?x128xbf16> -> memref<2x32x?x128xbf16>
  return
}

// -----

// Packed sequences: one program row per (sequence, head), as many query
// tiles as max_q needs; each program reads its sequence's rows from
// cu_seqlens, does nothing past its end, and works on views of that
// sequence's rows alone (the mask and the key bound use its lengths).
// CHECK-LABEL: func.func @packed
// CHECK-SAME: (%[[Q:[^:]*]]: memref<1x4x?x64xbf16>, %[[K:[^:]*]]: memref<1x2x?x64xbf16>, %{{[^:]*}}: memref<1x2x?x64xbf16>, %[[O:[^:]*]]: memref<1x4x?x64xbf16>, %[[CQ:[^:]*]]: memref<?xi32>, %[[CK:[^:]*]]: memref<?xi32>, %[[MAX:[^:]*]]: index)
// CHECK: %[[N:.*]] = memref.dim %[[CQ]], %c0
// CHECK: %[[SEQS:.*]] = arith.subi %[[N]], %c1
// CHECK: %[[TILES:.*]] = arith.ceildivui %[[MAX]], %{{.*}}
// CHECK: %[[PROGS:.*]] = arith.muli %[[SEQS]], %{{.*}}
// CHECK: flash.grid %[[TILES]], %[[PROGS]] {
// CHECK:   %[[S:.*]] = arith.divui
// CHECK:   %[[NEXT:.*]] = arith.addi %[[S]], %{{.*}}
// CHECK:   memref.load %[[CQ]][%[[S]]] : memref<?xi32>
// CHECK:   memref.load %[[CQ]][%[[NEXT]]] : memref<?xi32>
// CHECK:   %[[LQ:.*]] = arith.subi
// CHECK:   memref.load %[[CK]][%[[S]]] : memref<?xi32>
// CHECK:   %[[LK:.*]] = arith.subi
// CHECK:   %[[ROW:.*]] = arith.muli
// CHECK:   %[[IN:.*]] = arith.cmpi ult, %[[ROW]], %[[LQ]]
// CHECK:   scf.if %[[IN]] {
// CHECK:     %[[QS:.*]] = memref.subview %[[Q]][0, 0, %{{.*}}, 0] [1, %{{.*}}, %[[LQ]], 64] [1, 1, 1, 1]
// CHECK:     %[[KS:.*]] = memref.subview %[[K]][0, 0, %{{.*}}, 0] [1, %{{.*}}, %[[LK]], 64] [1, 1, 1, 1]
// CHECK:     %[[OS:.*]] = memref.subview %[[O]]
// CHECK:     flash.load_tile %[[QS]][%c0{{.*}}, %{{.*}}, %[[ROW]]]
// CHECK:     scf.for
// CHECK:       flash.load_tile %[[KS]]
// CHECK:       flash.mask %{{.*}}, %[[ROW]], %{{.*}}, %[[LQ]], %[[LK]] causal
// CHECK:     flash.store_tile %{{.*}}, %[[OS]]
func.func @packed(%q: memref<1x4x?x64xbf16>, %k: memref<1x2x?x64xbf16>,
                  %v: memref<1x2x?x64xbf16>, %o: memref<1x4x?x64xbf16>,
                  %cq: memref<?xi32>, %ck: memref<?xi32>, %max: index) {
  flash.attention %q, %k, %v -> %o packed(%cq : memref<?xi32>, %ck : memref<?xi32>, max_q %max)
      {causal, config = #flash.config<block_m = 64, block_n = 32>}
      : memref<1x4x?x64xbf16>, memref<1x2x?x64xbf16>, memref<1x2x?x64xbf16> -> memref<1x4x?x64xbf16>
  return
}

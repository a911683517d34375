// RUN: flash-opt %s -split-input-file -flash-tile -flash-fuse | FileCheck %s

// Non-causal: whole tiles inside seq_k run unmasked; the ragged tail keeps
// its mask.
// CHECK-LABEL: func.func @ragged_tail
// CHECK: flash.grid
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK: %[[FULL_TILES:.*]] = arith.divsi %[[NK:.*]], %[[C32]]
// CHECK: %[[FULL:.*]] = arith.muli %[[FULL_TILES]], %[[C32]]
// CHECK: %[[END_TILES:.*]] = arith.divsi %[[NK]], %[[C32]]
// CHECK: %[[END:.*]] = arith.muli %[[END_TILES]], %[[C32]]
// CHECK: %[[SPLIT:.*]] = arith.minsi %[[FULL]], %[[END]]
// CHECK: %[[HEAD:.*]]:3 = scf.for %{{.*}} = %{{.*}} to %[[SPLIT]] step
// CHECK-NOT: flash.mask
// CHECK: scf.yield
// CHECK: %[[TAIL:.*]]:3 = scf.for %[[J:.*]] = %[[SPLIT]] to %[[NK]] step %{{.*}} iter_args(%{{.*}} = %[[HEAD]]#0, %{{.*}} = %[[HEAD]]#1, %{{.*}} = %[[HEAD]]#2)
// CHECK: flash.mask %{{.*}}, %{{.*}}, %[[J]], %{{.*}}, %[[NK]] :
// CHECK: flash.finalize %[[TAIL]]#0, %[[TAIL]]#1, %[[TAIL]]#2 base2
func.func @ragged_tail(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>) {
  flash.attention %q, %k, %k -> %q {config = #flash.config<block_m = 64, block_n = 32>}
      : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16> -> memref<?x?x?x64xbf16>
  return
}

// -----

// Causal: the unmasked part also stops at the first tile the tile's first
// query row (row) does not see whole: floor((row + seq_k - seq_q + 1) / 32) * 32.
// CHECK-LABEL: func.func @causal_diagonal
// CHECK: %[[ROW:.*]] = arith.muli %{{.*}}, %c64
// CHECK: %[[KV_END:.*]] = arith.minsi %{{.*}}, %[[NK:.*]] : index
// CHECK: arith.divsi %[[NK]], %[[C32:.*]] : index
// CHECK: %[[SHIFT:.*]] = arith.subi %[[NK]], %[[NQ:.*]] : index
// CHECK: %[[LAST:.*]] = arith.addi %[[ROW]], %[[SHIFT]]
// CHECK: %[[SEEN:.*]] = arith.addi %[[LAST]], %c1
// CHECK: %[[NONNEG:.*]] = arith.maxsi %[[SEEN]], %c0
// CHECK: arith.divsi %[[NONNEG]], %[[C32]]
// CHECK: arith.divsi %[[KV_END]], %[[C32]]
// CHECK: %[[SPLIT:.*]] = arith.minsi
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[SPLIT]]
// CHECK-NOT: flash.mask
// CHECK: scf.for %{{.*}} = %[[SPLIT]] to %[[KV_END]]
// CHECK: flash.mask {{.*}} causal
func.func @causal_diagonal(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>) {
  flash.attention %q, %k, %k -> %q {causal, config = #flash.config<block_m = 64, block_n = 32>}
      : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16> -> memref<?x?x?x64xbf16>
  return
}

// -----

// A loop that does not start at 0 is not one -flash-tile makes: left alone.
// CHECK-LABEL: func.func @not_from_zero
// CHECK-COUNT-1: scf.for
// CHECK: flash.mask
func.func @not_from_zero(%s: tensor<64x32xf32>, %lb: index, %n: index) -> tensor<64x32xf32> {
  %c32 = arith.constant 32 : index
  %r = scf.for %j = %lb to %n step %c32 iter_args(%acc = %s) -> (tensor<64x32xf32>) {
    %m = flash.mask %acc, %lb, %j, %n, %n : tensor<64x32xf32>
    scf.yield %m : tensor<64x32xf32>
  }
  return %r : tensor<64x32xf32>
}

// -----

// The backward pass's query loop (key tile at col): the query tiles with a
// row that does not see the whole key tile, before
// first + ceil(max(col + 32 - 1 - (seq_k - seq_q) - first, 0) / 64) * 64,
// keep the mask; the later ones drop it, unless the key tile runs past
// seq_k (then the split is the loop's end).
// CHECK-LABEL: func.func @backward_causal
// CHECK: flash.grid
// CHECK: flash.grid
// CHECK: %[[COL:.*]] = arith.muli %{{.*}}, %c32{{[_0-9]*}}
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c1
// CHECK:   %[[LAST:.*]] = arith.subi %{{.*}}, %c1{{[_0-9]*}}
// CHECK:   %[[SHIFT:.*]] = arith.subi %[[NK:[^,]*]], %[[NQ:[^ ]*]] : index
// CHECK:   %[[FIRST_WHOLE:.*]] = arith.subi %[[LAST]], %[[SHIFT]]
// CHECK:   %[[ROWS:.*]] = arith.subi %[[FIRST_WHOLE]], %[[START:.*]] : index
// CHECK:   %[[NONNEG:.*]] = arith.maxsi %[[ROWS]], %c0{{[_0-9]*}}
// CHECK:   %[[TILES:.*]] = arith.ceildivsi %[[NONNEG]], %c64{{[_0-9]*}}
// CHECK:   %[[SKIP:.*]] = arith.muli %[[TILES]], %c64{{[_0-9]*}}
// CHECK:   %[[AT:.*]] = arith.addi %[[START]], %[[SKIP]]
// CHECK:   %[[CLAMPED:.*]] = arith.minsi %[[AT]], %[[NQ]]
// CHECK:   %[[KEY_END:.*]] = arith.addi %[[COL]], %c32{{[_0-9]*}}
// CHECK:   %[[RAGGED:.*]] = arith.cmpi sgt, %[[KEY_END]], %[[NK]]
// CHECK:   %[[SPLIT:.*]] = arith.select %[[RAGGED]], %[[NQ]], %[[CLAMPED]]
// CHECK:   %[[MASKED:.*]]:2 = scf.for %{{.*}} = %[[START]] to %[[SPLIT]] step %c64{{[_0-9]*}}
// CHECK:     flash.mask {{.*}} causal
// CHECK:   scf.for %{{.*}} = %[[SPLIT]] to %[[NQ]] step %c64{{[_0-9]*}} iter_args(%{{.*}} = %[[MASKED]]#0, %{{.*}} = %[[MASKED]]#1)
// CHECK-NOT: flash.mask
// CHECK:     flash.softmax_recompute
// CHECK: flash.grid
!t = memref<?x?x?x64xbf16>
func.func @backward_causal(%q: !t, %lse: memref<?x?x?xf32>) {
  flash.attention_backward %q, %q, %q, %q, %q, %lse -> %q, %q, %q
      {causal, config = #flash.config<block_m = 64, block_n = 32>}
      : !t, !t, !t, !t, !t, memref<?x?x?xf32> -> !t, !t, !t
  return
}

// -----

// A grouped (pack_gqa) tile's rows start over at query 0 with each head:
// the unmasked part stops at the first tile query 0 does not see whole,
// floor((seq_k - seq_q + 1) / 32) * 32, whatever the tile's first row.
// CHECK-LABEL: func.func @causal_grouped
// CHECK: arith.divsi %[[NK:.*]], %[[C32:.*]] : index
// CHECK: %[[SHIFT:.*]] = arith.subi %[[NK]], %{{.*}} : index
// CHECK: %[[SEEN:.*]] = arith.addi %[[SHIFT]], %c1
// CHECK: %[[NONNEG:.*]] = arith.maxsi %[[SEEN]], %c0
// CHECK: arith.divsi %[[NONNEG]], %[[C32]]
// CHECK: %[[SPLIT:.*]] = arith.minsi
// CHECK: %[[PART:.*]] = arith.minsi %[[SPLIT]]
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[PART]]
// CHECK-NOT: flash.mask
// CHECK: scf.for %{{.*}} = %[[PART]] to
// CHECK: flash.mask {{.*}} causal grouped_rows
func.func @causal_grouped(%q: memref<?x32x?x64xbf16>, %k: memref<?x8x?x64xbf16>) {
  flash.attention %q, %k, %k -> %q {causal, pack_gqa, config = #flash.config<block_m = 64, block_n = 32>}
      : memref<?x32x?x64xbf16>, memref<?x8x?x64xbf16>, memref<?x8x?x64xbf16> -> memref<?x32x?x64xbf16>
  return
}

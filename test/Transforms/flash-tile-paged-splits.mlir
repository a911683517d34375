// RUN: flash-opt %s -split-input-file -flash-tile | FileCheck %s
// RUN: flash-opt %s -split-input-file -flash-tile -flash-fuse -convert-flash-tiles-to-linalg | FileCheck %s --check-prefix=CPU
// RUN: not flash-opt %s -split-input-file -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu 2>&1 >/dev/null | FileCheck %s --check-prefix=GPU

// Split-KV over a paged cache: a third grid axis over the splits (the
// partials' first dimension); split s runs an equal share of whole key
// tiles of the batch's range, [begin + s * share, min(that + share, end)),
// and writes its normalised f32 output and LSE to its slices of the
// scratch, without the sink. A second grid folds every split of its rows
// (flash.merge_split), adds the sink in flash.finalize, and writes O and
// LSE.
// CHECK-LABEL: func.func @split_paged
// CHECK-SAME: attributes {flash.config = {{.*}}, flash.paged, flash.split_kv}
// CHECK: %[[SPLITS:.*]] = memref.dim %arg7, %c0 : memref<?x?x32x?x128xf32>
// CHECK: flash.grid %[[TILES:.*]], %[[BH:.*]], %[[SPLITS]] {
// CHECK: %[[SPLIT:.*]] = flash.program_id 2
// CHECK: %[[S:.*]] = memref.dim %arg7, %{{.*}} : memref<?x?x32x?x128xf32>
// CHECK: %[[OSLICE:.*]] = memref.subview %arg7[%[[SPLIT]], 0, 0, 0, 0] [1, %{{.*}}, 32, %{{.*}}, 128] [1, 1, 1, 1, 1] : memref<?x?x32x?x128xf32> to memref<?x32x?x128xf32, strided<[?, ?, 128, 1], offset: ?>>
// CHECK: %[[LSLICE:.*]] = memref.subview %arg8[%[[SPLIT]], 0, 0, 0]
// CHECK: %[[NTILES:.*]] = arith.ceildivui %{{.*}}, %[[BN:.*]] : index
// CHECK: %[[PER:.*]] = arith.ceildivui %[[NTILES]], %[[S]] : index
// CHECK: %[[SHARE:.*]] = arith.muli %[[PER]], %[[BN]] : index
// CHECK: %[[SKIP:.*]] = arith.muli %[[SPLIT]], %[[SHARE]] : index
// CHECK: %[[FIRST:.*]] = arith.addi %{{.*}}, %[[SKIP]] : index
// CHECK: %[[PAST:.*]] = arith.addi %[[FIRST]], %[[SHARE]] : index
// CHECK: %[[LAST:.*]] = arith.minsi %[[PAST]], %{{.*}} : index
// CHECK: scf.for %{{.*}} = %[[FIRST]] to %[[LAST]] step %[[BN]]
// CHECK: flash.softmax_update
// CHECK: }
// CHECK: %[[OUT:.*]], %[[LSE:.*]] = flash.finalize %{{.*}}#0, %{{.*}}#1, %{{.*}}#2 :
// CHECK: flash.store_tile %[[OUT]], %[[OSLICE]]
// CHECK: flash.store_tile %[[LSE]], %[[LSLICE]]
// CHECK-NOT: flash.store_tile
// CHECK: flash.grid %[[TILES]], %[[BH]] {
// CHECK: scf.for %[[I:.*]] = %c0{{.*}} to %{{.*}} step %c1
// CHECK: %[[PO:.*]] = memref.subview %arg7[%[[I]], 0, 0, 0, 0]
// CHECK: %[[PART:.*]] = flash.load_tile %[[PO]]{{.*}} -> tensor<64x128xf32>
// CHECK: %[[PL:.*]] = memref.subview %arg8[%[[I]], 0, 0, 0]
// CHECK: %[[PLSE:.*]] = flash.load_tile %[[PL]]{{.*}} -> tensor<64xf32>
// CHECK: flash.merge_split %[[PART]], %[[PLSE]] into
// CHECK: %[[SINK:.*]] = memref.load %arg9
// CHECK: flash.finalize %{{.*}}#0, %{{.*}}#1, %{{.*}}#2 sink %[[SINK]] :
// CHECK: flash.store_tile %{{.*}}, %arg3
// CHECK: flash.store_tile %{{.*}}, %arg4

// On the CPU path the splits' softmax moves to base 2 while the combine's
// finalize stays in natural units, the LSEs it folds being natural logs.
// CPU-LABEL: func.func @split_paged
// CPU: math.exp2
// CPU: math.log2
// CPU: math.exp
// CPU-NOT: math.log2
// CPU: math.log
// GPU: error: flash-to-gpu: a decoding kernel has one consumer warpgroup (block_m = 64), got 2
!q = memref<?x32x?x128xbf16>
!kv = memref<?x8x64x128xbf16, strided<[?, ?, ?, 1]>>
func.func @split_paged(%q: !q, %k: !kv, %v: !kv, %o: !q,
                       %lse: memref<?x32x?xf32>, %t: memref<?x?xi32>,
                       %l: memref<?xi32>, %po: memref<?x?x32x?x128xf32>,
                       %pl: memref<?x?x32x?xf32>, %sinks: memref<32xf32>) {
  flash.attention %q, %k, %v -> %o, lse %lse
      paged(%t : memref<?x?xi32>, %l : memref<?xi32>)
      splits(%po : memref<?x?x32x?x128xf32>, %pl : memref<?x?x32x?xf32>)
      sinks(%sinks : memref<32xf32>)
      {causal, config = #flash.config<block_m = 64, block_n = 64, warpgroups = 1>}
      : !q, !kv, !kv -> !q, memref<?x32x?xf32>
  return
}

// -----

// Split-KV over dense K and V: the same two grids; each split's range is
// a share of the causal range of its query tile.
// CHECK-LABEL: func.func @split_dense
// CHECK-SAME: flash.split_kv
// CHECK-NOT: flash.paged
// CHECK: flash.grid %{{.*}}, %{{.*}}, %{{.*}} {
// CHECK: flash.program_id 2
// CHECK: flash.grid %{{.*}}, %{{.*}} {
// CHECK: flash.merge_split
// CPU-LABEL: func.func @split_dense
!t = memref<?x?x?x64xf16>
func.func @split_dense(%q: !t, %k: !t, %v: !t, %o: !t,
                       %po: memref<4x?x?x?x64xf32>, %pl: memref<4x?x?x?xf32>) {
  flash.attention %q, %k, %v -> %o
      splits(%po : memref<4x?x?x?x64xf32>, %pl : memref<4x?x?x?xf32>)
      {causal} : !t, !t, !t -> !t
  return
}

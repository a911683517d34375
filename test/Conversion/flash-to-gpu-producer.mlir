// The producer's share of the tile program, rewritten by ProducerLoads.cpp's
// patterns: the program's Q load becomes the TMA load of the Q tile, and
// its key loops' K and V loads one loop over the block's key tiles filling
// the K/V ring. With split release K waits for its own barrier (empty_k,
// 6 here) and runs ahead of V (empty, 4); without it one wait covers both.
// RUN: flash-opt %kernels/attention.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s
// RUN: flash-opt %kernels/attention.mlir -flash-tile -flash-fuse -flash-gpu-schedule="split-release=0" -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --check-prefix=JOINT

// CHECK-LABEL: gpu.func @attention
// CHECK: %[[TMQ:.*]] = builtin.unrealized_conversion_cast %arg0 : !llvm.ptr to !nvgpu.tensormap.descriptor
// CHECK-NEXT: %[[TMK:.*]] = builtin.unrealized_conversion_cast %arg1 : !llvm.ptr to !nvgpu.tensormap.descriptor
// CHECK-NEXT: %[[TMV:.*]] = builtin.unrealized_conversion_cast %arg2 : !llvm.ptr to !nvgpu.tensormap.descriptor
// CHECK: producer {
// CHECK: flash.wg.tma_load_tile %[[TMQ]][%{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}], %{{.*}}[%{{.*}}] columns 128
// CHECK-NEXT: scf.for %[[J:.*]] = %c0 to %{{.*}} step %c1 {
// CHECK-NEXT: flash.wg.ring_wait_empty %[[J]], %{{.*}}[6]
// CHECK: flash.wg.tma_load_tile %[[TMK]]
// CHECK-NEXT: flash.wg.ring_wait_empty %[[J]], %{{.*}}[4]
// CHECK: flash.wg.tma_load_tile %[[TMV]]
// CHECK-NEXT: }
// CHECK-NOT: flash.load_tile
// CHECK: } consumer {

// JOINT: producer {
// JOINT: scf.for %[[J:.*]] = %c0 to %{{.*}} step %c1 {
// JOINT-NEXT: flash.wg.ring_wait_empty %[[J]], %{{.*}}[4]
// JOINT-NOT: flash.wg.ring_wait_empty
// JOINT: flash.wg.tma_load_tile
// JOINT: flash.wg.tma_load_tile
// JOINT-NEXT: }

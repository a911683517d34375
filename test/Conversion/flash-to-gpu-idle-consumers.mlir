// A tiles grid whose block_m does not divide seq_q has, in each head's last
// block, consumer warpgroups whose 64 rows all lie past seq_q (bm192 at
// N = 2048: the third; at N = 4096 the second and third). With three
// consumers such a consumer computes nothing: it waits for each of the
// block's key tiles, releases K and V, and stores nothing (its rows do not
// exist). Its verdict is lane 0's, so ptxas sees a warp-uniform branch
// around the key loops.
// RUN: flash-opt %kernels/attention.mlir -flash-tile="block-m=192 block-n=80 stages=2 warpgroups=3 pingpong=0" -flash-fuse -convert-flash-to-gpu | FileCheck %s
// Not when turned off, nor with one, two or four consumers (power-of-two
// block_m, ConvertFlashToGPU says why), nor in a persistent kernel (a causal
// one is never a tiles grid: its blocks end at seq_q).
// RUN: flash-opt %kernels/attention.mlir -flash-tile="block-m=192 block-n=80 stages=2 warpgroups=3 pingpong=0" -flash-fuse -convert-flash-to-gpu="skip-idle-consumers=0" | FileCheck %s --check-prefix=NONE
// RUN: flash-opt %kernels/attention.mlir -flash-tile -flash-fuse -convert-flash-to-gpu | FileCheck %s --check-prefix=NONE
// RUN: flash-opt %kernels/attention_d64.mlir -flash-tile="block-m=256 block-n=64 stages=2 warpgroups=4 overlap=0 pingpong=0" -flash-fuse -convert-flash-to-gpu | FileCheck %s --check-prefix=NONE
// RUN: flash-opt %kernels/attention.mlir -flash-tile="block-m=192 block-n=80 stages=2 warpgroups=3 pingpong=0 persistent=1" -flash-fuse -convert-flash-to-gpu | FileCheck %s --check-prefix=NONE

// CHECK: gpu.func @{{.*}}({{.*}}, %[[NQ:[^:]*]]: i32, %[[NK:[^:]*]]: i32, %{{[^:]*}}: f32
// CHECK: %[[M0:.*]] = arith.muli %{{.*}}, %c192_i32 : i32
// The block's key tiles: nHi = ceil(seq_k / 80).
// CHECK-NEXT: %[[UP:.*]] = arith.addi %[[NK]], %c79_i32 : i32
// CHECK-NEXT: %[[NHI32:.*]] = arith.divsi %[[UP]], %c80_i32 : i32
// CHECK-NEXT: %[[NFULL:.*]] = arith.divsi %[[NK]], %c80_i32 : i32
// CHECK-NEXT: arith.index_cast %[[NFULL]] : i32 to index
// CHECK-NEXT: %[[NHI:.*]] = arith.index_cast %[[NHI32]] : i32 to index
// CHECK: nvvm.setmaxregister increase
// CHECK-NEXT: %[[W:.*]] = arith.subi %{{.*}}, %c1_i32 : i32
// Its first row, m0 + 64 w, at or past seq_q.
// CHECK: %[[FIRST:.*]] = arith.addi %[[M0]], %{{.*}} : i32
// CHECK-NEXT: %[[PAST:.*]] = arith.cmpi sge, %[[FIRST]], %[[NQ]] : i32
// CHECK-NEXT: %[[PAST32:.*]] = arith.extui %[[PAST]] : i1 to i32
// CHECK-NEXT: %[[LANE0:.*]] = nvvm.shfl.sync idx %c-1_i32, %[[PAST32]], %c0_i32, %c31_i32
// CHECK-NEXT: %[[IDLE:.*]] = arith.cmpi ne, %[[LANE0]], %c0_i32 : i32
// CHECK-NEXT: scf.if %[[IDLE]] {
// Every key tile of the block, from 0: wait for K, release it, wait for V,
// release it; nothing else (no GEMM, no store, no named barrier).
// CHECK-NEXT: scf.for %[[J:.*]] = %c0 to %[[NHI]] step %c1 {
// CHECK-NOT: wgmma
// CHECK: nvgpu.mbarrier.try_wait.parity
// CHECK-NEXT: arith.addi %{{.*}}, %c6 : index
// CHECK-NEXT: nvgpu.mbarrier.arrive
// CHECK-NEXT: arith.addi %{{.*}}, %c2 : index
// CHECK-NEXT: nvgpu.mbarrier.try_wait.parity
// CHECK-NEXT: arith.addi %{{.*}}, %c4 : index
// CHECK-NEXT: nvgpu.mbarrier.arrive
// CHECK-NEXT: }
// CHECK-NEXT: } else {
// The other consumers' key loops and epilogue.
// CHECK: nvvm.wgmma.mma_async
// CHECK: nvgpu.tma.async.store
// CHECK: gpu.return

// NONE: gpu.func
// NONE-NOT: nvvm.shfl.sync idx %c-1_i32, %{{.*}}, %c0_i32, %c31_i32
// NONE: gpu.return

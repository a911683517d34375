// Under the causal mask a query block costs as much as its last row sees,
// so the blocks are aligned at the bottom: block x starts at
// seq_q - (numM - x) * block_m, numM = ceil(seq_q / block_m), and the rows
// that do not exist (before row 0) fall in the first block, whose rows see
// the fewest keys, instead of past seq_q in the last block, which walks
// every key. The Q load (TMA zero-fills rows before 0) and the tile bounds
// start from that row; the epilogue stores a row only if row <u seq_q.
// RUN: flash-opt %kernels/attention_d64_causal.mlir -flash-tile="block-m=192 block-n=96 stages=4 warpgroups=3 tma-store-o=0" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefixes=CHECK,SEC
// The persistent schedule takes the same bounds per tile.
// RUN: flash-opt %kernels/attention_d64_causal.mlir -flash-tile="block-m=192 block-n=128 stages=4 warpgroups=3 overlap=0 persistent=1 tma-store-o=0" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefixes=CHECK,PERS
// Not with the TMA store of O (a box before row 0 faults), nor without the
// mask (every block walks every key).
// RUN: flash-opt %kernels/attention_d64_causal.mlir -flash-tile="block-m=192 block-n=96 stages=4 warpgroups=3 tma-store-o=1" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=ROW0
// RUN: flash-opt %kernels/attention_d64.mlir -flash-tile="block-m=192 block-n=96 stages=4 warpgroups=3 tma-store-o=0" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=ROW0

// CHECK: gpu.func @attention_d64_causal({{.*}}, %[[NQ:[^:]*]]: i32, %[[NK:[^:]*]]: i32, %{{[^:]*}}: f32
// numM is the count the schedule already has: a sections grid's gridDim.y,
// the persistent schedule's ceil(seq_q / block_m), taken before its tile
// loop; the producer's loop then loads Q from each tile's first row.
// SEC: %[[GY:.*]] = gpu.grid_dim y
// SEC-NEXT: %[[NUMM:.*]] = arith.index_cast %[[GY]] : index to i32
// SEC: gpu.barrier
// SEC: %[[FROMEND:.*]] = arith.subi %[[NUMM]], %{{.*}} : i32
// PERS: %[[NUMM:.*]] = arith.ceildivui %[[NQ]], %c192_i32 : i32
// PERS: scf.while
// PERS: %[[FROMEND:.*]] = arith.subi %[[NUMM]], %{{.*}} : i32
// CHECK-NEXT: %[[BACK:.*]] = arith.muli %[[FROMEND]], %c192_i32 : i32
// CHECK-NEXT: %[[M0:.*]] = arith.subi %[[NQ]], %[[BACK]] : i32
// CHECK-NEXT: %[[DIAG:.*]] = arith.subi %[[NK]], %[[NQ]] : i32
// CHECK-NEXT: arith.addi %[[M0]], %c192_i32 : i32
// CHECK: %[[M0IDX:.*]] = arith.index_cast %[[M0]] : i32 to index
// CHECK: nvgpu.tma.async.load %{{.*}}[%{{.*}}, %[[M0IDX]], %{{.*}}]
// CHECK: arith.cmpi ult, %{{.*}}, %[[NQ]] : i32
// CHECK: llvm.store

// ROW0-NOT: arith.subi %arg5, %{{.*}} : i32
// ROW0: arith.cmpi ult

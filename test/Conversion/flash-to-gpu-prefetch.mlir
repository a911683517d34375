// RUN: flash-opt %kernels/attention.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s
// RUN: flash-opt %kernels/attention_d64.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=D64
// RUN: flash-opt %kernels/attention.mlir -flash-tile -flash-fuse -flash-gpu-schedule="prefetch-next-block=0" -convert-flash-to-gpu \
// RUN:   | FileCheck %s --check-prefix=NONE --implicit-check-not=nvvm.cp.async.bulk.tensor.prefetch --implicit-check-not=nsmid
// RUN: flash-opt %kernels/attention_causal.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu \
// RUN:   | FileCheck %s --check-prefix=NONE --implicit-check-not=nvvm.cp.async.bulk.tensor.prefetch --implicit-check-not=nsmid
// RUN: flash-opt %kernels/attention.mlir -flash-tile="persistent=1" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu \
// RUN:   | FileCheck %s --check-prefix=NONE --implicit-check-not=nvvm.cp.async.bulk.tensor.prefetch --implicit-check-not=nsmid

// A tiles grid (one block per tile, no causal mask): after the producer's
// last K/V load it prefetches into L2 the inputs of the block nsmid places
// after it in x-fastest order (x: query block, y: batch * head): Q rows
// query_block * block_m, and K and V rows 0, one TMA box per 64 columns,
// only if that block exists. Sections grids (causal) and persistent kernels
// do not, nor any kernel with prefetch-next-block=0.

// CHECK: gpu.func @attention(%[[TMQ:[^:]*]]: !llvm.ptr, %[[TMK:[^:]*]]: !llvm.ptr, %[[TMV:[^:]*]]: !llvm.ptr,
// CHECK-SAME: %[[GROUP:[^:]*]]: i32, %[[HEADS:[^:]*]]: i32) kernel
// CHECK: nvvm.setmaxregister decrease 24
// The producer's K/V loop (two boxes of K, two of V), then the prefetch.
// CHECK: scf.for
// CHECK-COUNT-4: nvgpu.tma.async.load
// CHECK: }
// CHECK: %[[GX:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK: %[[GY:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK: %[[Y:.*]] = arith.index_cast %[[BY:.*]] : index to i32
// CHECK: %[[YX:.*]] = arith.muli %[[Y]], %[[GX]] : i32
// CHECK: %[[LIN:.*]] = arith.addi %[[BX:.*]], %[[YX]] : i32
// CHECK: %[[SMS:.*]] = nvvm.read.ptx.sreg.nsmid : i32
// CHECK: %[[NEXT:.*]] = arith.addi %[[LIN]], %[[SMS]] : i32
// CHECK: %[[QB:.*]] = arith.remui %[[NEXT]], %[[GX]] : i32
// CHECK: %[[BH:.*]] = arith.divui %[[NEXT]], %[[GX]] : i32
// CHECK: %[[EXISTS:.*]] = arith.cmpi ult, %[[BH]], %[[GY]] : i32
// CHECK: scf.if %[[EXISTS]] {
// CHECK:   %[[ROW:.*]] = arith.muli %[[QB]], %c128_i32 : i32
// CHECK:   %[[BATCH:.*]] = arith.divui %[[BH]], %[[HEADS]] : i32
// CHECK:   %[[HEAD:.*]] = arith.remui %[[BH]], %[[HEADS]] : i32
// CHECK:   %[[KVHEAD:.*]] = arith.divui %[[HEAD]], %[[GROUP]] : i32
// CHECK:   nvvm.cp.async.bulk.tensor.prefetch %[[TMQ]], box[%c0_i32, %[[ROW]], %[[HEAD]], %[[BATCH]]] : !llvm.ptr
// CHECK:   nvvm.cp.async.bulk.tensor.prefetch %[[TMK]], box[%c0_i32, %c0_i32, %[[KVHEAD]], %[[BATCH]]] : !llvm.ptr
// CHECK:   nvvm.cp.async.bulk.tensor.prefetch %[[TMV]], box[%c0_i32, %c0_i32, %[[KVHEAD]], %[[BATCH]]] : !llvm.ptr
// CHECK:   nvvm.cp.async.bulk.tensor.prefetch %[[TMQ]], box[%c64_i32, %[[ROW]], %[[HEAD]], %[[BATCH]]] : !llvm.ptr
// CHECK:   nvvm.cp.async.bulk.tensor.prefetch %[[TMK]], box[%c64_i32, %c0_i32, %[[KVHEAD]], %[[BATCH]]] : !llvm.ptr
// CHECK:   nvvm.cp.async.bulk.tensor.prefetch %[[TMV]], box[%c64_i32, %c0_i32, %[[KVHEAD]], %[[BATCH]]] : !llvm.ptr
// CHECK-NOT: nvvm.cp.async.bulk.tensor.prefetch
// CHECK: }
// The consumers come after the producer.
// CHECK: nvvm.setmaxregister increase

// D = 64: one box per tensor; the first row from the config's block_m.
// D64: gpu.func @attention_d64(%[[TMQ:[^:]*]]: !llvm.ptr,
// D64: nvvm.read.ptx.sreg.nsmid
// D64: %[[ROW:.*]] = arith.muli %{{.*}}, %c{{[0-9]+}}_i32 : i32
// D64: nvvm.cp.async.bulk.tensor.prefetch %[[TMQ]], box[%c0_i32, %[[ROW]], %{{.*}}, %{{.*}}] : !llvm.ptr
// D64-COUNT-2: nvvm.cp.async.bulk.tensor.prefetch %{{.*}}, box[%c0_i32, %c0_i32, %{{.*}}, %{{.*}}] : !llvm.ptr
// D64-NOT: nvvm.cp.async.bulk.tensor.prefetch
// D64: nvvm.setmaxregister increase

// NONE: gpu.func

// RUN: flash-opt %kernels/attention_d64_causal.mlir -flash-tile="speculative-exp=1" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s
// RUN: flash-opt %kernels/attention_f16_d64_causal.mlir -flash-tile="speculative-exp=1" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=F16
// RUN: flash-opt %kernels/attention.mlir -flash-tile="speculative-exp=1" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=OV
// RUN: flash-opt %kernels/attention_d64_causal.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu \
// RUN:   | FileCheck %s --check-prefix=OFF --implicit-check-not=nvvm.vote.sync
// RUN: flash-opt %kernels/attention_d64_causal.mlir -flash-tile="speculative-exp=1" -flash-fuse -flash-gpu-schedule="speculative-exp=0" -convert-flash-to-gpu \
// RUN:   | FileCheck %s --check-prefix=OFF --implicit-check-not=nvvm.vote.sync

// The rule is the softmax update's (flash.wg.softmax_update speculative,
// lowered in SoftmaxUpdateToRowOps.cpp), and O's rescale waits for its
// `moved`; without it the causal kernel's running max is exact.
// RUN: flash-opt %kernels/attention_d64_causal.mlir -flash-tile="speculative-exp=1" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" \
// RUN:   | FileCheck %s --check-prefix=WG
// RUN: flash-opt %kernels/attention_d64_causal.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" \
// RUN:   | FileCheck %s --check-prefix=EXACT --implicit-check-not=if_moved
// WG: %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[MOVED:.*]] = flash.wg.softmax_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} speculative : !flash.fragment<64x96xf32, #flash.wgmma_accumulator>
// WG: flash.wg.scale_rows %{{.*}}, %{{.*}} if_moved %[[MOVED]]
// EXACT: flash.wg.softmax_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : !flash.fragment<64x96xf32, #flash.wgmma_accumulator>

// speculative_exp: in a key tile with a running max, P = 2^(s - m) is
// computed against that max before (and without) the tile's own row max.
// Each thread's part of a row sum bounds its p, so if both of its sums are
// <= 2^32 (bf16; 2^15 for fp16, whose largest value is 65504) and both rows
// saw a key before, that P stands; otherwise a warp
// vote sends the warp down the one branch that takes the row max (the
// FMNMX tree and two butterfly shuffles), moves m and computes P again.

// The serial loop (attention_d64_causal's own config) starts from m = -inf,
// so its first tile always takes the branch.
// CHECK: config = {{.*}}speculative_exp = 1 : i64
// CHECK-DAG: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1.000000e+00 : f32
// CHECK-DAG: %[[BOUND:.*]] = arith.constant 4.2949673E+9 : f32
// CHECK: scf.for {{.*}} iter_args(%[[M0:[^ ]*]] = %[[NEGINF]], %[[M1:[^ ]*]] = %[[NEGINF]],
// CHECK-NOT: nvvm.shfl.sync
// CHECK: llvm.nvvm.ex2.approx.ftz.f32
// CHECK-NOT: nvvm.shfl.sync
// CHECK: %[[OVER0:.*]] = arith.cmpf ugt, %{{.*}}, %[[BOUND]] : f32
// CHECK-NEXT: %[[FIRST0:.*]] = arith.cmpf oeq, %[[M0]], %[[NEGINF]] : f32
// CHECK-NEXT: arith.ori %[[OVER0]], %[[FIRST0]] : i1
// CHECK-NOT: nvvm.shfl.sync
// CHECK: arith.cmpf ugt, %{{.*}}, %[[BOUND]] : f32
// CHECK-NEXT: arith.cmpf oeq, %[[M1]], %[[NEGINF]] : f32
// CHECK-NOT: nvvm.shfl.sync
// CHECK: %[[REDO:.*]] = nvvm.vote.sync any %{{.*}}, %{{.*}} -> i1
// CHECK-NEXT: scf.if %[[REDO]] -> (f32, f32, f32, f32, f32, f32, i32,
// CHECK: nvvm.shfl.sync bfly
// CHECK: nvvm.shfl.sync bfly
// CHECK: arith.maxnumf %[[M0]], %{{.*}} : f32
// CHECK: llvm.nvvm.ex2.approx.ftz.f32
// CHECK: scf.yield
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[ONE]], %[[ONE]], %[[M0]], %[[M1]],

// F16: %[[BOUND:.*]] = arith.constant 3.276800e+04 : f32
// F16: scf.for
// F16: arith.cmpf ugt, %{{.*}}, %[[BOUND]] : f32
// F16: nvvm.vote.sync any

// With overlap the first key tile is peeled and has no max to speculate on:
// it takes the row max first; the loop after it speculates.
// OV: config = {{.*}}speculative_exp = 1 : i64
// OV: nvvm.shfl.sync bfly
// OV: llvm.nvvm.ex2.approx.ftz.f32
// OV: scf.for
// OV-NOT: nvvm.shfl.sync
// OV: llvm.nvvm.ex2.approx.ftz.f32
// OV-NOT: nvvm.shfl.sync
// OV: %[[REDO:.*]] = nvvm.vote.sync any
// OV-NEXT: scf.if %[[REDO]]
// OV: nvvm.shfl.sync bfly

// Off (the default, or the pass option off): the row max before the exps.
// OFF: config = {{.*}}speculative_exp = 0 : i64
// OFF: scf.for
// OFF: nvvm.shfl.sync bfly
// OFF: nvvm.shfl.sync bfly
// OFF: llvm.nvvm.ex2.approx.ftz.f32

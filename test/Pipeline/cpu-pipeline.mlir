// The CPU reference pipeline takes a shipped kernel all the way to the LLVM
// dialect (test/cpu runs the result and checks its numbers).
// RUN: flash-opt %kernels/attention_causal.mlir -flash-cpu-pipeline="block-n=64" | FileCheck %s

// CHECK: llvm.func @attention_causal(
// CHECK-NOT: flash.{{(grid|program_id|load_tile|store_tile|dot|mask|softmax_update|rescale|finalize|attention)}}
// CHECK-NOT: linalg.
// CHECK-NOT: scf.
// CHECK-NOT: memref.
// CHECK: llvm.intr.exp
// CHECK: llvm.intr.log

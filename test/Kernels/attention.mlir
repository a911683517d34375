// The shipped kernel parses, verifies and round-trips to identical text.
// RUN: flash-opt %kernels/attention.mlir -o %t.once
// RUN: flash-opt %t.once -o %t.twice
// RUN: diff %t.once %t.twice
// RUN: FileCheck %s --input-file %t.once

// CHECK: func.func @attention(
// CHECK: flash.attention %{{.*}}, %{{.*}}, %{{.*}} -> %{{.*}}, lse %{{.*}} {
// CHECK-NOT: causal
// CHECK-SAME: config = #flash.config<block_m = 128, block_n = 128, warpgroups = 2>
// CHECK-SAME: memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16>, memref<?x?x?x128xbf16> -> memref<?x?x?x128xbf16>, memref<?x?x?xf32>

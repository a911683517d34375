// The shipped packed-sequences kernels parse, verify and round-trip; their
// kernel.json asks for a packed grid and passes cu_seqlens.
// RUN: flash-opt %kernels/attention_varlen.mlir -o %t.once
// RUN: flash-opt %t.once -o %t.twice
// RUN: diff %t.once %t.twice
// RUN: FileCheck %s --input-file %t.once
// RUN: flash-opt %kernels/attention_varlen_causal.mlir | FileCheck %s --check-prefix=CAUSAL
// RUN: rm -rf %t.dir && mkdir -p %t.dir
// RUN: flashc %kernels/attention_varlen_causal.mlir --emit=ptx -o %t.dir/kernel.ptx
// RUN: FileCheck %s --check-prefix=JSON --input-file %t.dir/kernel.json

// CHECK: func.func @attention_varlen(
// CHECK: flash.attention %{{.*}}, %{{.*}}, %{{.*}} -> %{{.*}}, lse %{{.*}} packed(%{{.*}} : memref<?xi32>, %{{.*}} : memref<?xi32>, max_q %{{.*}}) {
// CHECK-NOT: causal
// CHECK-SAME: memref<1x?x?x128xbf16>

// CAUSAL: flash.attention {{.*}} packed({{.*}}) {causal

// JSON-DAG: "kind": "packed"
// JSON-DAG: "tensor": "cu_seqlens_q"
// JSON-DAG: "tensor": "cu_seqlens_k"
// JSON-DAG: "value": "stride_o_n"
// JSON-DAG: "causal": true

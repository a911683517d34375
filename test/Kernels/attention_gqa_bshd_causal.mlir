// The shipped grouped-query, B x S x H x D kernel parses, verifies and
// round-trips; its kernel.json fixes the heads its source fixes (32 query,
// 8 K/V), so the runtime refuses others, and its maps take any strides.
// RUN: flash-opt %kernels/attention_gqa_bshd_causal.mlir -o %t.once
// RUN: flash-opt %t.once -o %t.twice
// RUN: diff %t.once %t.twice
// RUN: FileCheck %s --input-file %t.once
// RUN: rm -rf %t.dir && mkdir -p %t.dir
// RUN: flashc %kernels/attention_gqa_bshd_causal.mlir --emit=ptx -o %t.dir/kernel.ptx
// RUN: FileCheck %s --check-prefix=JSON --input-file %t.dir/kernel.json

// CHECK: func.func @attention_gqa_bshd_causal(
// CHECK: flash.attention %{{.*}}, %{{.*}}, %{{.*}} -> %{{.*}}, lse %{{.*}} {
// CHECK-SAME: causal
// CHECK-SAME: memref<?x32x?x128xbf16, strided<[?, ?, ?, 1]>>, memref<?x8x?x128xbf16, strided<[?, ?, ?, 1]>>

// JSON-DAG: "heads": 32
// JSON-DAG: "kv_heads": 8
// JSON-DAG: "causal": true
// JSON-DAG: "value": "kv_group"
// JSON-DAG: "rank": 4

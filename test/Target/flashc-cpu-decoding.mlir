// --target=cpu over a decoding step: kernel.json names the page table,
// the cache lengths and split-KV's scratch among the parameters in the
// function's order, and says the page size, the splits and GQA packing.
// RUN: rm -rf %t && mkdir -p %t
// RUN: flashc %S/Inputs/paged-cache.mlir --target=cpu -o %t/kernel.so
// RUN: FileCheck %s --input-file %t/kernel.json

// CHECK: "kernel": "_mlir_ciface_decode"
// CHECK: "pack_gqa": true
// CHECK: "page_size": 64
// CHECK: "params": [
// CHECK: "tensor": "q"
// CHECK: "tensor": "k"
// CHECK: "tensor": "v"
// CHECK: "tensor": "o"
// CHECK: "tensor": "lse"
// CHECK: "rank": 2
// CHECK-NEXT: "tensor": "page_table"
// CHECK: "rank": 1
// CHECK-NEXT: "tensor": "cache_seqlens"
// CHECK: "rank": 5
// CHECK-NEXT: "tensor": "partial_out"
// CHECK: "rank": 4
// CHECK-NEXT: "tensor": "partial_lse"
// CHECK: "splits": true

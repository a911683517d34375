// The backward pass on the GPU target: one PTX module with the three
// kernels, and a kernel.json whose "launches" list them in order with
// their grids, shared memory and parameters (docs/kernel-metadata.md).
// RUN: rm -rf %t && mkdir -p %t
// RUN: flashc %S/Inputs/attention-backward-causal.mlir -o %t/kernel.ptx
// RUN: FileCheck %s --input-file %t/kernel.json
// RUN: FileCheck %s --input-file %t/kernel.ptx --check-prefix=PTX

// CHECK: "causal": true
// CHECK: "deterministic": false
// CHECK: "kernel": "attention_backward_d64_causal"
// CHECK: "launches": [
// CHECK: "grid": {
// CHECK-NEXT: "block_m": 64,
// CHECK-NEXT: "kind": "tiles"
// CHECK: "kernel": "attention_backward_d64_causal_pre"
// CHECK: "role": "pre"
// CHECK: "grid": {
// CHECK-NEXT: "block_n": 64,
// CHECK-NEXT: "kind": "key_tiles"
// CHECK: "kernel": "attention_backward_d64_causal"
// CHECK: "kind": "tma"
// CHECK: "tensor": "do"
// CHECK: "kind": "workspace",
// CHECK-NEXT: "name": "delta"
// CHECK: "role": "main"
// CHECK-NEXT: "shared_memory_bytes": 58368
// CHECK: "kernel": "attention_backward_d64_causal_post"
// CHECK: "value": "scale"
// CHECK: "role": "post"
// CHECK: "pass": "backward"

// PTX: .entry attention_backward_d64_causal_pre(
// PTX: .entry attention_backward_d64_causal(
// PTX: wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16
// PTX: atom.global.add.f32
// PTX: .entry attention_backward_d64_causal_post(

// The backward pass on the CPU target: a shared library whose entry point
// takes q, k, v, o, dO and the forward's LSE and writes dQ, dK and dV
// (kernel.json's "pass": "backward"). flashc-backward.mlir has the GPU
// target.
// RUN: rm -rf %t && mkdir -p %t
// RUN: flashc %S/Inputs/attention-backward-causal.mlir --target=cpu -o %t/kernel.so
// RUN: FileCheck %s --input-file %t/kernel.json --check-prefix=JSON
// RUN: llvm-nm -D --defined-only %t/kernel.so | FileCheck %s --check-prefix=SYMBOLS
// RUN: flashc %S/Inputs/attention-backward-causal.mlir --emit=tile | FileCheck %s --check-prefix=TILE

// JSON: "causal": true
// JSON: "deterministic": false
// JSON: "dtype": "bf16"
// JSON: "has_lse": false
// JSON: "head_dim": 64
// JSON: "kernel": "_mlir_ciface_attention_backward_d64_causal"
// JSON: "params": [
// JSON: "tensor": "q"
// JSON: "tensor": "k"
// JSON: "tensor": "v"
// JSON: "tensor": "o"
// JSON: "tensor": "do"
// JSON: "rank": 3
// JSON-NEXT: "tensor": "lse"
// JSON: "tensor": "dq"
// JSON: "tensor": "dk"
// JSON: "tensor": "dv"
// JSON: "pass": "backward"
// JSON: "scale": 0.125

// SYMBOLS: _mlir_ciface_attention_backward_d64_causal

// TILE-COUNT-3: flash.grid
// TILE-NOT: flash.attention_backward

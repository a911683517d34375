// --target=cpu: the same tile program compiled for the host into a shared
// library whose entry point is the kernel function's C interface, with
// kernel.json beside it (test/python/test_flashc_cpu_kernel.py runs it).
// RUN: rm -rf %t && mkdir -p %t
// RUN: flashc %kernels/attention_d64_causal.mlir --target=cpu -o %t/kernel.so
// RUN: FileCheck %s --input-file %t/kernel.json --check-prefix=JSON
// RUN: llvm-nm -D --defined-only %t/kernel.so | FileCheck %s --check-prefix=SYMBOLS
// RUN: llvm-nm -D --undefined-only %t/kernel.so | FileCheck %s --check-prefix=UNDEFINED
// RUN: flashc %kernels/attention_d64_causal.mlir --target=cpu --emit=llvm -o - | FileCheck %s --check-prefix=LLVM
// RUN: flashc %kernels/attention_f16.mlir --target=cpu --emit=mlir | FileCheck %s --check-prefix=MLIR
// RUN: flashc %kernels/attention_f16.mlir --target=cpu --emit=tile | FileCheck %s --check-prefix=TILE

// kernel.json's keys are sorted.
// JSON: "arch": "{{x86_64|aarch64}}{{.*}}"
// JSON: "binary": "kernel.so"
// JSON: "binary_format": "so"
// JSON: "causal": true
// JSON: "config": {
// JSON-NEXT: "block_m": 256
// JSON-NEXT: "block_n": 96
// JSON: "dtype": "bf16"
// JSON: "format": "flashc-kernel"
// JSON: "has_lse": true
// JSON: "head_dim": 64
// JSON: "host_cpu": "generic"
// JSON: "kernel": "_mlir_ciface_attention_d64_causal"
// JSON: "params": [
// JSON: "rank": 4
// JSON-NEXT: "tensor": "q"
// JSON: "rank": 4
// JSON-NEXT: "tensor": "k"
// JSON: "rank": 4
// JSON-NEXT: "tensor": "v"
// JSON: "rank": 4
// JSON-NEXT: "tensor": "o"
// JSON: "kind": "memref"
// JSON-NEXT: "rank": 3
// JSON-NEXT: "tensor": "lse"
// JSON: "scale": 0.125

// SYMBOLS: T _mlir_ciface_attention_d64_causal

// The backend lowers bf16 truncations to calls to compiler-rt's
// __truncsfbf2, which Debian 12's libgcc lacks: the library defines it
// (hidden) rather than leaving it undefined.
// UNDEFINED-NOT: __truncsfbf2
// UNDEFINED: malloc
// UNDEFINED-NOT: __truncsfbf2

// LLVM: target triple = "{{x86_64|aarch64}}
// LLVM: define {{.*}}void @_mlir_ciface_attention_d64_causal(ptr
// LLVM: define linkonce_odr hidden bfloat @__truncsfbf2(float

// MLIR: llvm.func @_mlir_ciface_attention_f16(
// MLIR-NOT: flash.{{(grid|program_id|load_tile|store_tile|dot|mask|softmax_update|rescale|finalize|attention)}}

// TILE: flash.grid
// TILE-NOT: gpu.module

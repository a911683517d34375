// REQUIRES: ptxas
// A decoding step compiles to one cubin of two kernels, the splits and
// their combine, neither spilling; kernel.json is the decoding pass of two
// launches.
// RUN: rm -rf %t && mkdir -p %t
// RUN: flashc %S/../Conversion/Inputs/decode-paged.mlir -o %t/kernel.cubin --resource-usage 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: FileCheck %s --input-file %t/kernel.json
// RUN: flashc %S/../Conversion/Inputs/decode-mods.mlir -o %t/mods.cubin --resource-usage 2>&1 | FileCheck %s --check-prefix=MODS
// RUN: flashc %S/../Conversion/Inputs/decode-small-pages.mlir -o %t/small.cubin --resource-usage 2>&1 | FileCheck %s --check-prefix=SMALL
// RUN: FileCheck %s --check-prefix=SMALL-JSON --input-file %t/small.json

// PTXAS: Compiling entry function 'decode_combine' for 'sm_90a'
// PTXAS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS: Compiling entry function 'decode' for 'sm_90a'
// PTXAS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

// CHECK: "kernel": "decode"
// CHECK: "launches": [
// CHECK: "kernel": "decode"
// CHECK: "role": "split"
// CHECK: "kernel": "decode_combine"
// CHECK: "programmatic": true
// CHECK: "role": "combine"
// CHECK: "pack_gqa": true
// CHECK: "page_size": 256
// CHECK: "pass": "decode"

// With soft-capping, a window and sinks neither kernel spills either.
// MODS: Compiling entry function 'decode_mods_combine' for 'sm_90a'
// MODS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// MODS: Compiling entry function 'decode_mods' for 'sm_90a'
// MODS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

// Pages of 16 gathered into key tiles of 128: no spills, and kernel.json
// asks for K and V maps of 16-row boxes.
// SMALL: Compiling entry function 'decode_small_pages_combine' for 'sm_90a'
// SMALL: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// SMALL: Compiling entry function 'decode_small_pages' for 'sm_90a'
// SMALL: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// SMALL-JSON: "tensor": "q"
// SMALL-JSON: "box": [
// SMALL-JSON-NEXT: 16,
// SMALL-JSON-NEXT: 64
// SMALL-JSON: "tensor": "k"
// SMALL-JSON: "page_size": 16

// REQUIRES: ptxas
// The cubin path runs ptxas; --resource-usage shows its report, which must
// show no spills.
// RUN: rm -rf %t && mkdir -p %t
// RUN: flashc %kernels/attention_causal.mlir -o %t/kernel.cubin --resource-usage 2>&1 | FileCheck %s --check-prefix=PTXAS
// RUN: %python -c "import sys; sys.exit(open(sys.argv[1], 'rb').read(4) != b'\x7fELF')" %t/kernel.cubin
// RUN: FileCheck %s --input-file %t/kernel.json

// PTXAS: Compiling entry function 'attention_causal' for 'sm_90a'
// PTXAS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS: Used {{[0-9]+}} registers

// CHECK-DAG: "binary": "kernel.cubin"
// CHECK-DAG: "binary_format": "cubin"
// CHECK-DAG: "causal": true
// CHECK-DAG: "kernel": "attention_causal"

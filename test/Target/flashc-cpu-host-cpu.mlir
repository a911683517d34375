// --host-cpu names the CPU a --target=cpu library is compiled for (native:
// this host's). x86-64-v3 has F16C, so f16 conversions are instructions;
// the generic x86-64 baseline calls libgcc's soft-float conversions, which
// `cc -shared` links in.
// REQUIRES: host-x86_64
// RUN: rm -rf %t && mkdir -p %t
// RUN: flashc %kernels/attention_f16_d64.mlir --target=cpu --host-cpu=x86-64-v3 -o %t/v3.so
// RUN: FileCheck %s --input-file %t/v3.json --check-prefix=V3
// RUN: llvm-objdump -d %t/v3.so | FileCheck %s --check-prefix=V3-CODE
// RUN: llvm-nm %t/v3.so | FileCheck %s --check-prefix=V3-SYMBOLS
// RUN: flashc %kernels/attention_f16_d64.mlir --target=cpu -o %t/generic.so
// RUN: llvm-nm %t/generic.so | FileCheck %s --check-prefix=GENERIC

// V3: "host_cpu": "x86-64-v3"
// V3-CODE: vcvtph2ps
// V3-SYMBOLS-NOT: __extendhfsf2
// GENERIC: __extendhfsf2

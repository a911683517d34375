// flashc's main job: the shipped kernel to PTX for sm_90a, with its
// metadata beside it.
// RUN: rm -rf %t && mkdir -p %t
// RUN: flashc %kernels/attention.mlir -o %t/kernel.ptx
// RUN: FileCheck %s --input-file %t/kernel.ptx
// RUN: FileCheck %s --input-file %t/kernel.json --check-prefix=META

// CHECK: .target sm_90a
// CHECK: .entry attention(
// CHECK-DAG: setmaxnreg.inc
// CHECK-DAG: setmaxnreg.dec
// CHECK-DAG: cp.async.bulk.tensor.4d
// CHECK-DAG: mbarrier.try_wait.parity
// CHECK-DAG: wgmma.mma_async.sync.aligned.m64n{{[0-9]+}}k16.f32.bf16.bf16
// CHECK-DAG: ex2.approx

// META-DAG: "format": "flashc-kernel"
// META-DAG: "format_version": 1
// META-DAG: "kernel": "attention"
// META-DAG: "binary": "kernel.ptx"
// META-DAG: "binary_format": "ptx"
// META-DAG: "arch": "sm_90a"
// META-DAG: "dtype": "bf16"
// META-DAG: "head_dim": 128
// META-DAG: "causal": false
// META-DAG: "has_lse": true
// META-DAG: "source_hash": "{{[0-9a-f]+}}"
// META-DAG: "kind": "tiles"
// META-DAG: "kind": "tma"
// META-DAG: "value": "scale_log2"

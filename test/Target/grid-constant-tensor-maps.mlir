// The kernels' tensor maps are parameters by value: flash.launch lists them
// with kind "tma", and -flash-grid-constant-tensor-maps makes those
// llvm.func arguments byval 128-byte, 64-byte-aligned grid constants, as
// CUDA's `const __grid_constant__ CUtensorMap` is. The PTX has one
// 128-byte .param per map and the TMA loads take its generic address.
// RUN: flash-opt %s -split-input-file -verify-diagnostics -pass-pipeline='builtin.module(gpu.module(flash-grid-constant-tensor-maps))' | FileCheck %s
// RUN: flashc %kernels/attention_d64.mlir -o %t.ptx
// RUN: FileCheck %s --check-prefix=PTX --input-file=%t.ptx
// RUN: flashc %kernels/attention_f16_causal.mlir -o %t.tma-store.ptx
// RUN: FileCheck %s --check-prefix=STORE --input-file=%t.tma-store.ptx

// CHECK-LABEL: llvm.func @kernel
// CHECK-SAME: (%arg0: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant},
// CHECK-SAME: %arg1: !llvm.ptr<1>, %arg2: !llvm.ptr {llvm.align = 64 : i64, llvm.byval = !llvm.array<128 x i8>, nvvm.grid_constant}, %arg3: i32)
// A function without a launch contract is left alone.
// CHECK-LABEL: llvm.func @helper
// CHECK-SAME: (%arg0: !llvm.ptr)
// CHECK-NOT: grid_constant
gpu.module @kernels {
  llvm.func @kernel(%q: !llvm.ptr, %o: !llvm.ptr<1>, %k: !llvm.ptr, %n: i32)
      attributes {nvvm.kernel, flash.launch = {params = [
        {kind = "tma", tensor = "q", rank = 3 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64},
        {kind = "ptr", tensor = "o"},
        {kind = "tma", tensor = "k", rank = 3 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64},
        {kind = "i32", value = "seq_q"}]}} {
    llvm.return
  }
  llvm.func @helper(%p: !llvm.ptr) {
    llvm.return
  }
}

// -----

gpu.module @not_a_pointer {
  // expected-error @+1 {{flash-grid-constant-tensor-maps: flash.launch parameter 0 is a tensor map by value, but the kernel's argument 0 is not a pointer to it}}
  llvm.func @kernel(%q: i64) attributes {nvvm.kernel, flash.launch = {params = [
        {kind = "tma", tensor = "q", rank = 3 : i64, box = array<i64: 128, 64>, swizzle = 128 : i64}]}} {
    llvm.return
  }
}

// PTX: .entry attention_d64(
// PTX-NEXT: .param .align 64 .b8 attention_d64_param_0[128],
// PTX-NEXT: .param .align 64 .b8 attention_d64_param_1[128],
// PTX-NEXT: .param .align 64 .b8 attention_d64_param_2[128],
// PTX-NEXT: .param .u64 .ptr .global .align 1 attention_d64_param_3,
// PTX-DAG: cvta.param.u64
// PTX-DAG: prefetch.param.tensormap
// PTX-DAG: cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes

// With the TMA store of O, O's map is a fourth one.
// STORE: .entry attention_f16_causal(
// STORE-NEXT: .param .align 64 .b8 attention_f16_causal_param_0[128],
// STORE-NEXT: .param .align 64 .b8 attention_f16_causal_param_1[128],
// STORE-NEXT: .param .align 64 .b8 attention_f16_causal_param_2[128],
// STORE-NEXT: .param .align 64 .b8 attention_f16_causal_param_3[128],
// STORE: cp.async.bulk.tensor.4d.global.shared::cta

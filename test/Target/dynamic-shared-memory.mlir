// The tiles live in dynamic shared memory and the mbarriers in a static
// array. Upstream's gpu-to-nvvm makes the dynamic window an internal
// zero-length global, which PTX prints as a one-byte static variable that
// ptxas places first, so the tiles (Q's first row) overlapped the mbarriers.
// -flash-extern-dynamic-shared-memory turns it into a declaration, which
// PTX prints as CUDA's `extern __shared__` array, placed after the statics.
// RUN: flash-opt %s -split-input-file -pass-pipeline='builtin.module(gpu.module(flash-extern-dynamic-shared-memory))' | FileCheck %s
// RUN: flashc %kernels/attention.mlir -o %t.ptx
// RUN: FileCheck %s --check-prefix=PTX --input-file=%t.ptx --implicit-check-not='.shared .align 16 .b8 __dynamic_shmem__0;'

// CHECK-LABEL: gpu.module @kernels
// CHECK-DAG: llvm.mlir.global external @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
// Static shared memory and zero-length globals elsewhere stay as they are.
// CHECK-DAG: llvm.mlir.global private @__mbarrier() {addr_space = 3 : i32, alignment = 8 : i64} : !llvm.array<12 x i64>
// CHECK-DAG: llvm.mlir.global internal @global_zero() {addr_space = 1 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
gpu.module @kernels {
  llvm.mlir.global internal @__dynamic_shmem__0() {addr_space = 3 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
  llvm.mlir.global private @__mbarrier() {addr_space = 3 : i32, alignment = 8 : i64} : !llvm.array<12 x i64>
  llvm.mlir.global internal @global_zero() {addr_space = 1 : i32, alignment = 16 : i64} : !llvm.array<0 x i8>
}

// -----

// An initializer is dropped: a declaration has none.
// CHECK-LABEL: gpu.module @with_value
// CHECK: llvm.mlir.global external @smem() {addr_space = 3 : i32} : !llvm.array<0 x i8>
gpu.module @with_value {
  llvm.mlir.global internal @smem(dense<> : tensor<0xi8>) {addr_space = 3 : i32} : !llvm.array<0 x i8>
}

// PTX: .extern .shared .align 16 .b8 __dynamic_shmem__0[];
// PTX: .entry attention(
// PTX: .shared .align 8 .b8 __mbarrier[

// Every --emit stage of the same kernel.
// RUN: flashc %kernels/attention.mlir --emit=tile | FileCheck %s --check-prefix=TILE
// RUN: flashc %kernels/attention.mlir --emit=mlir | FileCheck %s --check-prefix=GPU
// RUN: flashc %kernels/attention.mlir --emit=llvm -o - | FileCheck %s --check-prefix=LLVM
// RUN: rm -rf %t && mkdir -p %t && flashc %kernels/attention.mlir -o %t/kernel.ll
// RUN: FileCheck %s --input-file %t/kernel.ll --check-prefix=LLVM

// TILE: flash.grid
// TILE: flash.softmax_update {{.*}} base2
// TILE-NOT: gpu.module

// GPU: gpu.module @attention_kernels
// GPU: gpu.func @attention(
// GPU-SAME: kernel
// GPU-SAME: flash.launch = {

// LLVM: target triple = "nvptx64-nvidia-cuda"
// LLVM: define {{.*}}void @attention(

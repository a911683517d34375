// Every op and the config attribute survive MLIR bytecode, the format
// flash-tune bundles use between machines.
// RUN: flash-opt %s -emit-bytecode | flash-opt | FileCheck %s
// RUN: flash-opt %kernels/attention_causal.mlir -emit-bytecode | flash-opt | FileCheck %s --check-prefix=KERNEL

// KERNEL: flash.attention {{.*}} {causal, config = #flash.config<block_m = 128, block_n = 128, warpgroups = 2>}

// CHECK-LABEL: func.func @all_tile_ops
// CHECK: flash.program_id 1
// CHECK: flash.load_tile
// CHECK: flash.dot {{.*}} transpose_b
// CHECK: flash.mask {{.*}} causal
// CHECK: flash.softmax_update {{.*}} {scale = 2.500000e-01 : f32}
// CHECK: flash.rescale
// CHECK: flash.finalize
// CHECK: flash.store_tile
func.func @all_tile_ops(%m: memref<?x?x?x16xf16>, %lse: memref<?x?x?xf32>, %i: index) {
  %pid = flash.program_id 1
  %t = flash.load_tile %m[%pid, %i, %i] : memref<?x?x?x16xf16> -> tensor<64x16xf16>
  %zero = arith.constant dense<0.0> : tensor<64x64xf32>
  %s = flash.dot %t, %t, %zero transpose_b : tensor<64x16xf16>, tensor<64x16xf16> -> tensor<64x64xf32>
  %sm = flash.mask %s, %i, %i, %i, %i causal : tensor<64x64xf32>
  %ninf = arith.constant dense<0xFF800000> : tensor<64xf32>
  %l0 = arith.constant dense<0.0> : tensor<64xf32>
  %p, %mn, %ln, %a = flash.softmax_update %sm, %ninf, %l0 {scale = 0.25 : f32} : tensor<64x64xf32>, tensor<64xf32>
  %acc = flash.rescale %s, %a : tensor<64x64xf32>, tensor<64xf32>
  %o, %row_lse = flash.finalize %acc, %mn, %ln : tensor<64x64xf32>, tensor<64xf32>
  flash.store_tile %row_lse, %lse[%pid, %i, %i] : tensor<64xf32> -> memref<?x?x?xf32>
  return
}

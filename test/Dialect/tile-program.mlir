// RUN: flash-opt %s | flash-opt | FileCheck %s
// RUN: flash-opt %s -mlir-print-op-generic | flash-opt | FileCheck %s

// A whole tile program written by hand, in the form -flash-tile produces:
// the loop over key/value tiles carries (acc, m, l) through iter_args.

// CHECK-LABEL: func.func @attention_tile_program
// CHECK-DAG: %[[PID_M:.*]] = flash.program_id 0
// CHECK-DAG: %[[PID_BH:.*]] = flash.program_id 1
// CHECK: %[[QT:.*]] = flash.load_tile %{{.*}}[%{{.*}}, %{{.*}}, %[[ROW:.*]]] : memref<?x?x?x64xbf16> -> tensor<64x64xbf16>
// CHECK: %[[LOOP:.*]]:3 = scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[ACC:.*]] = %{{.*}}, %[[M:.*]] = %{{.*}}, %[[L:.*]] = %{{.*}}) -> (tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>)
// CHECK:   %[[KT:.*]] = flash.load_tile %{{.*}}[%{{.*}}, %{{.*}}, %[[J]]]
// CHECK:   %[[S:.*]] = flash.dot %[[QT]], %[[KT]], %{{.*}} transpose_b
// CHECK:   %[[SM:.*]] = flash.mask %[[S]], %[[ROW]], %[[J]], %{{.*}}, %{{.*}} : tensor<64x32xf32>
// CHECK:   %[[P:.*]], %[[MN:.*]], %[[LN:.*]], %[[ALPHA:.*]] = flash.softmax_update %[[SM]], %[[M]], %[[L]] {scale = 1.250000e-01 : f32}
// CHECK:   %[[RS:.*]] = flash.rescale %[[ACC]], %[[ALPHA]]
// CHECK:   %[[PB:.*]] = arith.truncf %[[P]] : tensor<64x32xf32> to tensor<64x32xbf16>
// CHECK:   %[[PV:.*]] = flash.dot %[[PB]], %{{.*}}, %[[RS]] : tensor<64x32xbf16>, tensor<32x64xbf16> -> tensor<64x64xf32>
// CHECK:   scf.yield %[[PV]], %[[MN]], %[[LN]]
// CHECK: %[[OUT:.*]], %[[LSE:.*]] = flash.finalize %[[LOOP]]#0, %[[LOOP]]#1, %[[LOOP]]#2
// CHECK: flash.store_tile %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}, %[[ROW]]] : tensor<64x64xbf16> -> memref<?x?x?x64xbf16>
// CHECK: flash.store_tile %[[LSE]], %{{.*}}[%{{.*}}, %{{.*}}, %[[ROW]]] : tensor<64xf32> -> memref<?x?x?xf32>
func.func @attention_tile_program(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                                  %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>,
                                  %lse: memref<?x?x?xf32>)
    attributes {flash.config = #flash.config<block_m = 64, block_n = 32>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c32 = arith.constant 32 : index
  %c64 = arith.constant 64 : index
  %pid_m = flash.program_id 0
  %pid_bh = flash.program_id 1
  %heads = memref.dim %q, %c1 : memref<?x?x?x64xbf16>
  %b = arith.divui %pid_bh, %heads : index
  %h = arith.remui %pid_bh, %heads : index
  %row = arith.muli %pid_m, %c64 : index
  %seq_q = memref.dim %q, %c2 : memref<?x?x?x64xbf16>
  %seq_k = memref.dim %k, %c2 : memref<?x?x?x64xbf16>
  %q_tile = flash.load_tile %q[%b, %h, %row] : memref<?x?x?x64xbf16> -> tensor<64x64xbf16>
  %acc0 = arith.constant dense<0.0> : tensor<64x64xf32>
  %m0 = arith.constant dense<0xFF800000> : tensor<64xf32>
  %l0 = arith.constant dense<0.0> : tensor<64xf32>
  %zero_s = arith.constant dense<0.0> : tensor<64x32xf32>
  %res:3 = scf.for %j = %c0 to %seq_k step %c32
      iter_args(%acc = %acc0, %m = %m0, %l = %l0) -> (tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) {
    %k_tile = flash.load_tile %k[%b, %h, %j] : memref<?x?x?x64xbf16> -> tensor<32x64xbf16>
    %v_tile = flash.load_tile %v[%b, %h, %j] : memref<?x?x?x64xbf16> -> tensor<32x64xbf16>
    %s = flash.dot %q_tile, %k_tile, %zero_s transpose_b : tensor<64x64xbf16>, tensor<32x64xbf16> -> tensor<64x32xf32>
    %s_masked = flash.mask %s, %row, %j, %seq_q, %seq_k : tensor<64x32xf32>
    %p, %m_new, %l_new, %alpha = flash.softmax_update %s_masked, %m, %l {scale = 0.125 : f32}
        : tensor<64x32xf32>, tensor<64xf32>
    %acc_rescaled = flash.rescale %acc, %alpha : tensor<64x64xf32>, tensor<64xf32>
    %p_bf16 = arith.truncf %p : tensor<64x32xf32> to tensor<64x32xbf16>
    %acc_new = flash.dot %p_bf16, %v_tile, %acc_rescaled : tensor<64x32xbf16>, tensor<32x64xbf16> -> tensor<64x64xf32>
    scf.yield %acc_new, %m_new, %l_new : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>
  }
  %out, %row_lse = flash.finalize %res#0, %res#1, %res#2 : tensor<64x64xf32>, tensor<64xf32>
  %out_bf16 = arith.truncf %out : tensor<64x64xf32> to tensor<64x64xbf16>
  flash.store_tile %out_bf16, %o[%b, %h, %row] : tensor<64x64xbf16> -> memref<?x?x?x64xbf16>
  flash.store_tile %row_lse, %lse[%b, %h, %row] : tensor<64xf32> -> memref<?x?x?xf32>
  return
}

// The tile program's epilogue on a consumer, rewritten by Epilogue.cpp's
// patterns after the key loops: flash.finalize quad-reduces the row sums
// and normalises O (and gives LSE in natural-log units), O's arith.truncf
// rounds it into the A-operand layout, and the flash.store_tile ops store
// this warpgroup's rows, both from the same first row.
// RUN: flash-opt %kernels/attention_causal.mlir -flash-tile -flash-fuse -flash-gpu-schedule="tma-store-o=0" -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s

// With tma-store-o, O goes through the Q buffer and a TMA store; LSE is
// still stored from the registers.
// RUN: flash-opt %kernels/attention.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --check-prefix=TMA

// A program whose flash.finalize does not read the key loops' state has no
// registers to finalize: a located error, not a kernel.
// RUN: flash-opt %s -flash-gpu-schedule -convert-flash-to-gpu -split-input-file -verify-diagnostics

// CHECK-LABEL: gpu.func @attention_causal
// CHECK: } consumer {
// The overlapped loops over the unmasked and the masked tiles; the running
// max comes from the second.
// CHECK: scf.for
// CHECK: %[[STATE:.*]]:{{[0-9]+}} = scf.for
// CHECK: %[[SUMS:.*]] = flash.wg.row_sum %{{.*}} : !flash.fragment<64xf32, #flash.wgmma_row_partials> -> !flash.fragment<64xf32, #flash.wgmma_rows>
// CHECK: %[[L:.*]]:2 = flash.wg.fragment_values %[[SUMS]]
// CHECK: arith.divf %cst{{.*}}, %[[L]]#0 : f32
// CHECK: math.log2 %[[L]]#0 : f32
// CHECK: arith.addf %[[STATE]]#0, %{{.*}} : f32
// CHECK: math.log2 %[[L]]#1 : f32
// CHECK: %[[O:.*]] = flash.wg.scale_rows %{{.*}}, %{{.*}} : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>, !flash.fragment<64xf32, #flash.wgmma_rows>
// CHECK: %[[LSE:.*]] = flash.wg.fragment_from_values %{{.*}}, %{{.*}} : !flash.fragment<64xf32, #flash.wgmma_rows>
// CHECK: %[[O16:.*]] = flash.wg.truncf %[[O]] : !flash.fragment<64x128xf32, #flash.wgmma_accumulator> -> !flash.fragment<64x128xbf16, #flash.wgmma_operand_a>
// CHECK: %[[ROW:.*]] = arith.addi
// CHECK-NEXT: flash.wg.store_global %[[O16]], %{{.*}}[%[[HEAD:.*]], %[[ROW]]], %{{.*}} : !flash.fragment<64x128xbf16, #flash.wgmma_operand_a>, !llvm.ptr<1>
// CHECK-NEXT: flash.wg.store_global %[[LSE]], %{{.*}}[%[[HEAD]], %[[ROW]]], %{{.*}} : !flash.fragment<64xf32, #flash.wgmma_rows>, !llvm.ptr<1>
// CHECK-NOT: flash.store_tile
// CHECK-NOT: flash.finalize
// CHECK: gpu.return

// TMA-LABEL: gpu.func @attention
// TMA: %[[O16:.*]] = flash.wg.truncf
// TMA: flash.wg.store_shared %[[O16]], %{{.*}}
// TMA: nvgpu.tma.async.store
// TMA: flash.wg.store_global %{{.*}} : !flash.fragment<64xf32, #flash.wgmma_rows>, !llvm.ptr<1>

func.func @finalize_of_constants(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>, %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) attributes {flash.config = #flash.config<block_m = 64, block_n = 64, stages = 2, warpgroups = 1>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %zero_row = arith.constant dense<0.000000e+00> : tensor<64xf32>
  %ninf_row = arith.constant dense<0xFF800000> : tensor<64xf32>
  %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
  %b = memref.dim %q, %c0 : memref<?x?x?x64xf16>
  %h = memref.dim %q, %c1 : memref<?x?x?x64xf16>
  %nq = memref.dim %q, %c2 : memref<?x?x?x64xf16>
  %nk = memref.dim %k, %c2 : memref<?x?x?x64xf16>
  %tiles = arith.ceildivui %nq, %c64 : index
  %bh = arith.muli %b, %h : index
  flash.grid %tiles, %bh {
    %pid = flash.program_id 0
    %pbh = flash.program_id 1
    %bi = arith.divui %pbh, %h : index
    %hi = arith.remui %pbh, %h : index
    %row = arith.muli %pid, %c64 : index
    %qt = flash.load_tile %q[%bi, %hi, %row] : memref<?x?x?x64xf16> -> tensor<64x64xf16>
    %r:3 = scf.for %j = %c0 to %nk step %c64 iter_args(%acc = %zero, %m = %ninf_row, %l = %zero_row) -> (tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) {
      %kt = flash.load_tile %k[%bi, %hi, %j] : memref<?x?x?x64xf16> -> tensor<64x64xf16>
      %vt = flash.load_tile %v[%bi, %hi, %j] : memref<?x?x?x64xf16> -> tensor<64x64xf16>
      %s = flash.dot %qt, %kt, %zero transpose_b : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf32>
      %sm = flash.mask %s, %row, %j, %nq, %nk : tensor<64x64xf32>
      %p, %mn, %ln, %alpha = flash.softmax_update %sm, %m, %l base2 {scale = 0.180336878 : f32} : tensor<64x64xf32>, tensor<64xf32>
      %acc1 = flash.rescale %acc, %alpha : tensor<64x64xf32>, tensor<64xf32>
      %pt = arith.truncf %p : tensor<64x64xf32> to tensor<64x64xf16>
      %acc2 = flash.dot %pt, %vt, %acc1 : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf32>
      scf.yield %acc2, %mn, %ln : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>
    }
    // expected-error @+1 {{flash-to-gpu: the consumer's patterns left flash.finalize unlowered}}
    %out, %lse = flash.finalize %zero, %ninf_row, %zero_row base2 : tensor<64x64xf32>, tensor<64xf32>
    %ot = arith.truncf %out : tensor<64x64xf32> to tensor<64x64xf16>
    flash.store_tile %ot, %o[%bi, %hi, %row] : tensor<64x64xf16> -> memref<?x?x?x64xf16>
  }
  return
}

// RUN: flash-opt %s | flash-opt | FileCheck %s
// RUN: flash-opt %s -mlir-print-op-generic | flash-opt | FileCheck %s

// The warp-specialised level's softmax family: row vectors of an
// accumulator (whole rows and per-thread partials) and the ops of one
// online-softmax step on fragments.

!acc = !flash.fragment<64x128xf32, #flash.wgmma_accumulator>
!rows = !flash.fragment<64xf32, #flash.wgmma_rows>
!limits = !flash.fragment<64xi32, #flash.wgmma_rows>
!partials = !flash.fragment<64xf32, #flash.wgmma_row_partials>
!p16 = !flash.fragment<64x128xbf16, #flash.wgmma_operand_a>

// CHECK-LABEL: func.func private @types
// CHECK-SAME: !flash.fragment<64xf32, #flash.wgmma_rows>
// CHECK-SAME: !flash.fragment<64xi32, #flash.wgmma_rows>
// CHECK-SAME: !flash.fragment<64xf32, #flash.wgmma_row_partials>
// CHECK-SAME: !flash.fragment<64x128xbf16, #flash.wgmma_operand_a>
func.func private @types(!rows, !limits, !partials, !p16)

// CHECK-LABEL: func.func @softmax_step
// CHECK: %[[M:.*]] = flash.wg.mask_columns %{{.*}}, %{{.*}}, %{{.*}} : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>, !flash.fragment<64xi32, #flash.wgmma_rows>
// CHECK: %[[MX:.*]] = flash.wg.row_max %[[M]] : !flash.fragment<64x128xf32, #flash.wgmma_accumulator> -> !flash.fragment<64xf32, #flash.wgmma_rows>
// CHECK: %[[P:.*]] = flash.wg.scaled_exp2 %[[M]], %{{.*}}, %{{.*}} : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>, !flash.fragment<64xf32, #flash.wgmma_rows>
// CHECK: %[[L:.*]] = flash.wg.row_sum %[[P]] : !flash.fragment<64x128xf32, #flash.wgmma_accumulator> -> !flash.fragment<64xf32, #flash.wgmma_row_partials>
// CHECK: flash.wg.row_sum %[[L]] : !flash.fragment<64xf32, #flash.wgmma_row_partials> -> !flash.fragment<64xf32, #flash.wgmma_rows>
// CHECK: flash.wg.row_sum %[[P]] : !flash.fragment<64x128xf32, #flash.wgmma_accumulator> -> !flash.fragment<64xf32, #flash.wgmma_rows>
// CHECK: flash.wg.scale_rows %{{.*}}, %{{.*}} : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>, !flash.fragment<64xf32, #flash.wgmma_rows>
// CHECK: flash.wg.truncf %[[P]] : !flash.fragment<64x128xf32, #flash.wgmma_accumulator> -> !flash.fragment<64x128xbf16, #flash.wgmma_operand_a>
func.func @softmax_step(%s: !acc, %o: !acc, %limit: !limits, %first: i32,
                        %neg_m: !rows, %alpha: !rows, %scale: f32)
    -> (!rows, !rows, !rows, !acc, !p16) {
  %masked = flash.wg.mask_columns %s, %limit, %first : !acc, !limits
  %mx = flash.wg.row_max %masked : !acc -> !rows
  %p = flash.wg.scaled_exp2 %masked, %neg_m, %scale : !acc, !rows
  %part = flash.wg.row_sum %p : !acc -> !partials
  %l = flash.wg.row_sum %part : !partials -> !rows
  %whole = flash.wg.row_sum %p : !acc -> !rows
  %o2 = flash.wg.scale_rows %o, %alpha : !acc, !rows
  %p16 = flash.wg.truncf %p : !acc -> !p16
  return %mx, %l, %whole, %o2, %p16 : !rows, !rows, !rows, !acc, !p16
}

// flash.mask on a fragment: the thread's query rows and the tile's first
// key, with and without the causal diagonal.
// CHECK-LABEL: func.func @mask_keys
// CHECK: flash.wg.mask_keys %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} causal : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>, !flash.fragment<64xi32, #flash.wgmma_rows>
// CHECK: flash.wg.mask_keys %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>, !flash.fragment<64xi32, #flash.wgmma_rows>
func.func @mask_keys(%s: !acc, %rows: !limits, %first: i32, %sq: i32,
                     %sk: i32) -> (!acc, !acc) {
  %a = flash.wg.mask_keys %s, %rows, %first, %sq, %sk causal : !acc, !limits
  %b = flash.wg.mask_keys %s, %rows, %first, %sq, %sk : !acc, !limits
  return %a, %b : !acc, !acc
}

// The online-softmax update, with each running-max rule, and the rescale
// guarded by its `moved`.
// CHECK-LABEL: func.func @softmax_update
// CHECK: %[[P:.*]], %[[M:.*]], %[[L:.*]], %[[A:.*]], %[[MV:.*]] = flash.wg.softmax_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>, !flash.fragment<64xf32, #flash.wgmma_rows>, !flash.fragment<64xf32, #flash.wgmma_row_partials> -> !flash.fragment<64x128xbf16, #flash.wgmma_operand_a>
// CHECK: flash.wg.softmax_update %[[S:.*]], %[[M]], %[[L]], %{{.*}} lag_max : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>, !flash.fragment<64xf32, #flash.wgmma_rows>, !flash.fragment<64xf32, #flash.wgmma_row_partials> -> !flash.fragment<64x128xbf16, #flash.wgmma_operand_a>
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %[[A3:.*]], %[[MV3:.*]] = flash.wg.softmax_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} speculative :
// CHECK: flash.wg.scale_rows %{{.*}}, %[[A3]] if_moved %[[MV3]] : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>, !flash.fragment<64xf32, #flash.wgmma_rows>
func.func @softmax_update(%s: !acc, %o: !acc, %m0: !rows, %l0: !partials,
                          %scale: f32) -> (!p16, !rows, !partials, !acc) {
  %p, %m, %l, %alpha, %moved = flash.wg.softmax_update %s, %m0, %l0, %scale
      : !acc, !rows, !partials -> !p16
  %p2, %m2, %l2, %alpha2, %moved2 = flash.wg.softmax_update %s, %m, %l, %scale
      lag_max : !acc, !rows, !partials -> !p16
  %p3, %m3, %l3, %alpha3, %moved3 = flash.wg.softmax_update %s, %m2, %l2,
      %scale speculative : !acc, !rows, !partials -> !p16
  %o3 = flash.wg.scale_rows %o, %alpha3 if_moved %moved3 : !acc, !rows
  return %p3, %m3, %l3, %o3 : !p16, !rows, !partials, !acc
}

// A row vector is two registers per thread: a thread's two rows.
// CHECK-LABEL: func.func @row_registers
// CHECK: flash.wg.fragment_from_values %{{.*}}, %{{.*}} : !flash.fragment<64xf32, #flash.wgmma_rows>
// CHECK: flash.wg.fragment_values %{{.*}} : !flash.fragment<64xf32, #flash.wgmma_rows>
func.func @row_registers(%a: f32, %b: f32) -> (f32, f32) {
  %r = flash.wg.fragment_from_values %a, %b : !rows
  %v:2 = flash.wg.fragment_values %r : !rows
  return %v#0, %v#1 : f32, f32
}

// The epilogue's stores: O (rounded) and LSE to global rows, O into
// swizzled TMA boxes in shared memory.
// CHECK-LABEL: func.func @epilogue
// CHECK: flash.wg.store_global %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}} : !flash.fragment<64x128xbf16, #flash.wgmma_operand_a>, !llvm.ptr<1>
// CHECK: flash.wg.store_global %{{.*}}, %{{.*}}[%{{.*}}, %{{.*}}], %{{.*}} : !flash.fragment<64xf32, #flash.wgmma_rows>, !llvm.ptr<1>
// CHECK: flash.wg.store_shared %{{.*}}, %{{.*}}[%{{.*}}] {box_stride = 16384 : i64} : !flash.fragment<64x128xbf16, #flash.wgmma_operand_a>, memref<?xi8, #gpu.address_space<workgroup>>
func.func @epilogue(%o: !p16, %lse: !rows, %out: !llvm.ptr<1>, %lse_out: !llvm.ptr<1>,
                    %head: i32, %first: i32, %n: i32,
                    %smem: memref<?xi8, #gpu.address_space<workgroup>>, %off: index) {
  flash.wg.store_global %o, %out[%head, %first], %n : !p16, !llvm.ptr<1>
  flash.wg.store_global %lse, %lse_out[%head, %first], %n : !rows, !llvm.ptr<1>
  flash.wg.store_shared %o, %smem[%off] {box_stride = 16384} : !p16, memref<?xi8, #gpu.address_space<workgroup>>
  return
}

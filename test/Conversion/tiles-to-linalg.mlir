// RUN: flash-opt %s -split-input-file -convert-flash-tiles-to-linalg | FileCheck %s

// CHECK-DAG: #[[IK:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[JK:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[IJ:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @dot_transposed
// CHECK: linalg.generic {indexing_maps = [#[[IK]], #[[JK]], #[[IJ]]], iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<64x16xbf16>, tensor<32x16xbf16>) outs(%{{.*}} : tensor<64x32xf32>)
// CHECK: ^bb0(%[[A:.*]]: bf16, %[[B:.*]]: bf16, %[[C:.*]]: f32):
// CHECK:   %[[AW:.*]] = arith.extf %[[A]] : bf16 to f32
// CHECK:   %[[BW:.*]] = arith.extf %[[B]] : bf16 to f32
// CHECK:   %[[PROD:.*]] = arith.mulf %[[AW]], %[[BW]]
// CHECK:   %[[SUM:.*]] = arith.addf %[[C]], %[[PROD]]
// CHECK:   linalg.yield %[[SUM]]
// CHECK-NOT: flash.dot
func.func @dot_transposed(%a: tensor<64x16xbf16>, %b: tensor<32x16xbf16>, %acc: tensor<64x32xf32>) -> tensor<64x32xf32> {
  %r = flash.dot %a, %b, %acc transpose_b : tensor<64x16xbf16>, tensor<32x16xbf16> -> tensor<64x32xf32>
  return %r : tensor<64x32xf32>
}

// -----

// CHECK: #[[KJ:.*]] = affine_map<(d0, d1, d2) -> (d2, d1)>
// CHECK: func.func @dot_f32
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[KJ]], #{{.*}}]
// CHECK-NOT: arith.extf
// CHECK: arith.mulf
func.func @dot_f32(%a: tensor<16x16xf32>, %acc: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %r = flash.dot %a, %a, %acc : tensor<16x16xf32>, tensor<16x16xf32> -> tensor<16x16xf32>
  return %r : tensor<16x16xf32>
}

// -----

// CHECK-LABEL: func.func @causal_mask
// CHECK-SAME: (%[[S:.*]]: tensor<64x32xf32>, %[[ROW:.*]]: index, %[[COL:.*]]: index, %[[NQ:.*]]: index, %[[NK:.*]]: index)
// CHECK: linalg.generic
// CHECK-SAME: ins(%[[S]] : tensor<64x32xf32>)
// CHECK:   %[[QI:.*]] = arith.addi %[[ROW]], %{{.*}}
// CHECK:   %[[KI:.*]] = arith.addi %[[COL]], %{{.*}}
// CHECK:   %[[TAIL:.*]] = arith.cmpi uge, %[[KI]], %[[NK]]
// CHECK:   %[[L:.*]] = arith.addi %[[KI]], %[[NQ]]
// CHECK:   %[[R:.*]] = arith.addi %[[QI]], %[[NK]]
// CHECK:   %[[FUTURE:.*]] = arith.cmpi ugt, %[[L]], %[[R]]
// CHECK:   %[[HIDDEN:.*]] = arith.ori %[[TAIL]], %[[FUTURE]]
// CHECK:   arith.select %[[HIDDEN]], %{{.*}}, %{{.*}}
func.func @causal_mask(%s: tensor<64x32xf32>, %row: index, %col: index, %nq: index, %nk: index) -> tensor<64x32xf32> {
  %r = flash.mask %s, %row, %col, %nq, %nk causal : tensor<64x32xf32>
  return %r : tensor<64x32xf32>
}

// -----

// CHECK-LABEL: func.func @softmax_update
// Row max of the scaled logits: a reduction.
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:   arith.mulf %{{.*}}, %cst
// CHECK:   arith.maximumf
// m_new = max(m, rowmax)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel"]
// CHECK:   arith.maximumf
// p = exp(scale * s - m_safe), m_safe = 0 where m_new is -inf
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK:   %[[ISINF:.*]] = arith.cmpf oeq, %{{.*}}, %{{.*}}
// CHECK:   %[[SAFE:.*]] = arith.select %[[ISINF]]
// CHECK:   %[[SHIFTED:.*]] = arith.subf %{{.*}}, %[[SAFE]]
// CHECK:   math.exp %[[SHIFTED]]
// alpha = exp(m - m_safe)
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel"]
// CHECK:   math.exp
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:   arith.addf
// l_new = l * alpha + rowsum
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel"]
// CHECK:   arith.mulf
// CHECK:   arith.addf
// CHECK-NOT: flash.softmax_update
func.func @softmax_update(%s: tensor<64x32xf32>, %m: tensor<64xf32>, %l: tensor<64xf32>)
    -> (tensor<64x32xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>) {
  %p, %mn, %ln, %a = flash.softmax_update %s, %m, %l {scale = 0.5 : f32} : tensor<64x32xf32>, tensor<64xf32>
  return %p, %mn, %ln, %a : tensor<64x32xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>
}

// -----

// CHECK-LABEL: func.func @rescale_and_finalize
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel"]
// CHECK:   arith.mulf
// A row with l = 0 is 0 in O and -inf in LSE.
// CHECK: linalg.generic
// CHECK:   %[[DIV:.*]] = arith.divf
// CHECK:   %[[EMPTY:.*]] = arith.cmpf oeq
// CHECK:   arith.select %[[EMPTY]], %{{.*}}, %[[DIV]]
// CHECK: linalg.generic
// CHECK:   %[[LOG:.*]] = math.log
// CHECK:   %[[LSE:.*]] = arith.addf %{{.*}}, %[[LOG]]
// CHECK:   %[[EMPTY2:.*]] = arith.cmpf oeq
// CHECK:   arith.select %[[EMPTY2]], %{{.*}}, %[[LSE]]
func.func @rescale_and_finalize(%acc: tensor<64x16xf32>, %a: tensor<64xf32>, %m: tensor<64xf32>, %l: tensor<64xf32>)
    -> (tensor<64x16xf32>, tensor<64xf32>) {
  %r = flash.rescale %acc, %a : tensor<64x16xf32>, tensor<64xf32>
  %o, %lse = flash.finalize %r, %m, %l : tensor<64x16xf32>, tensor<64xf32>
  return %o, %lse : tensor<64x16xf32>, tensor<64xf32>
}

// -----

// CHECK-LABEL: func.func @load_and_store
// CHECK-SAME: (%[[SRC:.*]]: memref<?x?x?x16xf16>, %[[DST:.*]]: memref<?x?x?x16xf16>, %[[B:.*]]: index, %[[H:.*]]: index, %[[ROW:.*]]: index)
// Loads check each row against the sequence length and read zero past it.
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f16
// CHECK-DAG: %[[N:.*]] = memref.dim %[[SRC]], %c2
// CHECK: %[[TILE:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<64x16xf16>)
// CHECK:   %[[R:.*]] = arith.addi %[[ROW]], %{{.*}}
// CHECK:   %[[IN:.*]] = arith.cmpi ult, %[[R]], %[[N]]
// CHECK:   scf.if %[[IN]] -> (f16) {
// CHECK:     memref.load %[[SRC]][%[[B]], %[[H]], %[[R]], %{{.*}}]
// CHECK:   } else {
// CHECK:     scf.yield %[[ZERO]] : f16
// Stores write min(64, max(n - row, 0)) rows.
// CHECK: %[[ND:.*]] = memref.dim %[[DST]], %c2
// CHECK: %[[LEFT:.*]] = arith.subi %[[ND]], %[[ROW]]
// CHECK: %[[AVAIL:.*]] = arith.maxsi %[[LEFT]], %c0
// CHECK: %[[COUNT:.*]] = arith.minsi %[[AVAIL]], %c64
// CHECK: scf.for %[[I:.*]] = %c0 to %[[COUNT]] step %c1 {
// CHECK:   scf.for %[[J:.*]] = %c0 to %c16 step %c1 {
// CHECK:     %[[X:.*]] = tensor.extract %[[TILE]][%[[I]], %[[J]]]
// CHECK:     memref.store %[[X]], %[[DST]][%[[B]], %[[H]], %{{.*}}, %[[J]]]
func.func @load_and_store(%src: memref<?x?x?x16xf16>, %dst: memref<?x?x?x16xf16>, %b: index, %h: index, %row: index) {
  %t = flash.load_tile %src[%b, %h, %row] : memref<?x?x?x16xf16> -> tensor<64x16xf16>
  flash.store_tile %t, %dst[%b, %h, %row] : tensor<64x16xf16> -> memref<?x?x?x16xf16>
  return
}

// -----

// The backward pass's memory tiles: dQ's rows added to (load, add, store:
// the CPU runs one program at a time), and the LSE loaded as a row vector,
// zero past the end.
// CHECK-LABEL: func.func @accumulate_rows
// CHECK-SAME: (%[[T:[^:]*]]: tensor<4x8xf32>, %[[DQ:[^:]*]]: memref<?x?x?x8xf32>, %[[LSE:[^:]*]]: memref<?x?x?xf32>, %[[B:[^:]*]]: index, %[[H:[^:]*]]: index, %[[ROW:[^:]*]]: index)
// CHECK: scf.for %[[I:.*]] = %c0 to %{{.*}} step %c1 {
// CHECK:   %[[R:.*]] = arith.addi %[[ROW]], %[[I]]
// CHECK:   scf.for %[[J:.*]] = %c0 to %c8 step %c1 {
// CHECK:     %[[NEW:.*]] = tensor.extract %[[T]][%[[I]], %[[J]]]
// CHECK:     %[[OLD:.*]] = memref.load %[[DQ]][%[[B]], %[[H]], %[[R]], %[[J]]]
// CHECK:     %[[SUM:.*]] = arith.addf %[[OLD]], %[[NEW]]
// CHECK:     memref.store %[[SUM]], %[[DQ]][%[[B]], %[[H]], %[[R]], %[[J]]]
// CHECK: %[[ROWS:.*]] = memref.dim %[[LSE]], %c2
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel"]{{.*}} outs(%{{.*}} : tensor<4xf32>)
// CHECK:   %[[LR:.*]] = arith.addi %[[ROW]], %{{.*}}
// CHECK:   %[[IN:.*]] = arith.cmpi ult, %[[LR]], %[[ROWS]]
// CHECK:   scf.if %[[IN]] -> (f32) {
// CHECK:     memref.load %[[LSE]][%[[B]], %[[H]], %[[LR]]]
func.func @accumulate_rows(%t: tensor<4x8xf32>, %dq: memref<?x?x?x8xf32>, %lse: memref<?x?x?xf32>,
                           %b: index, %h: index, %row: index) -> tensor<4xf32> {
  flash.store_tile %t, %dq[%b, %h, %row] accumulate : tensor<4x8xf32> -> memref<?x?x?x8xf32>
  %l = flash.load_tile %lse[%b, %h, %row] : memref<?x?x?xf32> -> tensor<4xf32>
  return %l : tensor<4xf32>
}

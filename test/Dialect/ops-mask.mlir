// RUN: flash-opt %s | flash-opt | FileCheck %s

// CHECK-LABEL: func.func @masks
// CHECK-SAME: (%[[S:.*]]: tensor<128x64xf32>, %[[R:.*]]: index, %[[C:.*]]: index, %[[NQ:.*]]: index, %[[NK:.*]]: index)
// CHECK: %[[TAIL:.*]] = flash.mask %[[S]], %[[R]], %[[C]], %[[NQ]], %[[NK]] : tensor<128x64xf32>
// CHECK: flash.mask %[[TAIL]], %[[R]], %[[C]], %[[NQ]], %[[NK]] causal : tensor<128x64xf32>
func.func @masks(%s: tensor<128x64xf32>, %row: index, %col: index, %nq: index, %nk: index) -> tensor<128x64xf32> {
  %tail = flash.mask %s, %row, %col, %nq, %nk : tensor<128x64xf32>
  %causal = flash.mask %tail, %row, %col, %nq, %nk causal : tensor<128x64xf32>
  return %causal : tensor<128x64xf32>
}

// A grouped tile's rows: row r is query r % seq_q.
// CHECK-LABEL: func.func @grouped_rows
// CHECK: flash.mask %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} causal grouped_rows : tensor<64x64xf32>
func.func @grouped_rows(%s: tensor<64x64xf32>, %row: index, %col: index,
                        %nq: index, %nk: index) -> tensor<64x64xf32> {
  %m = flash.mask %s, %row, %col, %nq, %nk causal grouped_rows
      : tensor<64x64xf32>
  return %m : tensor<64x64xf32>
}

// The generic form carries the same information as the custom forms: print
// generic, parse, print custom, and the text is what the custom form gives.
// RUN: flash-opt %S/tile-program.mlir -mlir-print-op-generic -o %t.generic
// RUN: FileCheck %s --input-file %t.generic --check-prefix=GENERIC
// RUN: flash-opt %t.generic -o %t.from-generic
// RUN: flash-opt %S/tile-program.mlir -o %t.direct
// RUN: diff %t.from-generic %t.direct

// GENERIC: "flash.program_id"() <{axis = 0 : i64}> : () -> index
// GENERIC: "flash.dot"(%{{.*}}, %{{.*}}, %{{.*}}) <{transpose_b}>
// GENERIC: "flash.softmax_update"(%{{.*}}, %{{.*}}, %{{.*}}) <{scale = 1.250000e-01 : f32}> : (tensor<64x32xf32>, tensor<64xf32>, tensor<64xf32>) -> (tensor<64x32xf32>, tensor<64xf32>, tensor<64xf32>, tensor<64xf32>)

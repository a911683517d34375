// RUN: %python %S/Inputs/exit-status.py flash-opt %S/Inputs/wrong-rank.mlir | FileCheck %s
// CHECK: wrong-rank.mlir:2:3: error: 'flash.attention' op 'q' must be a rank-4 memref (batch x heads x seq x head dim), got rank 3
// CHECK: exit status 1

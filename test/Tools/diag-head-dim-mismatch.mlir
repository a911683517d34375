// RUN: %python %S/Inputs/exit-status.py flash-opt %S/Inputs/head-dim-mismatch.mlir | FileCheck %s
// CHECK: head-dim-mismatch.mlir:2:3: error: 'flash.attention' op head dim mismatch: 'v' has 64 but 'q' has 128
// CHECK: exit status 1

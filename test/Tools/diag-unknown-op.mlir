// RUN: %python %S/Inputs/exit-status.py flash-opt %S/Inputs/unknown-op.mlir | FileCheck %s
// CHECK: unknown-op.mlir:2:3: error: custom op 'flash.attend' is unknown
// CHECK: exit status 1

// RUN: %python %S/Inputs/exit-status.py flash-opt %S/Inputs/no-such-file.mlir | FileCheck %s
// CHECK: cannot open input file '{{.*}}no-such-file.mlir': No such file or directory
// CHECK: exit status 1

// RUN: %python %S/Inputs/exit-status.py flash-opt %S/Inputs/bad-config.mlir | FileCheck %s
// CHECK: bad-config.mlir:2:53: error: block_m must be a positive multiple of 64 (64 rows per warpgroup x 1 warpgroups), got 100
// CHECK: exit status 1

// Head dims and element types the GPU lowering does not cover are named.
// RUN: %python %S/../Tools/Inputs/exit-status.py flashc %S/Inputs/attention-d96.mlir -o %t.ptx | FileCheck %s --check-prefix=HEAD-DIM
// RUN: %python %S/../Tools/Inputs/exit-status.py flashc %S/Inputs/attention-f32.mlir -o %t.ptx | FileCheck %s --check-prefix=DTYPE

// HEAD-DIM: attention-d96.mlir:1:1: error: flash-to-gpu: head dim 96 is not supported (64, 128 or 256: whole 128-byte TMA boxes)
// HEAD-DIM: exit status 1
// DTYPE: attention-f32.mlir:2:3: error: 'flash.attention' op 'q' has element type 'f32'; supported element types are bf16 and f16
// DTYPE: exit status 1

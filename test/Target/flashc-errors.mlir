// Each error names the problem, and flashc exits with status 1.
// RUN: %python %S/../Tools/Inputs/exit-status.py flashc %S/no-such-kernel.mlir -o %t.ptx | FileCheck %s --check-prefix=MISSING
// RUN: %python %S/../Tools/Inputs/exit-status.py flashc %kernels/attention.mlir --arch=sm_80 -o %t.ptx | FileCheck %s --check-prefix=ARCH
// RUN: %python %S/../Tools/Inputs/exit-status.py flashc %kernels/attention.mlir | FileCheck %s --check-prefix=NO-OUTPUT
// RUN: %python %S/../Tools/Inputs/exit-status.py flashc %S/../Tools/Inputs/head-dim-mismatch.mlir -o %t.ptx | FileCheck %s --check-prefix=VERIFY
// RUN: %python %S/../Tools/Inputs/exit-status.py flashc %S/../Tools/Inputs/unknown-op.mlir -o %t.ptx | FileCheck %s --check-prefix=PARSE
// RUN: %python %S/../Tools/Inputs/exit-status.py flashc %kernels/attention.mlir --block-n=24 -o %t.ptx | FileCheck %s --check-prefix=CONFIG
// RUN: %python %S/../Tools/Inputs/exit-status.py flashc %kernels/attention.mlir --cuda-root=%t.no-toolkit -o %t.ptx | FileCheck %s --check-prefix=TOOLKIT
// RUN: %python %S/../Tools/Inputs/exit-status.py flashc %kernels/attention.mlir --overlap=2 -o %t.ptx | FileCheck %s --check-prefix=FLAG

// MISSING: flashc: error: cannot open input file '{{.*}}no-such-kernel.mlir': No such file or directory
// MISSING: exit status 1
// ARCH: flashc: error: unsupported arch 'sm_80': flashc generates Hopper code (wgmma, TMA, setmaxnreg) and supports only sm_90a
// ARCH: exit status 1
// NO-OUTPUT: flashc: error: -o <file> is required for --emit=ptx, cubin and so: kernel.json is written beside it
// NO-OUTPUT: exit status 1
// VERIFY: head-dim-mismatch.mlir:2:3: error: 'flash.attention' op head dim mismatch: 'v' has 64 but 'q' has 128
// VERIFY: exit status 1
// PARSE: unknown-op.mlir:2:3: error: custom op 'flash.attend' is unknown
// PARSE: exit status 1
// CONFIG: attention.mlir:{{[0-9]+}}:3: error: 'flash.attention' op with -flash-tile options: block_n must be a positive multiple of 16, got 24
// CONFIG: exit status 1
// TOOLKIT: error: no CUDA toolkit at '{{.*}}no-toolkit' ({{.*}}libdevice.10.bc is missing): install the CUDA toolkit or pass --cuda-root
// TOOLKIT: exit status 1
// FLAG: flashc: error: --overlap takes 1 (on) or 0 (off), got 2
// FLAG: exit status 1

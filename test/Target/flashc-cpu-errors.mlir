// The CPU target's errors name the problem; flashc exits with status 1.
// RUN: %python %S/../Tools/Inputs/exit-status.py flashc %kernels/attention.mlir --target=cpu -o %t.ptx | FileCheck %s --check-prefix=PTX
// RUN: %python %S/../Tools/Inputs/exit-status.py flashc %kernels/attention.mlir -o %t.so | FileCheck %s --check-prefix=GPU-SO
// RUN: %python %S/../Tools/Inputs/exit-status.py flashc %kernels/attention.mlir --target=cpu | FileCheck %s --check-prefix=NO-OUTPUT
// RUN: %python %S/../Tools/Inputs/exit-status.py flashc %kernels/attention.mlir --target=cpu --probe-stamps -o %t.so | FileCheck %s --check-prefix=PROBE
// RUN: %python %S/../Tools/Inputs/exit-status.py flashc %s --target=cpu -o %t.so | FileCheck %s --check-prefix=EXTRA-ARG
// RUN: %python %S/../Tools/Inputs/exit-status.py flashc %S/Inputs/two-kernels.mlir --target=cpu -o %t.so | FileCheck %s --check-prefix=TWO
// RUN: %python %S/../Tools/Inputs/exit-status.py flashc %kernels/attention.mlir --target=cpu --host-cpu=nonesuch -o %t.so | FileCheck %s --check-prefix=CPU

// PTX: flashc: error: --target=cpu writes --emit=tile, mlir, llvm or so, not PTX or cubin
// PTX: exit status 1
// GPU-SO: flashc: error: a shared library (--emit=so, -o *.so) is built for --target=cpu only
// GPU-SO: exit status 1
// NO-OUTPUT: flashc: error: -o <file> is required for --emit=ptx, cubin and so: kernel.json is written beside it
// NO-OUTPUT: exit status 1
// PROBE: flashc: error: --probe-stamps instruments the GPU kernel: not with --target=cpu
// PROBE: exit status 1
// EXTRA-ARG: error: 'func.func' op argument 5 is not an operand of its flash.attention: the CPU target's entry point takes exactly the attention's memrefs
// EXTRA-ARG: exit status 1
// TWO: error: the CPU target compiles one kernel: expected exactly one flash.attention or flash.attention_backward, found 2
// TWO: exit status 1
// CPU: flashc: error: 'nonesuch' is no CPU of {{.*}} (use 'generic', 'native' or an LLVM CPU name such as x86-64-v3)
// CPU: exit status 1

func.func @extra_argument(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
    %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>, %lse: memref<?x?x?xf32>,
    %unused: memref<?xf32>) {
  flash.attention %q, %k, %v -> %o, lse %lse
      : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>
      -> memref<?x?x?x64xbf16>, memref<?x?x?xf32>
  return
}

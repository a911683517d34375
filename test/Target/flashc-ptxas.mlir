// REQUIRES: ptxas
// ptxas missing, and ptxas failing, in a toolkit that has libdevice: the
// first is named with where flashc looked, the second shows ptxas's words.
// RUN: rm -rf %t && mkdir -p %t/cuda/nvvm/libdevice %t/cuda/bin
// RUN: cp %cuda_root/nvvm/libdevice/libdevice.10.bc %t/cuda/nvvm/libdevice/
// RUN: env PATH=/usr/bin:/bin CUDA_HOME= CUDA_PATH= CUDA_ROOT= %python %S/../Tools/Inputs/exit-status.py flashc %kernels/attention.mlir --cuda-root=%t/cuda -o %t/k.cubin | FileCheck %s --check-prefix=MISSING
// RUN: cp %S/Inputs/failing-ptxas.sh %t/cuda/bin/ptxas
// RUN: %python %S/../Tools/Inputs/exit-status.py flashc %kernels/attention.mlir --cuda-root=%t/cuda -o %t/k.cubin | FileCheck %s --check-prefix=FAILING
// PTX needs no ptxas at all.
// RUN: env PATH=/usr/bin:/bin CUDA_HOME= CUDA_PATH= CUDA_ROOT= flashc %kernels/attention.mlir --cuda-root=%t/cuda -o %t/k.ptx

// MISSING: flashc: error: ptxas not found (looked in {{.*}}/cuda/bin, CUDA_HOME, CUDA_PATH and PATH): install the CUDA toolkit or pass --cuda-root; --emit=ptx needs no ptxas
// MISSING: exit status 1
// FAILING: flashc: error: ptxas ({{.*}}/cuda/bin/ptxas) failed:
// FAILING-NEXT: ptxas fatal   : stand-in assembler refuses -arch=sm_90a
// FAILING: exit status 1

// REQUIRES: ptxas
// RUN: flash-opt %kernels/attention.mlir -flash-tile -flash-fuse -flash-gpu-schedule="tma-store-o=0" -convert-flash-to-gpu \
// RUN:   | python3 %S/Inputs/with-cuda.py %ptxas flash-opt -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90a cubin-features=+ptx80 opt-level=3 cubin-format=isa" \
// RUN:   -o %t.lowered.mlir
// RUN: FileCheck %s --input-file=%t.lowered.mlir
// RUN: python3 %S/Inputs/extract-ptx.py %t.lowered.mlir %t.ptx
// RUN: %ptxas -arch=sm_90a -v %t.ptx -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS --implicit-check-not=C75
// RUN: python3 %S/Inputs/ptx-opcodes.py %t.ptx | FileCheck %s --check-prefix=MIX
// RUN: flash-opt %kernels/attention_causal.mlir -flash-tile -flash-fuse -flash-gpu-schedule="tma-store-o=0" -convert-flash-to-gpu \
// RUN:   | python3 %S/Inputs/with-cuda.py %ptxas flash-opt -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90a cubin-features=+ptx80 opt-level=3 cubin-format=isa" \
// RUN:   -o %t.causal.mlir
// RUN: python3 %S/Inputs/extract-ptx.py %t.causal.mlir %t.causal.ptx
// RUN: %ptxas -arch=sm_90a -v %t.causal.ptx -o %t.causal.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS --implicit-check-not=C75

// The pass output (O by global stores, tma-store-o=0) goes through
// upstream's NVVM pipeline to PTX that ptxas assembles for sm_90a without
// spilling.

// CHECK: gpu.binary @attention_kernels
// CHECK-SAME: .target sm_90a
// CHECK-SAME: .entry attention(

// PTXAS: Compiling entry function 'attention{{(_causal)?}}' for 'sm_90a'
// PTXAS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
// PTXAS-NOT: warning

// The instruction mix of the default schedule, variant ovpps_s2 of the
// prototype the conversion was ported from (docs/gpu-kernel.md; see
// Inputs/ptx-opcodes.py): 16 wgmma per steady-state iteration in two
// key loops, plus S_0 in the prologue (its softmax twice: masked only when
// tile 0 is ragged or on the diagonal) and the last P V after the loops; 2 Q
// + 2 K + 2 V TMA boxes in the IR, 14 in the PTX because LLVM unswitches the
// producer loop on `j >= stages`; the L2 prefetch of the next block's Q, K
// and V boxes (flash-to-gpu-prefetch.mlir); every exp2 the flush-to-zero ex2 (one
// MUFU.EX2; plain ex2.approx.f32 gets a denormal guard), 66 per softmax
// (64 scores, 2 alphas) in each key loop and one for tile 0, whose masked and
// unmasked softmaxes LLVM merges below the mask; the named barriers
// of the ping-pong. ptxas must not serialise the wgmma chain
// (C7513, an info line: checked by --implicit-check-not=C75 above).
// MIX: 5 bar.arrive
// MIX: 5 bar.sync
// MIX: 6 cp.async.bulk.prefetch.tensor.4d.L2.global.tile
// MIX: 14 cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes
// MIX-NOT: ex2.approx.f32
// MIX: 198 ex2.approx.ftz.f32
// MIX: 9 mbarrier.init.shared.b64
// MIX: 2 prefetch.tensormap
// MIX: 1 setmaxnreg.dec.sync.aligned.u32
// MIX: 1 setmaxnreg.inc.sync.aligned.u32
// MIX: 48 wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16

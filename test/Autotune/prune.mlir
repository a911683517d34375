// flash-tune enumerates the cross product of the axes and prunes with the
// dialect's verifier ([config]) and the conversion's own diagnostics
// ([conversion]); configs the conversion lowers to one kernel are kept once
// ([duplicate]); configs whose accumulators cannot fit the consumer
// registers are not compiled ([registers]). Nothing is compiled with
// --prune-only.

// RUN: flash-tune %S/Inputs/kernel.mlir --shape 1,16,1024,64 --prune-only --block-m 64,96,128 --block-n 128,256 --stages 2,4 --warpgroups 1,2 --overlap 1 --pingpong 1,0 --split-release 1 | FileCheck %s

// CHECK: 48 configs: {{[0-9]+}} candidates, {{[0-9]+}} pruned (config), {{[0-9]+}} pruned (conversion), {{[0-9]+}} pruned (duplicate)
// CHECK-DAG: candidate c0000 bm64 bn128 s2 wg1 -pp
// CHECK-DAG: candidate {{c[0-9]+}} bm128 bn128 s2 wg2
// CHECK-DAG: candidate {{c[0-9]+}} bm128 bn128 s2 wg2 -pp
// CHECK-DAG: pruned [config] bm96 bn128 s2 wg1: block_m must be a positive multiple of 64
// CHECK-DAG: pruned [config] bm64 bn128 s2 wg2: block_m must be a positive multiple of 128
// CHECK-DAG: pruned [conversion] bm128 bn128 s2 wg1: flash-to-gpu: block_m = 128 with warpgroups = 1 is not supported
// CHECK-DAG: pruned [conversion] bm128 bn256 s4 wg2: flash-to-gpu: the config needs {{[0-9]+}} bytes of shared memory, more than the 232448
// CHECK-DAG: pruned [duplicate] bm64 bn128 s2 wg1 -pp: the conversion applies it as bm64 bn128 s2 wg1 -pp, the same kernel as bm64 bn128 s2 wg1

// Head dim 64, block_n 256, overlap: O 32 + S 128 + P 64 + 32 > 240; without
// overlap it may fit and is left to ptxas.
// RUN: flash-tune %S/Inputs/kernel.mlir --shape 1,16,1024,64 --prune-only --block-m 128 --block-n 256 --stages 1 --warpgroups 2 --overlap 1,0 | FileCheck %s --check-prefix=REGS
// REGS: 2 configs: 1 candidates, 1 pruned (registers)
// REGS: candidate c0000 bm128 bn256 s1 wg2 -ov
// REGS: pruned [registers] bm128 bn256 s1 wg2: needs at least 256 registers per consumer thread (224 live accumulators, 32 other), setmaxnreg gives 240: it would spill

// --persistent 0,1 adds the persistent schedule ("ps"). Beside four
// consumer warpgroups its producer keeps 32 registers, so each consumer
// has 112 as with one block per tile, and bm256 bn96 (112 needed) fits
// both ways; bn128 (128 needed) neither.
// RUN: flash-tune %S/Inputs/kernel.mlir --shape 1,16,1024,64 --prune-only --block-m 128,256 --block-n 96,128 --stages 1 --warpgroups 2,4 --overlap 0 --persistent 0,1 | FileCheck %s --check-prefix=PERSIST
// PERSIST: 16 configs: 6 candidates, 4 pruned (config), 4 pruned (conversion), 2 pruned (registers)
// PERSIST-DAG: candidate {{c[0-9]+}} bm128 bn96 s1 wg2 -ov{{$}}
// PERSIST-DAG: candidate {{c[0-9]+}} bm128 bn96 s1 wg2 -ov ps
// PERSIST-DAG: candidate {{c[0-9]+}} bm256 bn96 s1 wg4 -ov -pp{{$}}
// PERSIST-DAG: candidate {{c[0-9]+}} bm256 bn96 s1 wg4 -ov -pp ps
// PERSIST-DAG: pruned [registers] bm256 bn128 s1 wg4 -ov: needs at least 128 registers per consumer thread (96 live accumulators, 32 other), setmaxnreg gives 112
// PERSIST-DAG: pruned [registers] bm256 bn128 s1 wg4 -ov ps: needs at least 128 registers per consumer thread (96 live accumulators, 32 other), setmaxnreg gives 112

// --tma-store-o 1,0 adds global stores of O ("-tma"). A persistent kernel
// with one Q buffer (bm192 bn128 s6 leaves no room for a second) cannot
// store by TMA, so both requests are one kernel.
// RUN: flash-tune %S/Inputs/kernel.mlir --shape 1,16,1024,64 --prune-only --block-m 192 --block-n 128 --stages 5,6 --warpgroups 3 --overlap 0 --persistent 1 --tma-store-o 1,0 | FileCheck %s --check-prefix=TMA
// TMA: 4 configs: 3 candidates, 1 pruned (duplicate)
// TMA-DAG: candidate {{c[0-9]+}} bm192 bn128 s5 wg3 -ov -pp ps{{$}}
// TMA-DAG: candidate {{c[0-9]+}} bm192 bn128 s5 wg3 -ov -pp ps -tma
// TMA-DAG: candidate {{c[0-9]+}} bm192 bn128 s6 wg3 -ov -pp ps -tma
// TMA-DAG: pruned [duplicate] bm192 bn128 s6 wg3 -ov ps -tma: the conversion applies it as bm192 bn128 s6 wg3 -ov -pp ps -tma, the same kernel as bm192 bn128 s6 wg3 -ov ps{{$}}

// The default space searches ping-pong and split release on only, one
// program per tile.
// RUN: flash-tune %S/Inputs/kernel.mlir --shape 1,16,1024,64 --prune-only | FileCheck %s --check-prefix=DEFAULT
// DEFAULT: 896 configs:
// DEFAULT-NOT: candidate {{.*}} -{{$}}

// Shapes must match the kernel's head dim; lists must parse.
// RUN: not flash-tune %S/Inputs/kernel.mlir --shape 1,16,1024,128 --prune-only 2>&1 | FileCheck %s --check-prefix=HEADDIM
// HEADDIM: error: --shape 1,16,1024,128: D = 128, but {{.*}}kernel.mlir is a head dim 64 kernel
// RUN: not flash-tune %S/Inputs/kernel.mlir --shape 1,16,1024 --prune-only 2>&1 | FileCheck %s --check-prefix=SHAPE
// SHAPE: error: --shape: bad shape '1,16,1024': expected B,H,N,D
// RUN: not flash-tune %S/Inputs/kernel.mlir --shape 1,16,1024,64 --block-n 64,x --prune-only 2>&1 | FileCheck %s --check-prefix=LIST
// LIST: error: --block-n: bad list '64,x'

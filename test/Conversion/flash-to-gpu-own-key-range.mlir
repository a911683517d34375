// Under the causal mask each consumer warpgroup walks only the key tiles its
// own 64 rows see: with block_m 128 and block_n 64 the first consumer's rows
// end 64 before the block's, so it skips the block's last diagonal tile. It
// still waits for that tile's K and V and releases both, and takes the
// ping-pong turns the other consumer spends on it (two per serial step, one
// per overlapped one), so the ring and the turns stay paired.
// RUN: flash-opt %kernels/attention_d256_causal.mlir -flash-tile="block-m=128 block-n=64 stages=2 warpgroups=2" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefixes=CHECK,SERIAL,GRID
// RUN: flash-opt %kernels/attention_causal.mlir -flash-tile="block-m=128 block-n=64 stages=2 warpgroups=2 tma-store-o=0" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefixes=CHECK,OVERLAP,GRID
// RUN: flash-opt %kernels/attention_causal.mlir -flash-tile="block-m=128 block-n=64 stages=2 warpgroups=2 persistent=1" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefixes=CHECK,OVERLAP,PERS
// Three consumers without ping-pong: no turns, the same range and releases.
// RUN: flash-opt %kernels/attention_d64_causal.mlir -flash-tile="block-m=192 block-n=128 stages=4 warpgroups=3 overlap=0 pingpong=0 persistent=1" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=THREE
// Not where no tile can fall between two consumers' last rows (block_n >=
// block_m).
// RUN: flash-opt %kernels/attention_causal.mlir -flash-tile="block-m=128 block-n=128 stages=2 warpgroups=2" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=FULL
// Without the mask every row sees every key: no own range, no skipped tiles.
// RUN: flash-opt %kernels/attention.mlir -flash-tile="block-m=128 block-n=64 stages=2 warpgroups=2" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=FULL

// CHECK: gpu.func @{{.*}}({{.*}}, %[[NQ:[^:]*]]: i32, %[[NK:[^:]*]]: i32, %{{[^:]*}}: f32
// The block's bounds: m0, diag = seq_k - seq_q, nHi = ceil(hi / 64); a
// persistent consumer takes them per tile.
// PERS: nvvm.setmaxregister increase
// PERS-NEXT: %[[W:.*]] = arith.subi %{{.*}}, %c1_i32 : i32
// CHECK: %[[DIAG:.*]] = arith.subi %[[NK]], %[[NQ]] : i32
// CHECK: %[[NHI:.*]] = arith.divsi %{{.*}}, %c64_i32 : i32
// CHECK: %[[NFULL:.*]] = arith.divsi %{{.*}}, %c64_i32 : i32
// CHECK-NEXT: %[[NFULLIDX:.*]] = arith.index_cast %[[NFULL]] : i32 to index
// CHECK-NEXT: %[[NHIIDX:.*]] = arith.index_cast %[[NHI]] : i32 to index
// The consumer's: its rows end at m0 + 64 (w + 1), so it sees keys up to
// that row + diag, clamped to [0, seq_k], in ceil(hi / 64) tiles
// (flash.wg.key_tiles_seen takes diag again; LLVM keeps one).
// GRID: nvvm.setmaxregister increase
// GRID-NEXT: %[[W:.*]] = arith.subi %{{.*}}, %c1_i32 : i32
// CHECK: %[[W1:.*]] = arith.addi %[[W]], %c1_i32 : i32
// CHECK-NEXT: %[[W64:.*]] = arith.muli %[[W1]], %c64_i32 : i32
// CHECK-NEXT: %[[END:.*]] = arith.addi %[[M0:.*]], %[[W64]] : i32
// CHECK-NEXT: %[[DIAG2:.*]] = arith.subi %[[NK]], %[[NQ]] : i32
// CHECK-NEXT: %[[HI0:.*]] = arith.addi %[[END]], %[[DIAG2]] : i32
// CHECK-NEXT: %[[HI1:.*]] = arith.minsi %[[HI0]], %[[NK]] : i32
// CHECK-NEXT: %[[HI:.*]] = arith.maxsi %[[HI1]], %c0_i32 : i32
// CHECK-NEXT: %[[HI63:.*]] = arith.addi %[[HI]], %c63_i32 : i32
// CHECK-NEXT: %[[TILES:.*]] = arith.divsi %[[HI63]], %c64_i32 : i32
// Lane 0's value, so that ptxas sees a warp-uniform loop bound.
// CHECK-NEXT: %[[OWN:.*]] = nvvm.shfl.sync idx %c-1_i32, %[[TILES]], %c0_i32, %c31_i32 : i32 -> i32
// CHECK-NEXT: %[[OWNIDX:.*]] = arith.index_cast %[[OWN]] : i32 to index
// The masked tiles end at the consumer's range.
// SERIAL: scf.for %{{.*}} = %[[NFULLIDX]] to %[[OWNIDX]] step %c1 iter_args
// OVERLAP: scf.for %{{.*}} = %{{.*}} to %[[OWNIDX]] step %c1 iter_args
// The block's other tiles, up to its nHi computed again from m0 behind an
// empty asm (a persistent kernel keeps nHi for the next tile's ring
// position): K full waited (barrier slot + 0), empty_k arrived (slot + 6), a
// turn, V full waited (slot + 2), empty arrived (slot + 4).
// GRID: %[[M0F:.*]] = llvm.inline_asm has_side_effects asm_dialect = att "", "=r,0" %[[M0]] : (i32) -> i32
// GRID-NEXT: %[[B0:.*]] = arith.addi %[[M0F]], %c128_i32 : i32
// GRID-NEXT: %[[DIAG3:.*]] = arith.subi %[[NK]], %[[NQ]] : i32
// GRID-NEXT: %[[B1:.*]] = arith.addi %[[B0]], %[[DIAG3]] : i32
// GRID-NEXT: %[[B2:.*]] = arith.minsi %[[B1]], %[[NK]] : i32
// GRID-NEXT: %[[B3:.*]] = arith.maxsi %[[B2]], %c0_i32 : i32
// GRID-NEXT: %[[B4:.*]] = arith.addi %[[B3]], %c63_i32 : i32
// GRID-NEXT: %[[B5:.*]] = arith.divsi %[[B4]], %c64_i32 : i32
// GRID-NEXT: %[[BLOCKHI:.*]] = arith.index_cast %[[B5]] : i32 to index
// GRID-NEXT: scf.for %{{.*}} = %[[OWNIDX]] to %[[BLOCKHI]] step %c1 {
// PERS: scf.for %{{.*}} = %[[OWNIDX]] to %[[NHIIDX]] step %c1 {
// CHECK: %[[FK:.*]] = arith.addi %[[SLOT:.*]], %c0 : index
// CHECK-NEXT: nvgpu.mbarrier.try_wait.parity %{{.*}}[%[[FK]]], %[[PAR:[^,]*]],
// CHECK-NEXT: %[[EK:.*]] = arith.addi %[[SLOT]], %c6 : index
// CHECK-NEXT: nvgpu.mbarrier.arrive %{{.*}}[%[[EK]]]
// CHECK-NEXT: %[[MINE:.*]] = arith.addi %[[W]], %c1_i32 : i32
// CHECK-NEXT: nvvm.barrier id = %[[MINE]] number_of_threads = %c256_i32
// CHECK-NEXT: %[[OTHER:.*]] = arith.subi %c2_i32, %[[W]] : i32
// CHECK-NEXT: nvvm.barrier.arrive id = %[[OTHER]] number_of_threads = %c256_i32
// CHECK-NEXT: %[[FV:.*]] = arith.addi %[[SLOT]], %c2 : index
// CHECK-NEXT: nvgpu.mbarrier.try_wait.parity %{{.*}}[%[[FV]]], %[[PAR]],
// CHECK-NEXT: %[[EV:.*]] = arith.addi %[[SLOT]], %c4 : index
// CHECK-NEXT: nvgpu.mbarrier.arrive %{{.*}}[%[[EV]]]
// SERIAL-NEXT: arith.addi %[[W]], %c1_i32 : i32
// SERIAL-NEXT: nvvm.barrier id
// SERIAL-NEXT: arith.subi %c2_i32, %[[W]] : i32
// SERIAL-NEXT: nvvm.barrier.arrive id
// CHECK-NEXT: }
// A consumer with no key tile of its own also skipped the first S's turn.
// OVERLAP-NEXT: %[[NONE:.*]] = arith.cmpi sle, %[[OWN]], %c0_i32 : i32
// OVERLAP-NEXT: %[[HAS:.*]] = arith.cmpi sgt, %[[NHI]], %c0_i32 : i32
// OVERLAP-NEXT: %[[BOTH:.*]] = arith.andi %[[NONE]], %[[HAS]] : i1
// OVERLAP-NEXT: scf.if %[[BOTH]] {
// OVERLAP-NEXT: arith.addi %[[W]], %c1_i32 : i32
// OVERLAP-NEXT: nvvm.barrier id
// OVERLAP-NEXT: arith.subi %c2_i32, %[[W]] : i32
// OVERLAP-NEXT: nvvm.barrier.arrive id
// OVERLAP-NEXT: }
// CHECK: gpu.return

// THREE: nvvm.setmaxregister increase
// THREE-NEXT: %[[W:.*]] = arith.subi %{{.*}}, %c1_i32 : i32
// THREE: %[[W1:.*]] = arith.addi %[[W]], %c1_i32 : i32
// THREE-NEXT: %[[W64:.*]] = arith.muli %[[W1]], %c64_i32 : i32
// THREE: %[[TILES:.*]] = arith.divsi %{{.*}}, %c128_i32 : i32
// THREE-NEXT: %[[OWN:.*]] = nvvm.shfl.sync idx %c-1_i32, %[[TILES]], %c0_i32, %c31_i32 : i32 -> i32
// THREE-NEXT: %[[OWNIDX:.*]] = arith.index_cast %[[OWN]] : i32 to index
// THREE: scf.for %{{.*}} = %{{.*}} to %[[OWNIDX]] step %c1 iter_args
// THREE: scf.for %{{.*}} = %[[OWNIDX]] to %{{.*}} step %c1 {
// THREE: nvgpu.mbarrier.try_wait.parity
// THREE-NEXT: arith.addi %{{.*}}, %c12 : index
// THREE-NEXT: nvgpu.mbarrier.arrive
// THREE-NEXT: arith.addi %{{.*}}, %c4 : index
// THREE-NEXT: nvgpu.mbarrier.try_wait.parity
// THREE-NEXT: arith.addi %{{.*}}, %c8 : index
// THREE-NEXT: nvgpu.mbarrier.arrive
// THREE-NEXT: }
// THREE-NOT: nvvm.barrier id

// FULL: gpu.func @attention
// FULL: nvvm.setmaxregister increase
// Every consumer loop carries its state; only a skip loop carries none.
// FULL-NOT: step %c1 {
// FULL: gpu.return

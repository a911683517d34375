// The kernel's warpgroup ops as -convert-flash-to-gpu writes them, before
// the warpgroup patterns lower them: S = Q K^T from two K-major shared
// descriptors, the online softmax on S's fragment, O += P V with P in
// registers and V MN-major, O rescaled by its rows' alpha.
// RUN: flash-opt %kernels/attention.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s

// Lowering those parts with -convert-flash-wg-to-nvvm gives exactly the
// kernel -convert-flash-to-gpu gives.
// RUN: flash-opt %kernels/attention.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" \
// RUN:   | flash-opt -convert-flash-wg-to-nvvm > %t.parts
// RUN: flash-opt %kernels/attention.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu > %t.whole
// RUN: diff %t.parts %t.whole
// RUN: flash-opt %kernels/attention_d64_causal.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" \
// RUN:   | flash-opt -convert-flash-wg-to-nvvm > %t.parts64
// RUN: flash-opt %kernels/attention_d64_causal.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu > %t.whole64
// RUN: diff %t.parts64 %t.whole64

// CHECK-LABEL: gpu.func @attention
// The roles: the producer's TMA loads, then the consumers' work.
// CHECK: flash.wg.warp_specialize consumers = 2, producer_regs = 24, consumer_regs = 240 producer {
// CHECK: flash.wg.tma_load_tile
// CHECK: } consumer {
// CHECK-NEXT: ^bb0(%{{.*}}: i32, %{{.*}}: i32):
// Tile 0's S = Q K^T is issued in this consumer's ping-pong turn.
// The descriptors from the aligned window's address field: Q's per
// consumer, K's and V's regions 32 KiB and 96 KiB on, each typed by its
// layout.
// CHECK: %[[QBASE:.*]] = flash.wg.make_descriptor %{{.*}} : !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>
// CHECK: %[[WINDOW:.*]] = flash.wg.make_descriptor %[[FIELD:.*]] : !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>
// CHECK-NEXT: %[[KBASE:.*]] = flash.wg.advance_descriptor %[[WINDOW]] bytes 32768 : !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>
// CHECK-NEXT: %[[VWINDOW:.*]] = flash.wg.make_descriptor %[[FIELD]] : !flash.smem_descriptor<bf16, major = mn, swizzle = 128, lbo = 16384, sbo = 1024>
// CHECK-NEXT: flash.wg.advance_descriptor %[[VWINDOW]] bytes 98304 : !flash.smem_descriptor<bf16, major = mn, swizzle = 128, lbo = 16384, sbo = 1024>
// Tile 0's S = Q K^T is issued in this consumer's ping-pong turn: K's
// descriptor moved to the tile's slot, then per 16-column k-step +32 B.
// CHECK: flash.wg.pingpong_turn %{{.*}} -> !flash.fragment<64x128xf32, #flash.wgmma_accumulator> {
// CHECK: %[[KSLOT:.*]] = flash.wg.advance_descriptor %[[KBASE]] units %{{.*}} : !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>
// CHECK-NEXT: %[[Q0:.*]] = flash.wg.advance_descriptor %[[QBASE]] : !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>
// CHECK-NEXT: %[[K0:.*]] = flash.wg.advance_descriptor %[[KSLOT]] : !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>
// CHECK-NEXT: %[[Q1:.*]] = flash.wg.advance_descriptor %[[QBASE]] bytes 32
// CHECK-NEXT: %[[K1:.*]] = flash.wg.advance_descriptor %[[KSLOT]] bytes 32
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-NEXT: %[[S0:.*]] = flash.wg.mma %[[Q0]], %[[K0]] : !flash.smem_descriptor<bf16, major = k, {{.*}}>, !flash.smem_descriptor<bf16, major = k, {{.*}}> -> !flash.fragment<64x128xf32, #flash.wgmma_accumulator>
// CHECK-NEXT: flash.wg.mma %[[Q1]], %[[K1]], %[[S0]] : {{.*}} -> !flash.fragment<64x128xf32, #flash.wgmma_accumulator>
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: flash.wg.fragment_values %{{.*}} : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>
// Tile 0's softmax, unmasked when a key tile is full, else masked: without
// the causal mask the running max lags (lag_max), from -inf and 0.
// CHECK: %[[S:.*]] = flash.wg.fragment_from_values {{.*}} : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>
// CHECK: %[[M0:.*]] = flash.wg.fragment_from_values %[[NEGINF:.*]], %[[NEGINF]] : !flash.fragment<64xf32, #flash.wgmma_rows>
// CHECK: %[[L0:.*]] = flash.wg.fragment_from_values %[[ZERO:.*]], %[[ZERO]] : !flash.fragment<64xf32, #flash.wgmma_row_partials>
// CHECK: flash.wg.softmax_update %[[S]], %[[M0]], %[[L0]], %{{.*}} lag_max : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>, !flash.fragment<64xf32, #flash.wgmma_rows>, !flash.fragment<64xf32, #flash.wgmma_row_partials> -> !flash.fragment<64x128xbf16, #flash.wgmma_operand_a>
// CHECK: } else {
// CHECK: %[[ROWS:.*]] = flash.wg.fragment_from_values %{{.*}}, %{{.*}} : !flash.fragment<64xi32, #flash.wgmma_rows>
// CHECK: %[[MASKED:.*]] = flash.wg.mask_keys %{{.*}}, %[[ROWS]], %{{.*}}, %{{.*}}, %{{.*}} : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>, !flash.fragment<64xi32, #flash.wgmma_rows>
// CHECK: flash.wg.softmax_update %[[MASKED]], %{{.*}}, %{{.*}}, %{{.*}} lag_max
// The steady state: S_j and PV_{j-1}, O from the loop's registers.
// V's descriptor moves to the slot of tile j - 1, then 2 KiB (16 keys) a
// k-step.
// CHECK: scf.for
// CHECK: %[[VSLOT:.*]] = flash.wg.advance_descriptor %{{.*}} units %{{.*}} : !flash.smem_descriptor<bf16, major = mn, swizzle = 128, lbo = 16384, sbo = 1024>
// CHECK-NEXT: %[[V:.*]] = flash.wg.advance_descriptor %[[VSLOT]] : !flash.smem_descriptor<bf16, major = mn, swizzle = 128, lbo = 16384, sbo = 1024>
// CHECK-NEXT: flash.wg.advance_descriptor %[[VSLOT]] bytes 2048
// CHECK: %[[O:.*]] = flash.wg.fragment_from_values %arg{{.*}} : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>
// CHECK: %[[P:.*]] = flash.wg.fragment_from_values %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>
// CHECK: flash.wg.mma %[[P]], %[[V]], %[[O]] : !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>, !flash.smem_descriptor<bf16, major = mn, {{.*}}> -> !flash.fragment<64x128xf32, #flash.wgmma_accumulator>
// CHECK-NOT: nvvm.wgmma.mma_async
// CHECK-NOT: wgmma.mma_async.sync.aligned
// O is rescaled only in a warp where a row moved its lagging max.
// CHECK: %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[MOVED:.*]] = flash.wg.softmax_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} lag_max
// CHECK: flash.wg.scale_rows %{{.*}}, %{{.*}} if_moved %[[MOVED]] : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>, !flash.fragment<64xf32, #flash.wgmma_rows>

// The producer's side: Q, K and V as TMA tiles on the kernel's one
// mbarrier group, the K/V ring's waits and releases on its slots.
// RUN: flash-opt %kernels/attention.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --check-prefix=RING

// RING-LABEL: gpu.func @attention
// The barriers by index: full_k, full_v (one TMA arrival each), empty,
// empty_k (every consumer thread: 256) of two stages, then Q's.
// RING: %[[BARS:.*]] = flash.wg.init_barriers counts [1, 1, 1, 1, 256, 256, 256, 256, 1] : <memorySpace = #gpu.address_space<workgroup>, num_barriers = 9>
// Producer: Q (full barrier 8), then per key tile j the empty waits of
// split release (K on 6 + slot, V on 4 + slot) before K and V.
// RING: flash.wg.tma_load_tile %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}], %{{.*}}[%{{.*}}], %[[BARS]][%{{.*}}] columns 128 : !nvgpu.tensormap.descriptor<tensor = memref<1x1x128x64xbf16, #gpu.address_space<workgroup>>, {{.*}}>
// RING: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step
// RING: flash.wg.ring_wait_empty %[[J]], %[[BARS]][6] : !flash.ring_slot<stages = 2>
// RING: %[[PSLOT:.*]] = flash.wg.ring_slot %[[J]] : index -> !flash.ring_slot<stages = 2>
// RING: flash.wg.ring_slot_index %[[PSLOT]] : !flash.ring_slot<stages = 2>
// RING: flash.wg.tma_load_tile {{.*}} columns 128
// RING: flash.wg.ring_wait_empty %[[J]], %[[BARS]][4] : !flash.ring_slot<stages = 2>
// RING: flash.wg.tma_load_tile {{.*}} columns 128
// Consumer: its one tile's Q (position 0 of a one-buffer ring), then key
// tile 0's K wait (full_k = 0) and its K release (empty_k = 6).
// RING: %[[QSLOT:.*]] = flash.wg.ring_slot %{{.*}} : i32 -> !flash.ring_slot<stages = 1>
// RING: flash.wg.ring_wait_full %[[QSLOT]], %[[BARS]][8] : !flash.ring_slot<stages = 1>
// RING: %[[SLOT:.*]] = flash.wg.ring_slot %{{.*}} : index -> !flash.ring_slot<stages = 2>
// RING: flash.wg.ring_wait_full %[[SLOT]], %[[BARS]][0] : !flash.ring_slot<stages = 2>
// RING: flash.wg.ring_release %[[SLOT]], %[[BARS]][6] : !flash.ring_slot<stages = 2>
// RING-NOT: nvgpu.tma.async.load
// RING-NOT: nvgpu.mbarrier.try_wait.parity

// A persistent kernel with two Q buffers: the producer waits until the
// tile's buffer was released (q_empty = 6 + buffer) and loads Q into it;
// the consumers release it after their last S.
// RUN: flash-opt %kernels/attention_d64.mlir -flash-tile="persistent=1" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --check-prefix=QBUF

// QBUF-LABEL: gpu.func @attention_d64
// One stage: full_k, full_v, empty, empty_k (four consumers: 512), then
// two Q buffers' q and q_empty.
// QBUF: %[[BARS:.*]] = flash.wg.init_barriers counts [1, 1, 512, 512, 1, 1, 512, 512]
// QBUF: flash.wg.tile_loop %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} block_m = 256 {
// QBUF-NEXT: ^bb0(%{{.*}}: i32, %{{.*}}: index, %{{.*}}: i32, %{{.*}}: index, %[[QSLOT:.*]]: !flash.ring_slot<stages = 2>):
// QBUF: %[[BUF:.*]] = flash.wg.ring_slot_index %[[QSLOT]] : !flash.ring_slot<stages = 2>
// QBUF: flash.wg.ring_wait_released %[[QSLOT]], %[[BARS]][6] : !flash.ring_slot<stages = 2>
// QBUF: flash.wg.tma_load_tile %{{.*}}, %{{.*}}[%{{.*}} + %[[BUF]] * 32768], %[[BARS]][%{{.*}}] columns 64 : !nvgpu.tensormap.descriptor<tensor = memref<1x1x256x64xbf16, {{.*}}>
// QBUF: flash.wg.tile_loop
// QBUF-NEXT: ^bb0(%{{.*}}: i32, %{{.*}}: index, %{{.*}}: i32, %{{.*}}: index, %[[CSLOT:.*]]: !flash.ring_slot<stages = 2>):
// QBUF: flash.wg.ring_release %[[CSLOT]], %[[BARS]][6] : !flash.ring_slot<stages = 2>

// The block-level schedule: a sections grid's block takes its tile from
// its block index, the tile's bounds follow (aligned at row 0: the TMA
// store of O cannot start before it), the producer loads that head's
// tiles, and under block_n < block_m each consumer ends its key range
// where its own rows' keys end, a warp-uniform bound; the tiles after it
// are released unseen up to the block's bound, taken again.
// RUN: flash-opt %kernels/attention_d256_causal.mlir -flash-tile="block-m=128 block-n=64 stages=2 warpgroups=2" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --check-prefix=BOUNDS

// BOUNDS-LABEL: gpu.func @attention_d256_causal
// BOUNDS: %[[X:.*]], %[[HEAD:.*]], %[[NUM:.*]] = flash.wg.block_tile sections
// BOUNDS: %[[M0:.*]], %{{.*}}, %{{.*}} = flash.wg.tile_bounds %[[X]] of %[[NUM]], %[[SQ:.*]], %[[SK:.*]] block_m = 128 block_n = 64 causal{{$}}
// BOUNDS: flash.wg.warp_specialize
// BOUNDS: %[[BATCH:.*]] = arith.divui %[[HEAD]], %{{.*}} : index
// BOUNDS: %[[HI:.*]] = arith.remui %[[HEAD]], %{{.*}} : index
// BOUNDS: flash.wg.tma_load_tile %{{.*}}[%{{.*}}, %[[HI]], %[[BATCH]]]
// BOUNDS: } consumer {
// BOUNDS: %[[TILES:.*]] = flash.wg.key_tiles_seen %{{.*}}, %[[SQ]], %[[SK]] block_n = 64
// BOUNDS-NEXT: %[[OWN:.*]] = flash.wg.warp_uniform %[[TILES]] : i32
// BOUNDS: %[[BLOCK:.*]] = flash.wg.key_tiles_seen %{{.*}}, %[[SQ]], %[[SK]] block_n = 64
// BOUNDS-NEXT: %[[BLOCKIDX:.*]] = arith.index_cast %[[BLOCK]] : i32 to index
// BOUNDS-NEXT: scf.for %{{.*}} = %{{.*}} to %[[BLOCKIDX]] step %c1 {
// BOUNDS-NOT: flash.wg.block_tile

// A persistent causal kernel with claimed tiles: the producer's loop
// claims from the counter and publishes the claims after the K/V ring; the
// consumers' reads them.
// RUN: flash-opt %kernels/attention_causal.mlir -flash-tile="persistent=1" -flash-fuse -flash-gpu-schedule="dynamic-schedule=1" -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --check-prefix=CLAIMED

// CLAIMED-LABEL: gpu.func @attention_causal
// CLAIMED-SAME: %[[COUNTER:[^:]*]]: !llvm.ptr<1>)
// CLAIMED-NOT: flash.wg.block_tile
// CLAIMED: flash.wg.claimed_tile_loop %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} counter %[[COUNTER]] : !llvm.ptr<1> claims %{{.*}}[%{{.*}} + [[OFF:[0-9]+]]], %{{.*}}[q_full = [[QF:[0-9]+]], q_empty = [[QE:[0-9]+]]] block_m = 128 sections = 32768
// CLAIMED: flash.wg.tile_bounds
// CLAIMED: } consumer {
// CLAIMED: flash.wg.claimed_tile_loop %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} claims %{{.*}}[%{{.*}} + [[OFF]]], %{{.*}}[q_full = [[QF]], q_empty = [[QE]]] block_m = 128 sections = 32768

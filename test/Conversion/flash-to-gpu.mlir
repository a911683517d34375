// O leaves by global stores here (tma-store-o=0); the TMA store has its own
// test, flash-to-gpu-tma-store.mlir.
// RUN: flash-opt %kernels/attention.mlir -flash-tile -flash-fuse -flash-gpu-schedule="tma-store-o=0" -convert-flash-to-gpu | FileCheck %s --check-prefix=OVPPS --implicit-check-not='"=l,0"'
// RUN: flash-opt %kernels/attention.mlir -flash-tile -flash-fuse \
// RUN:   -flash-gpu-schedule="overlap=0 pingpong=0 split-release=0 tma-store-o=0" -convert-flash-to-gpu | FileCheck %s
// RUN: flash-opt %kernels/attention_causal.mlir -flash-tile -flash-fuse -flash-gpu-schedule="tma-store-o=0" -convert-flash-to-gpu | FileCheck %s --check-prefix=CAUSAL --implicit-check-not=nvvm.vote.sync
// RUN: flash-opt %s -flash-gpu-schedule="tma-store-o=0" -convert-flash-to-gpu | FileCheck %s --check-prefix=SMALL
// RUN: flash-opt %s -flash-gpu-schedule="overlap=0" -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --check-prefix=SMALLSERIAL
// RUN: flash-opt %kernels/attention_d256.mlir -flash-tile -flash-fuse -flash-gpu-schedule="tma-store-o=0" -convert-flash-to-gpu | FileCheck %s --check-prefix=D256

// The shipped kernels (bf16, D = 128, block 128 x 128, 2 stages, 2 consumer
// warpgroups) become one gpu.module each; the host function is gone. The
// CHECK prefix sees the serial schedule (prototype variant ws_s2), OVPPS the
// default one (variant ovpps_s2: overlap, ping-pong, split K/V release;
// the names: docs/gpu-kernel.md, "Variant names").

// CHECK: module attributes {gpu.container_module}
// CHECK-NOT: func.func
// CHECK-LABEL: gpu.module @attention_kernels
// CHECK: gpu.func @attention(%[[TMQ:.*]]: !llvm.ptr, %[[TMK:.*]]: !llvm.ptr, %[[TMV:.*]]: !llvm.ptr, %[[O:.*]]: !llvm.ptr<1>, %[[LSE:.*]]: !llvm.ptr<1>, %[[NQ:.*]]: i32, %[[NK:.*]]: i32, %[[SCALE:.*]]: f32, %[[GROUP:.*]]: i32, %[[HEADS:.*]]: i32) kernel
// CHECK-SAME: flash.launch = {block = array<i64: 384, 1, 1>, causal = false, cluster = array<i64: 1, 1, 1>,
// CHECK-SAME: config = {accumulator_regs = 128 : i64, block_m = 128 : i64, block_n = 128 : i64, consumer_regs = 240 : i64, dynamic_schedule = 0 : i64, overlap = 0 : i64, persistent = 0 : i64, pingpong = 0 : i64, producer_regs = 24 : i64, producer_warpgroups = 1 : i64, speculative_exp = 0 : i64, split_release = 0 : i64, stages = 2 : i64, tma_store_o = 0 : i64, warpgroups = 2 : i64},
// CHECK-SAME: dtype = "bf16", grid = {block_m = 128 : i64, kind = "tiles"}, has_lse = true, head_dim = 128 : i64,
// CHECK-SAME: params = [{box = array<i64: 128, 64>, kind = "tma", rank = 4 : i64, swizzle = 128 : i64, tensor = "q"}, {box = array<i64: 128, 64>, kind = "tma", rank = 4 : i64, swizzle = 128 : i64, tensor = "k"}, {box = array<i64: 128, 64>, kind = "tma", rank = 4 : i64, swizzle = 128 : i64, tensor = "v"}, {kind = "ptr", tensor = "o"}, {kind = "ptr", tensor = "lse"}, {kind = "i32", value = "seq_q"}, {kind = "i32", value = "seq_k"}, {kind = "f32", value = "scale_log2"}, {kind = "i32", value = "kv_group"}, {kind = "i32", value = "heads"}],
// CHECK-SAME: scale = 0.0883883{{[0-9]*}} : f64, shared_memory_bytes = 164864 : i64}
// CHECK-SAME: nvvm.maxntid = array<i32: 384, 1, 1>, nvvm.minctasm = 1 : i32
// CHECK: %[[MQ:.*]] = builtin.unrealized_conversion_cast %[[TMQ]] : !llvm.ptr to !nvgpu.tensormap.descriptor<tensor = memref<1x1x128x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b, l2promo = l2promo_256b, oob = zero, interleave = none>
// CHECK: %[[MK:.*]] = builtin.unrealized_conversion_cast %[[TMK]]
// CHECK: %[[MV:.*]] = builtin.unrealized_conversion_cast %[[TMV]]
// CHECK: gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: %[[BAR:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>
// CHECK-COUNT-7: nvgpu.mbarrier.init %[[BAR]]
// CHECK: gpu.barrier
// Producer warpgroup: one thread issues Q once, then K/V into the ring.
// CHECK: nvvm.setmaxregister decrease 24
// CHECK: nvgpu.tma.prefetch.descriptor %[[MK]]
// CHECK: nvgpu.tma.prefetch.descriptor %[[MV]]
// The tile of batch * head y is head y % H of batch y / H; it reads K/V
// head (y % H) / G.
// CHECK: %[[H:.*]] = arith.index_cast %[[HEADS]] : i32 to index
// CHECK: %[[BI:.*]] = arith.divui %{{.*}}, %[[H]] : index
// CHECK: %[[HI:.*]] = arith.remui %{{.*}}, %[[H]] : index
// CHECK: %[[G:.*]] = arith.index_cast %[[GROUP]] : i32 to index
// CHECK: %[[KVH:.*]] = arith.divui %[[HI]], %[[G]] : index
// CHECK: nvgpu.mbarrier.arrive.expect_tx %[[BAR]][%{{.*}}], %{{.*}} :
// CHECK-COUNT-2: nvgpu.tma.async.load %[[MQ]]
// CHECK: scf.for
// CHECK: nvgpu.mbarrier.try_wait.parity %[[BAR]]
// CHECK: nvgpu.mbarrier.arrive.expect_tx
// CHECK-COUNT-2: nvgpu.tma.async.load %[[MK]][%{{.*}}, %{{.*}}, %[[KVH]], %[[BI]]]
// CHECK: nvgpu.mbarrier.arrive.expect_tx
// CHECK-COUNT-2: nvgpu.tma.async.load %[[MV]][%{{.*}}, %{{.*}}, %[[KVH]], %[[BI]]]
// Consumer warpgroups: unmasked loop, then the masked loop.
// CHECK: nvvm.setmaxregister increase 240
// CHECK: nvgpu.mbarrier.try_wait.parity %[[BAR]]
// CHECK: scf.for
// CHECK: nvgpu.mbarrier.try_wait.parity %[[BAR]]
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 128, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK-COUNT-7: nvvm.wgmma.mma_async {{.*}} D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "", "=f,0"
// CHECK-NOT: arith.select
// CHECK: nvvm.shfl.sync  bfly
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: math.fma %{{.*}}, %[[SCALE]], %{{.*}} : f32
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: llvm.fptrunc %{{.*}} : vector<2xf32> to vector<2xbf16>
// CHECK: nvvm.vote.sync  any
// CHECK-NEXT: scf.if
// CHECK-COUNT-64: arith.mulf
// CHECK: nvgpu.mbarrier.try_wait.parity %[[BAR]]
// CHECK: nvvm.wgmma.fence.aligned
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, $69, 0;\0Awgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {$0, $1,
// CHECK-SAME: $63}, {$64, $65, $66, $67}, $68, p, 1, 1, 1;\0A}", "=f,=f,
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: nvgpu.mbarrier.arrive %[[BAR]]
// CHECK: scf.for
// The masked loop compares key columns against seq_k.
// CHECK: arith.cmpi sgt
// CHECK: arith.select
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// Epilogue: O / l as bf16 pairs, LSE = (m + log2 l) ln 2.
// CHECK: math.log2
// CHECK: arith.cmpi ult, %{{.*}}, %[[NQ]] : i32
// CHECK: llvm.getelementptr %[[O]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
// CHECK: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : i32, !llvm.ptr<1>
// CHECK: llvm.getelementptr %[[LSE]][%{{.*}}] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK: gpu.return

// OVPPS: gpu.func @attention(
// OVPPS-SAME: overlap = 1 : i64, persistent = 0 : i64, pingpong = 1 : i64, producer_regs = 24 : i64, producer_warpgroups = 1 : i64, speculative_exp = 0 : i64, split_release = 1 : i64
// OVPPS-SAME: shared_memory_bytes = 164864 : i64
// OVPPS: %[[LAG8:.*]] = arith.constant 8.000000e+00 : f32
// full_k[2], full_v[2], empty (V)[2], empty_k[2], q.
// OVPPS: %[[BAR:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 9>
// OVPPS-COUNT-9: nvgpu.mbarrier.init %[[BAR]]
// The producer waits for the K slot (empty_k) and the V slot (empty) apart.
// OVPPS: scf.for
// OVPPS: nvgpu.mbarrier.try_wait.parity
// OVPPS-COUNT-2: nvgpu.tma.async.load
// OVPPS: nvgpu.mbarrier.try_wait.parity
// OVPPS-COUNT-2: nvgpu.tma.async.load
// Consumer 1 lets consumer 0 go first.
// OVPPS: nvvm.setmaxregister increase 240
// OVPPS: nvvm.barrier.arrive id = %{{.*}} number_of_threads = %{{.*}}
// Prologue: S_0 and its softmax; the K slot is released once S retired.
// OVPPS: scf.if %{{.*}} -> (f32, f32, f32, f32, i32
// OVPPS: nvvm.barrier id = %{{.*}} number_of_threads = %{{.*}}
// OVPPS: nvvm.wgmma.fence.aligned
// OVPPS: nvvm.barrier.arrive
// OVPPS: nvvm.wgmma.wait.group.sync.aligned 0
// OVPPS: nvgpu.mbarrier.arrive %[[BAR]]
// Tile 0's softmax is masked only when no key tile is full (nFull = 0).
// OVPPS: %[[FULL:.*]] = arith.cmpi sgt, %{{.*}}, %c0_i32 : i32
// OVPPS-NEXT: scf.if %[[FULL]] -> (f32, f32, f32, f32, i32
// OVPPS-NOT: arith.cmpi sgt
// OVPPS: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// OVPPS: } else {
// OVPPS: arith.cmpi sgt, %{{.*}}, %c0_i32 : i32
// OVPPS-NEXT: arith.select %{{.*}}, %{{.*}}, %cst
// Steady state: one fence, S_j and PV_{j-1} back to back, wait 1, softmax,
// wait 0, P_{j-1} kept live, V slot released.
// OVPPS: arith.maxui
// OVPPS: scf.for
// OVPPS: nvvm.barrier id
// OVPPS-NEXT: nvvm.wgmma.fence.aligned
// OVPPS-COUNT-8: nvvm.wgmma.mma_async
// OVPPS: nvvm.wgmma.commit.group.sync.aligned
// OVPPS-NOT: nvvm.wgmma.fence.aligned
// OVPPS: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// OVPPS: nvvm.wgmma.commit.group.sync.aligned
// OVPPS: nvvm.barrier.arrive
// OVPPS-NEXT: nvvm.wgmma.wait.group.sync.aligned 1
// OVPPS: nvgpu.mbarrier.arrive %[[BAR]]
// A row's running max moves only when the tile's max passes it by more than
// 8 (log2 units); O is rescaled only when some row of the warp moved.
// OVPPS: %[[LAG:.*]] = arith.addf %[[M0:arg[0-9]+]], %[[LAG8]] : f32
// OVPPS-NEXT: %[[MOVES:.*]] = arith.cmpf ogt, %[[MX:.*]], %[[LAG]] : f32
// OVPPS-NEXT: arith.select %[[MOVES]], %[[MX]], %[[M0]] : f32
// OVPPS: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// OVPPS: nvvm.wgmma.wait.group.sync.aligned 0
// OVPPS-NEXT: llvm.inline_asm has_side_effects asm_dialect = att "", "=r,0"
// OVPPS: nvgpu.mbarrier.arrive %[[BAR]]
// OVPPS: %[[ANY:.*]] = nvvm.vote.sync  any %c-1_i32, %{{.*}} -> i1
// OVPPS-NEXT: scf.if %[[ANY]] -> (f32
// OVPPS-COUNT-64: arith.mulf
// OVPPS: scf.yield
// OVPPS-NEXT: } else {
// OVPPS-NEXT: scf.yield
// OVPPS: scf.for
// Last P V after the loops.
// OVPPS: scf.if
// OVPPS: wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16
// OVPPS: nvvm.wgmma.wait.group.sync.aligned 0
// OVPPS: gpu.return

// CAUSAL: gpu.module @attention_causal_kernels
// CAUSAL: gpu.func @attention_causal(
// CAUSAL-SAME: causal = true
// CAUSAL-SAME: grid = {block_m = 128 : i64, kind = "sections", section_keys = 32768 : i64}
// CAUSAL-SAME: has_lse = true
// The causal kernel keeps the exact running max and rescales O every tile
// (lagging it measured slower under the mask): no lag constant, no vote.
// CAUSAL-NOT: arith.constant 8.000000e+00 : f32
// A "sections" grid (x: head in a section of heads whose K and V fit 16 MiB
// of L2, y: query block from the last, z: section): the hardware's
// x-fastest block order starts every head's longest tile of a section
// first, and nothing needs a division.
// CAUSAL: %[[SH:.*]] = arith.index_cast %grid_dim_x : index to i32
// CAUSAL: %[[LEVELS:.*]] = arith.index_cast %grid_dim_y : index to i32
// CAUSAL: %[[BX:.*]] = arith.index_cast %block_id_x : index to i32
// CAUSAL: %[[BY:.*]] = arith.index_cast %block_id_y : index to i32
// CAUSAL: %[[BZ:.*]] = arith.index_cast %block_id_z : index to i32
// CAUSAL-NEXT: %[[FIRST:.*]] = arith.muli %[[BZ]], %[[SH]] : i32
// CAUSAL-NEXT: %[[HEAD:.*]] = arith.addi %[[FIRST]], %[[BX]] : i32
// CAUSAL-NEXT: arith.index_cast %[[HEAD]] : i32 to index
// CAUSAL-NEXT: %[[LAST:.*]] = arith.subi %[[LEVELS]], %c1_i32 : i32
// CAUSAL-NEXT: arith.subi %[[LAST]], %[[BY]] : i32
// CAUSAL-NOT: arith.divui
// Key tiles end at the diagonal (bottom-right aligned: seq_k - seq_q).
// The blocks end at seq_q: block y of the grid starts (y + 1) blocks
// before it (flash-to-gpu-causal-alignment.mlir).
// CAUSAL: %[[BACK:.*]] = arith.muli %{{.*}}, %c128_i32 : i32
// CAUSAL-NEXT: arith.subi %{{.*}}, %[[BACK]] : i32
// CAUSAL-NEXT: %[[DIAG:.*]] = arith.subi %[[SK:.*]], %[[SQ:.*]] : i32
// CAUSAL: arith.minsi
// CAUSAL: arith.maxsi
// The masked tiles' limit per row: row + seq_k - seq_q + 1, at most seq_k
// (each op takes seq_k - seq_q again; LLVM keeps one).
// CAUSAL: scf.for
// CAUSAL: scf.for
// CAUSAL: %[[ROWDIAG:.*]] = arith.subi %[[SK]], %[[SQ]] : i32
// CAUSAL-NEXT: arith.addi %{{.*}}, %[[ROWDIAG]] : i32
// CAUSAL: arith.minsi
// CAUSAL: arith.cmpi sgt

// D = 256 overlaps too. The loops rebuild the Q descriptors from the low
// word of one base behind an empty asm (LLVM would otherwise hoist the 16
// adds and keep 32 registers live: the spill that kept D = 256 serial); each
// is a 32-bit add, widened and or-ed with the constant high word (swizzle
// 128B, stride 1024 B: 1 << 62 | 64 << 32). The masked tiles (ragged tail,
// causal diagonal) run serially once the overlapped loop drained: the masked
// overlapped body is the register peak.
// D256: gpu.func @attention_d256(
// D256-SAME: config = {accumulator_regs = 176 : i64, block_m = 128 : i64, block_n = 64 : i64, consumer_regs = 240 : i64, dynamic_schedule = 0 : i64, overlap = 1 : i64, persistent = 0 : i64, pingpong = 1 : i64, producer_regs = 24 : i64, producer_warpgroups = 1 : i64, speculative_exp = 0 : i64, split_release = 1 : i64, stages = 2 : i64, tma_store_o = 0 : i64, warpgroups = 2 : i64}
// D256-SAME: head_dim = 256 : i64
// D256-SAME: shared_memory_bytes = 197632 : i64
// D256: %[[NFULL:.*]] = arith.index_cast %{{.*}} : i32 to index
// D256-NEXT: %[[NHI:.*]] = arith.index_cast %{{.*}} : i32 to index
// D256: %[[QD:.*]] = arith.ori %{{.*}} : i64
// The prologue: S_0 and its softmax, unmasked.
// D256: scf.if
// D256: %[[QLO:.*]] = arith.trunci %[[QD]] : i64 to i32
// D256-NEXT: %[[QW:.*]] = llvm.inline_asm has_side_effects asm_dialect = att "", "=r,0" %[[QLO]] : (i32) -> i32
// D256-NEXT: %[[W0:.*]] = arith.addi %[[QW]], %c0_i32 : i32
// D256-NEXT: %[[X0:.*]] = arith.extui %[[W0]] : i32 to i64
// D256-NEXT: arith.ori %[[X0]], %c4611686293305294848_i64 : i64
// D256: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>
// D256: nvvm.wgmma.wait.group.sync.aligned 0
// D256-NOT: scf.if {{.*}} -> (f32, f32, f32, f32, i32
// The overlapped loop over the unmasked tiles.
// D256: scf.for %{{.*}} = %c1 to
// D256: arith.trunci %[[QD]] : i64 to i32
// D256-NEXT: llvm.inline_asm has_side_effects asm_dialect = att "", "=r,0" %{{.*}} : (i32) -> i32
// D256: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// D256: nvvm.wgmma.wait.group.sync.aligned 1
// D256: nvvm.wgmma.wait.group.sync.aligned 0
// D256: scf.yield
// The last P V, then the serial loop over the masked tiles.
// D256: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// D256: nvvm.wgmma.wait.group.sync.aligned 0
// D256: scf.for %{{.*}} = %[[NFULL]] to %[[NHI]] step
// D256: arith.trunci %[[QD]] : i64 to i32
// D256-NEXT: llvm.inline_asm has_side_effects asm_dialect = att "", "=r,0" %{{.*}} : (i32) -> i32
// D256: nvvm.wgmma.wait.group.sync.aligned 0
// D256-NOT: nvvm.wgmma.wait.group.sync.aligned 1
// D256: wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16
// D256: nvvm.wgmma.wait.group.sync.aligned 0
// D256: scf.yield

// A tile program written by hand: f16, D = 64, one consumer warpgroup, a
// single (masked) key loop, no LSE.

// SMALL: module attributes {gpu.container_module}
// SMALL: gpu.func @tile_f16_d64(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr<1>, %{{.*}}: i32, %{{.*}}: i32, %{{.*}}: f32, %{{.*}}: i32, %{{.*}}: i32) kernel
// SMALL-SAME: block = array<i64: 256, 1, 1>
// SMALL-SAME: config = {accumulator_regs = 80 : i64, block_m = 64 : i64, block_n = 64 : i64, consumer_regs = 240 : i64, dynamic_schedule = 0 : i64, overlap = 1 : i64, persistent = 0 : i64, pingpong = 0 : i64, producer_regs = 24 : i64, producer_warpgroups = 1 : i64, speculative_exp = 0 : i64, split_release = 1 : i64, stages = 2 : i64, tma_store_o = 0 : i64, warpgroups = 1 : i64}
// SMALL-SAME: dtype = "f16"
// SMALL-SAME: has_lse = false, head_dim = 64 : i64
// SMALL-SAME: params = [{box = array<i64: 64, 64>, kind = "tma", rank = 4 : i64, swizzle = 128 : i64, tensor = "q"}, {box = array<i64: 64, 64>, kind = "tma", rank = 4 : i64, swizzle = 128 : i64, tensor = "k"}, {box = array<i64: 64, 64>, kind = "tma", rank = 4 : i64, swizzle = 128 : i64, tensor = "v"}, {kind = "ptr", tensor = "o"}, {kind = "i32", value = "seq_q"}, {kind = "i32", value = "seq_k"}, {kind = "f32", value = "scale_log2"}, {kind = "i32", value = "kv_group"}, {kind = "i32", value = "heads"}]
// SMALL-SAME: shared_memory_bytes = 41984 : i64
// SMALL: nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 9>
// SMALL: nvgpu.mbarrier.init %{{.*}}[%{{.*}}], %c128 :
// SMALL: nvgpu.tma.async.load
// SMALL: nvvm.wgmma.mma_async {{.*}} <m = 64, n = 64, k = 16>, D[<f32>, <zero>], A[<f16>, <one>, <row>], B[<f16>, <one>, <col>]
// SMALL: llvm.fptrunc %{{.*}} : vector<2xf32> to vector<2xf16>
// SMALL: wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16
// SMALL-NOT: nvvm.barrier
// SMALL-NOT: math.log2
// SMALL: gpu.return

// Its one key loop is masked throughout; the serial schedule runs it twice,
// without the mask over the full key tiles [0, nFull) and with it after.
// SMALLSERIAL: } consumer {
// SMALLSERIAL: %[[FULL:.*]]:36 = scf.for %{{[^ ]*}} = %c0 to %[[NFULL:[^ ]*]] step %c1
// SMALLSERIAL-NOT: flash.wg.mask_keys
// SMALLSERIAL: scf.for %{{[^ ]*}} = %[[NFULL]] to %{{[^ ]*}} step %c1 iter_args(%{{[^ ]*}} = %[[FULL]]#0,
// SMALLSERIAL: flash.wg.mask_keys
// SMALLSERIAL-NOT: flash.wg.mask_keys
// SMALLSERIAL: gpu.return

func.func @tile_f16_d64(%q: memref<?x?x?x64xf16>, %k: memref<?x?x?x64xf16>, %v: memref<?x?x?x64xf16>, %o: memref<?x?x?x64xf16>) attributes {flash.config = #flash.config<block_m = 64, block_n = 64, stages = 2, warpgroups = 1>} {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %c64 = arith.constant 64 : index
  %zero_row = arith.constant dense<0.000000e+00> : tensor<64xf32>
  %ninf_row = arith.constant dense<0xFF800000> : tensor<64xf32>
  %zero = arith.constant dense<0.000000e+00> : tensor<64x64xf32>
  %b = memref.dim %q, %c0 : memref<?x?x?x64xf16>
  %h = memref.dim %q, %c1 : memref<?x?x?x64xf16>
  %nq = memref.dim %q, %c2 : memref<?x?x?x64xf16>
  %nk = memref.dim %k, %c2 : memref<?x?x?x64xf16>
  %tiles = arith.ceildivui %nq, %c64 : index
  %bh = arith.muli %b, %h : index
  flash.grid %tiles, %bh {
    %pid = flash.program_id 0
    %pbh = flash.program_id 1
    %bi = arith.divui %pbh, %h : index
    %hi = arith.remui %pbh, %h : index
    %row = arith.muli %pid, %c64 : index
    %qt = flash.load_tile %q[%bi, %hi, %row] : memref<?x?x?x64xf16> -> tensor<64x64xf16>
    %r:3 = scf.for %j = %c0 to %nk step %c64 iter_args(%acc = %zero, %m = %ninf_row, %l = %zero_row) -> (tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>) {
      %kt = flash.load_tile %k[%bi, %hi, %j] : memref<?x?x?x64xf16> -> tensor<64x64xf16>
      %vt = flash.load_tile %v[%bi, %hi, %j] : memref<?x?x?x64xf16> -> tensor<64x64xf16>
      %s = flash.dot %qt, %kt, %zero transpose_b : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf32>
      %sm = flash.mask %s, %row, %j, %nq, %nk : tensor<64x64xf32>
      %p, %mn, %ln, %alpha = flash.softmax_update %sm, %m, %l base2 {scale = 0.180336878 : f32} : tensor<64x64xf32>, tensor<64xf32>
      %acc1 = flash.rescale %acc, %alpha : tensor<64x64xf32>, tensor<64xf32>
      %pt = arith.truncf %p : tensor<64x64xf32> to tensor<64x64xf16>
      %acc2 = flash.dot %pt, %vt, %acc1 : tensor<64x64xf16>, tensor<64x64xf16> -> tensor<64x64xf32>
      scf.yield %acc2, %mn, %ln : tensor<64x64xf32>, tensor<64xf32>, tensor<64xf32>
    }
    %out, %lse = flash.finalize %r#0, %r#1, %r#2 base2 : tensor<64x64xf32>, tensor<64xf32>
    %ot = arith.truncf %out : tensor<64x64xf32> to tensor<64x64xf16>
    flash.store_tile %ot, %o[%bi, %hi, %row] : tensor<64x64xf16> -> memref<?x?x?x64xf16>
  }
  return
}

// setmaxnreg only moves registers within the block's launch allocation
// (64K / threads, multiples of 8): with four consumers a thread starts with
// 96, the producer gives up 72 of its 96, so each consumer can grow to
// (5 * 96 - 24) / 4 = 114 -> 112. Asking for more would block forever.
// RUN: flash-opt %kernels/attention_d64.mlir -flash-tile="block-m=256 block-n=64 stages=2 warpgroups=4" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=WG4
// WG4: block = array<i64: 640, 1, 1>
// WG4-SAME: consumer_regs = 112 : i64
// WG4: nvvm.setmaxregister decrease 24
// WG4: nvvm.setmaxregister increase 112
// Three consumers: 128 at launch, (4 * 128 - 24) / 3 = 162 -> 160.
// RUN: flash-opt %kernels/attention_d64.mlir -flash-tile="block-m=192 block-n=64 stages=2 warpgroups=3" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=WG3
// WG3: consumer_regs = 160 : i64

// With one stage and no split release, overlap would wait for a K slot that
// frees only after the P V it is meant to overlap: the schedule is serial.
// RUN: flash-opt %kernels/attention_d64.mlir -flash-tile="block-m=64 block-n=64 stages=1 warpgroups=1 overlap=1" -flash-fuse -flash-gpu-schedule="split-release=0" -convert-flash-to-gpu | FileCheck %s --check-prefix=S1
// S1: config = {accumulator_regs = 64 : i64, block_m = 64 : i64, block_n = 64 : i64, consumer_regs = 240 : i64, dynamic_schedule = 0 : i64, overlap = 0 : i64, persistent = 0 : i64, pingpong = 0 : i64, producer_regs = 24 : i64, producer_warpgroups = 1 : i64, speculative_exp = 0 : i64, split_release = 0 : i64, stages = 1 : i64, tma_store_o = 0 : i64, warpgroups = 1 : i64}
// RUN: flash-opt %kernels/attention_d64.mlir -flash-tile="block-m=64 block-n=64 stages=1 warpgroups=1 overlap=1" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=S1SPLIT
// S1SPLIT: config = {accumulator_regs = 80 : i64, block_m = 64 : i64, block_n = 64 : i64, consumer_regs = 240 : i64, dynamic_schedule = 0 : i64, overlap = 1 : i64,

// The schedule comes from the config; the pass options only turn switches
// off. A kernel whose config turns overlap off is serial even though the
// pass allows overlap.
// RUN: flash-opt %kernels/attention.mlir -flash-tile="overlap=0" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=CFG
// CFG: config = {accumulator_regs = 128 : i64, block_m = 128 : i64, block_n = 128 : i64, consumer_regs = 240 : i64, dynamic_schedule = 0 : i64, overlap = 0 : i64, persistent = 0 : i64, pingpong = 1 : i64, producer_regs = 24 : i64, producer_warpgroups = 1 : i64, speculative_exp = 0 : i64, split_release = 1 : i64, stages = 2 : i64, tma_store_o = 1 : i64, warpgroups = 2 : i64}

// flashc's schedule flags set the same switches (here on a D = 64 kernel
// whose config turns overlap off).
// RUN: flashc %kernels/attention_d64.mlir --overlap=1 --emit=mlir -o - | FileCheck %s --check-prefix=FLAGS
// RUN: flashc %kernels/attention_d64.mlir --emit=mlir -o - | FileCheck %s --check-prefix=NOFLAGS
// FLAGS: config = {accumulator_regs = 104 : i64, block_m = 256 : i64, block_n = 96 : i64, consumer_regs = 112 : i64, dynamic_schedule = 0 : i64, overlap = 1 : i64,
// NOFLAGS: config = {accumulator_regs = 80 : i64, block_m = 256 : i64, block_n = 96 : i64, consumer_regs = 112 : i64, dynamic_schedule = 0 : i64, overlap = 0 : i64,

// The persistent schedule (#flash.config persistent = true): one block per
// SM walks its share of the tiles; the K/V ring and the Q barriers run on
// across them. Tiles alternate between two Q buffers where shared memory
// allows, and the producer reloads a buffer only once every consumer's last
// S of the tile before the previous one retired (its q_empty barrier).
// O by global stores (tma-store-o=0; flash-to-gpu-tma-store.mlir has the
// TMA store, which frees Q later). The static schedule of causal pairs
// (dynamic-schedule=0; it is what D = 64 uses, and
// flash-to-gpu-dynamic-schedule.mlir has the claimed tiles).
// RUN: flash-opt %kernels/attention_causal.mlir -flash-tile="persistent=1" -flash-fuse -flash-gpu-schedule="tma-store-o=0 dynamic-schedule=0" -convert-flash-to-gpu | FileCheck %s
// flashc's --persistent sets it; values other than 0 and 1 are refused.
// RUN: flashc %kernels/attention.mlir --persistent=1 --tma-store-o=0 --emit=mlir -o - | FileCheck %s --check-prefix=FLASHC
// RUN: not flashc %kernels/attention.mlir --persistent=2 --emit=mlir -o - 2>&1 | FileCheck %s --check-prefix=BADFLAG
// The pass option turns it off for every kernel.
// RUN: flash-opt %kernels/attention_causal.mlir -flash-tile="persistent=1" -flash-fuse -flash-gpu-schedule="persistent=0 tma-store-o=0" -convert-flash-to-gpu | FileCheck %s --check-prefix=OFF
// Beside four consumers the producer keeps 32, so each consumer gets 112
// instead of 104.
// RUN: flashc %kernels/attention_d64.mlir --persistent=1 --block-m=256 --warpgroups=4 --block-n=64 --emit=mlir -o - | FileCheck %s --check-prefix=FOUR
// D = 256 (bm128 bn64, 2 stages): a second 64 KiB Q buffer does not fit.
// RUN: flash-opt %kernels/attention_d256_causal.mlir -flash-tile="persistent=1" -flash-fuse -flash-gpu-schedule="dynamic-schedule=0" -convert-flash-to-gpu | FileCheck %s --check-prefix=ONEQ

// batch and heads follow scale_log2; the launch contract asks for a
// persistent grid and passes both. The producer keeps 40 registers (the
// tile schedule is live beside its copy loop), so consumers get 232.
// CHECK: gpu.func @attention_causal(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %[[O:[^:]*]]: !llvm.ptr<1>, %{{[^:]*}}: !llvm.ptr<1>, %[[NQ:[^:]*]]: i32, %[[NK:[^:]*]]: i32, %{{[^:]*}}: f32, %{{[^:]*}}: i32, %[[B:[^:]*]]: i32, %[[H:[^:]*]]: i32) kernel
// CHECK-SAME: consumer_regs = 232 : i64
// CHECK-SAME: persistent = 1 : i64
// CHECK-SAME: producer_regs = 40 : i64
// CHECK-SAME: grid = {kind = "persistent"}
// CHECK-SAME: {kind = "f32", value = "scale_log2"}, {kind = "i32", value = "kv_group"}, {kind = "i32", value = "batch"}, {kind = "i32", value = "heads"}]
// Two 32 KiB Q buffers, then the K/V ring.
// CHECK-SAME: shared_memory_bytes = 197632 : i64
// full_k[2], full_v[2], empty[2], empty_k[2], q[2], q_empty[2] (every
// consumer thread arrives: 256).
// CHECK: %[[BAR:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 12>
// CHECK: nvgpu.mbarrier.init %[[BAR]][%c8], %c1
// CHECK-NEXT: nvgpu.mbarrier.init %[[BAR]][%c9], %c1
// CHECK-NEXT: nvgpu.mbarrier.init %[[BAR]][%c10], %c256
// CHECK-NEXT: nvgpu.mbarrier.init %[[BAR]][%c11], %c256

// Producer: the tile schedule (query blocks of seq_q; causal work items are
// pairs of them, B*H*ceil(blocks/2) items; rounds over the grid), then per
// tile: wait q_empty, load Q, the key loop.
// CHECK: nvvm.setmaxregister decrease 40
// CHECK: %[[NM:.*]] = arith.ceildivui %[[NQ]], %c128_i32 : i32
// CHECK: %[[BH:.*]] = arith.muli %[[B]], %[[H]] : i32
// CHECK: %[[PAIRS:.*]] = arith.ceildivui %[[NM]], %c2_i32 : i32
// CHECK: %[[NT:.*]] = arith.muli %[[PAIRS]], %[[BH]] : i32
// CHECK: %[[G:.*]] = arith.index_cast %grid_dim_x : index to i32
// Causal items go by sections of heads whose K and V fit 16 MiB (32768
// keys at D = 128), level by level within one.
// CHECK-NEXT: arith.divui %c32768_i32, %[[NK]] : i32
// CHECK: %[[NM1:.*]] = arith.subi %[[NM]], %c1_i32 : i32
// CHECK: %[[BLK:.*]] = arith.index_cast %block_id_x : index to i32
// CHECK: %[[ROUNDS:.*]] = arith.ceildivui %[[NT]], %[[G]] : i32
// CHECK: scf.for %[[R:.*]] = %c0 to %{{.*}} step %c1 iter_args(%[[BASE0:.*]] = %c0, %[[DONE0:.*]] = %c0_i32) -> (index, i32)
// CHECK: %[[R32:.*]] = arith.index_cast %[[R]] : index to i32
// CHECK: %[[RG:.*]] = arith.muli %[[R32]], %[[G]] : i32
// CHECK: %[[T:.*]] = arith.addi %[[RG]], %[[BLK]] : i32
// CHECK: %[[OWN:.*]] = arith.cmpi ult, %[[T]], %[[NT]] : i32
// CHECK: scf.if %[[OWN]] -> (index, i32)
// Pair (level, blocks - 1 - level), the longer first; one member when they
// coincide.
// CHECK: %[[LONGER:.*]] = arith.subi %[[NM1]], %[[LEVEL:.*]] : i32
// CHECK: %[[PAIRED:.*]] = arith.cmpi ult, %[[LEVEL]], %[[LONGER]] : i32
// CHECK: %[[COUNT:.*]] = arith.select %[[PAIRED]], %c2, %c1 : index
// CHECK: scf.for %[[M:.*]] = %c0 to %[[COUNT]] step %c1 iter_args(%[[BASE:.*]] = %[[BASE0]], %[[DONE:.*]] = %[[DONE0]]) -> (index, i32)
// CHECK: %[[SECOND:.*]] = arith.cmpi ne, %[[M]], %c0 : index
// CHECK: arith.select %[[SECOND]], %[[LEVEL]], %[[LONGER]] : i32
// Tile `done` uses buffer done % 2 for the (done / 2)-th time.
// CHECK: %[[QB:.*]] = arith.andi %[[DONE]], %c1_i32 : i32
// CHECK-NEXT: %[[QBUF:.*]] = arith.index_cast %[[QB]] : i32 to index
// CHECK-NEXT: %[[USES:.*]] = arith.shrui %[[DONE]], %c1_i32 : i32
// CHECK-NEXT: %[[QP:.*]] = arith.andi %[[USES]], %c1_i32 : i32
// CHECK-NEXT: %[[QPAR:.*]] = arith.trunci %[[QP]] : i32 to i1
// The first wait on each buffer asks for the phase before the first: it
// passes at once.
// CHECK: %[[PREV:.*]] = arith.xori %[[QPAR]], %true : i1
// CHECK: %[[QE:.*]] = arith.addi %[[QBUF]], %c10 : index
// CHECK: nvgpu.mbarrier.try_wait.parity %[[BAR]][%[[QE]]], %[[PREV]]
// CHECK: %[[QF:.*]] = arith.addi %[[QBUF]], %c8 : index
// CHECK: nvgpu.mbarrier.arrive.expect_tx %[[BAR]][%[[QF]]], %c32768
// CHECK: %[[QOFF:.*]] = arith.muli %[[QBUF]], %c32768 : index
// CHECK-COUNT-2: nvgpu.tma.async.load {{.*}}, %[[BAR]][%[[QF]]] to
// K/V go to ring position base + j.
// CHECK: scf.for %[[J:.*]] = %c0 to
// CHECK: %[[POS:.*]] = arith.addi %[[BASE]], %[[J]] : index
// CHECK: arith.cmpi uge, %[[POS]], %c2 : index
// CHECK: nvgpu.tma.async.load
// The next tile's ring starts where this one's ended.
// CHECK: %[[NEXT:.*]] = arith.addi %[[BASE]], %{{[0-9]+}} : index
// CHECK-NEXT: %[[DONE1:.*]] = arith.addi %[[DONE]], %c1_i32 : i32
// CHECK-NEXT: scf.yield %[[NEXT]], %[[DONE1]] : index, i32

// Consumers: the same schedule; Q waited with this tile's parity, q_empty
// arrived on after the last S retired and, for a tile with no key tiles, at
// once.
// CHECK: nvvm.setmaxregister increase 232
// CHECK: gpu.grid_dim x
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %c0, %{{.*}} = %c0_i32) -> (index, i32)
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}, %[[CDONE:.*]] = %{{.*}}) -> (index, i32)
// CHECK: %[[CB:.*]] = arith.andi %[[CDONE]], %c1_i32 : i32
// CHECK-NEXT: %[[CBUF:.*]] = arith.index_cast %[[CB]] : i32 to index
// CHECK-NEXT: %[[CU:.*]] = arith.shrui %[[CDONE]], %c1_i32 : i32
// CHECK-NEXT: %[[CQ:.*]] = arith.andi %[[CU]], %c1_i32 : i32
// CHECK-NEXT: %[[CQPAR:.*]] = arith.trunci %[[CQ]] : i32 to i1
// The Q descriptor moves on by one buffer (32 KiB >> 4) for odd tiles.
// CHECK: %[[CB64:.*]] = arith.index_cast %[[CBUF]] : index to i64
// CHECK-NEXT: %[[QDOFF:.*]] = arith.muli %[[CB64]], %c2048_i64 : i64
// CHECK-NEXT: %[[QD:.*]] = arith.addi %{{.*}}, %[[QDOFF]] : i64
// CHECK: %[[CQF:.*]] = arith.addi %[[CBUF]], %c8 : index
// CHECK-NEXT: nvgpu.mbarrier.try_wait.parity %[[BAR]][%[[CQF]]], %[[CQPAR]]
// Its first k-step is the descriptor itself, the next +32 B (2 units).
// CHECK: arith.addi %[[QD]], %c2_i64 : i64
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: scf.if
// CHECK-NEXT: %[[CQE:.*]] = arith.addi %[[CBUF]], %c10 : index
// CHECK-NEXT: nvgpu.mbarrier.arrive %[[BAR]][%[[CQE]]]
// CHECK: arith.cmpi sle, %{{.*}}, %c0_i32 : i32
// CHECK-NEXT: scf.if
// CHECK-NEXT: %[[CQE2:.*]] = arith.addi %[[CBUF]], %c10 : index
// CHECK-NEXT: nvgpu.mbarrier.arrive %[[BAR]][%[[CQE2]]]
// The epilogue indexes O by this tile's head.
// CHECK: llvm.getelementptr %[[O]]
// CHECK: gpu.return

// OFF: gpu.func @attention_causal(%{{.*}}, %{{.*}}: f32, %{{.*}}: i32) kernel
// OFF-SAME: grid = {block_m = 128 : i64, kind = "sections", section_keys = 32768 : i64}
// OFF: gpu.block_id z
// OFF-NOT: arith.ceildivui
// OFF-NOT: num_barriers = 10
// OFF: gpu.return

// ONEQ: gpu.func @attention_d256_causal(
// ONEQ-SAME: persistent = 1 : i64
// ONEQ-SAME: shared_memory_bytes = 197632 : i64
// ONEQ: nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 10>
// ONEQ-NOT: arith.shrui
// ONEQ: nvgpu.mbarrier.arrive.expect_tx %{{.*}}[%c8], %c65536
// ONEQ: gpu.return

// FLASHC: gpu.func @attention(
// FLASHC-SAME: grid = {kind = "persistent"}
// Without a causal mask a head's query blocks are consecutive items (item
// t: head t / blocks, block t % blocks from the last), so the blocks
// running at once share few heads' K and V; no sections.
// FLASHC: %[[FNM:.*]] = arith.ceildivui %{{.*}}, %c128_i32 : i32
// FLASHC-NOT: %c32768_i32
// FLASHC: %[[FT:.*]] = arith.addi %{{.*}}, %{{.*}} : i32
// FLASHC-NEXT: arith.cmpi ult, %[[FT]], %{{.*}} : i32
// FLASHC-NEXT: scf.if
// FLASHC-NEXT: %[[FHEAD:.*]] = arith.divui %[[FT]], %[[FNM]] : i32
// FLASHC-NEXT: %[[FHM:.*]] = arith.muli %[[FHEAD]], %[[FNM]] : i32
// FLASHC-NEXT: arith.subi %[[FT]], %[[FHM]] : i32
// FLASHC: arith.index_cast %[[FHEAD]] : i32 to index
// BADFLAG: error: --persistent takes 1 (on) or 0 (off), got 2

// FOUR: gpu.func @attention_d64(
// FOUR-SAME: consumer_regs = 112 : i64
// FOUR-SAME: producer_regs = 32 : i64
// FOUR: nvvm.setmaxregister decrease 32
// FOUR: nvvm.setmaxregister increase 112

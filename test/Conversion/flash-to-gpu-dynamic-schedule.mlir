// Persistent causal kernels claim their tiles (#flash.config
// dynamic_schedule, on by default): the producer draws item indices from a tile counter the runtime passes (the
// last kernel parameter), decodes each into (query block, head), longest
// query block first, and publishes it in shared memory beside the tile's Q;
// consumers read it once Q's barrier completed. Query block -1 means the
// work ran out. The producer claims one tile ahead, and the launch's last
// claim (items + grid - 1) rewinds the counter.
// RUN: flash-opt %kernels/attention_causal.mlir -flash-tile="persistent=1" -flash-fuse -flash-gpu-schedule="tma-store-o=0" -convert-flash-to-gpu | FileCheck %s
// RUN: flash-opt %kernels/attention_d64_causal.mlir -flash-tile="persistent=1" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=D64
// The config (or flash-tile's option) turns it off for a kernel, the
// conversion's option for all: the static pairs.
// RUN: flash-opt %kernels/attention_causal.mlir -flash-tile="persistent=1 dynamic-schedule=0" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=STATIC
// RUN: flash-opt %kernels/attention_causal.mlir -flash-tile="persistent=1" -flash-fuse -flash-gpu-schedule="dynamic-schedule=0" -convert-flash-to-gpu | FileCheck %s --check-prefix=STATIC
// RUN: flashc %kernels/attention_causal.mlir --persistent=1 --dynamic-schedule=0 --emit=mlir -o - | FileCheck %s --check-prefix=STATIC
// Without the causal mask every tile costs the same: no counter.
// RUN: flash-opt %kernels/attention.mlir -flash-tile="persistent=1" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=STATIC
// RUN: not flashc %kernels/attention_causal.mlir --dynamic-schedule=2 --emit=mlir -o - 2>&1 | FileCheck %s --check-prefix=BADFLAG

// CHECK: gpu.func @attention_causal({{.*}}, %[[B:.*]]: i32, %[[H:.*]]: i32, %[[CTR:.*]]: !llvm.ptr<1>) kernel
// CHECK-SAME: dynamic_schedule = 1 : i64
// CHECK-SAME: {kind = "i32", value = "heads"}, {kind = "tile_counter"}]
// Two 32 KiB Q buffers and the K/V ring, then two claims of 8 bytes.
// CHECK-SAME: shared_memory_bytes = 197648 : i64

// Producer: single query blocks (B*H*blocks items), the claim slots after
// the ring, the first claim before the loop.
// CHECK: nvvm.setmaxregister decrease 40
// CHECK: %[[NM:.*]] = arith.ceildivui %{{.*}}, %c128_i32 : i32
// CHECK: %[[BH:.*]] = arith.muli %[[B]], %[[H]] : i32
// CHECK: %[[NT:.*]] = arith.muli %[[NM]], %[[BH]] : i32
// CHECK: %[[G:.*]] = arith.index_cast %grid_dim_x : index to i32
// CHECK: %[[NM1:.*]] = arith.subi %[[NM]], %c1_i32 : i32
// CHECK: %[[IDSOFF:.*]] = arith.addi %{{.*}}, %c196608 : index
// CHECK: %[[IDS:.*]] = memref.view %{{.*}}[%[[IDSOFF]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<4xi32, #gpu.address_space<workgroup>>
// CHECK: %[[CLAIMS:.*]] = arith.addi %[[NT]], %[[G]] : i32
// CHECK: %[[LAST:.*]] = arith.subi %[[CLAIMS]], %c1_i32 : i32
// CHECK: %[[FIRST:.*]] = llvm.atomicrmw add %[[CTR]], %c1_i32 monotonic : !llvm.ptr<1>, i32
// CHECK: scf.while (%{{.*}} = %c0, %[[DONE:.*]] = %c0_i32, %[[CLAIM:.*]] = %[[FIRST]]) : (index, i32, i32) -> (i32, i32, index, i32, i32)
// The Q buffer (and its claim slot) must be free.
// CHECK: %[[QB:.*]] = arith.andi %[[DONE]], %c1_i32 : i32
// CHECK-NEXT: %[[QBUF:.*]] = arith.index_cast %[[QB]] : i32 to index
// CHECK: %[[QE:.*]] = arith.addi %[[QBUF]], %c10 : index
// CHECK-NEXT: nvgpu.mbarrier.try_wait.parity %{{.*}}[%[[QE]]]
// CHECK: %[[ISLAST:.*]] = arith.cmpi eq, %[[CLAIM]], %[[LAST]] : i32
// CHECK-NEXT: scf.if %[[ISLAST]] {
// CHECK-NEXT: llvm.atomicrmw xchg %[[CTR]], %c0_i32 monotonic
// CHECK: %[[VALID:.*]] = arith.cmpi ult, %[[CLAIM]], %[[NT]] : i32
// Item t: sections of heads, level by level; query block blocks-1-level.
// CHECK: arith.divui
// CHECK: %[[LEVEL:.*]] = arith.divui
// CHECK: %[[HEAD:.*]] = arith.addi
// CHECK: %[[X:.*]] = arith.subi %[[NM1]], %[[LEVEL]] : i32
// CHECK: %[[XPUB:.*]] = arith.select %[[VALID]], %[[X]], %c-1_i32 : i32
// CHECK: memref.store %[[XPUB]], %[[IDS]]
// CHECK: memref.store %[[HEAD]], %[[IDS]]
// Out of work: Q's phase completes on a plain arrive, and no more claims.
// CHECK: %[[NONE:.*]] = arith.xori %[[VALID]], %true : i1
// CHECK-NEXT: scf.if %[[NONE]] {
// CHECK-NEXT: %[[QF:.*]] = arith.addi %[[QBUF]], %c8 : index
// CHECK-NEXT: nvgpu.mbarrier.arrive %{{.*}}[%[[QF]]]
// CHECK: %[[NEXT:.*]] = scf.if %[[VALID]] -> (i32) {
// CHECK-NEXT: %[[C:.*]] = llvm.atomicrmw add %[[CTR]], %c1_i32 monotonic
// CHECK-NEXT: scf.yield %[[C]] : i32
// CHECK-NEXT: } else {
// CHECK-NEXT: scf.yield %[[CLAIM]] : i32
// CHECK: scf.condition(%[[VALID]]) %[[XPUB]], %[[HEAD]], %{{.*}}, %[[DONE]], %[[NEXT]]
// The tile: Q, then its key loop.
// CHECK: ^bb0(%[[PX:.*]]: i32, %{{.*}}: i32, %{{.*}}: index, %{{.*}}: i32, %[[PNEXT:.*]]: i32):
// CHECK: %[[FROMEND:.*]] = arith.subi %{{.*}}, %[[PX]] : i32
// CHECK-NEXT: arith.muli %[[FROMEND]], %c128_i32 : i32
// CHECK: nvgpu.mbarrier.arrive.expect_tx
// CHECK: nvgpu.tma.async.load
// CHECK: scf.yield %{{.*}}, %{{.*}}, %[[PNEXT]] : index, i32, i32

// Consumers: wait for Q, read the claim, stop at -1.
// CHECK: nvvm.setmaxregister increase 232
// CHECK: %[[CIDS:.*]] = memref.view %{{.*}} to memref<4xi32, #gpu.address_space<workgroup>>
// CHECK: scf.while (%{{.*}} = %c0, %[[CDONE:.*]] = %c0_i32) : (index, i32) -> (i32, i32, index, i32)
// CHECK: %[[CB:.*]] = arith.andi %[[CDONE]], %c1_i32 : i32
// CHECK-NEXT: %[[CBUF:.*]] = arith.index_cast %[[CB]] : i32 to index
// CHECK: %[[CQF:.*]] = arith.addi %[[CBUF]], %c8 : index
// CHECK-NEXT: nvgpu.mbarrier.try_wait.parity %{{.*}}[%[[CQF]]]
// CHECK: %[[CX:.*]] = memref.load %[[CIDS]]
// CHECK: %[[CH:.*]] = memref.load %[[CIDS]]
// CHECK-NEXT: %[[CVALID:.*]] = arith.cmpi sge, %[[CX]], %c0_i32 : i32
// CHECK-NEXT: scf.condition(%[[CVALID]]) %[[CX]], %[[CH]]
// CHECK: gpu.return

// D64: gpu.func @attention_d64_causal({{.*}}, %{{.*}}: !llvm.ptr<1>) kernel
// D64-SAME: {kind = "tile_counter"}]
// D64: llvm.atomicrmw add

// BADFLAG: error: --dynamic-schedule takes 1 (on) or 0 (off), got 2

// STATIC: dynamic_schedule = 0 : i64
// STATIC-NOT: tile_counter
// STATIC-NOT: llvm.atomicrmw
// STATIC-NOT: scf.while
// STATIC: gpu.return

// Decoding on the GPU (split-KV, optionally a paged cache and GQA packing):
// the split kernel is the warp-specialised kernel with grid z the split,
// its key tiles its split's share of the cache's length for its batch,
// K and V read page by page through the table (clamped into the cache),
// and O (f32) and LSE stored to the split's block of the scratch; a
// second kernel combines the splits.
// RUN: flash-opt %S/Inputs/decode-paged.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s
// RUN: flash-opt %S/Inputs/decode-contiguous.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --check-prefix=CONTIGUOUS
// RUN: flash-opt %S/Inputs/decode-paged.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=LOWERED

// CHECK-LABEL: gpu.func @decode(
// CHECK-SAME: %[[TQ:[^:]*]]: !llvm.ptr, %[[TK:[^:]*]]: !llvm.ptr, %[[TV:[^:]*]]: !llvm.ptr, %[[PO:[^:]*]]: !llvm.ptr<1>, %[[PL:[^:]*]]: !llvm.ptr<1>, %[[TABLE:[^:]*]]: !llvm.ptr<1>, %[[LENS:[^:]*]]: !llvm.ptr<1>, %[[SQ:[^:]*]]: i32, %{{[^:]*}}: i32, %{{[^:]*}}: f32, %[[G:[^:]*]]: i32, %[[H:[^:]*]]: i32, %[[PAGES:[^:]*]]: i32, %[[COLS:[^:]*]]: i32)
// CHECK-SAME: grid = {block_m = 64 : i64, kind = "decode", splits = true}
// CHECK-SAME: pack_gqa = true, page_size = 256 : i64
// CHECK-SAME: {box = array<i64: 64, 64>, kind = "tma", rank = 4 : i64, swizzle = 128 : i64, tensor = "q", view = "group_rows"}
// CHECK-SAME: {kind = "workspace", name = "partial_out"}, {kind = "workspace", name = "partial_lse"}, {kind = "ptr", tensor = "page_table"}, {kind = "ptr", tensor = "cache_seqlens"}
// CHECK-SAME: {kind = "i32", value = "num_pages"}, {kind = "i32", value = "page_table_cols"}
// CHECK-SAME: pass = "decode", role = "split"
// CHECK-SAME: persistent = false, tma_store_o = false
// A program's rows are its group's queries, its heads the K/V heads.
// CHECK: %[[ROWS:.*]] = arith.muli %[[SQ]], %[[G]] : i32
// CHECK: %[[HKV:.*]] = arith.divui %[[H]], %[[G]] : i32
// CHECK: %[[QB:[^,]*]], %[[Y:[^,]*]], %{{.*}} = flash.wg.block_tile
// CHECK: %[[HKVI:.*]] = arith.index_cast %[[HKV]] : i32 to index
// CHECK: %[[BATCH:.*]] = arith.divui %[[Y]], %[[HKVI]] : index
// CHECK: %[[SPLIT:.*]] = gpu.block_id z
// CHECK: %[[S32:.*]] = arith.index_cast %[[SPLIT]] : index to i32
// CHECK: %[[SPLITS:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK: %[[PROGRAMS:.*]] = arith.index_cast %{{.*}} : index to i32
// CHECK: %[[Y32:.*]] = arith.index_cast %[[Y]] : index to i32
// CHECK: %[[SB:.*]] = arith.muli %[[S32]], %[[PROGRAMS]] : i32
// CHECK: %[[PBLOCK:.*]] = arith.addi %[[SB]], %[[Y32]] : i32
// The batch's length, clamped to its table's pages.
// CHECK: %[[B64:.*]] = arith.index_cast %[[BATCH]] : index to i64
// CHECK: %[[LENAT:.*]] = llvm.getelementptr %[[LENS]][%[[B64]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, i32
// CHECK: %[[LEN:.*]] = llvm.load %[[LENAT]]
// CHECK: %[[END:.*]] = arith.muli %[[COLS]], %c256_i32 : i32
// CHECK: %[[LEN0:.*]] = arith.maxsi %[[LEN]], %c0_i32 : i32
// CHECK: %[[SEQK:.*]] = arith.minsi %[[LEN0]], %[[END]] : i32
// CHECK: %[[M0:.*]] = arith.muli %[[QB]], %c64_i32 : i32
// CHECK: %[[TILES:.*]] = arith.ceildivui %[[SEQK]], %c128_i32 : i32
// The keys every query sees whole: before the first query's position.
// CHECK: %[[EXCESS:.*]] = arith.subi %[[SEQK]], %[[SQ]] : i32
// CHECK: %[[SHARE:.*]] = arith.ceildivui %[[TILES]], %[[SPLITS]] : i32
// CHECK: arith.muli %[[S32]], %[[SHARE]] : i32
// CHECK: flash.wg.warp_specialize consumers = 1
// The producer: key tile j's page from the table, clamped into the cache.
// CHECK: flash.wg.tma_load_tile %{{.*}}[%{{[^,]*}}, %[[QHEAD:[^,]*]], %{{[^]]*}}], %{{.*}} columns 128
// CHECK: scf.for %[[J:.*]] = %c0 to
// CHECK: %[[KEY:.*]] = arith.muli %{{.*}}, %c128 : index
// CHECK: %[[PAGEIDX:.*]] = arith.divui %[[KEY]], %c256 : index
// CHECK: %[[ENTRY:.*]] = arith.addi
// CHECK: %[[PAGEAT:.*]] = llvm.getelementptr %[[TABLE]][%[[ENTRY]]]
// CHECK: %[[PAGE:.*]] = llvm.load %[[PAGEAT]]
// CHECK: %[[LAST:.*]] = arith.subi %[[PAGES]], %c1_i32 : i32
// CHECK: %[[PAGE0:.*]] = arith.maxsi %[[PAGE]], %c0_i32 : i32
// CHECK: %[[PAGEC:.*]] = arith.minsi %[[PAGE0]], %[[LAST]] : i32
// CHECK: %[[PAGEI:.*]] = arith.index_cast %[[PAGEC]] : i32 to index
// CHECK: %[[INPAGE:.*]] = arith.remui %[[KEY]], %c256 : index
// CHECK: flash.wg.tma_load_tile %{{.*}}[%[[INPAGE]], %[[QHEAD]], %[[PAGEI]]]
// V of the same tile reads the same page: one table lookup per tile.
// CHECK-NOT: llvm.load
// CHECK: flash.wg.tma_load_tile %{{.*}}[%[[INPAGE]], %[[QHEAD]], %[[PAGEI]]]
// The consumer's rows are queries r % seq_q of the group.
// CHECK: } consumer {
// CHECK: arith.remui %{{.*}}, %[[SQ]] : i32
// CHECK: arith.remui %{{.*}}, %[[SQ]] : i32
// V rows past the cache's end (a page holds them as they are) are zeroed
// before P V reads them: the tile that crosses the end, then a fence for
// wgmma's proxy and the warpgroup's barrier.
// CHECK: flash.wg.ring_wait_full %{{.*}}, %{{.*}}[3]
// CHECK: %[[VALID:.*]] = arith.subi %[[SEQK]], %{{.*}} : i32
// CHECK: %[[CROSS:.*]] = arith.cmpi slt, %[[VALID]], %c128_i32 : i32
// CHECK: scf.if %[[CROSS]] {
// CHECK: memref.view %{{.*}} to memref<1xvector<4xi32>, #gpu.address_space<workgroup>>
// CHECK: memref.store %{{.*}} : memref<1xvector<4xi32>, #gpu.address_space<workgroup>>
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>
// CHECK: nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// CHECK: flash.wg.mask_keys %{{.*}}, %[[SQ]], %[[SEQK]] causal
// The split's O (f32) and LSE to its block of the scratch.
// CHECK: flash.wg.store_global %{{.*}}, %[[PO]][%[[PBLOCK]], %[[M0]]], %[[ROWS]] : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>, !llvm.ptr<1>
// CHECK: flash.wg.store_global %{{.*}}, %[[PL]][%[[PBLOCK]], %[[M0]]], %[[ROWS]] : !flash.fragment<64xf32, #flash.wgmma_rows>, !llvm.ptr<1>

// The combine: the splits' LSEs' max, then their weighted outputs.
// CHECK-LABEL: gpu.func @decode_combine(
// CHECK-SAME: %[[CPO:[^:]*]]: !llvm.ptr<1>, %[[CPL:[^:]*]]: !llvm.ptr<1>, %[[O:[^:]*]]: !llvm.ptr<1>, %[[LSE:[^:]*]]: !llvm.ptr<1>, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %[[NS:[^:]*]]: i32, %{{[^:]*}}: i64, %{{[^:]*}}: i64, %{{[^:]*}}: i64)
// CHECK-SAME: block = array<i64: 128, 1, 1>
// CHECK-SAME: grid = {block_m = 64 : i64, kind = "decode", splits = false}
// CHECK-SAME: {kind = "workspace", name = "partial_out"}, {kind = "workspace", name = "partial_lse"}, {kind = "ptr", tensor = "o"}, {kind = "ptr", tensor = "lse"}
// CHECK-SAME: {kind = "i32", value = "num_splits"}, {kind = "i64", value = "stride_o_b"}, {kind = "i64", value = "stride_o_h"}, {kind = "i64", value = "stride_o_n"}
// CHECK-SAME: pass = "decode", role = "combine"
// CHECK: %[[NSI:.*]] = arith.index_cast %[[NS]] : i32 to index
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[NSI]] step %{{.*}} iter_args(%{{.*}} = %cst{{.*}}) -> (f32)
// CHECK: arith.maximumf
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[NSI]] step {{.*}} -> (f32, f32, f32, f32, f32)
// CHECK: arith.cmpf oeq, %{{.*}}, %cst
// CHECK: math.exp2
// CHECK-COUNT-4: arith.truncf %{{.*}} : f32 to bf16
// CHECK: math.log2
// CHECK: gpu.return

// CONTIGUOUS-LABEL: gpu.func @decode_contiguous(
// CONTIGUOUS-SAME: %{{[^:]*}}: !llvm.ptr, %{{[^:]*}}: !llvm.ptr, %{{[^:]*}}: !llvm.ptr, %{{[^:]*}}: !llvm.ptr<1>, %{{[^:]*}}: !llvm.ptr<1>, %[[SQ:[^:]*]]: i32, %[[SK:[^:]*]]: i32, %{{[^:]*}}: f32, %{{[^:]*}}: i32, %{{[^:]*}}: i32)
// CONTIGUOUS-SAME: has_lse = false
// CONTIGUOUS-SAME: pack_gqa = false, page_size = 0 : i64
// CONTIGUOUS-NOT: view = "group_rows"
// CONTIGUOUS: %{{.*}} = arith.ceildivui %[[SK]], %c64_i32 : i32
// CONTIGUOUS-NOT: memref.view
// CONTIGUOUS: flash.wg.mask_keys %{{.*}}, %[[SQ]], %[[SK]] :
// CONTIGUOUS-LABEL: gpu.func @decode_contiguous_combine(
// CONTIGUOUS-SAME: %{{[^:]*}}: !llvm.ptr<1>, %{{[^:]*}}: !llvm.ptr<1>, %{{[^:]*}}: !llvm.ptr<1>, %{{[^:]*}}: i32,
// CONTIGUOUS-COUNT-2: arith.truncf %{{.*}} : f32 to f16
// CONTIGUOUS-NOT: math.log2
// CONTIGUOUS: gpu.return

// The accumulator's store: each register its own word.
// LOWERED-LABEL: gpu.func @decode(
// LOWERED-NOT: flash.wg.
// LOWERED-LABEL: gpu.func @decode_combine(

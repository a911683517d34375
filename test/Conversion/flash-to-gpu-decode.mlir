// Decoding on the GPU (split-KV, optionally a paged cache and GQA packing):
// the split kernel is the warp-specialised kernel with grid z the split,
// its key tiles its split's share of the cache's length for its batch,
// K and V read page by page through the table (clamped into the cache),
// and O (f32) and LSE stored to the split's block of the scratch; a
// second kernel combines the splits.
// RUN: flash-opt %S/Inputs/decode-paged.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s
// RUN: flash-opt %S/Inputs/decode-contiguous.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --check-prefix=CONTIGUOUS
// RUN: flash-opt %S/Inputs/decode-paged.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=LOWERED
// RUN: flash-opt %S/Inputs/decode-mods.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --check-prefix=MODS
// RUN: flash-opt %S/Inputs/decode-mods.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=MODS-LOWERED
// RUN: flash-opt %S/Inputs/decode-small-pages.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --check-prefix=SMALL

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

// The combine, the split kernel's programmatic dependent (it waits for the
// splits before reading their scratch): a warp's row's splits' LSEs' max
// (lane l reads splits l, l + 32, ..., then five xor shuffles), then their
// weighted outputs eight splits a step (a vector load of the lane's 4
// columns each), those past the last weighing 0.
// CHECK-LABEL: gpu.func @decode_combine(
// CHECK-SAME: %[[CPO:[^:]*]]: !llvm.ptr<1>, %[[CPL:[^:]*]]: !llvm.ptr<1>, %[[O:[^:]*]]: !llvm.ptr<1>, %[[LSE:[^:]*]]: !llvm.ptr<1>, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %[[NS:[^:]*]]: i32, %{{[^:]*}}: i64, %{{[^:]*}}: i64, %{{[^:]*}}: i64)
// CHECK-SAME: block = array<i64: 128, 1, 1>
// CHECK-SAME: grid = {block_m = 64 : i64, kind = "decode", splits = false}
// CHECK-SAME: {kind = "workspace", name = "partial_out"}, {kind = "workspace", name = "partial_lse"}, {kind = "ptr", tensor = "o"}, {kind = "ptr", tensor = "lse"}
// CHECK-SAME: {kind = "i32", value = "num_splits"}, {kind = "i64", value = "stride_o_b"}, {kind = "i64", value = "stride_o_h"}, {kind = "i64", value = "stride_o_n"}
// CHECK-SAME: pass = "decode", programmatic = true, role = "combine"
// CHECK: %[[TID:.*]] = gpu.thread_id x
// CHECK: %[[TID32:.*]] = arith.index_cast %[[TID]] : index to i32
// CHECK: %[[WARP:.*]] = arith.divui %[[TID32]], %c32_i32{{.*}} : i32
// CHECK: %[[LANE:.*]] = arith.remui %[[TID32]], %c32_i32{{.*}} : i32
// CHECK: %[[BX:.*]] = gpu.block_id x
// CHECK: %[[BX32:.*]] = arith.index_cast %[[BX]] : index to i32
// CHECK: %[[BROW:.*]] = arith.muli %[[BX32]], %c64_i32{{.*}} : i32
// CHECK: %[[FIRST:.*]] = arith.addi %[[BROW]], %[[WARP]] : i32
// CHECK: nvvm.griddepcontrol wait
// CHECK-NOT: llvm.load
// CHECK: scf.for %[[I:.*]] = %c0{{.*}} to %c16{{.*}} step %c1{{.*}} {
// CHECK: %[[I32:.*]] = arith.index_cast %[[I]] : index to i32
// CHECK: %[[STEP:.*]] = arith.muli %[[I32]], %c4_i32{{.*}} : i32
// CHECK: %[[ROW:.*]] = arith.addi %[[FIRST]], %[[STEP]] : i32
// CHECK: %[[NSI:.*]] = arith.index_cast %[[NS]] : i32 to index
// CHECK: %[[LANEI:.*]] = arith.index_cast %[[LANE]] : i32 to index
// CHECK: %[[LANEMAX:.*]] = scf.for %{{.*}} = %[[LANEI]] to %[[NSI]] step %c32{{.*}} iter_args(%{{.*}} = %cst{{.*}}) -> (f32)
// CHECK: arith.maximumf
// CHECK: %[[SH1:.*]], %{{.*}} = gpu.shuffle  xor %[[LANEMAX]], %c1_i32{{.*}}, %c32_i32{{.*}} : f32
// CHECK: %[[M1:.*]] = arith.maximumf %[[LANEMAX]], %[[SH1]] : f32
// CHECK-COUNT-4: gpu.shuffle  xor
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[NSI]] step %c8{{.*}} {{.*}} -> (f32, f32, f32, f32, f32)
// CHECK: arith.cmpf oeq, %{{.*}}, %cst
// CHECK: math.exp2
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// CHECK-COUNT-7: arith.cmpi ult, %{{.*}}, %[[NSI]] : index
// CHECK: scf.yield
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

// With the mods: both kernels take the sinks (the split kernel every
// capture, the combine the sinks alone).
// MODS-LABEL: gpu.func @decode_mods(
// MODS-SAME: %[[SQ:arg7]]: i32, %{{[^:]*}}: i32, %{{[^:]*}}: f32, %[[G:arg10]]: i32, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %{{[^:]*}}: memref<?xf32>)
// MODS-SAME: captures = [{dtype = "f32", rank = 1 : i64, role = "sinks", shape = array<i64: -1>}]
// MODS-SAME: {capture = 0 : i64, kind = "memref", rank = 1 : i64}], pass = "decode", role = "split"
// The window hides the keys more than 200 behind the step's first query
// (at the cache's position seq_k - seq_q) from every row: the splits share
// the key tiles from that key's.
// MODS: %[[SEQK:.*]] = arith.minsi %{{.*}} : i32
// MODS: %[[TILES:.*]] = arith.ceildivui %[[SEQK]], %c128_i32 : i32
// MODS: arith.subi %[[SEQK]], %[[SQ]] : i32
// MODS: %[[EXCESS:.*]] = arith.subi %[[SEQK]], %[[SQ]] : i32
// MODS: %[[FIRSTQ:.*]] = arith.maxsi %[[EXCESS]], %c0_i32 : i32
// MODS: %[[BEHIND:.*]] = arith.subi %[[FIRSTQ]], %c200_i32 : i32
// MODS: %[[FIRSTKEY:.*]] = arith.maxsi %[[BEHIND]], %c0_i32 : i32
// MODS: %[[FT:.*]] = arith.divui %[[FIRSTKEY]], %c128_i32 : i32
// MODS: %[[FIRSTTILE:.*]] = arith.minui %[[FT]], %[[TILES]] : i32
// MODS: %[[LEFT:.*]] = arith.subi %[[TILES]], %[[FIRSTTILE]] : i32
// MODS: %[[SHARE:.*]] = arith.ceildivui %[[LEFT]], %{{.*}} : i32
// MODS: %[[OWN:.*]] = arith.muli %{{.*}}, %[[SHARE]] : i32
// MODS: %[[KLO:.*]] = arith.addi %[[FIRSTTILE]], %[[OWN]] : i32
// MODS: arith.minui %[[KLO]], %[[TILES]] : i32
// The mods see each row at its query's position in the cache and of its
// own head: the group's r / seq_q-th of the K/V head's, clamped to the
// group for the rows past it.
// MODS: %[[POS0:.*]] = arith.addi %{{.*}}, %[[FIRSTQ]] : i32
// MODS-NEXT: %[[POS1:.*]] = arith.addi %{{.*}}, %[[FIRSTQ]] : i32
// MODS-NEXT: %[[MODSQ:.*]] = arith.addi %[[SQ]], %[[FIRSTQ]] : i32
// MODS-NEXT: %[[POS:.*]] = flash.wg.fragment_from_values %[[POS0]], %[[POS1]]
// MODS-NEXT: arith.index_cast
// MODS-NEXT: %[[FIRSTHEAD:.*]] = arith.muli %{{.*}}, %[[G]] : i32
// MODS-NEXT: %[[LASTIN:.*]] = arith.subi %[[G]], %c1_i32 : i32
// MODS-NEXT: %[[G0:.*]] = arith.divui %{{.*}}, %[[SQ]] : i32
// MODS-NEXT: %[[IN0:.*]] = arith.minui %[[G0]], %[[LASTIN]] : i32
// MODS-NEXT: %[[H0:.*]] = arith.addi %[[FIRSTHEAD]], %[[IN0]] : i32
// MODS-NEXT: %[[G1:.*]] = arith.divui %{{.*}}, %[[SQ]] : i32
// MODS-NEXT: %[[IN1:.*]] = arith.minui %[[G1]], %[[LASTIN]] : i32
// MODS-NEXT: %[[H1:.*]] = arith.addi %[[FIRSTHEAD]], %[[IN1]] : i32
// MODS-NEXT: %[[HEADS:.*]] = flash.wg.fragment_from_values %[[H0]], %[[H1]]
// MODS: flash.wg.mod_scores %{{.*}}, %[[POS]], %{{.*}}, %[[MODSQ]], %[[SEQK]], %{{.*}} whole %{{.*}} heads %[[HEADS]]
// MODS: math.tanh
// The combine: the row's head's sink (clamped into the sinks) starts the
// splits' max and weighs in the sum as a split with no value.
// MODS-LABEL: gpu.func @decode_mods_combine(
// MODS-SAME: %[[SINKS:[^:]*]]: memref<?xf32>)
// MODS-SAME: {capture = 0 : i64, kind = "memref", rank = 1 : i64}], pass = "decode", programmatic = true, role = "combine"
// MODS: %[[LAST:.*]] = arith.subi %{{.*}}, %c1{{.*}} : index
// MODS: %[[AT:.*]] = arith.minsi %{{.*}}, %[[LAST]] : index
// MODS: %[[SINK:.*]] = memref.load %[[SINKS]][%[[AT]]] : memref<?xf32>
// MODS: scf.for %{{.*}} iter_args(%{{.*}} = %[[SINK]]) -> (f32)
// MODS-COUNT-4: gpu.shuffle  xor
// MODS: %[[SHUF:.*]], %{{.*}} = gpu.shuffle  xor
// MODS: %[[M:.*]] = arith.maximumf %{{.*}}, %[[SHUF]] : f32
// MODS: %[[D:.*]] = arith.subf %[[SINK]], %[[M]] : f32
// MODS: %[[E:.*]] = math.exp2
// MODS: %[[W:.*]] = arith.select %{{.*}}, %{{.*}}, %[[E]] : f32
// MODS: scf.for %{{.*}} iter_args({{.*}}, %{{.*}} = %[[W]]) -> (f32, f32, f32, f32, f32)

// Lowered: the mods inlined register by register (one tanh.approx each).
// MODS-LOWERED-LABEL: gpu.func @decode_mods(
// MODS-LOWERED-NOT: flash.wg.
// MODS-LOWERED: tanh.approx.f32
// MODS-LOWERED-NOT: flash.wg.
// MODS-LOWERED-LABEL: gpu.func @decode_mods_combine(

// Pages of 16 keys under key tiles of 128: K and V's tensor maps copy a
// page's 16 rows a box, and the producer gathers a tile's 8 pages, each
// from its own table entry (clamped into the table's columns, then into
// the cache), K and V alike.
// SMALL-LABEL: gpu.func @decode_small_pages(
// SMALL-SAME: %{{[^:]*}}: !llvm.ptr, %{{[^:]*}}: !llvm.ptr, %{{[^:]*}}: !llvm.ptr, %{{[^:]*}}: !llvm.ptr<1>, %{{[^:]*}}: !llvm.ptr<1>, %[[TABLE:[^:]*]]: !llvm.ptr<1>, %{{[^:]*}}: !llvm.ptr<1>, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %{{[^:]*}}: f32, %{{[^:]*}}: i32, %{{[^:]*}}: i32, %[[PAGES:[^:]*]]: i32, %[[COLS:[^:]*]]: i32)
// SMALL-SAME: page_size = 16 : i64
// SMALL-SAME: {box = array<i64: 16, 64>, kind = "tma", rank = 4 : i64, swizzle = 128 : i64, tensor = "k"}, {box = array<i64: 16, 64>, kind = "tma", rank = 4 : i64, swizzle = 128 : i64, tensor = "v"}
// SMALL: scf.for %{{.*}} = %c0 to
// SMALL: %[[KEY:.*]] = arith.muli %{{.*}}, %c128 : index
// SMALL: %[[SLOT:.*]] = arith.divui %[[KEY]], %c16 : index
// SMALL: %[[LASTCOL:.*]] = arith.subi %[[COLS]], %c1_i32 : i32
// SMALL: %[[LASTSLOT:.*]] = arith.index_cast %[[LASTCOL]] : i32 to index
// SMALL: llvm.getelementptr %[[TABLE]]
// SMALL: %[[P0:.*]] = arith.index_cast %{{.*}} : i32 to index
// SMALL: %[[S1:.*]] = arith.addi %[[SLOT]], %c1 : index
// SMALL: arith.minui %[[S1]], %[[LASTSLOT]] : index
// SMALL: llvm.getelementptr %[[TABLE]]
// SMALL: %[[P1:.*]] = arith.index_cast %{{.*}} : i32 to index
// SMALL-COUNT-6: llvm.getelementptr %[[TABLE]]
// SMALL: %[[P7:.*]] = arith.index_cast %{{.*}} : i32 to index
// SMALL-NOT: llvm.load
// SMALL: flash.wg.tma_load_tile %{{.*}}[%c0, %[[HEAD:[^,]*]], %[[P0]]] gather[%c0, %[[HEAD]], %[[P1]], {{.*}}, %c0, %[[HEAD]], %[[P7]]], %{{.*}} columns 128 : !nvgpu.tensormap.descriptor<tensor = memref<1x1x16x64xbf16
// SMALL: flash.wg.tma_load_tile %{{.*}}[%c0, %[[HEAD]], %[[P0]]] gather[%c0, %[[HEAD]], %[[P1]], {{.*}}, %c0, %[[HEAD]], %[[P7]]], %{{.*}} columns 128 : !nvgpu.tensormap.descriptor<tensor = memref<1x1x16x64xbf16

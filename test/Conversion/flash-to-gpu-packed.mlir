// Packed sequences (cu_seqlens) on the GPU: a packed grid, each block's
// sequence, rows and lengths from flash.wg.packed_tile, the tile's bounds
// and mask on its sequence's lengths, its TMA loads at the sequence's first
// rows of the [1, H, T, D] maps, O by TMA where a consumer's 64 rows lie
// inside the sequence and else (and LSE) by rows under the sequence's
// bound with O's strides.
// The shipped kernels store the inner slabs by TMA; tma_store_o = false
// stores all of O by rows.
// RUN: flash-opt %kernels/attention_varlen_causal.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s
// RUN: flash-opt %kernels/attention_varlen.mlir -flash-tile="persistent=1" -flash-fuse -flash-gpu-schedule | FileCheck %s --check-prefix=SCHEDULE
// RUN: flash-opt %kernels/attention_varlen.mlir -flash-tile="tma-store-o=0" -flash-fuse -flash-gpu-schedule | FileCheck %s --check-prefix=ROWS-SCHEDULE
// RUN: flash-opt %kernels/attention_varlen.mlir -flash-tile="tma-store-o=0" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --check-prefix=ROWS --implicit-check-not=nvgpu.tma.async.store
// RUN: flash-opt %kernels/attention_varlen.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=LOWERED

// The schedule: one block per tile, whatever the config asks.
// SCHEDULE: flash.schedule = #flash.schedule<{{.*}}persistent = false, tma_store_o = true, dynamic_schedule = false{{.*}}grid = packed{{.*}}prefetch_next_block = false, probe_stamps = false>
// ROWS-SCHEDULE: flash.schedule = #flash.schedule<{{.*}}persistent = false, tma_store_o = false, dynamic_schedule = false{{.*}}grid = packed

// CHECK-LABEL: gpu.func @attention_varlen_causal
// CHECK-SAME: (%[[TQ:[^:]*]]: !llvm.ptr, %{{[^:]*}}: !llvm.ptr, %{{[^:]*}}: !llvm.ptr, %[[TO:[^:]*]]: !llvm.ptr, %[[LSE:[^:]*]]: !llvm.ptr<1>, %[[ROWSQ:[^:]*]]: i32, %[[ROWSK:[^:]*]]: i32, %{{[^:]*}}: f32, %{{[^:]*}}: i32, %[[HEADS:[^:]*]]: i32, %[[CUQ:[^:]*]]: !llvm.ptr<1>, %[[CUK:[^:]*]]: !llvm.ptr<1>, %[[O:[^:]*]]: !llvm.ptr<1>, %[[SH:[^:]*]]: i64, %[[SN:[^:]*]]: i64)
// CHECK-SAME: grid = {block_m = 128 : i64, kind = "packed"}
// CHECK-SAME: {box = array<i64: 64, 64>, kind = "tma", rank = 4 : i64, swizzle = 128 : i64, tensor = "o"}, {kind = "ptr", tensor = "lse"}
// CHECK-SAME: {kind = "i32", value = "heads"}, {kind = "ptr", tensor = "cu_seqlens_q"}, {kind = "ptr", tensor = "cu_seqlens_k"}, {kind = "ptr", tensor = "o"}, {kind = "i64", value = "stride_o_h"}, {kind = "i64", value = "stride_o_n"}
// CHECK: %[[QB:[^,]*]], %[[HEAD:[^,]*]], %[[QBS:[^,]*]], %[[Q0:[^,]*]], %[[K0:[^,]*]], %[[LQ:[^,]*]], %[[LK:[^ ]*]] = flash.wg.packed_tile %[[CUQ]], %[[CUK]], %[[HEADS]], %[[ROWSQ]], %[[ROWSK]], %{{.*}} block_m = 128 long_first_limit = 32
// CHECK: %[[Q0I:.*]] = arith.index_cast %[[Q0]] : i32 to index
// CHECK: %[[K0I:.*]] = arith.index_cast %[[K0]] : i32 to index
// CHECK: %[[IN:.*]] = arith.cmpi sge, %[[QB]], %c0_i32 : i32
// CHECK: scf.if %[[IN]] {
// CHECK: %[[M0:[^,]*]], %{{.*}} = flash.wg.tile_bounds %[[QB]] of %[[QBS]], %[[LQ]], %[[LK]] block_m = 128 block_n = 128 causal align_to_end
// CHECK: flash.wg.warp_specialize
// Q at the sequence's first row plus the block's, in batch 0 of the map.
// CHECK: %[[QROW:.*]] = arith.addi %[[Q0I]], %{{.*}} : index
// CHECK: flash.wg.tma_load_tile %{{.*}}[%[[QROW]], %[[HEAD]], %c0]
// K and V at the sequence's first key row plus the key tile's.
// CHECK: %[[KROW:.*]] = arith.addi %[[K0I]], %{{.*}} : index
// CHECK: flash.wg.tma_load_tile %{{.*}}[%[[KROW]], %{{.*}}, %c0]
// CHECK: flash.wg.mask_keys %{{.*}}, %[[LQ]], %[[LK]] causal
// A consumer's 64 rows inside the sequence: the TMA store at its packed row.
// CHECK: %[[FIRST:.*]] = arith.addi %[[M0]], %{{.*}} : i32
// CHECK: %[[FROM:.*]] = arith.cmpi sge, %[[FIRST]], %c0_i32 : i32
// CHECK: %[[END:.*]] = arith.addi %[[FIRST]], %c64_i32 : i32
// CHECK: %[[TO:.*]] = arith.cmpi sle, %[[END]], %[[LQ]] : i32
// CHECK: %[[INSIDE:.*]] = arith.andi %[[FROM]], %[[TO]] : i1
// CHECK: scf.if %[[INSIDE]] {
// CHECK:   flash.wg.store_shared
// CHECK:   %[[PROW:.*]] = arith.addi %[[Q0I]], %{{.*}} : index
// CHECK:   nvgpu.tma.async.store %{{.*}} to %{{.*}}[%{{.*}}, %[[PROW]], %[[HEAD]], %c0]
// CHECK: } else {
// CHECK:   flash.wg.store_global %{{.*}}, %[[O]][%{{.*}}], %[[LQ]] strides(%[[SH]], %[[SN]]) row_base %{{.*}} : !flash.fragment<64x128xbf16, #flash.wgmma_operand_a>
// CHECK: }
// CHECK: %[[T:.*]] = arith.extui %[[ROWSQ]] : i32 to i64
// CHECK: flash.wg.store_global %{{.*}}, %[[LSE]][%{{.*}}], %[[LQ]] strides(%[[T]], %c1_i64) row_base %{{.*}} : !flash.fragment<64xf32, #flash.wgmma_rows>
// A block past its sequence's query blocks skips the roles.
// CHECK: }
// CHECK-NEXT: }
// CHECK-NEXT: gpu.return

// The shipped kernel: O by rows alone, at the pointer in O's place.
// ROWS-LABEL: gpu.func @attention_varlen
// ROWS-SAME: %{{[^:]*}}: !llvm.ptr, %[[O:[^:]*]]: !llvm.ptr<1>, %[[LSE:[^:]*]]: !llvm.ptr<1>,
// ROWS-SAME: {kind = "ptr", tensor = "o"}, {kind = "ptr", tensor = "lse"}
// ROWS: flash.wg.store_global %{{.*}}, %[[O]][%{{.*}}], %{{.*}} strides
// ROWS: flash.wg.store_global %{{.*}}, %[[LSE]][%{{.*}}], %{{.*}} strides

// Lowered to NVVM: the rank loop's barrier, the roles.
// LOWERED: gpu.func @attention_varlen
// LOWERED: gpu.barrier
// LOWERED: nvvm.setmaxregister
// LOWERED-NOT: flash.wg

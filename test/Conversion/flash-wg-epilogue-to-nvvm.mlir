// RUN: flash-opt %s -split-input-file -convert-flash-wg-to-nvvm | FileCheck %s

// The epilogue's stores of fragments. A thread's rows are
// r0 = 16 (t % 128 / 32) + (t % 32) / 4 and r0 + 8; word w of a 16-bit
// fragment holds columns 8 (w / 2) + 2 (lane % 4), +1 of row w % 2.

!o16 = !flash.fragment<64x128xbf16, #flash.wgmma_operand_a>
!rows = !flash.fragment<64xf32, #flash.wgmma_rows>

// store_global of O: each row behind its unsigned bound check, at row
// head * num_rows + first_row + r of a row-major [*, 128] bf16 tensor, 16
// words a row at columns 2 quad + 8 g.
// CHECK-LABEL: func.func @store_global_o
// CHECK-SAME: (%[[W:.*]]: i32, %[[OUT:.*]]: !llvm.ptr<1>, %[[HEAD:.*]]: i32, %[[FIRST:.*]]: i32, %[[N:.*]]: i32)
// CHECK: %[[TID:.*]] = gpu.thread_id  x
// CHECK: %[[T:.*]] = arith.remui %{{.*}}, %c128_i32 : i32
// CHECK: %[[LANE:.*]] = arith.remui %[[T]], %c32_i32 : i32
// CHECK: %[[WARP:.*]] = arith.divui %[[T]], %c32_i32 : i32
// CHECK: %[[QUAD:.*]] = arith.remui %[[LANE]], %c4_i32 : i32
// CHECK: %[[LANEROW:.*]] = arith.divui %[[LANE]], %c4_i32 : i32
// CHECK: %[[WROWS:.*]] = arith.muli %[[WARP]], %c16_i32 : i32
// CHECK: %[[RIN:.*]] = arith.addi %[[WROWS]], %[[LANEROW]] : i32
// CHECK: %[[ROW0:.*]] = arith.addi %[[FIRST]], %[[RIN]] : i32
// CHECK: %[[HEADROW:.*]] = arith.muli %[[HEAD]], %[[N]] : i32
// CHECK: %[[IN0:.*]] = arith.cmpi ult, %[[ROW0]], %[[N]] : i32
// CHECK: scf.if %[[IN0]] {
// CHECK: %[[G:.*]] = arith.addi %[[HEADROW]], %[[ROW0]] : i32
// CHECK: %[[G64:.*]] = arith.extui %[[G]] : i32 to i64
// CHECK: %[[START:.*]] = arith.muli %[[G64]], %c128_i64 : i64
// CHECK: %[[COL:.*]] = arith.muli %[[QUAD]], %c2_i32 : i32
// CHECK: %[[COL64:.*]] = arith.extui %[[COL]] : i32 to i64
// CHECK: %[[RC:.*]] = arith.addi %[[START]], %[[COL64]] : i64
// CHECK: %[[I0:.*]] = arith.addi %[[RC]], %c0_i64 : i64
// CHECK: %[[P0:.*]] = llvm.getelementptr %[[OUT]][%[[I0]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
// CHECK: llvm.store %[[W]], %[[P0]] {alignment = 4 : i64} : i32, !llvm.ptr<1>
// CHECK: %[[I1:.*]] = arith.addi %[[RC]], %c8_i64 : i64
// CHECK-COUNT-15: llvm.store
// CHECK-NOT: llvm.store
// CHECK: %[[ROW1:.*]] = arith.addi %[[ROW0]], %c8_i32 : i32
// CHECK: %[[IN1:.*]] = arith.cmpi ult, %[[ROW1]], %[[N]] : i32
// CHECK: scf.if %[[IN1]] {
// CHECK-COUNT-16: llvm.store
// CHECK-NOT: llvm.store
// CHECK-NOT: flash.wg
func.func @store_global_o(%w: i32, %out: !llvm.ptr<1>, %head: i32, %first: i32, %n: i32) {
  %o = flash.wg.fragment_from_values %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w : !o16
  flash.wg.store_global %o, %out[%head, %first], %n : !o16, !llvm.ptr<1>
  return
}

// -----

!rows = !flash.fragment<64xf32, #flash.wgmma_rows>

// store_global of a row vector: one f32 per row, by quad 0 of the row.
// CHECK-LABEL: func.func @store_global_rows
// CHECK-SAME: (%[[L0:.*]]: f32, %[[L1:.*]]: f32, %[[LSE:.*]]: !llvm.ptr<1>, %[[HEAD:.*]]: i32, %[[FIRST:.*]]: i32, %[[N:.*]]: i32)
// CHECK: %[[QUAD:.*]] = arith.remui %{{.*}}, %c4_i32 : i32
// CHECK: %[[ROW0:.*]] = arith.addi %[[FIRST]], %{{.*}} : i32
// CHECK: %[[HEADROW:.*]] = arith.muli %[[HEAD]], %[[N]] : i32
// CHECK: %[[IN0:.*]] = arith.cmpi ult, %[[ROW0]], %[[N]] : i32
// CHECK: %[[Q0:.*]] = arith.cmpi eq, %[[QUAD]], %c0_i32 : i32
// CHECK: %[[ST0:.*]] = arith.andi %[[IN0]], %[[Q0]] : i1
// CHECK: scf.if %[[ST0]] {
// CHECK: %[[G:.*]] = arith.addi %[[HEADROW]], %[[ROW0]] : i32
// CHECK: %[[G64:.*]] = arith.extui %[[G]] : i32 to i64
// CHECK: %[[P:.*]] = llvm.getelementptr %[[LSE]][%[[G64]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK: llvm.store %[[L0]], %[[P]] {alignment = 4 : i64} : f32, !llvm.ptr<1>
// CHECK: }
// CHECK: arith.addi %[[ROW0]], %c8_i32 : i32
// CHECK: scf.if
// CHECK: llvm.store %[[L1]], %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr<1>
func.func @store_global_rows(%l0: f32, %l1: f32, %lse: !llvm.ptr<1>, %head: i32, %first: i32, %n: i32) {
  %r = flash.wg.fragment_from_values %l0, %l1 : !rows
  flash.wg.store_global %r, %lse[%head, %first], %n : !rows, !llvm.ptr<1>
  return
}

// -----

!o16 = !flash.fragment<64x128xbf16, #flash.wgmma_operand_a>

// store_global of a packed sequence's O rows into a strided [T, H, D]
// tensor: the bound is the sequence's length, and row r goes to element
// head * head_stride + (row_base + first_row + r) * row_stride.
// CHECK-LABEL: func.func @store_global_o_strided
// CHECK-SAME: (%[[W:.*]]: i32, %[[OUT:.*]]: !llvm.ptr<1>, %[[HEAD:.*]]: i32, %[[FIRST:.*]]: i32, %[[N:.*]]: i32, %[[SH:.*]]: i64, %[[SN:.*]]: i64, %[[BASE:.*]]: i32)
// CHECK: %[[QUAD:.*]] = arith.remui %{{.*}}, %c4_i32 : i32
// CHECK: %[[ROW0:.*]] = arith.addi %[[FIRST]], %{{.*}} : i32
// CHECK: %[[HEAD64:.*]] = arith.extui %[[HEAD]] : i32 to i64
// CHECK: %[[HSTART:.*]] = arith.muli %[[HEAD64]], %[[SH]] : i64
// CHECK: %[[IN0:.*]] = arith.cmpi ult, %[[ROW0]], %[[N]] : i32
// CHECK: scf.if %[[IN0]] {
// CHECK: %[[PROW:.*]] = arith.addi %[[ROW0]], %[[BASE]] : i32
// CHECK: %[[PROW64:.*]] = arith.extui %[[PROW]] : i32 to i64
// CHECK: %[[ROWOFF:.*]] = arith.muli %[[PROW64]], %[[SN]] : i64
// CHECK: %[[START:.*]] = arith.addi %[[HSTART]], %[[ROWOFF]] : i64
// CHECK: %[[COL:.*]] = arith.muli %[[QUAD]], %c2_i32 : i32
// CHECK: %[[COL64:.*]] = arith.extui %[[COL]] : i32 to i64
// CHECK: %[[RC:.*]] = arith.addi %[[START]], %[[COL64]] : i64
// CHECK: %[[I0:.*]] = arith.addi %[[RC]], %c0_i64 : i64
// CHECK: llvm.getelementptr %[[OUT]][%[[I0]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, bf16
// CHECK-COUNT-16: llvm.store
// CHECK-NOT: llvm.store
// CHECK: scf.if
// CHECK-COUNT-16: llvm.store
// CHECK-NOT: arith.muli %[[HEAD]], %[[N]]
func.func @store_global_o_strided(%w: i32, %out: !llvm.ptr<1>, %head: i32, %first: i32, %n: i32, %sh: i64, %sn: i64, %base: i32) {
  %o = flash.wg.fragment_from_values %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w : !o16
  flash.wg.store_global %o, %out[%head, %first], %n strides(%sh, %sn) row_base %base : !o16, !llvm.ptr<1>
  return
}

// -----

!rows = !flash.fragment<64xf32, #flash.wgmma_rows>

// A packed sequence's LSE rows: [H, T] f32, so row r of head h is element
// h * T + row_base + first_row + r.
// CHECK-LABEL: func.func @store_global_rows_strided
// CHECK-SAME: (%[[L0:.*]]: f32, %[[L1:.*]]: f32, %[[LSE:.*]]: !llvm.ptr<1>, %[[HEAD:.*]]: i32, %[[FIRST:.*]]: i32, %[[N:.*]]: i32, %[[T:.*]]: i64, %[[BASE:.*]]: i32)
// CHECK: %[[HSTART:.*]] = arith.muli %{{.*}}, %[[T]] : i64
// CHECK: scf.if
// CHECK: %[[PROW:.*]] = arith.addi %{{.*}}, %[[BASE]] : i32
// CHECK: %[[PROW64:.*]] = arith.extui %[[PROW]] : i32 to i64
// CHECK: %[[ROWOFF:.*]] = arith.muli %[[PROW64]], %c1_i64 : i64
// CHECK: %[[I:.*]] = arith.addi %[[HSTART]], %[[ROWOFF]] : i64
// CHECK: %[[P:.*]] = llvm.getelementptr %[[LSE]][%[[I]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK: llvm.store %[[L0]], %[[P]] {alignment = 4 : i64} : f32, !llvm.ptr<1>
func.func @store_global_rows_strided(%l0: f32, %l1: f32, %lse: !llvm.ptr<1>, %head: i32, %first: i32, %n: i32, %t: i64, %base: i32) {
  %r = flash.wg.fragment_from_values %l0, %l1 : !rows
  %c1 = arith.constant 1 : i64
  flash.wg.store_global %r, %lse[%head, %first], %n strides(%t, %c1) row_base %base : !rows, !llvm.ptr<1>
  return
}

// -----

!o16 = !flash.fragment<64x128xbf16, #flash.wgmma_operand_a>

// store_shared: an i32 view at the offset covering both boxes (16384 + 64
// rows x 128 bytes = 6144 words); in row r word w goes to
// 32 r + quad + 4 ((r % 8) ^ (w / 2 % 8)) + (w / 16) 16384 / 4.
// CHECK-LABEL: func.func @store_shared
// CHECK-SAME: (%[[W:.*]]: i32, %[[SMEM:.*]]: memref<?xi8, #gpu.address_space<workgroup>>, %[[OFF:.*]]: index)
// CHECK: %[[VIEW:.*]] = memref.view %[[SMEM]][%[[OFF]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<6144xi32, #gpu.address_space<workgroup>>
// CHECK: %[[QUAD:.*]] = arith.remui %{{.*}}, %c4_i32 : i32
// CHECK: %[[LANEROW:.*]] = arith.divui %{{.*}}, %c4_i32 : i32
// CHECK: %[[RIN:.*]] = arith.addi %{{.*}}, %[[LANEROW]] : i32
// CHECK: %[[X0:.*]] = arith.xori %[[LANEROW]], %c0_i32 : i32
// CHECK: %[[C0:.*]] = arith.muli %[[X0]], %c4_i32 : i32
// CHECK: %[[X1:.*]] = arith.xori %[[LANEROW]], %c1_i32 : i32
// CHECK: %[[C1:.*]] = arith.muli %[[X1]], %c4_i32 : i32
// CHECK: %[[R0:.*]] = arith.addi %[[RIN]], %c0_i32 : i32
// CHECK: %[[RW:.*]] = arith.muli %[[R0]], %c32_i32 : i32
// CHECK: %[[RS:.*]] = arith.addi %[[RW]], %[[QUAD]] : i32
// CHECK: %[[A0:.*]] = arith.addi %[[RS]], %c0_i32 : i32
// CHECK: %[[A0S:.*]] = arith.addi %[[A0]], %[[C0]] : i32
// CHECK: %[[I0:.*]] = arith.index_cast %[[A0S]] : i32 to index
// CHECK: memref.store %[[W]], %[[VIEW]][%[[I0]]]
// CHECK: %[[A1:.*]] = arith.addi %[[RS]], %c0_i32 : i32
// CHECK: arith.addi %[[A1]], %[[C1]] : i32
// Column group 8 (columns 64-71) is in the second box, 4096 words further.
// CHECK-COUNT-7: memref.store
// CHECK: %[[A8:.*]] = arith.addi %[[RS]], %c4096_i32 : i32
// CHECK: arith.addi %[[A8]], %[[C0]] : i32
// CHECK-COUNT-24: memref.store
// CHECK-NOT: memref.store
func.func @store_shared(%w: i32, %smem: memref<?xi8, #gpu.address_space<workgroup>>, %off: index) {
  %o = flash.wg.fragment_from_values %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w, %w : !o16
  flash.wg.store_shared %o, %smem[%off] {box_stride = 16384} : !o16, memref<?xi8, #gpu.address_space<workgroup>>
  return
}

// -----

!acc = !flash.fragment<64x64xf32, #flash.wgmma_accumulator>

// store_global of an f32 accumulator (a decoding split's O): the struct's
// registers each its own word, register i at column 8 (i / 4) + i % 2 +
// 2 quad of row half (i / 2) % 2 (16 words a row here), never the struct.
// CHECK-LABEL: func.func @store_global_accumulator
// CHECK-SAME: (%[[X:.*]]: f32, %[[OUT:.*]]: !llvm.ptr<1>
// CHECK: %[[ACC:.*]] = llvm.insertvalue %[[X]], %{{.*}}[31]
// CHECK: %[[R0:.*]] = llvm.extractvalue %[[ACC]][0]
// CHECK: %[[R1:.*]] = llvm.extractvalue %[[ACC]][1]
// CHECK: %[[R2:.*]] = llvm.extractvalue %[[ACC]][2]
// CHECK: scf.if
// CHECK: %[[RC:.*]] = arith.addi %{{.*}}, %{{.*}} : i64
// CHECK: %[[I0:.*]] = arith.addi %[[RC]], %c0_i64 : i64
// CHECK: %[[P0:.*]] = llvm.getelementptr %[[OUT]][%[[I0]]] : (!llvm.ptr<1>, i64) -> !llvm.ptr<1>, f32
// CHECK: llvm.store %[[R0]], %[[P0]] {alignment = 4 : i64} : f32, !llvm.ptr<1>
// CHECK: %[[I1:.*]] = arith.addi %[[RC]], %c1_i64 : i64
// CHECK: %[[P1:.*]] = llvm.getelementptr %[[OUT]][%[[I1]]]
// CHECK: llvm.store %[[R1]], %[[P1]]
// CHECK: %[[I2:.*]] = arith.addi %[[RC]], %c8_i64 : i64
// CHECK-COUNT-14: llvm.store %{{.*}} : f32, !llvm.ptr<1>
// CHECK-NOT: llvm.store
// CHECK: scf.if
// CHECK: llvm.store %[[R2]], %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr<1>
// CHECK-COUNT-15: llvm.store %{{.*}} : f32, !llvm.ptr<1>
// CHECK-NOT: llvm.store
// CHECK-NOT: flash.wg
func.func @store_global_accumulator(%x: f32, %out: !llvm.ptr<1>, %head: i32, %first: i32, %n: i32) {
  %o = flash.wg.fragment_from_values %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x, %x : !acc
  flash.wg.store_global %o, %out[%head, %first], %n : !acc, !llvm.ptr<1>
  return
}

// RUN: flash-opt %s -split-input-file -convert-flash-wg-to-nvvm | FileCheck %s

// The ring ops and what they become. A ring slot is its index and phase,
// computed once by flash.wg.ring_slot; the waits and the release add the
// ring's barrier base to the index.

!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>

// A consumer's key tile in a 3-stage ring: slot pos % 3, phase
// (pos / 3) & 1; wait on full[slot] (barriers 0..2) with that phase,
// release empty[slot] (barriers 3..5).
// CHECK-LABEL: func.func @consumer
// CHECK-SAME: (%[[BARS:.*]]: !nvgpu.mbarrier.group<{{.*}}>, %[[POS:.*]]: index)
// The constants go to the function's entry block, where the kernel keeps
// them; 3 is both the stage count and the empty barriers' base.
// CHECK-DAG: %[[THREE:.*]] = arith.constant 3 : index
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[TICKS:.*]] = arith.constant 10000000 : index
// CHECK: %[[SLOT:.*]] = arith.remui %[[POS]], %[[THREE]] : index
// CHECK: %[[ROUND:.*]] = arith.divui %[[POS]], %[[THREE]] : index
// CHECK: %[[ROUND32:.*]] = arith.index_cast %[[ROUND]] : index to i32
// CHECK: %[[BIT:.*]] = arith.andi %[[ROUND32]], %[[ONE]] : i32
// CHECK: %[[PHASE:.*]] = arith.trunci %[[BIT]] : i32 to i1
// CHECK: %[[FULL:.*]] = arith.addi %[[SLOT]], %[[ZERO]] : index
// CHECK: nvgpu.mbarrier.try_wait.parity %[[BARS]][%[[FULL]]], %[[PHASE]], %[[TICKS]]
// CHECK: %[[EMPTY:.*]] = arith.addi %[[SLOT]], %[[THREE]] : index
// CHECK: nvgpu.mbarrier.arrive %[[BARS]][%[[EMPTY]]]
// CHECK: return %[[SLOT]]
// CHECK-NOT: flash.wg
func.func @consumer(%bars: !bars, %pos: index) -> index {
  %slot = flash.wg.ring_slot %pos : index -> !flash.ring_slot<stages = 3>
  flash.wg.ring_wait_full %slot, %bars[0] : !flash.ring_slot<stages = 3>, !bars
  flash.wg.ring_release %slot, %bars[3] : !flash.ring_slot<stages = 3>, !bars
  %index = flash.wg.ring_slot_index %slot : !flash.ring_slot<stages = 3>
  return %index : index
}

// -----

!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 7>

// The producer before refilling position pos of a 2-stage ring whose empty
// barriers are 4 and 5: nothing in the first round, else a wait for the
// previous round's phase ((pos / 2) - 1) & 1 on empty[pos % 2].
// CHECK-LABEL: func.func @producer
// CHECK-SAME: (%[[BARS:.*]]: !nvgpu.mbarrier.group<{{.*}}>, %[[POS:.*]]: index)
// CHECK-DAG: %[[STAGES:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[ONE32:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[BASE:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[TICKS:.*]] = arith.constant 10000000 : index
// CHECK: %[[REUSE:.*]] = arith.cmpi uge, %[[POS]], %[[STAGES]] : index
// CHECK: scf.if %[[REUSE]] {
// CHECK:   %[[SLOT:.*]] = arith.remui %[[POS]], %[[STAGES]] : index
// CHECK:   %[[ROUND:.*]] = arith.divui %[[POS]], %[[STAGES]] : index
// CHECK:   %[[PREV:.*]] = arith.subi %[[ROUND]], %[[ONE]] : index
// CHECK:   %[[PREV32:.*]] = arith.index_cast %[[PREV]] : index to i32
// CHECK:   %[[BIT:.*]] = arith.andi %[[PREV32]], %[[ONE32]] : i32
// CHECK:   %[[PARITY:.*]] = arith.trunci %[[BIT]] : i32 to i1
// CHECK:   %[[EMPTY:.*]] = arith.addi %[[SLOT]], %[[BASE]] : index
// CHECK:   nvgpu.mbarrier.try_wait.parity %[[BARS]][%[[EMPTY]]], %[[PARITY]], %[[TICKS]]
// CHECK: }
// CHECK-NOT: flash.wg
func.func @producer(%bars: !bars, %pos: index) {
  flash.wg.ring_wait_empty %pos, %bars[4] : !flash.ring_slot<stages = 2>, !bars
  return
}

// -----

!bars = !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 10>

// The Q buffers of a persistent block: tile t of the block is position t
// (i32) of a 2-slot ring, slot t & 1 in phase (t >> 1) & 1. The producer
// waits for the previous phase of the slot's empty barrier (6 + slot): in
// the first round that is the phase before the barrier's first, which
// counts as complete.
// CHECK-LABEL: func.func @q_buffers
// CHECK-SAME: (%[[BARS:.*]]: !nvgpu.mbarrier.group<{{.*}}>, %[[TILE:.*]]: i32)
// The mask (stages - 1), the shift (log2 stages) and the phase bit are
// all 1 here.
// CHECK-DAG: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK-DAG: %[[TRUE:.*]] = arith.constant true
// CHECK-DAG: %[[BASE:.*]] = arith.constant 6 : index
// CHECK-DAG: %[[TICKS:.*]] = arith.constant 10000000 : index
// CHECK: %[[SLOT32:.*]] = arith.andi %[[TILE]], %[[ONE]] : i32
// CHECK: %[[SLOT:.*]] = arith.index_cast %[[SLOT32]] : i32 to index
// CHECK: %[[ROUND:.*]] = arith.shrui %[[TILE]], %[[ONE]] : i32
// CHECK: %[[BIT:.*]] = arith.andi %[[ROUND]], %[[ONE]] : i32
// CHECK: %[[PHASE:.*]] = arith.trunci %[[BIT]] : i32 to i1
// CHECK: %[[PREV:.*]] = arith.xori %[[PHASE]], %[[TRUE]] : i1
// CHECK: %[[EMPTY:.*]] = arith.addi %[[SLOT]], %[[BASE]] : index
// CHECK: nvgpu.mbarrier.try_wait.parity %[[BARS]][%[[EMPTY]]], %[[PREV]], %[[TICKS]]
// CHECK: return %[[SLOT]]
// CHECK-NOT: flash.wg
func.func @q_buffers(%bars: !bars, %tile: i32) -> index {
  %slot = flash.wg.ring_slot %tile : i32 -> !flash.ring_slot<stages = 2>
  flash.wg.ring_wait_released %slot, %bars[6] : !flash.ring_slot<stages = 2>, !bars
  %index = flash.wg.ring_slot_index %slot : !flash.ring_slot<stages = 2>
  return %index : index
}

// -----

// shared_window: the dynamic window, shift = (1024 - address % 1024) % 1024
// to its first aligned byte, and that byte's descriptor field.
// CHECK-LABEL: func.func @window
// CHECK-DAG: %[[ALIGN:.*]] = arith.constant 1024 : index
// CHECK-DAG: %[[MASK:.*]] = arith.constant 262143 : i64
// CHECK-DAG: %[[FOUR:.*]] = arith.constant 4 : i64
// CHECK: %[[W:.*]] = gpu.dynamic_shared_memory : memref<?xi8, #gpu.address_space<workgroup>>
// CHECK: %[[ADDR:.*]] = memref.extract_aligned_pointer_as_index %[[W]]
// CHECK: %[[MIS:.*]] = arith.remui %[[ADDR]], %[[ALIGN]] : index
// CHECK: %[[UP:.*]] = arith.subi %[[ALIGN]], %[[MIS]] : index
// CHECK: %[[SHIFT:.*]] = arith.remui %[[UP]], %[[ALIGN]] : index
// CHECK: %[[BASE:.*]] = arith.addi %[[ADDR]], %[[SHIFT]] : index
// CHECK: %[[B64:.*]] = arith.index_cast %[[BASE]] : index to i64
// CHECK: %[[LOW:.*]] = arith.andi %[[B64]], %[[MASK]] : i64
// CHECK: %[[FIELD:.*]] = arith.shrui %[[LOW]], %[[FOUR]] : i64
// CHECK: return %[[W]], %[[SHIFT]], %[[FIELD]]
func.func @window() -> (memref<?xi8, #gpu.address_space<workgroup>>, index, i64) {
  %window, %shift, %field = flash.wg.shared_window align 1024
      : memref<?xi8, #gpu.address_space<workgroup>>
  return %window, %shift, %field : memref<?xi8, #gpu.address_space<workgroup>>, index, i64
}

// -----

// The block's barriers: the group, thread 0's init of each with its count,
// in index order, then a block barrier before any thread uses one.
// CHECK-LABEL: func.func @barriers
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK: %[[BARS:.*]] = nvgpu.mbarrier.create -> <memorySpace = #gpu.address_space<workgroup>, num_barriers = 3>
// CHECK-NEXT: %[[TID:.*]] = gpu.thread_id x
// CHECK-NEXT: %[[FIRST:.*]] = arith.cmpi eq, %[[TID]], %[[C0]] : index
// CHECK-NEXT: scf.if %[[FIRST]] {
// CHECK-NEXT: nvgpu.mbarrier.init %[[BARS]][%[[C0]]], %[[C1]]
// CHECK-NEXT: nvgpu.mbarrier.init %[[BARS]][%[[C1]]], %[[C1]]
// CHECK-NEXT: nvgpu.mbarrier.init %[[BARS]][%[[C2]]], %[[C256]]
// CHECK-NEXT: }
// CHECK-NEXT: gpu.barrier
// CHECK-NEXT: return %[[BARS]]
func.func @barriers() -> !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 3> {
  %b = flash.wg.init_barriers counts [1, 1, 256] : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 3>
  return %b : !nvgpu.mbarrier.group<memorySpace = #gpu.address_space<workgroup>, num_barriers = 3>
}

// A consumer's key loops are the tile program's own loops, rewritten by
// KeyLoopToWarpgroup.cpp's patterns. The serial schedule: the unmasked loop over
// key tiles [0, nFull), then the masked one over [nFull, ownHi), each
// carrying the running max and row sums (2 registers each) and O (64) as
// registers, its K and V loads become one ring slot, S = Q K^T and
// O += P V are wgmma steps in the consumer's ping-pong turn, and no tile
// op or tile-typed cast is left.
// RUN: flash-opt %kernels/attention_causal.mlir -flash-tile -flash-fuse -flash-gpu-schedule="overlap=0" -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --implicit-check-not=flash.key_

// Lowering the parts afterwards gives the kernel -convert-flash-to-gpu
// gives in one go.
// RUN: flash-opt %kernels/attention_causal.mlir -flash-tile -flash-fuse -flash-gpu-schedule="overlap=0" -convert-flash-to-gpu="lower-warpgroup-ops=0" \
// RUN:   | flash-opt -convert-flash-wg-to-nvvm > %t.parts
// RUN: flash-opt %kernels/attention_causal.mlir -flash-tile -flash-fuse -flash-gpu-schedule="overlap=0" -convert-flash-to-gpu > %t.whole
// RUN: diff %t.parts %t.whole

// The overlapped schedule: S_0 and its softmax peeled (the program's
// unmasked softmax where tile 0 is full, its masked one otherwise), then
// both loops with S_j and PV_{j-1} in one turn, carrying P_{j-1} (32
// registers) besides m, l and O, and the last PV peeled.
// RUN: flash-opt %kernels/attention_causal.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --check-prefix=OVERLAP

// At D = 256 only the unmasked tiles overlap; the masked ones run through
// the program's masked loop, carrying on from the overlapped loop's state.
// RUN: flash-opt %kernels/attention_d256_causal.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --check-prefix=TAIL

// CHECK-LABEL: gpu.func @attention_causal
// CHECK-NOT: flash.load_tile
// CHECK: } consumer {
// CHECK: %[[STATE:.*]]:68 = scf.for %[[J:.*]] = %c0 to %[[NFULL:.*]] step %c1 iter_args(%[[M0:[^ ]*]] = %[[NEGINF:[^,]*]], %{{[^ ]*}} = %[[NEGINF]], %{{[^ ]*}} = %[[ZERO:[^,]*]], %{{[^ ]*}} = %[[ZERO]], %{{[^ ]*}} = %[[ZERO]],
// CHECK-NEXT: %[[SLOT:.*]] = flash.wg.ring_slot %[[J]] : index -> !flash.ring_slot<stages = 2>
// CHECK: %[[M:.*]] = flash.wg.fragment_from_values %[[M0]], %{{.*}} : !flash.fragment<64xf32, #flash.wgmma_rows>
// CHECK: flash.wg.pingpong_turn
// CHECK-NEXT: flash.wg.ring_wait_full %[[SLOT]], %{{.*}}[0]
// CHECK: flash.wg.mma
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// The K slot is free once S retired (split release).
// CHECK: flash.wg.ring_release %[[SLOT]], %{{.*}}[6]
// CHECK-NOT: flash.wg.mask_keys
// CHECK: flash.wg.softmax_update %{{.*}}, %[[M]], %{{.*}}, %{{.*}} :
// CHECK: flash.wg.scale_rows
// CHECK: flash.wg.pingpong_turn
// CHECK-NEXT: flash.wg.ring_wait_full %[[SLOT]], %{{.*}}[2]
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// CHECK: flash.wg.ring_release %[[SLOT]], %{{.*}}[4]
// CHECK: scf.yield
// CHECK: scf.for %[[J2:.*]] = %[[NFULL]] to %{{.*}} step %c1 iter_args(%{{.*}} = %[[STATE]]#0,
// CHECK: %[[J32:.*]] = arith.index_cast %[[J2]] : index to i32
// CHECK-NEXT: %[[FIRST:.*]] = arith.muli %[[J32]], %c128_i32 : i32
// CHECK: flash.wg.mask_keys %{{.*}}, %{{.*}}, %[[FIRST]], %{{.*}}, %{{.*}} causal
// CHECK: flash.wg.softmax_update
// CHECK-NOT: unrealized_conversion_cast {{.*}}tensor
// CHECK-NOT: flash.dot
// CHECK: gpu.return

// TAIL-LABEL: gpu.func @attention_d256_causal
// TAIL: } consumer {
// The overlapped loop, its last P V, then the masked tiles serially.
// TAIL-NOT: flash.wg.mask_keys
// TAIL: %[[OVERLAPPED:.*]]:148 = scf.for
// TAIL: %[[LASTPV:.*]]:128 = scf.if
// TAIL: scf.for %{{[^ ]*}} = %{{[^ ]*}} to %{{[^ ]*}} step %c1 iter_args(%{{[^ ]*}} = %[[OVERLAPPED]]#0, %{{[^ ]*}} = %[[OVERLAPPED]]#1, %{{[^ ]*}} = %[[OVERLAPPED]]#2, %{{[^ ]*}} = %[[OVERLAPPED]]#3, %{{[^ ]*}} = %[[LASTPV]]#0,
// TAIL: flash.wg.ring_slot
// TAIL: flash.wg.mask_keys
// TAIL: flash.wg.softmax_update
// TAIL-NOT: unrealized_conversion_cast {{.*}}tensor
// TAIL: gpu.return

// OVERLAP-LABEL: gpu.func @attention_causal
// OVERLAP: } consumer {
// OVERLAP: %[[HAS:.*]] = arith.cmpi sgt, %{{.*}}, %c0_i32 : i32
// OVERLAP-NEXT: %[[TILE0:.*]]:36 = scf.if %[[HAS]]
// OVERLAP: flash.wg.pingpong_turn
// OVERLAP: nvvm.wgmma.wait.group.sync.aligned 0
// OVERLAP: scf.if
// OVERLAP-NOT: flash.wg.mask_keys
// OVERLAP: flash.wg.softmax_update %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} :
// OVERLAP: } else {
// OVERLAP: flash.wg.mask_keys
// OVERLAP: flash.wg.softmax_update
// OVERLAP: %[[FULL:.*]]:100 = scf.for %{{[^ ]*}} = %c1 to %[[SPLIT:[^ ]*]] step %c1 iter_args(%{{[^ ]*}} = %[[TILE0]]#0,
// OVERLAP: flash.wg.pingpong_turn %{{.*}} -> !flash.fragment<64x128xf32, #flash.wgmma_accumulator>, !flash.fragment<64x128xf32, #flash.wgmma_accumulator>
// OVERLAP: nvvm.wgmma.wait.group.sync.aligned 1
// OVERLAP-NOT: flash.wg.mask_keys
// OVERLAP: flash.wg.softmax_update
// OVERLAP-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// OVERLAP: flash.wg.scale_rows
// OVERLAP: scf.for %{{[^ ]*}} = %[[SPLIT]] to %{{[^ ]*}} step %c1 iter_args(%{{[^ ]*}} = %[[FULL]]#0,
// OVERLAP: nvvm.wgmma.wait.group.sync.aligned 1
// OVERLAP: flash.wg.mask_keys
// OVERLAP-NEXT: flash.wg.softmax_update
// OVERLAP-NEXT: nvvm.wgmma.wait.group.sync.aligned 0
// OVERLAP: flash.wg.scale_rows
// OVERLAP: scf.if %[[HAS]]
// OVERLAP: flash.wg.pingpong_turn
// OVERLAP-NOT: unrealized_conversion_cast {{.*}}tensor
// OVERLAP-NOT: flash.softmax_update
// OVERLAP: gpu.return

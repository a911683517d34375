// RUN: flash-opt %s -convert-flash-wg-to-nvvm | FileCheck %s
// RUN: flash-opt %s | flash-opt | FileCheck %s --check-prefix=ROUND

// The wgmma descriptors as the kernel builds them: a tile's descriptor from
// its address field (address >> 4) with the type's layout bits or-ed in
// (swizzle mode at bit 62: 1 = 128 B, 2 = 64 B, 3 = 32 B; SBO >> 4 at bit
// 32; LBO >> 4 at bit 16), then moved on through shared memory by adds to
// the address field, run-time units first. The wgmma reads the results.

!acc = !flash.fragment<64x8xf32, #flash.wgmma_accumulator>
!kmajor = !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>
!vmajor = !flash.smem_descriptor<bf16, major = mn, swizzle = 128, lbo = 16384, sbo = 1024>
!k64 = !flash.smem_descriptor<f16, major = k, swizzle = 64, lbo = 16, sbo = 1024>
!k32 = !flash.smem_descriptor<f16, major = k, swizzle = 32, lbo = 32, sbo = 512>

// CHECK-LABEL: func.func @make
// CHECK-SAME: (%[[A:.*]]: i64)
// CHECK-DAG: %[[K:.*]] = arith.constant 4611686293305360384 : i64
// CHECK-DAG: %[[V:.*]] = arith.constant 4611686293372403712 : i64
// CHECK-DAG: %[[K64:.*]] = arith.constant -9223371761976803328 : i64
// CHECK-DAG: %[[K32:.*]] = arith.constant -4611685880988303360 : i64
// CHECK: %[[DK:.*]] = arith.ori %[[A]], %[[K]] : i64
// CHECK: %[[DV:.*]] = arith.ori %[[A]], %[[V]] : i64
// CHECK: nvvm.wgmma.mma_async %[[DK]], %[[DV]], {{.*}} A[<bf16>, <one>, <row>], B[<bf16>, <one>, <row>]
// CHECK: %[[D64:.*]] = arith.ori %[[A]], %[[K64]] : i64
// CHECK: %[[D32:.*]] = arith.ori %[[A]], %[[K32]] : i64
// CHECK: nvvm.wgmma.mma_async %[[D64]], %[[D32]], {{.*}} A[<f16>, <one>, <row>], B[<f16>, <one>, <col>]
// ROUND-LABEL: func.func @make
// ROUND: flash.wg.make_descriptor %{{.*}} : !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>
// ROUND: flash.wg.make_descriptor %{{.*}} : !flash.smem_descriptor<bf16, major = mn, swizzle = 128, lbo = 16384, sbo = 1024>
func.func @make(%a: i64) {
  %k = flash.wg.make_descriptor %a : !kmajor
  %v = flash.wg.make_descriptor %a : !vmajor
  nvvm.wgmma.fence.aligned
  %s = flash.wg.mma %k, %v : !kmajor, !vmajor -> !acc
  %k64 = flash.wg.make_descriptor %a : !k64
  %k32 = flash.wg.make_descriptor %a : !k32
  %t = flash.wg.mma %k64, %k32 : !k64, !k32 -> !acc
  nvvm.wgmma.commit.group.sync.aligned
  return
}

// CHECK-LABEL: func.func @advance
// CHECK-SAME: (%[[B:.*]]: i64, %[[U:.*]]: i64)
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : i64
// CHECK-DAG: %[[C1024:.*]] = arith.constant 1024 : i64
// CHECK: %[[S:.*]] = arith.addi %[[B]], %[[U]] : i64
// CHECK-NEXT: %[[S2:.*]] = arith.addi %[[S]], %[[C2]] : i64
// CHECK-NEXT: %[[BOX:.*]] = arith.addi %[[B]], %[[C1024]] : i64
// CHECK: nvvm.wgmma.mma_async %[[B]], %[[S2]]
// CHECK: nvvm.wgmma.mma_async %[[BOX]], %[[B]]
// ROUND-LABEL: func.func @advance
// ROUND: flash.wg.advance_descriptor %{{.*}} : !flash.smem_descriptor
// ROUND: flash.wg.advance_descriptor %{{.*}} units %{{.*}} bytes 32 : !flash.smem_descriptor
// ROUND: flash.wg.advance_descriptor %{{.*}} bytes 16384 : !flash.smem_descriptor
func.func @advance(%bits: i64, %units: i64) {
  %d = flash.wg.smem_descriptor %bits : !kmajor
  %same = flash.wg.advance_descriptor %d : !kmajor
  %slot = flash.wg.advance_descriptor %d units %units bytes 32 : !kmajor
  %box = flash.wg.advance_descriptor %d bytes 16384 : !kmajor
  nvvm.wgmma.fence.aligned
  %s = flash.wg.mma %same, %slot : !kmajor, !kmajor -> !acc
  %t = flash.wg.mma %box, %same : !kmajor, !kmajor -> !acc
  nvvm.wgmma.commit.group.sync.aligned
  return
}

// RUN: flash-opt %s -split-input-file -convert-flash-wg-to-nvvm | FileCheck %s

// Each form of flash.wg.mma and what it becomes: upstream wgmma with A in
// shared memory, the inline PTX wgmma with A in registers.

!acc = !flash.fragment<64x8xf32, #flash.wgmma_accumulator>
!opa = !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>
!kmaj = !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>

// S = Q K^T: K-major A (row) and K-major B (col); the first k step scales
// D by 0 and reads an undefined accumulator.
// CHECK-LABEL: func.func @smem_a
// CHECK-SAME: (%[[QB:.*]]: i64, %[[KB:.*]]: i64)
// CHECK: %[[U:.*]] = llvm.mlir.undef : !llvm.struct<(f32, f32, f32, f32)>
// CHECK: %[[S0:.*]] = nvvm.wgmma.mma_async %[[QB]], %[[KB]], %[[U]], <m = 64, n = 8, k = 16>, D[<f32>, <zero>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>] : !llvm.struct<(f32, f32, f32, f32)> -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: %[[S1:.*]] = nvvm.wgmma.mma_async %[[QB]], %[[KB]], %[[S0]], <m = 64, n = 8, k = 16>, D[<f32>, <one>], A[<bf16>, <one>, <row>], B[<bf16>, <one>, <col>]
// CHECK: %[[E0:.*]] = llvm.extractvalue %[[S1]][0]
// CHECK: llvm.extractvalue %[[S1]][1]
// CHECK: llvm.extractvalue %[[S1]][2]
// CHECK: %[[E3:.*]] = llvm.extractvalue %[[S1]][3]
// CHECK: return %[[E0]], %[[E3]]
// CHECK-NOT: flash.wg
func.func @smem_a(%qb: i64, %kb: i64) -> (f32, f32) {
  %q = flash.wg.smem_descriptor %qb : !kmaj
  %k = flash.wg.smem_descriptor %kb : !kmaj
  nvvm.wgmma.fence.aligned
  %s0 = flash.wg.mma %q, %k : !kmaj, !kmaj -> !acc
  %s1 = flash.wg.mma %q, %k, %s0 : !kmaj, !kmaj -> !acc
  nvvm.wgmma.commit.group.sync.aligned
  nvvm.wgmma.wait.group.sync.aligned 0
  %v:4 = flash.wg.fragment_values %s1 : !acc
  return %v#0, %v#3 : f32, f32
}

// -----

// Both operands transposed (MN-major): A col, B row.
// CHECK-LABEL: func.func @smem_a_transposed
// CHECK: nvvm.wgmma.mma_async %{{.*}}, %{{.*}}, %{{.*}}, <m = 64, n = 16, k = 16>, D[<f32>, <one>], A[<f16>, <one>, <col>], B[<f16>, <one>, <row>] : !llvm.struct<(f32, f32, f32, f32, f32, f32, f32, f32)>
func.func @smem_a_transposed(%ab: i64, %bb: i64, %x: f32) -> f32 {
  %a = flash.wg.smem_descriptor %ab : !flash.smem_descriptor<f16, major = mn, swizzle = 128, lbo = 2048, sbo = 1024>
  %b = flash.wg.smem_descriptor %bb : !flash.smem_descriptor<f16, major = mn, swizzle = 128, lbo = 2048, sbo = 1024>
  %c = flash.wg.fragment_from_values %x, %x, %x, %x, %x, %x, %x, %x : !flash.fragment<64x16xf32, #flash.wgmma_accumulator>
  %d = flash.wg.mma %a, %b, %c : !flash.smem_descriptor<f16, major = mn, swizzle = 128, lbo = 2048, sbo = 1024>, !flash.smem_descriptor<f16, major = mn, swizzle = 128, lbo = 2048, sbo = 1024> -> !flash.fragment<64x16xf32, #flash.wgmma_accumulator>
  %v:8 = flash.wg.fragment_values %d : !flash.fragment<64x16xf32, #flash.wgmma_accumulator>
  return %v#7 : f32
}

// -----

// O += P V: P's four registers go straight into the asm (no struct), V is
// MN-major (imm-trans-b 1), scale-d 1 (a constant of the function's entry
// block, where the kernel keeps its constants), the accumulators tied in
// and out.
// CHECK-LABEL: func.func @register_a
// CHECK-SAME: (%[[R0:.*]]: i32, %[[R1:.*]]: i32, %[[R2:.*]]: i32, %[[R3:.*]]: i32, %[[VB:.*]]: i64, %[[X:.*]]: f32)
// CHECK: %[[ONE:.*]] = arith.constant 1 : i32
// CHECK: %[[U:.*]] = llvm.mlir.undef : !llvm.struct<(f32, f32, f32, f32)>
// CHECK: %[[C:.*]] = llvm.insertvalue %[[X]], %{{.*}}[3]
// CHECK: %[[C0:.*]] = llvm.extractvalue %[[C]][0]
// CHECK: %[[C3:.*]] = llvm.extractvalue %[[C]][3]
// CHECK: %[[D:.*]] = llvm.inline_asm has_side_effects asm_dialect = att "{\0A.reg .pred p;\0Asetp.ne.b32 p, $9, 0;\0Awgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {$0, $1, $2, $3}, {$4, $5, $6, $7}, $8, p, 1, 1, 1;\0A}", "=f,=f,=f,=f,r,r,r,r,l,n,0,1,2,3" %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[VB]], %[[ONE]], %[[C0]], %{{.*}}, %{{.*}}, %[[C3]] : (i32, i32, i32, i32, i64, i32, f32, f32, f32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: llvm.extractvalue %[[D]][0]
// CHECK-NOT: flash.wg
func.func @register_a(%r0: i32, %r1: i32, %r2: i32, %r3: i32, %vb: i64, %x: f32) -> f32 {
  %v = flash.wg.smem_descriptor %vb : !flash.smem_descriptor<bf16, major = mn, swizzle = 128, lbo = 16384, sbo = 1024>
  %o = flash.wg.fragment_from_values %x, %x, %x, %x : !flash.fragment<64x8xf32, #flash.wgmma_accumulator>
  %p = flash.wg.fragment_from_values %r0, %r1, %r2, %r3 : !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>
  %d = flash.wg.mma %p, %v, %o : !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>, !flash.smem_descriptor<bf16, major = mn, swizzle = 128, lbo = 16384, sbo = 1024> -> !flash.fragment<64x8xf32, #flash.wgmma_accumulator>
  %e:4 = flash.wg.fragment_values %d : !flash.fragment<64x8xf32, #flash.wgmma_accumulator>
  return %e#0 : f32
}

// -----

!acc = !flash.fragment<64x8xf32, #flash.wgmma_accumulator>
!opa = !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>
!kmaj = !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>

// A in registers with a K-major B (imm-trans-b 0) and no C: scale-d 0 and
// undefined accumulators.
// CHECK-LABEL: func.func @register_a_kmajor_b_no_c
// CHECK: %[[ZERO:.*]] = arith.constant 0 : i32
// CHECK: %[[U:.*]] = llvm.mlir.undef : f32
// CHECK: llvm.inline_asm has_side_effects asm_dialect = att "{{.*}}wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {$0, $1, $2, $3}, {$4, $5, $6, $7}, $8, p, 1, 1, 0;{{.*}}", "=f,=f,=f,=f,r,r,r,r,l,n,0,1,2,3" %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[ZERO]], %[[U]], %[[U]], %[[U]], %[[U]]
// The A fragment's registers leave it as they entered.
// CHECK: return %{{.*}}, %arg0
func.func @register_a_kmajor_b_no_c(%r: i32, %bb: i64) -> (f32, i32) {
  %b = flash.wg.smem_descriptor %bb : !kmaj
  %p = flash.wg.fragment_from_values %r, %r, %r, %r : !opa
  %d = flash.wg.mma %p, %b : !opa, !kmaj -> !acc
  %e:4 = flash.wg.fragment_values %d : !acc
  %pr:4 = flash.wg.fragment_values %p : !opa
  return %e#0, %pr#2 : f32, i32
}

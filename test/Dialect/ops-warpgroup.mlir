// RUN: flash-opt %s | flash-opt | FileCheck %s
// RUN: flash-opt %s -mlir-print-op-generic | flash-opt | FileCheck %s

// The warp-specialised level's MMA family: fragments with their layouts,
// shared-memory descriptors with theirs, and flash.wg.mma in each form.

!acc = !flash.fragment<64x128xf32, #flash.wgmma_accumulator>
!acc8 = !flash.fragment<64x8xf32, #flash.wgmma_accumulator>
!opa = !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>
!kmaj = !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>
!mnmaj = !flash.smem_descriptor<bf16, major = mn, swizzle = 128, lbo = 16384, sbo = 1024>

// CHECK-LABEL: func.func private @types
// CHECK-SAME: !flash.fragment<64x128xf32, #flash.wgmma_accumulator>
// CHECK-SAME: !flash.fragment<64x16xf16, #flash.wgmma_operand_a>
// CHECK-SAME: !flash.smem_descriptor<f16, major = mn, swizzle = 64, lbo = 32, sbo = 512>
func.func private @types(!acc, !flash.fragment<64x16xf16, #flash.wgmma_operand_a>,
                         !flash.smem_descriptor<f16, major = mn, swizzle = 64, lbo = 32, sbo = 512>)

// CHECK-LABEL: func.func @descriptor
// CHECK: %[[D:.*]] = flash.wg.smem_descriptor %{{.*}} : !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>
// CHECK: return %[[D]]
func.func @descriptor(%bits: i64) -> !kmaj {
  %d = flash.wg.smem_descriptor %bits : !kmaj
  return %d : !kmaj
}

// CHECK-LABEL: func.func @fragments
// CHECK: %[[A:.*]] = flash.wg.fragment_from_values %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>
// CHECK: %{{.*}}:4 = flash.wg.fragment_values %[[A]] : !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>
// CHECK: %[[C:.*]] = flash.wg.fragment_from_values %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : !flash.fragment<64x8xf32, #flash.wgmma_accumulator>
// CHECK: %[[V:.*]]:4 = flash.wg.fragment_values %[[C]] : !flash.fragment<64x8xf32, #flash.wgmma_accumulator>
// CHECK: return %[[V]]#3
func.func @fragments(%r: i32, %x: f32) -> f32 {
  %a = flash.wg.fragment_from_values %r, %r, %r, %r : !opa
  %ar:4 = flash.wg.fragment_values %a : !opa
  %c = flash.wg.fragment_from_values %x, %x, %x, %x : !acc8
  %v:4 = flash.wg.fragment_values %c : !acc8
  return %v#3 : f32
}

// S = Q K^T: both operands in shared memory, K-major; the first k step
// without C.
// CHECK-LABEL: func.func @smem_a
// CHECK: %[[S0:.*]] = flash.wg.mma %{{.*}}, %{{.*}} : !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024>, !flash.smem_descriptor<bf16, major = k, swizzle = 128, lbo = 16, sbo = 1024> -> !flash.fragment<64x128xf32, #flash.wgmma_accumulator>
// CHECK: flash.wg.mma %{{.*}}, %{{.*}}, %[[S0]] : !flash.smem_descriptor<bf16, major = k, {{.*}}>, !flash.smem_descriptor<bf16, major = k, {{.*}}> -> !flash.fragment<64x128xf32, #flash.wgmma_accumulator>
func.func @smem_a(%q: !kmaj, %k: !kmaj) -> !acc {
  %s0 = flash.wg.mma %q, %k : !kmaj, !kmaj -> !acc
  %s1 = flash.wg.mma %q, %k, %s0 : !kmaj, !kmaj -> !acc
  return %s1 : !acc
}

// A and B transposed (MN-major in shared memory), as dK = dS^T Q needs.
// CHECK-LABEL: func.func @smem_a_transposed
// CHECK: flash.wg.mma %{{.*}}, %{{.*}}, %{{.*}} : !flash.smem_descriptor<bf16, major = mn, {{.*}}>, !flash.smem_descriptor<bf16, major = mn, {{.*}}> -> !flash.fragment<64x128xf32, #flash.wgmma_accumulator>
func.func @smem_a_transposed(%a: !mnmaj, %b: !mnmaj, %c: !acc) -> !acc {
  %d = flash.wg.mma %a, %b, %c : !mnmaj, !mnmaj -> !acc
  return %d : !acc
}

// O += P V: P in registers, V transposed (MN-major).
// CHECK-LABEL: func.func @register_a
// CHECK: %[[P:.*]] = flash.wg.fragment_from_values
// CHECK: flash.wg.mma %[[P]], %{{.*}}, %{{.*}} : !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>, !flash.smem_descriptor<bf16, major = mn, {{.*}}> -> !flash.fragment<64x128xf32, #flash.wgmma_accumulator>
func.func @register_a(%r: i32, %v: !mnmaj, %o: !acc) -> !acc {
  %p = flash.wg.fragment_from_values %r, %r, %r, %r : !opa
  %d = flash.wg.mma %p, %v, %o : !opa, !mnmaj -> !acc
  return %d : !acc
}

// A in registers, B K-major (not transposed), no C.
// CHECK-LABEL: func.func @register_a_kmajor_b
// CHECK: flash.wg.mma %{{.*}}, %{{.*}} : !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>, !flash.smem_descriptor<bf16, major = k, {{.*}}> -> !flash.fragment<64x8xf32, #flash.wgmma_accumulator>
func.func @register_a_kmajor_b(%p: !opa, %b: !kmaj) -> !acc8 {
  %d = flash.wg.mma %p, %b : !opa, !kmaj -> !acc8
  return %d : !acc8
}

// The backward tile program becomes three kernels of one gpu.module
// (lib/Conversion/FlashToGPU/BackwardKernels.cpp): delta and the cleared
// dQ accumulator, the key-tile kernel with its five warpgroup MMAs, and
// dQ's rounding. -flash-gpu-schedule leaves the backward program alone.
// RUN: flash-opt %s -split-input-file -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s
// Lowered all the way, the kernels hold no flash op.
// RUN: flash-opt %s -split-input-file -flash-tile -flash-fuse -convert-flash-to-gpu | FileCheck %s --check-prefix=LOWERED

// CHECK-LABEL: gpu.module @backward_causal_kernels
// CHECK: gpu.func @backward_causal_pre(
// CHECK-SAME: kernel
// CHECK-SAME: flash.launch = {
// CHECK-SAME: grid = {block_m = 64 : i64, kind = "tiles"}
// CHECK-SAME: pass = "backward"
// CHECK-SAME: role = "pre"
// Delta: a row's 8-element slices of dO and O, summed over its 8 lanes.
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<8xbf16>
// CHECK: gpu.shuffle xor
// CHECK: gpu.shuffle xor
// CHECK: gpu.shuffle xor
// CHECK-NOT: gpu.shuffle
// CHECK: llvm.store %{{.*}} : vector<4xf32>, !llvm.ptr<1>
// CHECK: gpu.return

// CHECK: gpu.func @backward_causal(
// CHECK-SAME: causal = true
// CHECK-SAME: deterministic = false
// CHECK-SAME: grid = {block_n = 64 : i64, kind = "key_tiles"}
// CHECK-SAME: role = "main"
// CHECK-SAME: shared_memory_bytes = 58368
// CHECK: flash.wg.init_barriers counts [1, 1, 1, 1, 1, 1]
// K and V once, then the first pass's Q and dO into slot 0.
// CHECK: flash.wg.tma_load_tile %{{.*}}, %window[%shift + %{{.*}} + 0], %{{.*}} columns 64
// CHECK: flash.wg.tma_load_tile %{{.*}}, %window[%shift + %{{.*}} + 8192], %{{.*}} columns 64
// CHECK: flash.wg.tma_load_tile %{{.*}}, %window[%shift + %{{.*}} + 16384], %{{.*}} columns 64
// CHECK: flash.wg.tma_load_tile %{{.*}}, %window[%shift + %{{.*}} + 32768], %{{.*}} columns 64
// CHECK: flash.wg.ring_wait_full %{{.*}}[0] : !flash.ring_slot<stages = 1>
// CHECK: flash.wg.ring_wait_full %{{.*}}[1] : !flash.ring_slot<stages = 1>
// The passes carry dK's and dV's registers (32 each at D 64).
// CHECK: scf.for {{.*}} -> (f32, f32,
// CHECK: flash.wg.ring_wait_full %{{.*}}[2] : !flash.ring_slot<stages = 2>
// CHECK: flash.wg.ring_wait_full %{{.*}}[4] : !flash.ring_slot<stages = 2>
// S^T = K Q^T and dP^T = V dO^T: both operands K-major, 4 k-steps each.
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-8: flash.wg.mma {{.*}} major = k, {{.*}} major = k, {{.*}} -> !flash.fragment<64x64xf32, #flash.wgmma_accumulator>
// CHECK: nvvm.wgmma.commit.group.sync.aligned
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// P^T from the LSE (exp2), dS^T, each rounded into an A operand.
// CHECK: llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"
// CHECK: flash.wg.truncf {{.*}} -> !flash.fragment<64x64xbf16, #flash.wgmma_operand_a>
// CHECK: flash.wg.truncf {{.*}} -> !flash.fragment<64x64xbf16, #flash.wgmma_operand_a>
// dV += P^T dO and dK += dS^T Q: A in registers, B MN-major.
// CHECK: nvvm.wgmma.fence.aligned
// CHECK-COUNT-8: flash.wg.mma {{.*}} : !flash.fragment<64x16xbf16, #flash.wgmma_operand_a>, !flash.smem_descriptor<bf16, major = mn, swizzle = 128, lbo = 8192, sbo = 1024> -> !flash.fragment<64x64xf32
// dS^T to shared memory, read back transposed for dQ = dS K.
// CHECK: flash.wg.store_shared {{.*}} {box_stride = 8192 : i64}
// CHECK: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>
// CHECK: gpu.barrier
// CHECK-COUNT-4: flash.wg.mma {{.*}} : !flash.smem_descriptor<bf16, major = mn, {{.*}}>, !flash.smem_descriptor<bf16, major = mn, {{.*}}> -> !flash.fragment<64x64xf32
// CHECK: nvvm.wgmma.wait.group.sync.aligned 0
// The partial goes into the accumulator with atomics, no turns.
// CHECK-NOT: scf.while
// CHECK: llvm.atomicrmw fadd
// CHECK: gpu.barrier
// CHECK: scf.yield
// dK scaled, dK and dV rounded and stored by row.
// CHECK: flash.wg.truncf
// CHECK: flash.wg.store_global {{.*}} strides
// CHECK: flash.wg.truncf
// CHECK: flash.wg.store_global {{.*}} strides

// CHECK: gpu.func @backward_causal_post(
// CHECK-SAME: role = "post"
// CHECK: llvm.load %{{.*}} {alignment = 16 : i64} : !llvm.ptr<1> -> vector<4xf32>
// CHECK: arith.truncf %{{.*}} : f32 to bf16
// CHECK: llvm.store %{{.*}} {alignment = 16 : i64} : vector<8xbf16>, !llvm.ptr<1>

// LOWERED-LABEL: gpu.module @backward_causal_kernels
// LOWERED-NOT: {{flash.wg|!flash}}
// LOWERED: nvvm.wgmma.mma_async
// LOWERED-NOT: {{flash.wg|!flash}}
!t = memref<?x?x?x64xbf16>
func.func @backward_causal(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t,
                           %lse: memref<?x?x?xf32>, %dq: !t, %dk: !t,
                           %dv: !t) {
  flash.attention_backward %q, %k, %v, %o, %do, %lse -> %dq, %dk, %dv
      {causal} : !t, !t, !t, !t, !t, memref<?x?x?xf32> -> !t, !t, !t
  return
}

// -----

// Deterministic: each key tile waits for its turn on the query tile
// (ld.acquire of the turn word until it reads the key tile's index), adds,
// then passes the turn on (fence, barrier, st.release of index + 1). The
// pre kernel clears the turns.
// CHECK-LABEL: gpu.func @backward_deterministic_pre(
// CHECK-SAME: deterministic = true
// CHECK: llvm.store %{{.*}} : i32, !llvm.ptr<1>
// The grid runs heads fastest: the key tile is block y.
// CHECK-LABEL: gpu.func @backward_deterministic(
// CHECK-SAME: grid = {block_n = 64 : i64, heads_fastest = true, kind = "key_tiles"}
// CHECK-SAME: kind = "workspace", name = "dq_turns"
// CHECK: %[[KT:.*]] = gpu.block_id  y
// CHECK: arith.index_cast %[[KT]]
// CHECK: scf.while
// CHECK: ld.acquire.gpu.global.u32
// CHECK: arith.cmpi ne
// CHECK: gpu.barrier
// CHECK: llvm.atomicrmw fadd
// CHECK: fence.acq_rel.gpu;
// CHECK: gpu.barrier
// CHECK: st.release.gpu.global.u32
!t = memref<?x?x?x128xf16>
func.func @backward_deterministic(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t,
                                  %lse: memref<?x?x?xf32>, %dq: !t, %dk: !t,
                                  %dv: !t) {
  flash.attention_backward %q, %k, %v, %o, %do, %lse -> %dq, %dk, %dv
      {deterministic} : !t, !t, !t, !t, !t, memref<?x?x?xf32> -> !t, !t, !t
  return
}

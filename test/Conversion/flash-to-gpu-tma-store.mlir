// #flash.config's tma_store_o (default true): each consumer writes its 64
// rows of O, as 16-bit pairs in TMA's 128-byte swizzle, over its own rows
// of the Q buffer, and one thread per consumer stores them with TMA (a
// tensor map of O with 64-row boxes). Off (the config, flashc's
// --tma-store-o=0 or -flash-gpu-schedule="tma-store-o=0" -convert-flash-to-gpu), the kernel
// takes the O pointer and stores 4-byte pairs from the registers.
// RUN: flash-opt %kernels/attention.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s
// RUN: flash-opt %kernels/attention.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=LOWERED
// RUN: flashc %kernels/attention.mlir --tma-store-o=1 --emit=mlir -o - | FileCheck %s --check-prefix=LOWERED
// RUN: flash-opt %kernels/attention.mlir -flash-tile -flash-fuse -flash-gpu-schedule="tma-store-o=0" -convert-flash-to-gpu | FileCheck %s --check-prefix=OFF --implicit-check-not=nvgpu.tma.async.store
// RUN: flash-opt %kernels/attention.mlir -flash-tile="tma-store-o=0" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=OFF --implicit-check-not=nvgpu.tma.async.store
// RUN: flashc %kernels/attention.mlir --tma-store-o=0 --emit=mlir -o - | FileCheck %s --check-prefix=OFF --implicit-check-not=nvgpu.tma.async.store
// Four consumers (bm 256) share one Q buffer: the flag holds there too, and
// flash-tune times it on and off.
// RUN: flash-opt %kernels/attention_d64.mlir -flash-tile="block-m=256 block-n=64 stages=3 warpgroups=4 persistent=1 tma-store-o=1" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=WG4
// RUN: flash-opt %kernels/attention_d64.mlir -flash-tile="block-m=256 block-n=64 stages=3 warpgroups=4 persistent=1 tma-store-o=0" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=OFF --implicit-check-not=nvgpu.tma.async.store
// A persistent kernel frees its Q buffer after O's store read it.
// RUN: flash-opt %kernels/attention_causal.mlir -flash-tile="persistent=1" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=PERSIST
// With one Q buffer (D = 256 causal persistent) that would hold back the
// next tile's Q: such a kernel keeps the global stores, and says so.
// RUN: flash-opt %kernels/attention_d256_causal.mlir -flash-tile="persistent=1 tma-store-o=1" -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu | FileCheck %s --check-prefix=ONEQ --implicit-check-not=nvgpu.tma.async.store
// RUN: not flashc %kernels/attention.mlir --tma-store-o=2 --emit=mlir -o - 2>&1 | FileCheck %s --check-prefix=BADFLAG
// RUN: not flash-opt %kernels/attention.mlir -flash-tile="tma-store-o=2" 2>&1 | FileCheck %s --check-prefix=BADOPTION
// The PTX has the bulk tensor store from shared memory, the proxy fence and
// the read wait; ptxas assembles it for sm_90a without spilling.
// RUN: flashc %kernels/attention.mlir -o %t.ptx
// RUN: FileCheck %s --check-prefix=PTX --input-file=%t.ptx
// RUN: flashc %kernels/attention.mlir --resource-usage -o %t.cubin 2>&1 | FileCheck %s --check-prefix=PTXAS

// O is the fourth argument, a tensor map pointer like Q, K and V; the
// launch contract asks for a [64, 64] box of o.
// CHECK: gpu.func @attention(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %[[OARG:.*]]: !llvm.ptr, %[[LSE:.*]]: !llvm.ptr<1>, %[[NQ:.*]]: i32, %{{.*}}: i32, %{{.*}}: f32, %{{.*}}: i32, %[[HEADS:.*]]: i32) kernel
// CHECK-SAME: {box = array<i64: 64, 64>, kind = "tma", rank = 4 : i64, swizzle = 128 : i64, tensor = "o"}, {kind = "ptr", tensor = "lse"}
// CHECK: %[[TMO:.*]] = builtin.unrealized_conversion_cast %[[OARG]] : !llvm.ptr to !nvgpu.tensormap.descriptor<tensor = memref<1x1x64x64xbf16, #gpu.address_space<workgroup>>, swizzle = swizzle_128b
// The epilogue: once every warp of the warpgroup (named barrier 3 + cw,
// 128 threads) is past its last wgmma, O, normalised and rounded, goes into
// this consumer's rows of the Q buffer (64 rows, 8192 bytes, in per
// consumer; the boxes 128 rows, 16384 bytes, apart) in TMA's swizzle
// (flash.wg.store_shared; its lowering: flash-wg-epilogue-to-nvvm.mlir).
// CHECK: %[[BID:.*]] = arith.addi %[[CW:.*]], %c3_i32 : i32
// CHECK-NEXT: nvvm.barrier id = %[[BID]] number_of_threads = %c128_i32
// CHECK-NEXT: %[[BYTES:.*]] = arith.muli %[[CW]], %c8192_i32 : i32
// CHECK-NEXT: %[[BYTESI:.*]] = arith.index_cast %[[BYTES]] : i32 to index
// CHECK-NEXT: %[[B0:.*]] = arith.addi %[[SHIFT:.*]], %[[BYTESI]] : index
// CHECK-NEXT: flash.wg.store_shared %{{.*}}, %{{.*}}[%[[B0]]] {box_stride = 16384 : i64} : !flash.fragment<64x128xbf16, #flash.wgmma_operand_a>, memref<?xi8, #gpu.address_space<workgroup>>
// The stores reach the async proxy, the warpgroup has written, and thread
// 0 of it stores two boxes at (64 c, m0 + 64 cw, head), then waits until
// TMA has read the buffer.
// CHECK-NEXT: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// CHECK-NEXT: nvvm.barrier id = %[[BID]] number_of_threads = %c128_i32
// CHECK: %[[ELECT:.*]] = arith.cmpi eq, %{{.*}}, %c0_i32 : i32
// CHECK: scf.if %[[ELECT]] {
// CHECK: %[[ROWS:.*]] = arith.muli %[[CW]], %c64_i32 : i32
// CHECK: %[[ROWSI:.*]] = arith.index_cast %[[ROWS]] : i32 to index
// CHECK: %[[FIRST:.*]] = arith.addi %{{.*}}, %[[ROWSI]] : index
// CHECK: %[[B00:.*]] = arith.addi %[[B0]], %c0 : index
// CHECK: %[[BOX0:.*]] = memref.view %{{.*}}[%[[B00]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<1x1x64x64xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.tma.async.store %[[BOX0]] to %[[TMO]][%c0, %[[FIRST]], %[[HEAD:.*]]] :
// CHECK: %[[B11:.*]] = arith.addi %[[B0]], %c16384 : index
// CHECK: %[[BOX1:.*]] = memref.view %{{.*}}[%[[B11]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<1x1x64x64xbf16, #gpu.address_space<workgroup>>
// CHECK: nvgpu.tma.async.store %[[BOX1]] to %[[TMO]][%c64, %[[FIRST]], %[[HEAD]]] :
// CHECK-NEXT: nvvm.cp.async.bulk.commit.group
// CHECK-NEXT: nvvm.cp.async.bulk.wait_group 0 {read}
// CHECK-NEXT: }
// Only LSE goes to global memory from the registers.
// CHECK-NOT: flash.wg.store_global
// CHECK: flash.wg.store_global %{{.*}}, %[[LSE]][%{{.*}}, %{{.*}}], %[[NQ]] : !flash.fragment<64xf32, #flash.wgmma_rows>, !llvm.ptr<1>
// CHECK-NOT: flash.wg.store_global

// Lowered: the 32 words per thread (2 rows x 16) as shared stores, then
// the fence, the barrier and the two TMA stores; only LSE (f32) from the
// registers to global memory.
// LOWERED: gpu.func @attention(
// LOWERED: nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// LOWERED-COUNT-32: memref.store
// LOWERED-NOT: memref.store
// LOWERED: nvvm.fence.proxy {kind = #nvvm.proxy_kind<async.shared>, space = #nvvm.shared_space<cta>}
// LOWERED-COUNT-2: nvgpu.tma.async.store
// LOWERED-NOT: llvm.store %{{.*}} : i32
// LOWERED: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : f32, !llvm.ptr<1>
// LOWERED-NOT: llvm.store %{{.*}} : i32

// OFF: gpu.func @{{attention[a-z0-9_]*}}(%{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr, %{{.*}}: !llvm.ptr<1>,
// OFF-SAME: {kind = "ptr", tensor = "o"}
// OFF: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : i32, !llvm.ptr<1>

// Persistent, two Q buffers: q_empty takes one arrival per consumer (2),
// made by the storing thread after the read; the words and the boxes start
// at this tile's buffer (the byte offset issueQ loads it at).
// PERSIST: nvgpu.mbarrier.init %[[BAR:.*]][%c10], %c2
// PERSIST: nvgpu.mbarrier.init %[[BAR]][%c11], %c2
// No consumer frees a Q buffer (q_empty = 10 + buffer) before the store.
// PERSIST: nvvm.setmaxregister increase
// PERSIST-NOT: arith.addi %{{.*}}, %c10 : index
// PERSIST: %[[BUFOFF:.*]] = arith.muli %[[QBUF:.*]], %c32768 : index
// PERSIST-NEXT: %[[BUFSTART:.*]] = arith.addi %[[SHIFT:.*]], %[[BUFOFF]] : index
// PERSIST: %[[ROWSTART:.*]] = arith.addi %[[BUFSTART]], %{{.*}} : index
// PERSIST: memref.view %{{.*}}[%[[ROWSTART]]][] : memref<?xi8, #gpu.address_space<workgroup>> to memref<6144xi32, #gpu.address_space<workgroup>>
// PERSIST: nvgpu.tma.async.store
// PERSIST: nvgpu.tma.async.store
// PERSIST-NEXT: nvvm.cp.async.bulk.commit.group
// PERSIST-NEXT: nvvm.cp.async.bulk.wait_group 0 {read}
// PERSIST-NEXT: %[[QE:.*]] = arith.addi %[[QBUF]], %c10 : index
// PERSIST-NEXT: nvgpu.mbarrier.arrive %[[BAR]][%[[QE]]]
// PERSIST-NEXT: }

// ONEQ: tma_store_o = 0 : i64
// ONEQ: nvgpu.mbarrier.init %[[BAR:.*]][%c9], %c256
// ONEQ-SAME: num_barriers = 10

// BADFLAG: --tma-store-o takes 1 (on) or 0 (off), got 2
// BADOPTION: error: -flash-tile: tma-store-o takes 1 (on) or 0 (off), got 2

// WG4: gpu.func @attention_d64(
// WG4-SAME: tensor = "o"
// WG4: nvvm.barrier id = %{{.*}} number_of_threads = %c128_i32
// WG4: nvgpu.tma.async.store

// PTX: fence.proxy.async.shared::cta;
// PTX: bar.sync {{.*}}, 128;
// PTX-COUNT-2: cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group
// PTX-NEXT: cp.async.bulk.commit_group;
// PTX-NEXT: cp.async.bulk.wait_group.read 0;

// PTXAS: 0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads

// RUN: flash-opt %kernels/attention.mlir -flash-tile -flash-fuse -flash-gpu-schedule="probe-stamps=1" -convert-flash-to-gpu | FileCheck %s
// RUN: flash-opt %kernels/attention.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu \
// RUN:   | FileCheck %s --check-prefix=OFF --implicit-check-not=clock64 --implicit-check-not=globaltimer
// RUN: flash-opt %s -flash-tile -flash-fuse -flash-gpu-schedule="probe-stamps=1" -convert-flash-to-gpu -verify-diagnostics

// The developer probe: thread 0 of each consumer reads clock64 at seven
// points of each tile program (consumer start, Q arrived, tile start, the
// tile's Q arrived, first softmax done, key loops done, epilogue done),
// each into its slot of a volatile stack array, and after the epilogue
// writes a record of 4-byte words over the LSE buffer: smid, consumer,
// query block, head, the stamps (lo, hi) and globaltimer. Record r =
// query block * warpgroups + consumer of head h sits at float
// h * seq_q + 32 r, and only if it ends within the head's seq_q floats.
// LSE itself is not stored.

// CHECK: gpu.func @attention({{.*}}, %[[LSE:[^:]*]]: !llvm.ptr<1>, %[[NQ:[^:]*]]: i32,
// CHECK: %[[SLOTS:.*]] = llvm.alloca %{{.*}} x i64 {alignment = 8 : i64} : (i32) -> !llvm.ptr
// CHECK: nvvm.setmaxregister  increase
// CHECK: %[[C0:.*]] = nvvm.read.ptx.sreg.clock64 : i64
// CHECK-NEXT: %[[P0:.*]] = llvm.getelementptr %[[SLOTS]][%c0_i32]
// CHECK-NEXT: llvm.store volatile %[[C0]], %[[P0]]
// CHECK-COUNT-3: nvvm.read.ptx.sreg.clock64
// The first softmax is done before the key loop starts.
// CHECK: nvvm.read.ptx.sreg.clock64
// CHECK-NEXT: llvm.getelementptr %[[SLOTS]][%c4_i32]
// CHECK: scf.for
// CHECK: nvvm.read.ptx.sreg.clock64
// CHECK-NEXT: llvm.getelementptr %[[SLOTS]][%c5_i32]
// CHECK: nvgpu.tma.async.store
// CHECK: nvvm.read.ptx.sreg.clock64
// CHECK-NEXT: llvm.getelementptr %[[SLOTS]][%c6_i32]
// CHECK: nvvm.read.ptx.sreg.globaltimer : i64
// CHECK-NEXT: nvvm.read.ptx.sreg.smid : i32
// CHECK: %[[REC:.*]] = arith.addi %{{.*}}, %{{.*}} : i32
// CHECK-NEXT: %[[NEXT:.*]] = arith.addi %[[REC]], %c1_i32 : i32
// CHECK-NEXT: %[[END:.*]] = arith.muli %[[NEXT]], %c32_i32 : i32
// CHECK-NEXT: %[[FITS:.*]] = arith.cmpi ule, %[[END]], %[[NQ]] : i32
// CHECK: scf.if
// CHECK-NEXT: %[[WORDS:.*]] = arith.muli %[[REC]], %c32_i32 : i32
// CHECK-NEXT: %[[HEADROW:.*]] = arith.muli %{{.*}}, %[[NQ]] : i32
// CHECK-NEXT: %[[BASE:.*]] = arith.addi %[[HEADROW]], %[[WORDS]] : i32
// CHECK-COUNT-7: llvm.load volatile
// CHECK-COUNT-20: llvm.store %{{.*}}, %{{.*}} {alignment = 4 : i64} : i32, !llvm.ptr<1>
// CHECK-NOT: : f32, !llvm.ptr<1>
// CHECK: gpu.return

// OFF: gpu.func @attention
// OFF: : f32, !llvm.ptr<1>

// A kernel without LSE has nowhere to put the records.
// expected-error @+1 {{probe-stamps writes its records over the LSE buffer: the kernel has none}}
func.func @no_lse(%q: memref<?x?x?x64xbf16>, %k: memref<?x?x?x64xbf16>,
                  %v: memref<?x?x?x64xbf16>, %o: memref<?x?x?x64xbf16>) {
  flash.attention %q, %k, %v -> %o
      : memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>, memref<?x?x?x64xbf16>
      -> memref<?x?x?x64xbf16>
  return
}

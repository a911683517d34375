// The backward kernels with the forward's mods (what -flash-derive-backward
// writes for kernels/attention_softcap.mlir and
// kernels/attention_sliding_window.mlir): the key-tile kernel scales each
// recomputed logit by the runtime's scale, inlines the score mod (tanh as
// one tanh.approx) and its derivative (1 - t^2 by the chain rule) and the
// mask mod per register, and multiplies dS by the derivative. A window ends
// each key tile's query tiles at its last key + W.
// RUN: flash-opt %s -flash-tile -flash-fuse -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --check-prefix=SOFTCAP
// RUN: rm -rf %t.dir && mkdir -p %t.dir
// RUN: flash-opt %kernels/attention_sliding_window.mlir -flash-derive-backward -o %t.dir/window.mlir
// RUN: flash-opt %t.dir/window.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --check-prefix=WINDOW
// RUN: flashc %s --emit=ptx -o %t.dir/softcap_backward.ptx
// RUN: FileCheck %s --check-prefix=PTX --input-file %t.dir/softcap_backward.ptx

// SOFTCAP-LABEL: gpu.func @attention_softcap_backward(
// SOFTCAP: %[[SCALE:.*]] = arith.mulf %{{.*}}, %cst{{.*}} : f32
// SOFTCAP: %[[X:.*]] = arith.mulf %{{.*}}, %[[SCALE]] : f32
// SOFTCAP: %[[Y:.*]] = arith.divf %[[X]], %[[CAP:.*]] fastmath<arcp> : f32
// SOFTCAP: %[[DY:.*]] = arith.divf %{{.*}}, %[[CAP]] fastmath<arcp> : f32
// SOFTCAP: %[[T:.*]] = llvm.inline_asm {{.*}}"tanh.approx.f32 $0, $1;"{{.*}} %[[Y]]
// SOFTCAP: %[[T2:.*]] = arith.mulf %[[T]], %[[T]] : f32
// SOFTCAP: %[[ONEMINUS:.*]] = arith.subf %{{.*}}, %[[T2]] : f32
// SOFTCAP: %[[DT:.*]] = arith.mulf %[[DY]], %[[ONEMINUS]] : f32
// SOFTCAP: %[[CAPPED:.*]] = arith.mulf %[[T]], %[[CAP]] : f32
// SOFTCAP: %[[SLOPE:.*]] = arith.mulf %[[DT]], %[[CAP]] : f32
// SOFTCAP: %[[E:.*]] = llvm.intr.fma(%[[CAPPED]], %{{.*}}, %{{.*}})
// SOFTCAP: %[[EX:.*]] = llvm.call_intrinsic "llvm.nvvm.ex2.approx.ftz.f32"(%[[E]])
// SOFTCAP: %[[P:.*]] = arith.select %{{.*}}, %{{.*}}, %[[EX]] : f32
// SOFTCAP: %[[C:.*]] = arith.subf
// SOFTCAP: %[[DS:.*]] = arith.mulf %[[P]], %[[C]] : f32
// SOFTCAP: arith.mulf %[[DS]], %[[SLOPE]] : f32

// WINDOW-LABEL: gpu.func @attention_sliding_window_backward(
// WINDOW: %[[LAST:.*]] = arith.addi %{{.*}}, %c1088_i32 : i32
// WINDOW: %[[END:.*]] = arith.minsi %[[LAST]], %{{.*}} : i32
// WINDOW: arith.ceildivui %[[END]], %c64_i32 : i32
// WINDOW: arith.constant 1024 : index
// WINDOW: arith.cmpi uge
// WINDOW: arith.xori

// PTX: .entry attention_softcap_backward(
// PTX: tanh.approx.f32
// PTX-NOT: __nv_tanhf

!t = memref<?x?x?x128xbf16>
!l = memref<?x?x?xf32>
func.func @attention_softcap_backward(%q: !t, %k: !t, %v: !t, %o: !t, %do: !t,
    %lse: !l, %dq: !t, %dk: !t, %dv: !t) {
  flash.attention_backward %q, %k, %v, %o, %do, %lse -> %dq, %dk, %dv {causal}
      : !t, !t, !t, !t, !t, !l -> !t, !t, !t
    score_mod {
    ^bb0(%s: f32, %b: index, %h: index, %qi: index, %kv: index):
      %cap = arith.constant 50.0 : f32
      %x = arith.divf %s, %cap : f32
      %t = math.tanh %x : f32
      %r = arith.mulf %t, %cap : f32
      flash.yield %r : f32
    }
  return
}

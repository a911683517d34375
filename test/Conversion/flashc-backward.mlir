// flashc --backward compiles the backward pass of a forward kernel file
// (-flash-derive-backward="replace=1" first): a user's own score mod trains
// without a hand-written backward. Here the shipped soft-capping kernel:
// the GPU backward's three kernels, tanh as tanh.approx, kernel.json's pass
// "backward"; and the CPU path's library. A file without a forward function
// gets a located error.
// RUN: rm -rf %t.dir && mkdir -p %t.dir
// RUN: flashc %kernels/attention_softcap.mlir --backward --emit=ptx -o %t.dir/softcap_backward.ptx
// RUN: FileCheck %s --check-prefix=PTX --input-file %t.dir/softcap_backward.ptx
// RUN: FileCheck %s --check-prefix=JSON --input-file %t.dir/softcap_backward.json
// RUN: flashc %kernels/attention_softcap.mlir --backward --emit=tile | FileCheck %s --check-prefix=TILE
// RUN: not flashc %s --backward --emit=ptx -o %t.dir/none.ptx 2>&1 | FileCheck %s --check-prefix=NONE

// PTX: .entry attention_softcap_backward_pre(
// PTX: .entry attention_softcap_backward(
// PTX: tanh.approx.f32
// PTX: .entry attention_softcap_backward_post(
// JSON: "pass": "backward"

// TILE-LABEL: func.func @attention_softcap_backward(
// TILE-NOT: func.func @attention_softcap(
// TILE: flash.mod_scores_grad

// NONE: error: -flash-derive-backward: no function holds one flash.attention

func.func @nothing() {
  return
}

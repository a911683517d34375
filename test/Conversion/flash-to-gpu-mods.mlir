// The score and mask mods on the GPU: flash.mod_scores of each key loop
// becomes flash.wg.mod_scores on the consumer's S fragment (its regions
// cloned, the consumer's rows, the key tile's first key), the softmax then
// scales by log2(e) alone; the regions' ops are inlined register by
// register, math.tanh as one tanh.approx.f32.
// RUN: flash-opt %kernels/attention_softcap.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --check-prefix=WG
// RUN: flash-opt %kernels/attention_sliding_window.mlir -flash-tile -flash-fuse -flash-gpu-schedule="overlap=0" -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --check-prefix=WINDOW
// RUN: flash-opt %s -flash-tile -flash-fuse -flash-gpu-schedule="overlap=0" -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --check-prefix=NOTWHOLE
// RUN: rm -rf %t.dir && mkdir -p %t.dir
// RUN: flashc %kernels/attention_softcap.mlir --emit=ptx -o %t.dir/softcap.ptx
// RUN: FileCheck %s --check-prefix=PTX --input-file %t.dir/softcap.ptx
// RUN: FileCheck %s --check-prefix=JSON --input-file %t.dir/softcap.json
// RUN: flashc %kernels/attention_sliding_window.mlir --emit=ptx -o %t.dir/window.ptx
// RUN: FileCheck %s --check-prefix=WINDOWPTX --input-file %t.dir/window.ptx

// WG-LABEL: gpu.func @attention_softcap
// WG: %[[SCALE:.*]] = arith.mulf %{{.*}}, %{{.*}} : f32
// WG: flash.wg.mod_scores %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[SCALE]] : !flash.fragment<64x128xf32, #flash.wgmma_accumulator>, !flash.fragment<64xi32, #flash.wgmma_rows> score_mod {
// WG: math.tanh
// WG: flash.yield %{{.*}} : f32
// WG: flash.wg.softmax_update
// WG-NOT: flash.mod_scores

// The window's key tiles start at kLo = max(m0 - 1024, 0) / 128 (block
// sparsity from the mask_mod): the counts of tiles shrink by it and the
// producer's loads and the consumers' first keys are kLo + j tiles in.
// WINDOW-LABEL: gpu.func @attention_sliding_window
// WINDOW: %[[BACK:.*]] = arith.subi %m0, %c1024_i32 : i32
// WINDOW: %[[FIRST:.*]] = arith.maxsi %[[BACK]], %c0_i32 : i32
// WINDOW: %[[KLO:.*]] = arith.divui %[[FIRST]], %c128_i32 : i32
// WINDOW: arith.subi %{{.*}}, %[[KLO]] : i32
// WINDOW: %[[KLOIDX:.*]] = arith.index_cast %[[KLO]] : i32 to index
// WINDOW: %[[TILE:.*]] = arith.addi %[[KLOIDX]], %{{.*}} : index
// WINDOW: arith.muli %[[TILE]], %c128 : index
// WINDOW: flash.wg.tma_load_tile
// The mask_mod is exactly the window: a thread whose later row sees the
// tile's first key within the window (first + 1024 >= max(row0, row1))
// sees every key of it, and skips the mask_mod (`whole`).
// WINDOW: %[[REACH:.*]] = arith.addi %[[FIRSTKEY:.*]], %c1024_i32 : i32
// WINDOW: %[[LATER:.*]] = arith.maxsi %{{.*}}, %{{.*}} : i32
// WINDOW: %[[WHOLE:.*]] = arith.cmpi sge, %[[REACH]], %[[LATER]] : i32
// WINDOW: flash.wg.mod_scores %{{.*}}, %{{.*}}, %[[FIRSTKEY]], {{.*}} whole %[[WHOLE]] : {{.*}} mask_mod {
// WINDOW: arith.constant 1024 : index
// WINDOW: flash.yield %{{.*}} : i1
// WINDOW: flash.wg.mask_keys

// Soft-capping: 64 tanh.approx a thread per S tile of 64 x 128 (two
// warpgroups' loops, the first tile peeled by the overlap).
// PTX: .entry attention_softcap(
// PTX: tanh.approx.f32
// PTX-NOT: __nv_tanhf
// JSON: "scale": 0.08838834

// WINDOWPTX: .entry attention_sliding_window(
// WINDOWPTX: setp

// A mask_mod that is more than the window (here also hiding keys of odd
// index) proves the window for the key range but not that a tile inside it
// is whole: no `whole`, the mask_mod runs on every tile.
// NOTWHOLE-LABEL: gpu.func @window_and_more
// NOTWHOLE: flash.wg.mod_scores
// NOTWHOLE-NOT: whole
// NOTWHOLE-SAME: mask_mod {
!t = memref<?x?x?x128xbf16>
func.func @window_and_more(%q: !t, %k: !t, %v: !t, %o: !t) {
  flash.attention %q, %k, %v -> %o
      {causal, config = #flash.config<block_m = 128, block_n = 128, stages = 2, warpgroups = 2>}
      : !t, !t, !t -> !t
    mask_mod {
    ^bb0(%b: index, %h: index, %qi: index, %kv: index):
      %w = arith.constant 256 : index
      %reach = arith.addi %kv, %w : index
      %in = arith.cmpi uge, %reach, %qi : index
      %c2 = arith.constant 2 : index
      %r = arith.remui %kv, %c2 : index
      %c0 = arith.constant 0 : index
      %even = arith.cmpi eq, %r, %c0 : index
      %both = arith.andi %in, %even : i1
      flash.yield %both : i1
    }
  return
}

// The chunked mask of kernels/attention_chunked.mlir (q / 8192 == kv /
// 8192, causal) on the GPU. Forward: each query block's key tiles run from
// its first row's chunk start to its last row's chunk end, within the
// causal bounds, and a thread whose two rows and the tile's first and last
// keys share one chunk passes `whole`, skipping the mask_mod. Backward:
// each key tile's query tiles are those of its chunk, and a pass whose
// query and key tiles share one chunk skips the mask_mod (its 32 results
// `true`).
// RUN: flash-opt %kernels/attention_chunked.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --check-prefix=FWD
// RUN: flash-opt %kernels/attention_chunked.mlir -flash-derive-backward=replace -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --check-prefix=BWD
// RUN: flashc %kernels/attention_chunked.mlir --backward --emit=ptx -o %t.ptx

// FWD-LABEL: gpu.func @attention_chunked
// FWD: %m0, %n_full, %n_hi = flash.wg.tile_bounds
// FWD: %[[FIRSTROW:.*]] = arith.maxsi %m0, %c0_i32 : i32
// FWD: %[[LASTROW:.*]] = arith.addi %m0, %c127_i32 : i32
// FWD: %[[LAST:.*]] = arith.maxsi %[[LASTROW]], %c0_i32 : i32
// FWD: %[[LASTCHUNK:.*]] = arith.divui %[[LAST]], %c8192_i32 : i32
// FWD: %[[NEXT:.*]] = arith.addi %[[LASTCHUNK]], %c1_i32 : i32
// FWD: %[[HI:.*]] = arith.muli %[[NEXT]], %c8192_i32 : i32
// FWD: %[[FIRSTCHUNK:.*]] = arith.divui %[[FIRSTROW]], %c8192_i32 : i32
// FWD: %[[LO:.*]] = arith.muli %[[FIRSTCHUNK]], %c8192_i32 : i32
// FWD: %[[FROM:.*]] = arith.maxsi %[[LO]], %c0_i32 : i32
// FWD: %[[LOTILE:.*]] = arith.divui %[[FROM]], %c128_i32 : i32
// FWD: %[[TO:.*]] = arith.maxsi %[[HI]], %c0_i32 : i32
// FWD: %[[HITILE:.*]] = arith.ceildivui %[[TO]], %c128_i32 : i32
// FWD: arith.minsi %n_full, %[[HITILE]] : i32
// FWD: arith.minsi %n_hi, %[[HITILE]] : i32
// FWD: %[[FIRSTKEY:.*]] = arith.muli %{{.*}}, %c128_i32 : i32
// FWD: %[[KEYFROM:.*]] = arith.maxsi %[[FIRSTKEY]], %c0_i32 : i32
// FWD: %[[KEYCHUNK:.*]] = arith.divui %[[KEYFROM]], %c8192_i32 : i32
// FWD: arith.cmpi eq, %{{.*}}, %[[KEYCHUNK]] : i32
// FWD: arith.cmpi eq, %{{.*}}, %[[KEYCHUNK]] : i32
// FWD: %[[LASTKEY:.*]] = arith.addi %[[FIRSTKEY]], %c127_i32 : i32
// FWD: arith.cmpi eq, %{{.*}}, %[[KEYCHUNK]] : i32
// FWD: %[[BOTH:.*]] = arith.andi
// FWD: %[[WHOLE:.*]] = arith.andi %[[BOTH]],
// FWD: flash.wg.mod_scores {{.*}} whole %[[WHOLE]] :

// BWD-LABEL: gpu.func @attention_chunked_backward(
// BWD: %[[K0:.*]] = arith.muli %{{.*}}, %c64_i32 : i32
// BWD: %[[CAUSALFIRST:.*]] = arith.divui %{{.*}}, %c64_i32 : i32
// BWD: %[[CHUNK:.*]] = arith.divui %[[K0]], %c8192_i32 : i32
// BWD: %[[BEGIN:.*]] = arith.muli %[[CHUNK]], %c8192_i32 : i32
// BWD: %[[LASTKEY:.*]] = arith.addi %[[K0]], %c63_i32 : i32
// BWD: %[[LASTCHUNK:.*]] = arith.divui %[[LASTKEY]], %c8192_i32 : i32
// BWD: %[[NEXT:.*]] = arith.addi %[[LASTCHUNK]], %c1_i32 : i32
// BWD: %[[CHUNKEND:.*]] = arith.muli %[[NEXT]], %c8192_i32 : i32
// BWD: %[[END:.*]] = arith.minsi %[[CHUNKEND]], %arg9 : i32
// BWD: %[[BEGINTILE:.*]] = arith.divui %[[BEGIN]], %c64_i32 : i32
// BWD: arith.maxsi %[[CAUSALFIRST]], %[[BEGINTILE]] : i32
// BWD: %[[ENDTILE:.*]] = arith.ceildivui %[[END]], %c64_i32 : i32
// BWD: arith.minsi %{{.*}}, %[[ENDTILE]] : i32
// BWD: %[[KEYCHUNK:.*]] = arith.divui %[[K0]], %c8192_i32 : i32
// BWD: arith.cmpi eq, %{{.*}}, %[[KEYCHUNK]] : i32
// BWD: %[[BOTH:.*]] = arith.andi
// BWD: %[[WHOLE:.*]] = arith.andi %[[BOTH]],
// BWD: %[[KEPT:.*]]:32 = scf.if %[[WHOLE]] -> (i1,
// BWD: } else {
// BWD: arith.divui %{{.*}}, %c8192 : index
// BWD: arith.xori %[[KEPT]]#0, %true

// The mods' captures and the attention sinks on the GPU. Each is a memref
// argument of the kernel after all the others, listed in kernel.json's
// "captures" with its role and passed by a "memref" parameter naming it
// (MLIR's expanded descriptor). flash.wg.mod_scores takes the captures and
// its regions read them; every index of such a load is clamped into the
// capture's bounds. The sink is loaded for the block's head in the
// epilogue and joins each row's denominator; the backward's pre kernel
// sums each warp's share of dsinks into a workspace that the post kernel
// adds up in a fixed order. A key_ranges table (the document kernel's
// block mask) bounds each tile's key tiles.
// RUN: flash-opt %kernels/attention_alibi.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --check-prefix=WG
// RUN: flash-opt %kernels/attention_sink.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --check-prefix=SINK
// RUN: flash-opt %kernels/attention_document.mlir -flash-tile | FileCheck %s --check-prefix=DOCTILE
// RUN: flash-opt %kernels/attention_document.mlir -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --check-prefix=DOCWG
// RUN: rm -rf %t.dir && mkdir -p %t.dir
// RUN: flashc %kernels/attention_document.mlir --emit=ptx -o %t.dir/document.ptx
// RUN: FileCheck %s --check-prefix=DOCPTX --input-file %t.dir/document.ptx
// RUN: FileCheck %s --check-prefix=DOCJSON --input-file %t.dir/document.json
// RUN: flashc %kernels/attention_sink.mlir --backward --emit=ptx -o %t.dir/sink_backward.ptx
// RUN: FileCheck %s --check-prefix=SINKBWD --input-file %t.dir/sink_backward.json
// RUN: flash-opt %kernels/attention_document.mlir -flash-derive-backward=replace -flash-tile | FileCheck %s --check-prefix=DOCBWDTILE
// RUN: flash-opt %kernels/attention_document.mlir -flash-derive-backward=replace -flash-tile -flash-fuse -flash-gpu-schedule -convert-flash-to-gpu="lower-warpgroup-ops=0" | FileCheck %s --check-prefix=DOCBWD
// RUN: flashc %kernels/attention_prefix_lm.mlir --backward --emit=ptx -o %t.dir/prefix_backward.ptx
// RUN: FileCheck %s --check-prefix=PREFIXBWD --input-file %t.dir/prefix_backward.json

// WG-LABEL: gpu.func @attention_alibi
// WG-SAME: %[[SLOPES:arg10]]: memref<?xf32>)
// WG-SAME: captures = [{dtype = "f32", rank = 1 : i64, role = "capture", shape = array<i64: -1>}]
// WG-SAME: {capture = 0 : i64, kind = "memref", rank = 1 : i64}]
// WG: flash.wg.mod_scores {{.*}} captures(%[[SLOPES]] : memref<?xf32>)
// WG-NEXT: ^bb0({{.*}}, %[[SL:.*]]: memref<?xf32>):
// WG-NEXT: memref.load %[[SL]][

// The sink in base 2 beside each row's max; 2^(m - top) scales acc, and
// the LSE is -inf where the sum is 0 or NaN (unordered).
// SINK-LABEL: gpu.func @attention_sink
// SINK-SAME: %[[SINKS:arg10]]: memref<?xf32>)
// SINK-SAME: role = "sinks"
// SINK: %[[SINK:.*]] = memref.load %[[SINKS]][%{{.*}}] : memref<?xf32>
// SINK: %[[SINK2:.*]] = arith.mulf %[[SINK]], %{{.*}} : f32
// SINK: %[[TOP:.*]] = arith.maximumf %{{.*}}, %[[SINK2]] : f32
// SINK: math.exp2
// SINK: math.exp2
// SINK: arith.cmpf ueq

// Each index of the document id loads clamped into the capture's sizes
// (the descriptor's size fields), the kernel's last parameters.
// DOCPTX-LABEL: .visible .entry attention_document(
// DOCPTX: .param .u64 .ptr .align 1 attention_document_param_10,
// DOCPTX: .param .u64 .ptr .align 1 attention_document_param_11,
// DOCPTX: .param .u64 attention_document_param_12,
// DOCPTX: .param .u64 attention_document_param_13,
// DOCPTX: .param .u64 attention_document_param_14,
// DOCPTX: .param .u64 attention_document_param_15,
// DOCPTX: .param .u64 attention_document_param_16,
// DOCPTX-NEXT: .param .u64 .ptr .align 1 attention_document_param_17,
// DOCPTX: .param .u64 attention_document_param_25
// DOCPTX-NEXT: )
// DOCPTX: min.s64
// DOCJSON: "captures": [
// DOCJSON-NEXT: {
// DOCJSON-NEXT: "dtype": "i32",
// DOCJSON-NEXT: "rank": 2,
// DOCJSON-NEXT: "role": "capture",
// DOCJSON-NEXT: "shape": [
// DOCJSON-NEXT: -1,
// DOCJSON-NEXT: -1
// DOCJSON: "capture": 0,
// DOCJSON-NEXT: "kind": "memref",
// DOCJSON-NEXT: "rank": 2
// DOCJSON: "capture": 1,
// DOCJSON-NEXT: "kind": "memref",
// DOCJSON-NEXT: "rank": 3

// The block mask: flash.mod_scores keeps key_ranges, and each tile's key
// tiles run from the smallest lo to the largest hi of the table entries
// over its rows (batch and entry clamped into the table), within those the
// causal mask leaves.
// DOCTILE: flash.mod_scores {{.*}} captures(%arg5, %arg6 : memref<?x?xi32>, memref<?x?x4xi32>) {key_ranges = array<i64: 1, 128>,
// DOCWG-LABEL: gpu.func @attention_document
// DOCWG-SAME: %[[DOC:arg10]]: memref<?x?xi32>, %[[RANGES:arg11]]: memref<?x?x4xi32>)
// DOCWG: %m0, %n_full, %n_hi = flash.wg.tile_bounds
// DOCWG: %[[RANGE:.*]]:4 = scf.for {{.*}} iter_args(%[[LO:.*]] = %c2147483647_i32, %[[HI:.*]] = %c0_i32, %{{.*}} = %c0_i32, %{{.*}} = %c2147483647_i32) -> (i32, i32, i32, i32) {
// DOCWG: memref.load %[[RANGES]][%{{.*}}, %{{.*}}, %c0] : memref<?x?x4xi32>
// DOCWG: memref.load %[[RANGES]][%{{.*}}, %{{.*}}, %c1] : memref<?x?x4xi32>
// DOCWG: memref.load %[[RANGES]][%{{.*}}, %{{.*}}, %c2] : memref<?x?x4xi32>
// DOCWG: memref.load %[[RANGES]][%{{.*}}, %{{.*}}, %c3] : memref<?x?x4xi32>
// DOCWG: %[[FROM:.*]] = arith.maxsi %[[RANGE]]#0, %c0_i32 : i32
// DOCWG: %[[LOTILE:.*]] = arith.divui %[[FROM]], %c128_i32 : i32
// DOCWG: %[[TO:.*]] = arith.maxsi %[[RANGE]]#1, %c0_i32 : i32
// DOCWG: %[[HITILE:.*]] = arith.ceildivui %[[TO]], %c128_i32 : i32
// DOCWG: arith.minsi %n_full, %[[HITILE]] : i32
// DOCWG: arith.minsi %n_hi, %[[HITILE]] : i32
// A key tile inside the block's full range skips the mask_mod: `whole`.
// DOCWG: %[[FROMFULL:.*]] = arith.cmpi sge, %[[FIRST:.*]], %[[RANGE]]#2 : i32
// DOCWG: %[[END:.*]] = arith.addi %[[FIRST]], %c128_i32 : i32
// DOCWG: %[[TOFULL:.*]] = arith.cmpi sle, %[[END]], %[[RANGE]]#3 : i32
// DOCWG: %[[WHOLE:.*]] = arith.andi %[[FROMFULL]], %[[TOFULL]] : i1
// DOCWG: flash.wg.mod_scores {{.*}} whole %[[WHOLE]] captures(%[[DOC]], %[[RANGES]] :

// Each launch's params come before its role.
// SINKBWD: "captures": [
// SINKBWD: "role": "sinks"
// SINKBWD: "role": "dsinks"
// SINKBWD: "launches": [
// SINKBWD: "name": "sink_partials"
// SINKBWD: "capture": 0,
// SINKBWD: "role": "pre"
// SINKBWD-NOT: "capture"
// SINKBWD: "role": "main"
// SINKBWD: "name": "sink_partials"
// SINKBWD: "capture": 1,
// SINKBWD: "role": "post"

// The mask's capture goes to the main kernel only.
// PREFIXBWD: "launches": [
// PREFIXBWD-NOT: "capture":
// PREFIXBWD: "role": "pre"
// PREFIXBWD: "capture": 0,
// PREFIXBWD: "role": "main"
// PREFIXBWD-NOT: "capture":
// PREFIXBWD: "role": "post"

// The backward keeps the forward's key_ranges: each key tile's query tiles
// run from the first table entry whose [lo, hi) reaches it to the last
// (each warp scans the batch's entries, lane by lane, and reduces with
// redux.sync), within those the causal mask leaves; a query tile inside
// the key tile's full range skips the mask_mod (its 32 results `true`).
// DOCBWDTILE: flash.mod_scores {{.*}} captures(%arg9, %arg10 : memref<?x?xi32>, memref<?x?x4xi32>) {key_ranges = array<i64: 1, 128>,
// DOCBWD-LABEL: gpu.func @attention_document_backward(
// DOCBWD-SAME: %[[RANGES:arg[0-9]+]]: memref<?x?x4xi32>)
// DOCBWD: %[[K0:.*]] = arith.muli %{{.*}}, %c64_i32 : i32
// DOCBWD: %[[FIRSTCAUSAL:.*]] = arith.divui %{{.*}}, %c64_i32 : i32
// DOCBWD: %[[LANE:.*]] = arith.remui %{{.*}}, %c32_i32 : i32
// DOCBWD: %[[ENTRIES:.*]] = arith.ceildivui %{{.*}}, %c128_i32 : i32
// DOCBWD: %[[KEND:.*]] = arith.addi %[[K0]], %c64_i32 : i32
// DOCBWD: %[[SCAN:.*]]:2 = scf.for %[[E:.*]] = %{{.*}} to %{{.*}} step %c32 iter_args(%{{.*}} = %c2147483647_i32, %{{.*}} = %c-1_i32) -> (i32, i32) {
// DOCBWD-DAG: %[[HI:.*]] = memref.load %[[RANGES]][%{{.*}}, %[[E]], %c1] : memref<?x?x4xi32>
// DOCBWD-DAG: arith.cmpi sgt, %[[HI]], %[[K0]] : i32
// DOCBWD-DAG: %[[LO:.*]] = memref.load %[[RANGES]][%{{.*}}, %[[E]], %c0] : memref<?x?x4xi32>
// DOCBWD-DAG: arith.cmpi slt, %[[LO]], %[[KEND]] : i32
// DOCBWD: %[[FIRST:.*]] = nvvm.redux.sync  min %[[SCAN]]#0, %c-1_i32 : i32 -> i32
// DOCBWD: %[[LAST:.*]] = nvvm.redux.sync  max %[[SCAN]]#1, %c-1_i32 : i32 -> i32
// DOCBWD: %[[ANY:.*]] = arith.cmpi sge, %[[LAST]], %c0_i32 : i32
// DOCBWD: %[[FROM:.*]] = arith.select %[[ANY]], %[[FIRST]], %c0_i32 : i32
// DOCBWD: %[[BEGIN:.*]] = arith.muli %[[FROM]], %c128_i32 : i32
// DOCBWD: %[[BEGINTILE:.*]] = arith.divui %[[BEGIN]], %c64_i32 : i32
// DOCBWD: arith.maxsi %[[FIRSTCAUSAL]], %[[BEGINTILE]] : i32
// DOCBWD: %[[FULL:.*]]:2 = scf.for
// DOCBWD: memref.load %[[RANGES]][%{{.*}}, %{{.*}}, %c2] : memref<?x?x4xi32>
// DOCBWD: memref.load %[[RANGES]][%{{.*}}, %{{.*}}, %c3] : memref<?x?x4xi32>
// DOCBWD: %[[WHOLE:.*]] = arith.andi
// DOCBWD: %[[KEPT:.*]]:32 = scf.if %[[WHOLE]] -> (i1,
// DOCBWD: } else {
// DOCBWD: memref.load %{{.*}} : memref<?x?xi32>
// DOCBWD: arith.xori %[[KEPT]]#0, %true

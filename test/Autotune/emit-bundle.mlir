// REQUIRES: ptxas
// flash-tune --emit-bundle compiles each candidate (cubin + kernel.json)
// and writes the manifest the GPU-side timer reads.

// RUN: rm -rf %t && flash-tune %S/Inputs/kernel.mlir --shape 1,16,1024,64 --shape 2,16,4096,64 --emit-bundle %t --block-m 128 --block-n 128 --stages 2 --warpgroups 2 --overlap 1 --pingpong 1 --split-release 1,0 -j 1 | FileCheck %s --check-prefix=LOG
// LOG: compiling 1/2: c000{{[01]}} bm128 bn128 s2 wg2{{( -sr)?}}: ok
// LOG: compiling 2/2: c000{{[01]}} bm128 bn128 s2 wg2{{( -sr)?}}: ok
// LOG: 2 configs -> 2 candidates in {{.*}} (0 pruned, reasons in manifest.json)

// RUN: FileCheck %s --input-file %t/manifest.json
// CHECK: "arch": "sm_90a"
// CHECK: "binary": "c0000/kernel.cubin"
// CHECK: "split_release": 1
// CHECK: "id": "c0000"
// CHECK-NEXT: "registers": {{[1-9][0-9]*}}
// CHECK-NEXT: "spill_bytes": 0
// CHECK: "binary": "c0001/kernel.cubin"
// CHECK: "split_release": 0
// CHECK: "causal": false
// CHECK-NEXT: "dtype": "bf16"
// CHECK-NEXT: "format": "flashc-tune-bundle"
// CHECK-NEXT: "format_version": 1
// CHECK-NEXT: "head_dim": 64
// CHECK-NEXT: "kernel": "attention_d64"
// CHECK-NEXT: "pruned": []
// CHECK-NEXT: "shapes": [
// CHECK-NEXT: [
// CHECK-NEXT: 1,
// CHECK-NEXT: 16,
// CHECK-NEXT: 1024,
// CHECK-NEXT: 64
// CHECK: "source_hash": "4fd6f2c6c1550445110a092a9cb3f52f2179498157a3ff46bda9d917a3ba3535"

// RUN: FileCheck %s --input-file %t/c0001/kernel.json --check-prefix=META
// META: "binary": "kernel.cubin"
// META: "split_release": 0

// Emitting again into a bundle directory replaces the earlier bundle: no
// stale candidate is left beside the new manifest.
// RUN: flash-tune %S/Inputs/kernel.mlir --shape 1,16,1024,64 --emit-bundle %t --block-m 128 --block-n 128 --stages 2 --warpgroups 2 --overlap 1 --pingpong 1 --split-release 1 -j 1 | FileCheck %s --check-prefix=AGAIN
// AGAIN: 1 configs -> 1 candidates
// RUN: test -f %t/c0000/kernel.cubin && not test -e %t/c0001

// A directory that holds something else is never cleaned.
// RUN: rm -rf %t.other && mkdir -p %t.other && touch %t.other/notes.txt
// RUN: not flash-tune %S/Inputs/kernel.mlir --shape 1,16,1024,64 --emit-bundle %t.other --block-m 128 --block-n 128 --stages 2 --warpgroups 2 2>&1 | FileCheck %s --check-prefix=OTHER
// OTHER: error: '{{.*}}.other' is not empty and holds no flash-tune bundle
// RUN: test -f %t.other/notes.txt

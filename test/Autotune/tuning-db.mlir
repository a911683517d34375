// flash-tune --show prints a database; flashc --tuning-db compiles the entry
// of the shape's bucket; missing entries, corrupt and foreign files are
// errors that name the file, and flash-tune leaves such a file alone.

// RUN: flash-tune --show %S/Inputs/tuning.json | FileCheck %s --check-prefix=SHOW
// SHOW: kernel hash arch gpu bucket config median_ms TFLOP/s cands
// SHOW-NEXT: attention_d64 4fd6f2c6 sm_90a NVIDIA H200 N<=1024 D=64 BH<=32 bm128 bn128 s2 wg2 0.0500 343.6 31
// SHOW-NEXT: attention_d64 4fd6f2c6 sm_90a NVIDIA H200 N<=4096 D=64 BH<=32 bm64 bn176 s3 wg1 -ov -pp 0.5000 550.0 31

// N = 3000 and B*H = 24 fall into the N<=4096, BH<=32 bucket.
// RUN: flashc %S/Inputs/kernel.mlir --tuning-db %S/Inputs/tuning.json --shape 2,12,3000,64 --emit=tile | FileCheck %s --check-prefix=TILE
// TILE: flash.config = #flash.config<block_m = 64, block_n = 176, stages = 3, overlap = false, pingpong = false>

// The schedule options of the entry reach the conversion too.
// RUN: flashc %S/Inputs/kernel.mlir --tuning-db %S/Inputs/tuning.json --shape 2,16,1024,64 --gpu "NVIDIA H200" --emit=mlir | FileCheck %s --check-prefix=GPU
// GPU: config = {accumulator_regs = 128 : i64, block_m = 128 : i64, block_n = 128 : i64, {{.*}}overlap = 1 : i64, persistent = 0 : i64, pingpong = 1 : i64{{.*}}split_release = 1 : i64, stages = 2 : i64, tma_store_o = 1 : i64, warpgroups = 2 : i64}
// RUN: flashc %S/Inputs/kernel.mlir --tuning-db %S/Inputs/tuning.json --shape 2,16,4096,64 --emit=mlir | FileCheck %s --check-prefix=GPU2
// GPU2: config = {accumulator_regs = 120 : i64, block_m = 64 : i64, block_n = 176 : i64, {{.*}}overlap = 0 : i64, persistent = 0 : i64, pingpong = 0 : i64{{.*}}stages = 3 : i64, tma_store_o = 1 : i64, warpgroups = 1 : i64}

// kernel.json names the entry that chose the config.
// RUN: flashc %S/Inputs/kernel.mlir --tuning-db %S/Inputs/tuning.json --shape 2,16,1024,64 -o %t.ptx
// RUN: FileCheck %s --check-prefix=META < %t.json
// META: "block_n": 128
// META: "tuned_for": {
// META-NEXT: "shape": [
// META-NEXT: 2,
// META-NEXT: 16,
// META-NEXT: 1024,
// META-NEXT: 64
// META-NEXT: ],
// META-NEXT: "tuning_db": "{{.*}}tuning.json"

// RUN: not flashc %S/Inputs/kernel.mlir --tuning-db %S/Inputs/tuning.json --shape 2,16,16384,64 --emit=tile 2>&1 | FileCheck %s --check-prefix=MISS
// MISS: error: {{.*}}tuning.json: no tuning entry for shape 2,16,16384,64 (bucket N<=16384 D=64 BH<=32, arch sm_90a) of this kernel (source hash 4fd6f2c6c155); it has:
// MISS-NEXT: sm_90a NVIDIA H200 N<=1024 D=64 BH<=32

// RUN: not flashc %S/Inputs/kernel.mlir --tuning-db %S/Inputs/tuning.json --shape 2,16,4096,64 --gpu "NVIDIA H100" --emit=tile 2>&1 | FileCheck %s --check-prefix=GPUMISS
// GPUMISS: no tuning entry for shape 2,16,4096,64 (bucket N<=4096 D=64 BH<=32, arch sm_90a, gpu NVIDIA H100)

// RUN: not flashc %kernels/attention_d64.mlir --tuning-db %S/Inputs/tuning.json --shape 2,16,4096,64 --emit=tile 2>&1 | FileCheck %s --check-prefix=EDITED
// EDITED: the database has none for this source (was the kernel edited after tuning?)

// RUN: not flashc %S/Inputs/kernel.mlir --tuning-db %S/Inputs/tuning.json --emit=tile 2>&1 | FileCheck %s --check-prefix=NOSHAPE
// NOSHAPE: error: --tuning-db needs --shape B,H,N,D to pick an entry
// RUN: not flashc %S/Inputs/kernel.mlir --tuning-db %S/Inputs/tuning.json --shape 2,16,4096,64 --block-n 64 --emit=tile 2>&1 | FileCheck %s --check-prefix=BOTH
// BOTH: error: --tuning-db and --block-m/--block-n/--stages/--warpgroups/--overlap/--pingpong/--split-release/--persistent/--tma-store-o/--dynamic-schedule/--speculative-exp both choose the config
// RUN: not flashc %S/Inputs/kernel.mlir --shape 2,16,4096,64 --emit=tile 2>&1 | FileCheck %s --check-prefix=NODB
// NODB: error: --shape and --gpu select a --tuning-db entry: give --tuning-db

// RUN: not flashc %S/Inputs/kernel.mlir --tuning-db %S/Inputs/corrupt.json --shape 2,16,4096,64 --emit=tile 2>&1 | FileCheck %s --check-prefix=CORRUPT
// CORRUPT: error: {{.*}}corrupt.json: not valid JSON
// RUN: not flash-tune --show %S/Inputs/foreign.json 2>&1 | FileCheck %s --check-prefix=FOREIGN
// FOREIGN: error: {{.*}}foreign.json: not a flashc-tuning-db file (its "format" is "flashc-kernel")

// flash-tune refuses to update a corrupt database before compiling anything,
// and leaves it byte for byte as it was.
// RUN: cp %S/Inputs/corrupt.json %t.json
// RUN: not flash-tune %S/Inputs/kernel.mlir --shape 1,1,128,64 -o %t.json 2>&1 | FileCheck %s --check-prefix=KEEP
// KEEP: error: {{.*}}.json: not valid JSON
// KEEP: '{{.*}}.json' is left as it is: pass another -o or move the file away
// RUN: cmp %S/Inputs/corrupt.json %t.json

// --select replays flash-tune-run's choice on recorded timings: the fastest
// fully timed candidate that passed the check wins; a screened probe (a
// short burst) and a wrong result never do; a shape nobody passed gets no
// entry. Then flashc compiles the winner.
// RUN: rm -f %t.db.json
// RUN: flash-tune --select %S/Inputs/timings.json -o %t.db.json | FileCheck %s --check-prefix=SELECT
// SELECT: 4,32,4096,64: c0001 bm256 bn96 s1 wg4 -ov -pp -tma 1.2600 ms (3 timed, 1 wrong, 0 errors)
// SELECT: 1,32,16384,64: no candidate passed (0 wrong, 1 errors)
// SELECT: 1 entries written to
// RUN: flashc %S/Inputs/kernel.mlir --tuning-db %t.db.json --shape 4,32,4096,64 --emit=tile | FileCheck %s --check-prefix=SELECTED
// SELECTED: flash.config = #flash.config<block_m = 256, block_n = 96, stages = 1, warpgroups = 4, overlap = false, pingpong = false, tma_store_o = false>
// A timings file of a run that stopped at a hung kernel is refused.
// RUN: sed -e 's/"causal": false,/"causal": false, "incomplete": "c0009 hangs",/' %S/Inputs/timings.json > %t.partial.json
// RUN: not flash-tune --select %t.partial.json -o %t.db2.json 2>&1 | FileCheck %s --check-prefix=PARTIAL
// PARTIAL: error: {{.*}}partial.json is from a run that stopped early (c0009 hangs)

// bench/tuning/h200-fa3.json is the database bench/RESULTS.md's tuned
// bf16 and f16 tables were compiled from; it is keyed by the hash of each
// kernels/ source (comments included), so editing a kernel without
// re-tuning fails here.
// RUN: flashc %kernels/attention_d64.mlir --tuning-db %kernels/../bench/tuning/h200-fa3.json --shape 1,32,16384,64 --emit=tile | FileCheck %s --check-prefix=SHIPPED
// SHIPPED: flash.config = #flash.config<block_m = 256, block_n = 96, stages = 1, warpgroups = 4, overlap = false, pingpong = false, tma_store_o = false>
// RUN: flashc %kernels/attention_causal.mlir --tuning-db %kernels/../bench/tuning/h200-fa3.json --shape 1,16,16384,128 --emit=tile | FileCheck %s --check-prefix=SHIPPED-CAUSAL
// SHIPPED-CAUSAL: flash.config = #flash.config<block_m = 128, block_n = 176, warpgroups = 2>
// RUN: flashc %kernels/attention_causal.mlir --tuning-db %kernels/../bench/tuning/h200-fa3.json --shape 4,16,4096,128 --emit=tile | FileCheck %s --check-prefix=SHIPPED-PERSISTENT
// SHIPPED-PERSISTENT: flash.config = #flash.config<block_m = 128, block_n = 128, warpgroups = 2, persistent = true>
// The D = 64 entries were tuned with the TMA store of O on and off; with
// two consumers global stores won. At N <= 1024 bf16 keeps the static
// causal pairs (the re-tune of the dynamic flag); at N = 2048/4096 claimed
// tiles; at both, three consumers of block_m 192 without ping-pong (N = 4096
// from flash-tune; N = 2048 from ab.py at the power cap once they walk their
// own key ranges). Why: docs/decisions.md, "O stored by TMA, not at D64",
// "Causal pairs and claimed tiles", "Database entries chosen by ab.py".
// RUN: flashc %kernels/attention_d64_causal.mlir --tuning-db %kernels/../bench/tuning/h200-fa3.json --shape 16,32,1024,64 --emit=tile | FileCheck %s --check-prefix=SHIPPED-GSTORE
// SHIPPED-GSTORE: flash.config = #flash.config<block_m = 128, block_n = 128, stages = 4, warpgroups = 2, persistent = true, tma_store_o = false, dynamic_schedule = false>
// RUN: flashc %kernels/attention_d64_causal.mlir --tuning-db %kernels/../bench/tuning/h200-fa3.json --shape 8,32,2048,64 --emit=tile | FileCheck %s --check-prefix=SHIPPED-CLAIMED
// SHIPPED-CLAIMED: flash.config = #flash.config<block_m = 192, block_n = 128, stages = 4, warpgroups = 3, overlap = false, pingpong = false, persistent = true, tma_store_o = false>
// D = 256 causal, re-tuned on the sections grid: overlapped one block per
// tile everywhere, block_n 80 at N >= 4096, 64 below.
// RUN: flashc %kernels/attention_d256_causal.mlir --tuning-db %kernels/../bench/tuning/h200-fa3.json --shape 2,8,8192,256 --emit=tile | FileCheck %s --check-prefix=SHIPPED-D256C
// SHIPPED-D256C: flash.config = #flash.config<block_m = 128, block_n = 80, warpgroups = 2>
// RUN: flashc %kernels/attention_d256_causal.mlir --tuning-db %kernels/../bench/tuning/h200-fa3.json --shape 16,8,1024,256 --emit=tile | FileCheck %s --check-prefix=SHIPPED-D256C-SMALL
// SHIPPED-D256C-SMALL: flash.config = #flash.config<block_m = 128, block_n = 64, warpgroups = 2>
// The f16 files are tuned on their own (their entries sit in the same
// database under their own source hashes): at D = 64, N = 2048 f16 keeps
// the TMA store of O and overlap that the bf16 pick turns off.
// RUN: flashc %kernels/attention_f16_d64.mlir --tuning-db %kernels/../bench/tuning/h200-fa3.json --shape 8,32,2048,64 --emit=tile | FileCheck %s --check-prefix=SHIPPED-F16
// SHIPPED-F16: flash.config = #flash.config<block_m = 256, block_n = 64, stages = 4, warpgroups = 4, pingpong = false>
// RUN: flashc %kernels/attention_d64.mlir --tuning-db %kernels/../bench/tuning/h200-fa3.json --shape 8,32,2048,64 --emit=tile | FileCheck %s --check-prefix=SHIPPED-BF16
// SHIPPED-BF16: flash.config = #flash.config<block_m = 256, block_n = 64, warpgroups = 4, overlap = false, pingpong = false, tma_store_o = false>
// The bf16 D = 128 entries were re-tuned once three consumers could store
// O by TMA: at N >= 2048 block_m 192 with the TMA store (no
// tma_store_o = false before the closing bracket).
// RUN: flashc %kernels/attention.mlir --tuning-db %kernels/../bench/tuning/h200-fa3.json --shape 4,16,4096,128 --emit=tile | FileCheck %s --check-prefix=SHIPPED-D128
// SHIPPED-D128: flash.config = #flash.config<block_m = 192, block_n = 80, warpgroups = 3, pingpong = false>}

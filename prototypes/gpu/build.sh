#!/usr/bin/env bash
# Generate, lower and assemble the prototype kernels.  Needs MLIR/LLVM 22 and CUDA 13 (ptxas).
# Usage: prototypes/gpu/build.sh            (all variants below)
#        VARIANTS="name:D:BM:BN:stages:causal:ws:overlap:pingpong:split ..." prototypes/gpu/build.sh
set -euo pipefail
cd "$(dirname "$0")"
MLIR_OPT=${MLIR_OPT:-/usr/lib/llvm-22/bin/mlir-opt}
PTXAS=${PTXAS:-/usr/local/cuda/bin/ptxas}
# name:D:block_m:block_n:stages:causal:ws:overlap:pingpong[:split]
VARIANTS=${VARIANTS:-"ovpps_s2:128:128:128:2:0:1:1:1:1 ovpps_n176_causal:128:128:176:2:1:1:1:1:1 ovpps_s3:128:128:128:3:0:1:1:1:1 ovpps_n176:128:128:176:2:0:1:1:1:1 ovpps_s3_causal:128:128:128:3:1:1:1:1:1 ovpp_s3:128:128:128:3:0:1:1:1:0 ovpp_s3_causal:128:128:128:3:1:1:1:1:0 ws_s2:128:128:128:2:0:1:0:0:0 ws_s2_causal:128:128:128:2:1:1:0:0:0"}
mkdir -p build
for v in $VARIANTS; do
  IFS=: read -r name D BM BN ST CA WS OV PP SP <<<"$v"
  python3 gen.py --D "$D" --block-m "$BM" --block-n "$BN" --stages "$ST" --causal "$CA" --ws "$WS" --overlap "${OV:-0}" --pingpong "${PP:-0}" --split "${SP:-0}" \
      --name fa_fwd --meta "build/$name.json" > "build/$name.mlir"
  "$MLIR_OPT" "build/$name.mlir" \
      -gpu-lower-to-nvvm-pipeline="cubin-chip=sm_90a cubin-features=+ptx80 opt-level=3 cubin-format=isa" \
      -o "build/$name.lowered.mlir"
  python3 extract_ptx.py "build/$name.lowered.mlir" "build/$name.ptx"
  "$PTXAS" -arch=sm_90a -v "build/$name.ptx" -o "build/$name.cubin" 2> "build/$name.ptxas.txt"
  echo "$name: $(grep -o 'Used [0-9]* registers' build/$name.ptxas.txt), $(grep -o '[0-9]* bytes spill stores' build/$name.ptxas.txt), wgmma=$(grep -c 'wgmma.mma_async' build/$name.ptx)"
  grep -i warn "build/$name.ptxas.txt" || true
done

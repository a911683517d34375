#!/usr/bin/env bash
# compile-kernels.sh OUTDIR [FLASHC] - compiles every kernels/*.mlir with
# flashc to OUTDIR/<name>.cubin + <name>.json (for a GPU host, see
# prepare-gpu-host.sh's FLASHC_EXTRA_KERNELS) and prints ptxas's register
# and spill line for each.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$1
FLASHC=${2:-$ROOT/build/bin/flashc}
mkdir -p "$OUT"
for source in "$ROOT"/kernels/*.mlir; do
  name=$(basename "$source" .mlir)
  report=$("$FLASHC" "$source" -o "$OUT/$name.cubin" --resource-usage 2>&1)
  echo "$name: $(echo "$report" | grep -E 'registers|spill' | tr -s ' ' | tr '\n' ' ')"
done

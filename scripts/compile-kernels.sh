#!/usr/bin/env bash
# compile-kernels.sh OUTDIR [FLASHC] - compiles every kernels/*.mlir with
# flashc to OUTDIR/<name>.cubin + <name>.json (for a GPU host, see
# prepare-gpu-host.sh's FLASHC_EXTRA_KERNELS) and prints ptxas's register
# and spill line for each, and ptxas's line if it serialised the wgmma chain
# (C7513, C7518, ...; TUNING_DB: see the end).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=$1
FLASHC=${2:-$ROOT/build/bin/flashc}
mkdir -p "$OUT"
# compile NAME SOURCE [FLASHC ARGS...]: OUT/NAME.cubin, and ptxas's line.
compile() {
  local name=$1 source=$2 report
  shift 2
  # A kernel the GPU path refuses (its located error) is reported, not fatal.
  if ! report=$("$FLASHC" "$source" "$@" -o "$OUT/$name.cubin" --resource-usage 2>&1); then
    echo "$name: not compiled: $(echo "$report" | grep -m1 'error:')"
    return 0
  fi
  echo "$name: $(echo "$report" | grep -E 'registers|spill|instructions are serialized' | tr -s ' ' | tr '\n' ' ')"
}
for source in "$ROOT"/kernels/*.mlir; do
  compile "$(basename "$source" .mlir)" "$source"
done
# With TUNING_DB set, also one kernel per entry of that database whose source
# is in kernels/: OUTDIR/<kernel>_n<N>.cubin, compiled with --tuning-db for
# the entry's shape (kernel.json's tuned_for; bench/compare.py uses it for
# exactly that shape).
if [[ -n "${TUNING_DB:-}" ]]; then
  python3 - "$TUNING_DB" <<'PY' |
import json, sys
for e in json.load(open(sys.argv[1]))["entries"]:
    print(e["kernel"], ",".join(str(x) for x in e["shape"]))
PY
  while read -r kernel shape; do
    source=$ROOT/kernels/$kernel.mlir
    [[ -f $source ]] || continue
    compile "${kernel}_n$(echo "$shape" | cut -d, -f3)" "$source" \
      --tuning-db "$TUNING_DB" --shape "$shape"
  done
fi

#!/usr/bin/env bash
# The issue-6 tuning run: six FA3-paper shapes (bf16, non-causal, hidden
# 2048: D = 64 with 32 heads, D = 128 with 16 heads, N = 1024/4096/16384).
# Each shape is tuned on its own, as a user would, in two steps:
#
#   bench/tune-shapes.sh emit DIR [flash-tune]   # compiler host: bundles
#   bench/tune-shapes.sh run DIR OUT             # GPU host: time, pick
#
# `emit-fa3 DIR [flash-tune]` instead writes one bundle per bf16 kernel of
# kernels/ (D = 64/128/256, causal and not, persistent searched too, and at
# D = 64 the TMA store of O on and off; with FA3_DTYPE=f16 the f16 kernels)
# holding all six FA3 shapes
# (N = 512..16384), DIR/fa3-<kernel>/, for bench/compare.py's table; `run`
# writes their winners to OUT/tuning-fa3.json.
#
# `emit` writes DIR/<d>-n<N>/ (the default search space) plus
# DIR/<d>-full/ (ping-pong and split release searched too, all three
# shapes) and DIR/flash-tune-run; `run` times every bundle and writes
# OUT/tuning.json (the six winners), OUT/tuning-full.json, and per bundle
# its log and timings. Both steps print their wall time per bundle.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:?usage: tune-shapes.sh emit DIR [flash-tune] | run DIR OUT}
dir=${2:?bundle directory}
third=${3:-}
shapes=(
  "d128 attention.mlir 16,16,1024,128" "d128 attention.mlir 4,16,4096,128"
  "d128 attention.mlir 1,16,16384,128" "d64 attention_d64.mlir 16,32,1024,64"
  "d64 attention_d64.mlir 4,32,4096,64" "d64 attention_d64.mlir 1,32,16384,64")
bundles=()
for spec in "${shapes[@]}"; do
  set -- $spec
  bundles+=("$1-n$(echo "$3" | cut -d, -f3)")
done

case $mode in
emit)
  tune=${third:-$root/build/bin/flash-tune}
  mkdir -p "$dir"
  for i in "${!shapes[@]}"; do
    set -- ${shapes[$i]}
    start=$(date +%s%N)
    "$tune" "$root/kernels/$2" --shape "$3" --emit-bundle "$dir/${bundles[$i]}" | tail -1
    echo "emit ${bundles[$i]}: $(( ($(date +%s%N) - start) / 1000000 )) ms"
  done
  for d in d128 d64; do
    if [ $d = d128 ]; then k=attention.mlir h=16; else k=attention_d64.mlir h=32; fi
    "$tune" "$root/kernels/$k" --shape 16,$h,1024,${d#d} --shape 4,$h,4096,${d#d} \
      --shape 1,$h,16384,${d#d} --pingpong 1,0 --split-release 1,0 \
      --emit-bundle "$dir/$d-full" | tail -1
  done
  cp "$(dirname "$tune")/flash-tune-run" "$dir/"
  ;;
emit-fa3)
  tune=${third:-$root/build/bin/flash-tune}
  mkdir -p "$dir"
  dtype=${FA3_DTYPE:-bf16}
  case $dtype in
  bf16) prefix=attention ;;
  f16) prefix=attention_f16 ;;
  *) echo "FA3_DTYPE must be bf16 or f16, not $dtype" >&2; exit 2 ;;
  esac
  for k in $prefix ${prefix}_causal ${prefix}_d64 ${prefix}_d64_causal \
           ${prefix}_d256 ${prefix}_d256_causal; do
    d=$(sed -n "s/.*memref<?x?x?x\([0-9]*\)x$dtype>.*/\1/p" "$root/kernels/$k.mlir" | head -1)
    args=()
    for n in 512 1024 2048 4096 8192 16384; do
      args+=(--shape "$((16384 / n)),$((2048 / d)),$n,$d")
    done
    # O by global stores measured faster at D = 64 (docs/decisions.md): the
    # D = 64 kernels search the TMA store on and off.
    store=()
    [[ $d == 64 ]] && store=(--tma-store-o 1,0)
    start=$(date +%s%N)
    "$tune" "$root/kernels/$k.mlir" "${args[@]}" --persistent 0,1 "${store[@]}" \
      --emit-bundle "$dir/fa3-$k" | tail -1
    echo "emit fa3-$k: $(( ($(date +%s%N) - start) / 1000000 )) ms"
  done
  cp "$(dirname "$tune")/flash-tune-run" "$dir/"
  ;;
run)
  out=${third:?output directory}
  mkdir -p "$out"
  for b in "${bundles[@]}" d128-full d64-full $(cd "$dir" && ls -d fa3-* 2>/dev/null); do
    [ -f "$dir/$b/manifest.json" ] || continue
    db=$out/tuning.json
    case $b in *-full) db=$out/tuning-full.json ;; fa3-*) db=$out/tuning-fa3.json ;; esac
    start=$(date +%s%N)
    status=0
    "$dir/flash-tune-run" "$dir/$b" -o "$db" --timings "$out/$b.timings.json" \
      > "$out/$b.log" 2>&1 || status=$?
    echo "run $b: exit $status, $(( ($(date +%s%N) - start) / 1000000 )) ms"
    grep -E "ms \(|no candidate|error" "$out/$b.log" | tail -4 || true
  done
  ;;
*)
  echo "usage: tune-shapes.sh emit DIR [flash-tune] | run DIR OUT" >&2
  exit 2
  ;;
esac

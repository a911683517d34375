#!/usr/bin/env bash
# Run on the GPU host from the repo root: checks each variant in its own process (a hang or fault
# cannot take the others down), then times the passing ones beside SDPA, then dumps SASS.
cd "$(dirname "$0")"
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
VARS=${VARS:-$(ls build/*.cubin | xargs -n1 basename | sed 's/.cubin//')}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$OUT/run_log.txt"
pass=""
for v in $VARS; do
  if timeout ${CHECK_TIMEOUT:-90} python3 run.py --variants "$v" --no-bench --out "$OUT" > "$OUT/check_$v.txt" 2>&1; then :; fi
  grep -E "check|diag|FAIL|PASS|Error|error" "$OUT/check_$v.txt" | tail -n 30
  if grep -q "ALL CHECKS PASS" "$OUT/check_$v.txt"; then pass="$pass,$v"; fi
  rm -f "$OUT/check_$v.txt"
done
echo "passing: $pass"
if [ -n "$pass" ]; then
  timeout ${BENCH_TIMEOUT:-150} python3 run.py --variants "${pass#,}" --no-check --out "$OUT" 2>&1 | grep -E "bench|loaded|fail|Error"
fi
for v in $VARS; do
  cuobjdump --dump-sass "build/$v.cubin" > "/tmp/$v.sass" 2>&1
  echo "SASS $v: HGMMA=$(grep -c HGMMA /tmp/$v.sass) UTMALDG=$(grep -c UTMALDG /tmp/$v.sass) SYNCS=$(grep -c SYNCS /tmp/$v.sass) MUFU.EX2=$(grep -c MUFU.EX2 /tmp/$v.sass) F2FP.BF16=$(grep -c 'F2FP.BF16' /tmp/$v.sass) USETMAXREG=$(grep -c USETMAXREG /tmp/$v.sass) LDL/STL=$(grep -cE 'LDL|STL' /tmp/$v.sass)" | tee -a "$OUT/run_log.txt"
done
for s in ${SASS_SAVE:-ovpps_s2}; do [ -f "/tmp/$s.sass" ] && cp "/tmp/$s.sass" "$OUT/$s.sass"; done

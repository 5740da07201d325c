#!/usr/bin/env bash
# Branch `route` on one H200 (carry .gpu and this checkout; run from this checkout's root after
# `source .gpu/env.sh`): the cuda tests of the lean router and the pinned uploads, auto_direct
# (routing cost, cpu calls after GPU calls), bench_upload, the APSP example, then bench_auto with
# what is left of the deadline. Results and one log in $OUT.
set -o pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # this checkout before any other copy
LOG="$OUT/route_h200.log"
DEADLINE=${DEADLINE:-280}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$LOG"
git -C . log -1 --format=%H 2>/dev/null | tee -a "$LOG"
STEPS=",${STEPS:-tests,direct,upload,apsp,auto},"  # which steps run (e.g. STEPS=direct,auto)
step() {  # step NAME SECONDS CMD...: run within the deadline, output to the log, tail printed
  local name=$1 limit=$2 left=$((DEADLINE - SECONDS))
  shift 2
  [[ $STEPS == *",$name,"* ]] || return 0
  ((left < limit)) && limit=$left
  ((limit < 5)) && { echo "$name skipped (deadline)" | tee -a "$LOG"; return; }
  local t0=$SECONDS
  echo "=== $name (limit ${limit}s)" >>"$LOG"
  timeout "$limit" "$@" >>"$LOG.part" 2>&1
  local rc=$?
  grep -v '^calibrate:' "$LOG.part" | tr '\r' '\n' >>"$LOG"
  rm -f "$LOG.part"
  echo "$name rc=$rc $((SECONDS - t0))s"
  grep -v '^\[auto\]' "$LOG" | tail -n "${TAIL:-12}" | sed "s/^/  /"
}
step tests 50 env PYTROPICAL_REQUIRE=cuda python3 -m pytest -q -p no:cacheprovider -k "not wgpu" \
  tests/test_pinned_upload.py tests/test_route_lean.py tests/test_transfers.py
step direct 30 python3 benchmarks/auto_direct.py
step upload 25 python3 benchmarks/bench_upload.py --json "$OUT/upload_h200_route.json"
step apsp 50 python3 examples/apsp_resident.py --n 4096
LEFT=$((DEADLINE - SECONDS - 25))
step auto $((DEADLINE - SECONDS)) python3 benchmarks/bench_auto.py --max-seconds "$LEFT" --cell 0.3 \
  --repeats "${REPEATS:-15}" --budget 0.2 --json "$OUT/auto_h200_route.json"

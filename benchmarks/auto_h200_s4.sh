#!/usr/bin/env bash
# Session 4 (branch s4auto) on one H200: bench_auto over the whole sweep (calibration saved to a
# cache dir of the run's own and loaded by a new context, as a user's; cells of 0.5 s: survey,
# then auto against the fastest backend in pairs), then auto_after.py (why a host call is slower
# right after a GPU call) with what is left. Run from this checkout's root after
# `source .gpu/env.sh` and `export PYTHONPATH=$PWD:$PYTHONPATH`. Results and one log in $OUT.
set -o pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
LOG="$OUT/auto_h200_s4.log"
DEADLINE=${DEADLINE:-235}
{ nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nproc; git log -1 --format=%H 2>/dev/null; } | tee "$LOG"
run() {  # run NAME SECONDS CMD...: within the deadline, output to the log, tail printed
  local name=$1 limit=$2 left=$((DEADLINE - SECONDS))
  shift 2
  ((left < limit)) && limit=$left
  ((limit < 10)) && { echo "$name skipped (deadline)" | tee -a "$LOG"; return; }
  local t0=$SECONDS
  echo "=== $name (limit ${limit}s)" >>"$LOG"
  timeout "$limit" "$@" >>"$LOG.part" 2>&1
  local rc=$?
  grep -v '^calibrate:' "$LOG.part" | tr '\r' '\n' | grep -v '^calibrate:' >>"$LOG"
  rm -f "$LOG.part"
  echo "$name rc=$rc $((SECONDS - t0))s"
  grep -v '^\[auto\]' "$LOG" | tail -n "${TAIL:-40}" | sed "s/^/  /"
}
run auto $((DEADLINE - 25)) python3 benchmarks/bench_auto.py --max-seconds $((DEADLINE - 45)) \
  --budget 0.2 --cell "${CELL:-0.5}" --json "$OUT/auto_h200_s4.json"
run after 25 python3 benchmarks/auto_after.py --n 300 --json "$OUT/auto_after_h200_s4.json"

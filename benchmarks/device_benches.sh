#!/usr/bin/env bash
# The benchmarks behind the README's Performance rows, on an NVIDIA GPU (staged by
# ../shared/device/prepare.sh; run with carry [".gpu"]). One device call runs one group, since a call
# is limited to 10 minutes: `bash benchmarks/device_benches.sh gemm_auto` then `... chains`.
# Results (JSON) and one log go to $OUT, which the device tool brings back (8 files at most).
source .gpu/env.sh
set -o pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # this checkout before any installed copy
LOG="$OUT/benches_$1.log"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$LOG"
step() {  # step NAME SECONDS CMD...: run, keep the output in the log, print its tail
  local name=$1 limit=$2
  shift 2
  SECONDS=0
  echo "=== $name" >>"$LOG"
  timeout "$limit" "$@" >>"$LOG.part" 2>&1
  local rc=$?
  tr '\r' '\n' <"$LOG.part" | grep -v '^calibrate:' >>"$LOG"
  rm -f "$LOG.part"
  echo "$name rc=$rc ${SECONDS}s"
  grep -v '^\[auto\]' "$LOG" | tail -n "${TAIL:-14}" | sed "s/^/  /"
}
case "$1" in
gemm_auto)
  step wgpu_sweep 200 python3 benchmarks/bench_wgpu_sweep.py --only defaults,argmax --json "$OUT/wgpu_defaults_h200.json"
  step auto 300 python3 benchmarks/bench_auto.py --max-seconds 150 --json "$OUT/auto_h200.json"
  ;;
chains)
  step apsp_breakdown 120 python3 benchmarks/bench_apsp_breakdown.py --json "$OUT/apsp_breakdown_h200.json"
  step apsp_example 60 python3 examples/apsp_resident.py --n 4096
  step batch 120 python3 benchmarks/bench_batch.py --apsp 0 --json "$OUT/batch_h200.json"
  step small_tiles 60 python3 benchmarks/bench_small_gemm_tiles.py --json "$OUT/small_gemm_tiles_h200.json"
  ;;
*)
  echo "usage: device_benches.sh gemm_auto|chains" >&2
  exit 2
  ;;
esac

#!/usr/bin/env bash
# One device lease: the whole suite on an NVIDIA GPU with wgpu (Vulkan through wgpu-py) and cuda
# both required, then the wgpu tests again through Dawn. Staged by ../shared/device/prepare.sh;
# run with carry [".gpu"]. Logs go to $OUT (the device tool brings them back).
source .gpu/env.sh
set -o pipefail
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
export PYTROPICAL_TEST_SEED=${PYTROPICAL_TEST_SEED:-$RANDOM}  # one seed for every xdist worker
# 14 workers on the 16-core lease: at 8 the two suites (6,900 + 1,800 tests) outran one 10-minute call
WORKERS=${WORKERS:-14}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$OUT/gpu.txt"
# the wheel test needs hatchling and no network: it runs in CI, not here
# SUITES picks the passes (one 10-minute call may hold only one of them): wgpupy, dawn or both
SUITES=${SUITES:-wgpupy,dawn}
# TESTS: the test paths (default all of tests/); a list of files splits a suite over two calls
TESTS=${TESTS:-tests}
if [[ ,$SUITES, == *,wgpupy,* ]]; then
SECONDS=0
PYTROPICAL_REQUIRE=wgpu,cuda python3 -m pytest $TESTS -q -p no:cacheprovider -n "$WORKERS" \
  --ignore=tests/test_packaging.py 2>&1 | tee "$OUT/suite_wgpupy_cuda.log" | tail -4
echo "suite (wgpu-py + cuda): ${SECONDS}s"
fi
if [[ ,$SUITES, == *,dawn,* ]]; then
SECONDS=0
PYTROPICAL_WEBGPU=dawn PYTROPICAL_REQUIRE=wgpu,dawn python3 -m pytest $TESTS -q -p no:cacheprovider -n "$WORKERS" \
  --ignore=tests/test_packaging.py --ignore=tests/test_cuda_compile.py -k "wgpu or dawn or webgpu" \
  2>&1 | tee "$OUT/suite_dawn.log" | tail -4
echo "suite (wgpu on Dawn): ${SECONDS}s"
fi

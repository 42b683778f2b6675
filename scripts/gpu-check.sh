#!/usr/bin/env bash
# GPU check for gpu-cilk on any CUDA Linux machine, from prebuilt binaries (no cargo there):
#   scripts/stage-gpu.sh            # here: build and copy binaries into .carry/
#   bash .carry/gpu-check.sh [OUT]  # there: run tests, examples, compute-sanitizer; summary last
# Needs the NVIDIA driver and NVRTC (CUDA 12 or 13); /usr/local/cuda/lib64 is put on the path.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-${OUT:-/tmp/gpu-check}}"
mkdir -p "$out"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="/usr/local/cuda/bin:$PATH"
export GPU_CILK_REQUIRE_GPU=1 GPU_CILK_CACHE_DIR="$out/ptx-cache"
summary=()
step() { # name, command...
  local name="$1"; shift
  local t0; t0=$(date +%s%N)
  timeout "${STEP_TIMEOUT:-120}" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  summary+=("$(printf '%-34s %-5s %8d ms' "$name" "$([ $rc = 0 ] && echo ok || echo "FAIL($rc)")" "$ms")")
  echo "== $name (rc=$rc)"; tail -n 25 "$out/$name.log"
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt"
for t in "$here"/tests/*; do
  step "test-$(basename "$t")" "$t" --test-threads=1
done
for n in 10 20 25 30 32 35; do step "fib-$n-cuda" "$here/fib" "$n" --backend cuda --reps 5; done
for n in 8 10 12 14 15; do step "queens-$n-cuda" "$here/queens" "$n" --backend cuda --reps 3; done
for n in 10 12 14 15; do step "queens-bits-$n-cuda" "$here/queens" "$n" --variant bitmask --backend cuda --reps 3; done
if command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck; do
    step "sanitizer-$tool-fib" compute-sanitizer --tool "$tool" --error-exitcode 1 "$here/fib" 12 --backend cuda
    step "sanitizer-$tool-queens" compute-sanitizer --tool "$tool" --error-exitcode 1 "$here/queens" 6 --backend cuda
  done
fi
if [ -x "$here/gpu_suite" ] && [ -z "${SKIP_BENCH:-}" ]; then
  STEP_TIMEOUT=${BENCH_TIMEOUT:-400} step bench "$here/gpu_suite" --out "$out" --only "${BENCH_ONLY:-fib,queens,channel,alloc,queue}" ${BENCH_ARGS:-}
fi
echo
echo "== summary ($(cat "$out/device.txt"))"
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"

#!/usr/bin/env bash
# Sweeps the persistent device scheduler's settings (GPU_CILK_DEVICE_*) over fib, queens (bitmask)
# and chain on a GPU machine, from the binaries scripts/stage-gpu.sh puts in .carry/:
#   bash .carry/gpu-tune.sh [OUT]
# Prints one line per run: workload, settings, median time, and the scheduler's own profile
# (warps, rounds, busy lanes per round, share of warp time running / idle / scheduling). The
# defaults in runtime/src/config.rs come from this sweep (docs/notes/benchmark-history.md has the last one).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-${OUT:-/tmp/gpu-tune}}"
mkdir -p "$out"
log="$out/gpu-tune.log"
: > "$log"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export GPU_CILK_REQUIRE_NVRTC=1 GPU_CILK_CACHE_DIR="${GPU_CILK_CACHE_DIR:-/tmp/gpu-cilk-ptx-cache}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee -a "$log"
one() { # label, env settings ("-" for none), example, args...
  local label="$1" envs="$2"; shift 2
  local text
  # shellcheck disable=SC2086
  text=$(timeout "${TUNE_TIMEOUT:-120}" env ${envs/#-/} "$here/$@" --backend cuda 2>&1)
  local rc=$?
  { echo "=== $label [$envs] $*: rc=$rc"; echo "$text"; } >> "$log"
  local t p
  t=$(echo "$text" | sed -n 's/^time *\([0-9.]* ms\).*/\1/p' | head -1)
  p=$(echo "$text" | sed -n 's/^warps *//p' | head -1)
  printf '%-10s %-58s %12s  %s\n' "$label" "$envs" "${t:-rc=$rc}" "$p" | tee -a "$log"
}
reps=${TUNE_REPS:-5}
for w in "fib 35" "queens 15 --variant bitmask" "chain 10000"; do
  set -- $w
  ex="$1"; shift
  label="$ex-$1"
  for envs in - \
      GPU_CILK_DEVICE_LANE_STACK=16 \
      GPU_CILK_DEVICE_LANE_STACK=64 \
      GPU_CILK_DEVICE_LANE_STACK=256 \
      GPU_CILK_DEVICE_IDLE_MAX_NS=16384 \
      GPU_CILK_NVRTC_FLAGS=-DGC_JOIN_SC_FENCES \
      GPU_CILK_DEVICE_BLOCKS_PER_SM=2 \
      GPU_CILK_DEVICE_BLOCKS_PER_SM=0 \
      GPU_CILK_SCHEDULER=levels; do
    one "$label" "$envs" "$ex" "$@" --reps "$reps"
  done
done

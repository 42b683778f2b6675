#!/usr/bin/env bash
# Sweeps the cpu backend's stealing-scheduler settings (GPU_CILK_SPAWN_QUEUE, _SPAWN_QUEUE_IDLE,
# GPU_CILK_INLINE_NESTING; CPU_TUNE_KNOBS='sq/sqi/nest ...' picks the combinations)
# over fib(35) and queens(15, bitmask) on all host cores, from the binaries scripts/stage-gpu.sh puts
# in .carry/ (runs on any Linux machine; the GPU machine's 16 cores are the reference):
#   bash .carry/cpu-tune.sh [OUT]
# Prints one line per run: workload, settings, median time, the scheduler's split (tasks created,
# inline sub-kernel calls, serial calls, steals). The defaults in runtime/src/config.rs come from it.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-${OUT:-/tmp/cpu-tune}}"
mkdir -p "$out"
log="$out/cpu-tune.log"
: > "$log"
echo "host: $(nproc) cores" | tee -a "$log"
for w in "fib 35" "fib 40" "queens 15 --variant bitmask" "queens 13 --variant array"; do
  # spawn queue / spawn queue while a worker is idle / inline nesting
  for knobs in ${CPU_TUNE_KNOBS:-2/2/4 2/4/4 2/8/4 2/16/4 2/4/8 2/8/8 1/4/4 1/8/8 4/4/4 4/8/8}; do
    IFS=/ read -r sq sqi nest <<< "$knobs"
    # shellcheck disable=SC2086
    text=$(GPU_CILK_SPAWN_QUEUE=$sq GPU_CILK_SPAWN_QUEUE_IDLE=$sqi GPU_CILK_INLINE_NESTING=$nest \
      timeout 120 "$here"/$w --backend cpu --reps "${TUNE_REPS:-5}" --no-verify 2>&1)
    { echo "=== $w sq=$sq sqi=$sqi nest=$nest"; echo "$text"; } >> "$log"
    t=$(echo "$text" | sed -n 's/^time *\([0-9.]* ms\).*/\1/p' | head -1)
    s=$(echo "$text" | sed -n 's/^spawns *//p' | head -1)
    printf '%-28s sq=%-2s sqi=%-3s nest=%-3s %12s  %s\n' "$w" "$sq" "$sqi" "$nest" "${t:-failed}" "$s" | tee -a "$log"
  done
done

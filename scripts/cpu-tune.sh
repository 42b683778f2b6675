#!/usr/bin/env bash
# Sweeps the cpu backend's stealing-scheduler settings (GPU_CILK_SPAWN_QUEUE, _SPAWN_QUEUE_IDLE,
# GPU_CILK_INLINE_NESTING, and optionally GPU_CILK_LINGER_US, GPU_CILK_IDLE_AWAKE_US;
# CPU_TUNE_KNOBS='sq/sqi/nest[/linger[/awake]] ...' picks the combinations: a missing or empty
# linger/awake field leaves that variable as it is in the environment, i.e. the default)
# over fib(35), fib(40), queens(15, bitmask) and queens(13, array) on all host cores
# (CPU_TUNE_WORKLOADS='fib 35;queens 15 --variant bitmask' picks others, `;`-separated), from the
# binaries scripts/stage-gpu.sh puts in .carry/ (runs on any Linux machine; the GPU machine's 16
# cores are the reference):
#   bash .carry/cpu-tune.sh [OUT]
#   CPU_TUNE_KNOBS='2/4/8/0 2/4/8/50 2/4/8/200 2/4/8/1000 2/4/8/200/200' CPU_TUNE_WORKLOADS='fib 35' bash .carry/cpu-tune.sh
# Prints one line per run: workload, settings, median time, the scheduler's split (tasks created,
# inline sub-kernel calls, serial calls, steals). The defaults in runtime/src/config.rs come from it.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-${OUT:-/tmp/cpu-tune}}"
mkdir -p "$out"
log="$out/cpu-tune.log"
: > "$log"
echo "host: $(nproc) cores" | tee -a "$log"
IFS=';' read -r -a workloads <<< "${CPU_TUNE_WORKLOADS:-fib 35;fib 40;queens 15 --variant bitmask;queens 13 --variant array}"
for w in "${workloads[@]}"; do
  # spawn queue / spawn queue while a worker is idle / inline nesting [/ linger µs [/ idle awake µs]]
  for knobs in ${CPU_TUNE_KNOBS:-2/2/4 2/4/4 2/8/4 2/16/4 2/4/8 2/8/8 1/4/4 1/8/8 4/4/4 4/8/8}; do
    IFS=/ read -r sq sqi nest linger awake <<< "$knobs"
    extra=()
    [ -n "${linger:-}" ] && extra+=("GPU_CILK_LINGER_US=$linger")
    [ -n "${awake:-}" ] && extra+=("GPU_CILK_IDLE_AWAKE_US=$awake")
    # shellcheck disable=SC2086
    text=$(env GPU_CILK_SPAWN_QUEUE=$sq GPU_CILK_SPAWN_QUEUE_IDLE=$sqi GPU_CILK_INLINE_NESTING=$nest "${extra[@]}" \
      timeout 120 "$here"/$w --backend cpu --reps "${TUNE_REPS:-5}" --no-verify 2>&1)
    { echo "=== $w sq=$sq sqi=$sqi nest=$nest linger=${linger:-default} awake=${awake:-default}"; echo "$text"; } >> "$log"
    t=$(echo "$text" | sed -n 's/^time *\([0-9.]* ms\).*/\1/p' | head -1)
    s=$(echo "$text" | sed -n 's/^spawns *//p' | head -1)
    printf '%-28s sq=%-2s sqi=%-3s nest=%-3s linger=%-5s awake=%-5s %12s  %s\n' "$w" "$sq" "$sqi" "$nest" "${linger:--}" "${awake:--}" "${t:-failed}" "$s" | tee -a "$log"
  done
done

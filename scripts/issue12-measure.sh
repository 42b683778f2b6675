#!/usr/bin/env bash
# Issue 12's measurements on a GPU machine, from the staged binaries (scripts/stage-gpu.sh):
# knapsack at the Table 5 sizes (cuda against the BinaryHeap solver, every answer against the DP),
# the heap's insert+delete throughput at 2^29 keys for K = 1024, 2048, 4096 (with the CUB sort) for
# each GC_HEAP_LOAD_BATCH in HEAP_LOAD_BATCHES (default "1 8"),
# and the GPU tests these touch (the K = 2048 stress test, priority spawns, the differential and
# generated-program tests). PARTS picks any of: knapsack heap tests (default: all three). HEAP_DEFINE: more heap.cuh options
# (gpu_suite --heap-define, e.g. GC_HEAP_MERGE_ODD_RUN=0); HEAP_PROFILE_LOG2N: profiled runs. Usage: bash scripts/issue12-measure.sh OUT [CARRY]
set -u
out=${1:?usage: issue12-measure.sh OUT [CARRY]}
C=${2:-.carry}
mkdir -p "$out"
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/device.txt" 2>&1
ks() { # NAME BINARY ARGS...: one knapsack invocation, its summary lines echoed
  local n=${1//=/-} b=$2; shift 2
  timeout "${KS_TIMEOUT:-120}" "$b" "$@" --backend cuda > "$out/ks-$n.log" 2>&1; echo "rc=$?" >> "$out/ks-$n.log"
  grep -h "ks_\|spawns \|warps \|rc=" "$out/ks-$n.log" | sed "s/^/$n: /"
}
if [[ " ${PARTS:-knapsack heap tests} " == *" knapsack "* ]]; then
  ks ss "$C/knapsack" --kind ss --n 1300 --r 14000 --cap-percent 25 --reps 5
  ks sc "$C/knapsack" --kind sc --n 800 --r 18000 --cap-percent 25 --reps 5
  ks asc "$C/knapsack" --kind asc --n 1300 --r 6000 --cap-percent 1 --reps 5
  ks esc "$C/knapsack" --kind esc --n 1200 --r 13000 --cap-percent 5 --reps 5
  # Subset sum's capacity decides who wins (docs/benchmarks.md): the other capacities, every one
  # reported; the BinaryHeap solver needs minutes there, so it stops after 60 s.
  for c in ${SS_CAPACITIES:-5 10 40}; do
    KS_TIMEOUT=240 ks "ss-$c" "$C/knapsack" --kind ss --n 1300 --r 14000 --cap-percent "$c" --reps 3 --baseline-timeout-s 60
  done
fi
if [[ " ${PARTS:-knapsack heap tests} " == *" heap "* ]]; then
  # heap.cuh's LOAD BATCH is a compile-time option: one invocation per value, the same sizes.
  for lb in ${HEAP_LOAD_BATCHES:-1 8}; do
    timeout 300 "$C/gpu_suite" --only heap --out "$out/heap-lb$lb" --gpu-only --skip-compile-times --timeout-s 100 \
      --warmup 0 --heap-reps "${HEAP_REPS:-3}" --heap-cpu-max-log2n 0 --heap-max-s 100 --heap-log2n "${HEAP_LOG2N:-29}" \
      --heap-k "${HEAP_KS:-1024,2048,4096}" --heap-batch-div 1 --heap-sweep-log2n 24 --heap-load-batch "$lb" \
      ${HEAP_DEFINE:+--heap-define "$HEAP_DEFINE"} ${HEAP_PROFILE_LOG2N:+--heap-profile-log2n "$HEAP_PROFILE_LOG2N"} \
      > "$out/heap-lb$lb.log" 2>&1
    echo "rc=$?" >> "$out/heap-lb$lb.log"; grep -i "keys/s\|cub\|rc=\|us each\|us of kernel" "$out/heap-lb$lb.log" | sed "s/^/load batch $lb: /" | head -40
  done
fi
if [[ " ${PARTS:-knapsack heap tests} " == *" tests "* ]]; then
  GPU_CILK_HEAP_WATCHDOG_S=30 timeout 150 "$C/tests/cuda_heap" --include-ignored --test-threads=1 k2048 batched_loads > "$out/t-heap.log" 2>&1
  tail -3 "$out/t-heap.log"
  timeout 60 "$C/tests/priorities" --include-ignored --test-threads=1 > "$out/t-prio.log" 2>&1; tail -3 "$out/t-prio.log"
  # Four at a time: each cuda runtime reserves GiBs (frame pool, spill); 16 at once ran out of an H100's memory.
  timeout 300 "$C/tests/differential" --include-ignored --test-threads=4 > "$out/t-diff.log" 2>&1; tail -3 "$out/t-diff.log"
  timeout 300 "$C/tests/generated_programs" --include-ignored --test-threads=4 > "$out/t-gen.log" 2>&1; tail -3 "$out/t-gen.log"
fi

#!/usr/bin/env bash
# GPU check for gpu-cilk on any CUDA Linux machine, from prebuilt binaries (no cargo there):
#   scripts/stage-gpu.sh            # here: build and copy binaries into .carry/
#   bash .carry/gpu-check.sh [OUT]  # there: run tests, examples, compute-sanitizer; summary last
# Needs the NVIDIA driver and NVRTC (CUDA 12 or 13); /usr/local/cuda/lib64 is put on the path.
# OUT gets gpu-check.log (every step's output, in order), summary.txt, device.txt and bench/
# (the suite's results.csv and results.json) and bench-data/ (sort and Strassen: results.csv,
# results.json, sort.svg, strassen.svg); each step's own log goes to $GPU_CHECK_STEPS
# (default OUT/steps). The PTX cache is $GPU_CILK_CACHE_DIR (default a folder under /tmp).
# GPU_CHECK_LARGE=1 adds the large sizes (strassen 2048 and 4096, sort 10^8), minutes each.
# GPU_CHECK_PARTS (default all): which parts run, any of tests, heap, examples, knapsack,
# sanitizers, bench, bench-data, bench-issue9, cpu-bench (space-separated), e.g. to fit a
# 10-minute slot. GPU_CHECK_TESTS (default all) names the test binaries the tests part runs.
set -uo pipefail
parts=" ${GPU_CHECK_PARTS:-tests heap examples knapsack sanitizers bench bench-data bench-issue9 cpu-bench} "
part() { [[ "$parts" == *" $1 "* ]]; }
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-${OUT:-/tmp/gpu-check}}"
steps="${GPU_CHECK_STEPS:-$out/steps}"
mkdir -p "$out" "$steps"
: > "$out/gpu-check.log"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="/usr/local/cuda/bin:$PATH"
# GPU tests are #[ignore]d (see test-support/src/gate.rs): --include-ignored runs them, and
# there a missing GPU is a failure. NVRTC is required too.
export GPU_CILK_REQUIRE_NVRTC=1 GPU_CILK_CACHE_DIR="${GPU_CILK_CACHE_DIR:-/tmp/gpu-cilk-ptx-cache}"
# The heap stress test (cuda_heap) reports a launch still running after this many seconds (every
# block's trace words: where it waits, on what) and aborts, well inside the step's timeout.
export GPU_CILK_HEAP_WATCHDOG_S="${GPU_CILK_HEAP_WATCHDOG_S:-30}"
summary=()
step() { # name, command...
  local name="$1"; shift
  local t0; t0=$(date +%s%N)
  timeout "${STEP_TIMEOUT:-120}" "$@" >"$steps/$name.log" 2>&1
  local rc=$?
  local ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  summary+=("$(printf '%-34s %-5s %8d ms' "$name" "$([ $rc = 0 ] && echo ok || echo "FAIL($rc)")" "$ms")")
  { echo "=== $name: $* (rc=$rc, $ms ms)"; cat "$steps/$name.log"; } >> "$out/gpu-check.log"
  echo "== $name (rc=$rc)"; tail -n 25 "$steps/$name.log"
}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$out/device.txt"
# One line per test binary: libtest's own counts (passed / failed / ignored) and the tests that
# printed SKIPPED (an NVRTC test without NVRTC), so nothing skipped can read as passed.
tests=()
for t in "$here"/tests/*; do
  part tests || break
  if [ -n "${GPU_CHECK_TESTS:-}" ] && [[ " $GPU_CHECK_TESTS " != *" $(basename "$t") "* ]]; then continue; fi
  name="test-$(basename "$t")"
  # differential and generated_programs take 2-3 minutes on an H100 (both schedulers, every
  # configuration): TEST_STEP_TIMEOUT gives each test binary 300 s unless set.
  STEP_TIMEOUT=${TEST_STEP_TIMEOUT:-300} step "$name" "$t" --include-ignored --test-threads=1
  counts=$(grep -E '^test result:' "$steps/$name.log" | tail -1 | sed -E 's/.*ok\. |.*FAILED\. //; s/; [0-9]+ measured.*//')
  skipped=$(grep -c '^SKIPPED' "$steps/$name.log")
  tests+=("$(printf '%-34s %s; %s skipped' "$name" "${counts:-no result line}" "$skipped")")
done
# Issue 12: the heap at K = 1024 on every resident block, verbose (it hung until 2026-11-26; on a
# hang the watchdog's dump of each block's trace words is in steps/heap-k1024-full.log).
if [ -x "$here/tests/cuda_heap" ] && part heap; then
  GPU_CILK_HEAP_K1024_FULL=1 STEP_TIMEOUT=300 step heap-k1024-full "$here/tests/cuda_heap" largest_nodes_k1024 \
    --include-ignored --exact --nocapture --test-threads=1
fi
if part examples; then
for n in 10 20 25 30 32 35; do step "fib-$n-cuda" "$here/fib" "$n" --backend cuda --reps 5 --stats; done
# Deep, narrow trees: one spawn per level (time per level, and the frames it keeps).
for n in 10000 1000000; do step "chain-$n-cuda" "$here/chain" "$n" --backend cuda --reps 3 --stats; done
for n in 8 10 12 14 15; do step "queens-$n-cuda" "$here/queens" "$n" --backend cuda --reps 3 --stats; done
for n in 10 12 14 15; do step "queens-bits-$n-cuda" "$here/queens" "$n" --variant bitmask --backend cuda --reps 3 --stats; done
# cilksort: keys in and out through a &mut [u32] (upload, sort, download), every input shape.
for n in 0 1 1000 1000000; do step "sort-$n-cuda" "$here/sort" "$n" --backend cuda --reps 3 --stats; done
for shape in sorted reverse equal few; do step "sort-1000000-$shape-cuda" "$here/sort" 1000000 --input "$shape" --backend cuda --stats; done
step "sort-1000000-f32-cuda" "$here/sort" 1000000 --keys f32 --backend cuda --reps 3 --stats
step "sort-10000000-cuda" "$here/sort" 10000000 --backend cuda --reps 3 --stats --no-verify
[ -n "${GPU_CHECK_LARGE:-}" ] && step "sort-100000000-cuda" "$here/sort" 100000000 --backend cuda --reps 3 --stats --no-verify
# Strassen: two matrices in, the product out, temporaries (alloc!) for the sums and the seven
# products; checked against an f64 reference (Higham's bound and the relative Frobenius error).
# 1, 17, 100 and 1000 are not powers of two (1000 is padded to 1008 = 63 * 2^4).
for n in 1 17 100 512 1000; do step "strassen-$n-cuda" "$here/strassen" "$n" --backend cuda --reps 3 --stats; done
# Matmul: quadrant views of the caller's matrices (no temporaries), checked equal to the triple loop.
for n in 17 100 512; do step "matmul-$n-cuda" "$here/matmul" "$n" --backend cuda --reps 3 --stats; done
step "matmul-300x70x200-cuda" "$here/matmul" 300 --cols 70 --inner 200 --backend cuda --stats
# The large sizes only with GPU_CHECK_LARGE=1 (minutes each; the device tool allows 10 per call).
if [ -n "${GPU_CHECK_LARGE:-}" ]; then
  STEP_TIMEOUT=300 step "strassen-2048-cuda" "$here/strassen" 2048 --backend cuda --reps 3 --stats
  # 4096: the serial function would take minutes on the host; 128 rows are still checked.
  STEP_TIMEOUT=300 step "strassen-4096-cuda" "$here/strassen" 4096 --backend cuda --reps 3 --stats --no-verify
fi
# Knapsack: best-first branch and bound (priority spawns, a shared &Max<u64> incumbent, a &Sum<u64>
# node count), every answer against the dynamic program: one small instance of each type (sc 60
# explores about 1.6 M nodes), two of the paper's Table 4 sizes at 5 % capacity (about 1 M and
# 6,000 nodes on the host). The whole Table 4 at 50 % capacity only with GPU_CHECK_LARGE=1: its
# strongly and even-odd correlated instances explore 10^8 nodes and more (minutes to hours).
for kind in sc asc esc ss; do step "knapsack-$kind-60-cuda" "$here/knapsack" --kind "$kind" --n 60 --r 1000 --backend cuda --reps 3 --stats; done
step "knapsack-sc-200-7k-5pct-cuda" "$here/knapsack" --kind sc --n 200 --r 7000 --cap-percent 5 --backend cuda --reps 3 --stats
step "knapsack-ss-100-18k-5pct-cuda" "$here/knapsack" --kind ss --n 100 --r 18000 --cap-percent 5 --backend cuda --reps 3 --stats
[ -n "${GPU_CHECK_LARGE:-}" ] && STEP_TIMEOUT=600 step "knapsack-table4-cuda" "$here/knapsack" --table4 --backend cuda --no-baseline --stats
fi
# Issue 12, Table 5: the largest instance of each type in the paper's Table 4, the serial
# best-first solver (BinaryHeap) against cuda with the ready heap (priority spawns served best
# first, the default) and without it (GPU_CILK_DEVICE_PRIORITY_SERVERS=0: plain spawns); every
# answer against the dynamic program. KNAPSACK_SIZES picks instances ("kind:n:range:capacity%
# ..."); the paper gives no capacities, so each type's is one at which the serial solver explores
# 10^6 to 10^7 nodes (the hardness of these types swings by orders of magnitude with it).
if part knapsack; then
  for spec in ${KNAPSACK_SIZES:-sc:800:18000:25 asc:1300:6000:1 esc:1200:13000:5 ss:1300:14000:25}; do
    IFS=: read -r kind n r cap <<< "$spec"
    # --stats: the scheduler's full report in the log; --baseline-timeout-s 0: the serial solver
    # runs to the end (the examples stop it after 10 s by default).
    args=(--kind "$kind" --n "$n" --r "$r" --cap-percent "$cap" --backend cuda --stats --baseline-timeout-s 0)
    STEP_TIMEOUT=${KNAPSACK_TIMEOUT:-240} step "knapsack-$kind-$n-heap" "$here/knapsack" "${args[@]}" --reps 3
    GPU_CILK_DEVICE_PRIORITY_SERVERS=0 STEP_TIMEOUT=${KNAPSACK_TIMEOUT:-240} step "knapsack-$kind-$n-noheap" \
      "$here/knapsack" "${args[@]}" --reps 3 --no-baseline
  done
fi
if command -v compute-sanitizer >/dev/null && part sanitizers; then
  for tool in memcheck racecheck; do
    step "sanitizer-$tool-fib" compute-sanitizer --tool "$tool" --error-exitcode 1 "$here/fib" 12 --backend cuda
    step "sanitizer-$tool-queens" compute-sanitizer --tool "$tool" --error-exitcode 1 "$here/queens" 6 --backend cuda
    step "sanitizer-$tool-sort" compute-sanitizer --tool "$tool" --error-exitcode 1 "$here/sort" 5000 --backend cuda
    step "sanitizer-$tool-strassen" compute-sanitizer --tool "$tool" --error-exitcode 1 "$here/strassen" 130 --backend cuda
    step "sanitizer-$tool-knapsack" compute-sanitizer --tool "$tool" --error-exitcode 1 "$here/knapsack" --kind sc --n 30 --r 500 --backend cuda --no-baseline
  done
  # Random task trees (tests/differential.rs, 12 seeds on every cuda configuration: both
  # schedulers, tiny lane stacks that spill).
  if [ -x "$here/tests/differential" ]; then
    for tool in memcheck racecheck; do
      GPU_CILK_TEST_TREES=12 STEP_TIMEOUT=300 step "sanitizer-$tool-random-trees" compute-sanitizer --tool "$tool" \
        --error-exitcode 1 "$here/tests/differential" randomized_task_trees_equal_serial_on_cuda --include-ignored --exact
    done
  fi
  # A parameterless root task (and parameterless children), on every cuda configuration.
  if [ -x "$here/tests/compile_subset" ]; then
    STEP_TIMEOUT=300 step sanitizer-memcheck-parameterless compute-sanitizer --tool memcheck --error-exitcode 1 \
      "$here/tests/compile_subset" parameterless_tasks_run_on_cuda --include-ignored --exact
  fi
fi
if [ -x "$here/gpu_suite" ] && [ -z "${SKIP_BENCH:-}" ] && part bench; then
  STEP_TIMEOUT=${BENCH_TIMEOUT:-400} step bench "$here/gpu_suite" --out "$out/bench" --only "${BENCH_ONLY:-fib,queens,loopsync,channel,alloc,queue}" ${BENCH_ARGS:-}
  # sort and Strassen against serial, rayon, CUB radix/merge sort, a tiled SGEMM and cuBLAS (the
  # peers are built with nvcc): tables in the log, results.csv/json, sort.svg and strassen.svg
  # under OUT/bench-data. Default sizes 10^6, 10^7 keys and n = 512, 1024; the issue's sizes with
  # GPU_CHECK_LARGE=1. BENCH_DATA_ARGS adds options (e.g. --sort-f32).
fi
if [ -x "$here/gpu_suite" ] && [ -z "${SKIP_BENCH:-}" ] && part bench-data; then
  data_args=()
  [ -n "${GPU_CHECK_LARGE:-}" ] && data_args=(--sort-n 1000000,10000000,100000000 --strassen-n 512,1024,2048,4096 --reps 3)
  STEP_TIMEOUT=${BENCH_DATA_TIMEOUT:-600} step bench-sort-strassen "$here/gpu_suite" --out "$out/bench-data" \
    --only sort,strassen ${data_args[@]+"${data_args[@]}"} ${BENCH_DATA_ARGS:-}
fi
# Deep and unbalanced trees: a deep chain (10^4, 10^6), an unbalanced tree, fib(40) (serial, rayon,
# the hand-written peer, gpu-cilk cpu / persistent / levels).
if [ -x "$here/gpu_suite" ] && [ -z "${SKIP_BENCH:-}" ] && part bench-issue9; then
  STEP_TIMEOUT=${BENCH9_TIMEOUT:-600} step bench-issue9 "$here/gpu_suite" --out "$out/bench-issue9" \
    --only chain,unbalanced,fib40 --reps "${BENCH9_REPS:-3}" ${BENCH9_ARGS:-}
fi
# The cpu backend (stealing and levels) against serial and rayon join on this host's cores.
if [ -x "$here/cpu_bench" ] && [ -z "${SKIP_BENCH:-}" ] && part cpu-bench; then
  STEP_TIMEOUT=${CPU_BENCH_TIMEOUT:-600} step cpu-bench "$here/cpu_bench" ${CPU_BENCH_ARGS:---fib 35,40 --queens 15 --chain 1000000 --reps 5}
fi
echo
echo "== summary ($(cat "$out/device.txt"))"
printf '%s\n' "${summary[@]}" | tee "$out/summary.txt"
echo "== test counts"
printf '%s\n' "${tests[@]}" | tee -a "$out/summary.txt"

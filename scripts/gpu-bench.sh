#!/usr/bin/env bash
# The benchmark suite (benches/gpu_suite/, bench target `gpu_suite`) from a prebuilt binary, for the GPU machine.
#
#   scripts/gpu-bench.sh --build DIR          # anywhere (no CUDA needed): release build -> DIR/gpu_suite
#   scripts/gpu-bench.sh DIR [ARGS...]        # GPU machine: runs DIR/gpu_suite (or DIR if it is the binary)
#
# e.g. sort and Strassen against rayon, CUB, a tiled SGEMM and cuBLAS (nvcc builds the peers; writes
# results.csv, results.json, sort.svg and strassen.svg under --out):
#   scripts/gpu-bench.sh DIR --only sort,strassen --sort-n 1000000,10000000,100000000 \
#       --strassen-n 512,1024,2048,4096 --reps 3 --out OUT
#
# Issue 9's columns (deep chain, unbalanced tree, fib(40), the work-stack microbenchmark):
#   scripts/gpu-bench.sh DIR --only chain,unbalanced,fib40 --reps 3
#
# ARGS go to gpu_suite (see `gpu_suite --help`); default `--fib 35 --queens 15 --reps 5`, and
# `--out DIR/results` unless ARGS give --out. libcuda comes from the driver (ld cache); NVRTC from
# /usr/local/cuda/lib64 (libnvrtc.so.13), put first on LD_LIBRARY_PATH. Exit status: 0, or 1 if a
# CUDA result failed verification.
set -euo pipefail

if [ "${1:-}" = "--build" ]; then
  dir="${2:?usage: scripts/gpu-bench.sh --build DIR}"
  cd "$(dirname "$0")/.."
  mkdir -p "$dir"
  exe=$(cargo bench --bench gpu_suite --no-run 2>&1 | tee /dev/stderr | sed -n 's/.*Executable .*(\(.*gpu_suite-[0-9a-f]*\)).*/\1/p' | tail -1)
  [ -n "$exe" ] || { echo "could not find the built gpu_suite executable" >&2; exit 2; }
  cp "$exe" "$dir/gpu_suite"
  echo "built $dir/gpu_suite"
  exit 0
fi

target="${1:?usage: scripts/gpu-bench.sh DIR [gpu_suite args...]   or   --build DIR}"
shift
if [ -d "$target" ]; then bin="$target/gpu_suite"; out_default="$target/results"; else bin="$target"; out_default="$(dirname "$target")/results"; fi
[ -x "$bin" ] || { echo "no executable gpu_suite at $bin (build it with: scripts/gpu-bench.sh --build DIR)" >&2; exit 2; }

export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--fib 35 --queens 15 --reps 5)
case " ${args[*]} " in *" --out "*|*" --out="*) ;; *) args+=(--out "$out_default") ;; esac
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
exec "$bin" "${args[@]}"

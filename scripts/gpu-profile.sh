#!/usr/bin/env bash
# Profiles the persistent scheduler on a GPU machine from staged binaries (scripts/stage-gpu.sh):
# per-program register / stack / spill counts from ptxas over the PTX the runs cached, and an Nsight
# Compute report (stall reasons, memory, occupancy, per-instruction samples) of one persistent
# launch of fib and of queens. Usage there: bash .carry/gpu-profile.sh OUT
# OUT ends with two files, profile.tgz (the logs, reports and ptxas output; not the PTX itself) and
# ptxas-summary.txt: the device tool brings back only a few files per call.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${1:-${OUT:-/tmp/gpu-profile}}"
mkdir -p "$out/ptx"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PATH="/usr/local/cuda/bin:$PATH"
export GPU_CILK_CACHE_DIR="$out/ptx"
for w in "fib ${PROFILE_FIB:-28}" "queens ${PROFILE_QUEENS:-12} --variant bitmask"; do
  set -- $w; name=$1; shift
  "$here/$name" "$@" --backend cuda --reps 3 --stats > "$out/$name.log" 2>&1
  ncu --launch-skip 1 --launch-count 1 -k regex:gc_persistent --set full --import-source no \
    -o "$out/$name" "$here/$name" "$@" --backend cuda --reps 2 > "$out/$name-ncu-run.log" 2>&1
  ncu --import "$out/$name.ncu-rep" --print-details all > "$out/$name-ncu.txt" 2>&1
  ncu --import "$out/$name.ncu-rep" --page source --csv --print-source sass > "$out/$name-sass.csv" 2>&1
  rm -f "$out/$name.ncu-rep"
done
for p in "$out"/ptx/*.ptx; do ptxas -v -arch=sm_90 "$p" -o /dev/null > "$p.ptxas" 2>&1; done
grep -h "gc_persistent\|Used\|stack frame" "$out"/ptx/*.ptxas | head -40 > "$out/ptxas-summary.txt"
(cd "$out" && tar czf profile.tgz --exclude='*.ptx' --exclude='*.meta' ./*.log ./*.txt ./*.csv ptx) \
  && find "$out" -mindepth 1 ! -name profile.tgz ! -name ptxas-summary.txt -delete

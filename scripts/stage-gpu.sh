#!/usr/bin/env bash
# Builds (here, with cargo) everything scripts/gpu-check.sh runs on a GPU machine and copies it into
# .carry/ (ignored by git): the test binaries, the examples and the benchmark, release profile.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.carry
rm -rf "$out" && mkdir -p "$out/tests"
# The examples are the package in examples/ (gpu-cilk-examples).
cargo build --release -p gpu-cilk-examples --examples
cargo test --release --workspace --no-run --message-format=json 2>/dev/null \
  | python3 -c '
import json, sys, shutil
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m.get("profile", {}).get("test"):
        name = m["target"]["name"]
        # Only the binaries with GPU tests (they hold the ignore reason of gate.rs).
        if b"needs a CUDA GPU" in open(m["executable"], "rb").read():
            shutil.copy(m["executable"], ".carry/tests/" + name)
'
cp target/release/examples/fib target/release/examples/queens target/release/examples/chain target/release/examples/sort target/release/examples/strassen target/release/examples/matmul target/release/examples/knapsack target/release/examples/closest "$out/"
cargo bench --no-run --bench gpu_suite
f=$(ls -t target/release/deps/gpu_suite-* | grep -v '\.d$' | head -1) && cp "$f" "$out/gpu_suite"
# The cpu backend against serial and rayon join (benches/cpu.rs): runs on the GPU machine's host cores.
cargo bench --no-run --bench cpu
f=$(ls -t target/release/deps/cpu-* | grep -v '\.d$' | head -1) && cp "$f" "$out/cpu_bench"
cp scripts/gpu-check.sh scripts/gpu-tune.sh scripts/cpu-tune.sh scripts/gpu-profile.sh "$out/"
strip --strip-debug "$out"/fib "$out"/queens "$out"/chain "$out"/sort "$out"/strassen "$out"/matmul "$out"/knapsack "$out"/closest "$out"/tests/* 2>/dev/null || true
[ -f "$out/cpu_bench" ] && strip --strip-debug "$out/cpu_bench"
[ -f "$out/gpu_suite" ] && strip --strip-debug "$out/gpu_suite"
du -sh "$out"
# The device tool carries at most 64 MiB: one xz archive of .carry (about a quarter of its size).
# There: `tar xJf .carry.tar.xz && bash .carry/gpu-check.sh OUT`.
tar cJf .carry.tar.xz .carry && du -sh .carry.tar.xz

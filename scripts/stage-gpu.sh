#!/usr/bin/env bash
# Builds (here, with cargo) everything scripts/gpu-check.sh runs on a GPU machine and copies it into
# .carry/ (ignored by git): the test binaries, the examples and the benchmark, release profile.
set -euo pipefail
cd "$(dirname "$0")/.."
out=.carry
rm -rf "$out" && mkdir -p "$out/tests"
cargo build --release --examples
cargo test --release --workspace --no-run --message-format=json 2>/dev/null \
  | python3 -c '
import json, sys, shutil
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m.get("profile", {}).get("test"):
        name = m["target"]["name"]
        # Only the binaries with GPU tests (the others need cargo or are host-only).
        if name in ("hand_expanded", "differential", "compile_subset", "cuda_device", "cuda_alloc", "cuda_channel",
                    "cuda_ticket_queue", "nvrtc_compile", "gpu_cilk_runtime", "device_faults", "temps"):
            shutil.copy(m["executable"], ".carry/tests/" + name)
'
cp target/release/examples/fib target/release/examples/queens "$out/"
cargo bench --no-run --bench gpu_suite
f=$(ls -t target/release/deps/gpu_suite-* | grep -v '\.d$' | head -1) && cp "$f" "$out/gpu_suite"
cp scripts/gpu-check.sh "$out/"
strip --strip-debug "$out"/fib "$out"/queens "$out"/tests/* 2>/dev/null || true
[ -f "$out/gpu_suite" ] && strip --strip-debug "$out/gpu_suite"
du -sh "$out"

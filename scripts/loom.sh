#!/usr/bin/env bash
# Loom model checks of the array channel (runtime/tests/channel_loom.rs).
#
# LOOM_MAX_PREEMPTIONS=2: loom explores every interleaving with at most two forced preemptions
# per execution (CHESS-style preemption bounding). Almost all concurrency bugs found in practice
# need at most two; the channel's races (a reservation overtaking another's undo, a consumer
# overtaking a producer's publish) each need one or two. Unbounded search of the 3–4-thread
# models does not finish in reasonable time; bound 3 multiplies the run time many times over.
# Release mode because loom's bookkeeping is ~10x slower in debug.
#
# Runs only the channel's loom target, so other modules' unit tests are never built under loom.
# Usage: scripts/loom.sh [extra cargo test args, e.g. a test name filter]
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="${RUSTFLAGS:-} --cfg loom"
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/loom}"
exec cargo test -p gpu-cilk-runtime --release --test channel_loom "$@"

#!/usr/bin/env bash
# Loom model checks of the array channel (runtime/tests/channel_loom.rs), of the fetch-and-add
# ticket queue (runtime/tests/ticket_queue_loom.rs, its counted interface included), of the
# stealing scheduler's join counter (runtime/tests/join_loom.rs) and run admission
# (runtime/tests/gate_loom.rs), of the batched heap (runtime/tests/heap_loom.rs) and of the
# persistent device scheduler's promotion and pool-frame join protocol (runtime/tests/lane_loom.rs,
# a Rust twin of persistent.cuh's) and of its sum groups (runtime/tests/sum_loom.rs, a twin too).
#
# LOOM_MAX_PREEMPTIONS=2: loom explores every interleaving with at most two forced preemptions
# per execution (CHESS-style preemption bounding). Almost all concurrency bugs found in practice
# need at most two; the channel's races (a reservation overtaking another's undo, a consumer
# overtaking a producer's publish) each need one or two. The cost grows steeply with the bound
# (measured on 2 cores, all 8 models: bound 2 about 1 s, 3 about 9 s, 4 about 11 s for the 7
# smaller models alone, 6 over 2 minutes), so 2 keeps the check in CI time with the models as
# large as they are; raise it locally with LOOM_MAX_PREEMPTIONS=3 when changing the protocol.
# Release mode because loom's bookkeeping is ~10x slower in debug.
#
# The ticket queue's 5 models (capacity 2, 2-3 threads, blocking calls spinning with yield_now)
# take well under a second on 2 cores (0.02 s at bound 2, 0.08 s at bound 3).
#
# The join counter's 5 models (1-3 children racing the owner's seal, the all_done shortcut, a
# reset counter reused) are small: well under a second at bound 2.
#
# The run admission's 3 models (runtime/tests/gate_loom.rs: the finisher and a maybe-late thread,
# two threads racing the close, two members leaving while the run closes) are small: well under
# a second at bound 2.
#
# The heap's 9 models (k = 1 or 2, prefilled sequentially, two threads racing a few operations,
# each history run through the checker of test-support/src/heap_history.rs) take about
# 0.6 s at bound 2 and 4 s at bound 3 on 2 cores; a three-thread model costs minutes, so there
# is none.
#
# The lane protocol's 5 models (runtime/tests/lane_loom.rs: promotion before or after a local
# child finished, two promotions of one parent, the overflow join with remote and local
# children; 2-3 threads) are small: under 0.2 s at bound 2, 0.3 s at 3, 0.9 s at 4, 3 s at 6
# (wall time on 2 busy cores). Each asserts which parties it saw resume, which needs bound 2 or
# more (below 2 that check is skipped).
#
# The sum groups' 6 models (runtime/tests/sum_loom.rs: a member handed to a thief, a handed member
# handing its children back and onward with credit 1 and 2, a flush with delta 0 racing the last
# flush, the root's own lane taking a credit; 2-3 threads) take about 0.6 s at bound 2, 3 s at 3
# and 19 s at 4 (wall time on 2 busy cores). Each asserts which lanes it saw resume the group's
# root (bound 2 or more).
#
# Runs only the loom targets, so other modules' unit tests are never built under loom.
# Usage: scripts/loom.sh [extra cargo test args, e.g. a test name filter]
set -euo pipefail
cd "$(dirname "$0")/.."
export RUSTFLAGS="${RUSTFLAGS:-} --cfg loom"
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target/loom}"
exec cargo test -p gpu-cilk-runtime --release --test channel_loom --test ticket_queue_loom --test join_loom \
  --test gate_loom --test heap_loom --test lane_loom --test sum_loom "$@"

#!/usr/bin/env bash
# The test command of the README: every unit, snapshot, UI (trybuild), differential and NVRTC
# compile test of the workspace. GPU-only tests skip themselves (with a reason) on machines
# without a GPU; scripts/gpu-check.sh runs them on one.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${GPU_CILK_NVRTC_READY:-}" ]; then
  # shellcheck source=/dev/null
  source scripts/nvrtc-env.sh
fi
# Not --all-targets: that would also run the benchmark programs in benches/ (minutes of timing).
cargo test --workspace --lib --bins --tests --examples
cargo test --workspace --doc

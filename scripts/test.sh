#!/usr/bin/env bash
# The test command of the README: every unit, snapshot, UI (trybuild), differential and NVRTC
# compile test of the workspace. GPU tests are #[ignore]d (listed as ignored, never as passed);
# scripts/gpu-check.sh runs them on a GPU machine with --include-ignored. NVRTC is installed first
# and then required: a CUDA program that does not compile fails this command.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${GPU_CILK_NVRTC_READY:-}" ]; then
  # shellcheck source=/dev/null
  source scripts/nvrtc-env.sh
fi
export GPU_CILK_REQUIRE_NVRTC="${GPU_CILK_REQUIRE_NVRTC:-1}"
# Not --all-targets: that would also run the benchmark programs in benches/ (minutes of timing).
cargo test --workspace --lib --bins --tests --examples
cargo test --workspace --doc

#!/usr/bin/env bash
# The test command of the README: every unit, snapshot, UI (trybuild), differential and NVRTC
# compile test of the workspace. GPU tests are #[ignore]d (listed as ignored, never as passed);
# scripts/gpu-check.sh runs them on a GPU machine with --include-ignored.
#
# NVRTC is optional here: scripts/nvrtc-env.sh installs PyPI's wheel with pip when it can, and
# where NVRTC still cannot be loaded the NVRTC tests print SKIPPED and pass. CI (.ci/run) sets
# GPU_CILK_REQUIRE_NVRTC=1 (and GPU_CILK_REQUIRE_SIM=1), which turns a missing NVRTC (or g++) into
# a failure; set them here to do the same.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${GPU_CILK_NVRTC_READY:-}" ]; then
  # shellcheck source=/dev/null
  source scripts/nvrtc-env.sh
fi
# Not --all-targets: that would also run the benchmark programs in benches/ (minutes of timing).
cargo test --workspace --lib --bins --tests --examples
cargo test --workspace --doc

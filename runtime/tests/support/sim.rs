//! Shared by the runtime's host-simulation test binaries: the simulated device, or a visible skip
//! when no C++ compiler can be run; `GPU_CILK_REQUIRE_SIM=1` (set by CI and `scripts/test.sh`)
//! turns that into a failure (see `gate.rs`).

#![allow(dead_code)]

#[path = "gate.rs"]
mod gate;

use gpu_cilk_runtime::backend::cuda::sim::{compiler_version, SimDevice};

/// Whether a missing compiler must fail the test instead of skipping it.
pub fn require_sim() -> bool {
    gate::require_sim()
}

/// The simulated device, or `None` after printing why `test` is skipped.
pub fn sim_device(test: &str) -> Option<SimDevice> {
    match compiler_version() {
        Ok(_) => Some(SimDevice::new()),
        Err(e) => {
            gate::sim_missing(test, &e);
            None
        }
    }
}

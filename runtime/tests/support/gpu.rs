//! Shared by the runtime's GPU test binaries: open the CUDA device or skip with a printed reason;
//! `GPU_CILK_REQUIRE_GPU=1` (set by scripts/gpu-check.sh) turns a missing device into a failure.

#![allow(dead_code)]

use gpu_cilk_runtime::backend::cuda::CudaDevice;
use gpu_cilk_runtime::Config;

/// Whether a missing GPU must fail the test instead of skipping it.
pub fn require_gpu() -> bool {
    std::env::var("GPU_CILK_REQUIRE_GPU").is_ok_and(|v| v == "1")
}

/// Device 0, or `None` after printing why `test` is skipped.
pub fn open_device(test: &str) -> Option<CudaDevice> {
    match CudaDevice::open(&Config::default()) {
        Ok(d) => Some(d),
        Err(e) => {
            if require_gpu() {
                panic!("GPU_CILK_REQUIRE_GPU=1 but no CUDA device opened: {e}");
            }
            eprintln!("SKIPPED {test}: {e}");
            None
        }
    }
}

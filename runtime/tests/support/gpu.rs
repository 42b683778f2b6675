//! Shared by the runtime's GPU test binaries: the CUDA device, or a failure saying why there is
//! none (GPU tests are `#[ignore]`d and run only on request; see `gate.rs`).

#![allow(dead_code)]

#[path = "gate.rs"]
pub mod gate;

use gpu_cilk_runtime::backend::cuda::CudaDevice;
use gpu_cilk_runtime::Config;

/// Device 0 for GPU test `test`.
///
/// # Panics
/// When no CUDA device can be opened (the test was asked to run, so that is a failure).
pub fn device(test: &str) -> CudaDevice {
    CudaDevice::open(&Config::default()).unwrap_or_else(|e| gate::no_gpu(test, &e))
}

//! The cuda backend (placeholder until the CUDA backend issue lands): asking for it is a clear
//! [`Error::BackendUnavailable`], and `auto` falls back to cpu.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::runtime::Report;
use crate::task::{Call, CilkTask};

/// The CUDA backend.
pub struct CudaBackend {
    _private: (),
}

impl CudaBackend {
    /// Opens the first CUDA device.
    pub fn new(_config: &Config) -> Result<Self> {
        Err(Error::BackendUnavailable {
            backend: "cuda",
            reason: "this build of gpu-cilk has no CUDA backend yet".to_string(),
        })
    }

    /// Device name and compute capability.
    pub fn description(&self) -> String {
        String::new()
    }

    /// Runs a root call on the GPU.
    pub fn run<T: CilkTask>(&self, _call: Call<T>) -> Result<Report<T::Output>> {
        Err(Error::BackendUnavailable { backend: "cuda", reason: "not built".into() })
    }
}

//! The cuda backend: gpu-cilk's CUDA plumbing, and the backend the GPU scheduler will run on.
//!
//! Built on `cudarc` with dynamic loading, so it compiles and links on machines without CUDA;
//! `libcuda` and `libnvrtc` are found at run time, and when either is missing, or there is no
//! device, [`CudaBackend::new`] says exactly why and `Runtime::new()`'s `auto` mode falls back to
//! the cpu backend.
//!
//! Modules (one job each):
//! - [`driver`]: loading the libraries, guarding calls into them, driver errors to [`Error`]s.
//! - [`nvrtc`]: CUDA C++ source (+ in-memory headers) to PTX for an architecture; no GPU needed.
//! - [`cache`]: the on-disk PTX cache keyed by a SHA-256 of source, options, arch and NVRTC version.
//! - [`device`]: [`CudaDevice`]: open a device, its info, memory, copies, timed synchronization.
//! - [`memory`]: [`DeviceBuffer`], [`DevicePtr`], the [`DeviceCopy`] element contract.
//! - [`module`]: [`Program`] (a loaded module) and [`Kernel`] (launch with a parameter struct).
//!
//! The internal API the GPU scheduler (and the benchmarks) build on:
//!
//! ```no_run
//! use gpu_cilk_runtime::backend::cuda::{CudaDevice, DeviceCopy, DevicePtr, LaunchDims, ProgramSource};
//! use gpu_cilk_runtime::Config;
//!
//! #[repr(C)]
//! #[derive(Clone, Copy)]
//! struct Params { out: DevicePtr<u64>, n: u32 }
//! // SAFETY: repr(C) POD, mirrored by `struct Params { unsigned long long* out; unsigned n; }`.
//! unsafe impl DeviceCopy for Params {}
//!
//! # fn main() -> gpu_cilk_runtime::Result<()> {
//! let dev = CudaDevice::open(&Config::default())?;
//! let src = r#"struct Params { unsigned long long* out; unsigned n; };
//! extern "C" __global__ void iota(Params p) {
//!     unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
//!     if (i < p.n) p.out[i] = i;
//! }"#;
//! let program = dev.load_program(&ProgramSource::new("iota", src))?;
//! // SAFETY: `iota` takes one `Params` and writes only out[0..n).
//! let iota = unsafe { program.kernel::<Params>("iota")? };
//! let out = dev.alloc_zeroed::<u64>(1000)?;
//! iota.launch(LaunchDims::cover(1000, 256), &Params { out: out.ptr(), n: 1000 })?;
//! let host = dev.dtoh(&out)?; // synchronizes (with Config::timeout) first
//! assert_eq!(host[999], 999);
//! # Ok(())
//! # }
//! ```

pub mod cache;
pub mod device;
pub mod driver;
pub mod memory;
pub mod module;
pub mod nvrtc;

pub use cache::{CacheKey, CompiledPtx, PtxCache};
pub use device::{CudaDevice, DeviceInfo};
pub use memory::{DeviceBuffer, DeviceCopy, DevicePtr};
pub use module::{Kernel, LaunchDims, Program, ProgramInfo};
pub use nvrtc::{compile, compile_ptx, nvrtc_version, Arch, Header, ProgramSource};

use crate::config::Config;
use crate::error::{Error, Result};
use crate::runtime::Report;
use crate::task::{Call, CilkTask};

/// The CUDA backend: an open device, ready for the GPU scheduler.
pub struct CudaBackend {
    device: CudaDevice,
}

impl CudaBackend {
    /// Opens device 0. Fails with [`Error::BackendUnavailable`] saying why when there is no
    /// driver, no device, or no NVRTC.
    pub fn new(config: &Config) -> Result<Self> {
        Ok(CudaBackend { device: CudaDevice::open(config)? })
    }

    /// The open device.
    pub fn device(&self) -> &CudaDevice {
        &self.device
    }

    /// e.g. "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)".
    pub fn description(&self) -> String {
        self.device.description()
    }

    /// Runs a root call on the GPU (not yet: the GPU scheduler is being written).
    pub fn run<T: CilkTask>(&self, _call: Call<T>) -> Result<Report<T::Output>> {
        Err(Error::BackendUnavailable {
            backend: "cuda",
            reason: format!(
                "the CUDA scheduler is not implemented yet (device {} is usable); use the cpu backend",
                self.description()
            ),
        })
    }
}

//! The cuda backend: the CUDA plumbing (driver, NVRTC, PTX cache, memory, kernels), the program
//! assembly and the host-driven levelized scheduler that runs generated kernels on the GPU.
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
//! - [`program`]: one CUDA program from the task fragments reachable from a root.
//! - `sched`: the levelized scheduler over device channel stacks (launches, read-back, spills).
//!
//! The internal API the scheduler (and the benchmarks and GPU tests) build on:
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
pub mod program;
mod sched;

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
    config: Config,
    programs: std::sync::Mutex<std::collections::HashMap<std::any::TypeId, std::sync::Arc<Loaded>>>,
}

/// A program loaded for one root task, with its device state (kept across runs).
struct Loaded {
    asm: program::AssembledProgram,
    program: Program,
    state: std::sync::Mutex<Option<sched::GpuState>>,
}

fn task_names(asm: &program::AssembledProgram) -> String {
    asm.tasks.iter().map(|t| t.name).collect::<Vec<_>>().join(", ")
}

impl CudaBackend {
    /// Opens device 0. Fails with [`Error::BackendUnavailable`] saying why when there is no
    /// driver, no device, or no NVRTC.
    pub fn new(config: &Config) -> Result<Self> {
        Ok(CudaBackend { device: CudaDevice::open(config)?, config: config.clone(), programs: Default::default() })
    }

    /// The open device.
    pub fn device(&self) -> &CudaDevice {
        &self.device
    }

    /// e.g. "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)".
    pub fn description(&self) -> String {
        self.device.description()
    }

    /// Runs a root call on the GPU: assembles (once per root task) and compiles the program of
    /// every task reachable from the root, then runs the host-driven levelized scheduler.
    pub fn run<T: CilkTask>(&self, call: Call<T>) -> Result<Report<T::Output>> {
        let loaded = self.program_for::<T>()?;
        let mut state =
            loaded.state.lock().map_err(|_| Error::Internal("device state poisoned by an earlier failure".into()))?;
        if state.is_none() {
            *state = Some(sched::GpuState::new(&self.device, &loaded.program, &loaded.asm, &self.config)?);
        }
        let st = state.as_mut().ok_or_else(|| Error::Internal("device state missing".into()))?;
        let result = sched::GpuRun::new(&self.device, &loaded.program, &loaded.asm, st)
            .run::<T::Args, T::Output>(call.args, &self.config);
        if result.is_err() {
            // A failed run may leave elements in channels; start the next one from fresh state.
            *state = None;
        }
        let (value, stats) = result?;
        Ok(Report { value, stats })
    }

    /// The loaded program whose root is `T` (compiled through the PTX cache the first time).
    fn program_for<T: CilkTask>(&self) -> Result<std::sync::Arc<Loaded>> {
        let id = std::any::TypeId::of::<T>();
        let mut programs = self.programs.lock().map_err(|_| Error::Internal("program table poisoned".into()))?;
        if let Some(p) = programs.get(&id) {
            return Ok(p.clone());
        }
        let asm = program::assemble(&crate::task::Registry::of::<T>())?;
        // 177: "variable declared but never referenced" (frames restore every field).
        let source =
            ProgramSource::new(format!("gpu_cilk_{}", T::NAME), asm.source.clone()).option("--diag-suppress=177");
        let loaded = self.device.load_program(&source).map_err(|e| match e {
            Error::Compile { log, .. } => Error::Compile {
                task_or_program: format!("the CUDA program of `{}` (tasks: {})", T::NAME, task_names(&asm)),
                log,
            },
            e => e,
        })?;
        let entry = std::sync::Arc::new(Loaded { asm, program: loaded, state: std::sync::Mutex::new(None) });
        programs.insert(id, entry.clone());
        Ok(entry)
    }
}

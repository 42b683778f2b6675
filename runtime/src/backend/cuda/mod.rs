//! The cuda backend: the CUDA plumbing (driver, NVRTC, PTX cache, memory, kernels), the program
//! assembly, the typed Rust↔CUDA contract and the schedulers that run generated kernels on the GPU.
//!
//! Built on `cudarc` with dynamic loading, so it compiles and links on machines without CUDA;
//! `libcuda` and `libnvrtc` are found at run time, and when either is missing, or there is no
//! device, [`CudaBackend::new`] says exactly why and `Runtime::new()`'s `auto` mode falls back to
//! the cpu backend.
//!
//! Modules (one job each; the arrows point down this list's dependencies, never back up):
//! - [`driver`]: loading the libraries, guarding calls into them, driver errors to [`Error`]s.
//! - `context`: one CUDA context and its stream; which driver errors mean a kernel broke it.
//! - [`nvrtc`]: CUDA C++ source (+ in-memory headers) to PTX for an architecture; no GPU needed.
//! - [`cache`]: the on-disk PTX cache keyed by a SHA-256 of source, options, arch and NVRTC version.
//! - [`device`]: [`CudaDevice`]: open a device, its info, memory, copies, timed synchronization.
//! - [`memory`]: [`DeviceBuffer`], [`DevicePtr`], the [`DeviceCopy`] element contract.
//! - [`module`]: [`Program`] (a loaded module) and [`Kernel`] (launch with a parameter struct).
//! - `abi`: the Rust↔CUDA contract: mirror structs with layout checks compiled into every
//!   program, fault codes, kernel names, task argument layouts.
//! - [`program`]: one CUDA program from the task fragments reachable from a root.
//! - `faults`, `temps`: device fault records to errors; the device heap of `alloc!`.
//! - `levels`: the host-driven levelized scheduler over device channel stacks.
//!
//! A kernel that breaks the CUDA context (an illegal or misaligned address, a trap) comes back as
//! [`Error::KernelFailed`] naming the kernel and its task, whichever later call noticed it. CUDA
//! cannot recover from that inside the process (see `context`): the backend drops its session,
//! and every later run in the process fails at once with [`Error::BackendUnavailable`] quoting the
//! failure (a new `auto` runtime falls back to the cpu backend); restarting the process is the
//! only way back to the GPU.
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

mod abi;
pub mod cache;
mod context;
pub mod device;
pub mod driver;
mod faults;
mod levels;
pub mod memory;
pub mod module;
pub mod nvrtc;
mod persistent;
pub mod program;
pub(crate) mod resident;
// The simulation's own API is test-facing (the `test-support` feature makes it public); the
// `cuda-sim` backend (`sim_backend`) is its product use.
#[cfg(all(target_os = "linux", feature = "test-support"))]
pub mod sim;
#[cfg(all(target_os = "linux", not(feature = "test-support")))]
#[allow(dead_code, unused_imports)] // what only tests use
pub(crate) mod sim;
#[cfg(target_os = "linux")]
pub mod sim_backend;
mod slices;
mod target;
mod temps;

pub use abi::DeviceScheduler;
/// The batched heap's header (`gc_heap<Key>`), for the heap's GPU tests and benchmark.
#[cfg(feature = "test-support")]
pub use abi::GcHeap;
pub use cache::{CacheKey, CompiledPtx, PtxCache};
pub use context::DeviceInfo;
pub use device::CudaDevice;
pub use memory::{DeviceBuffer, DeviceCopy, DevicePtr};
pub use module::{Kernel, LaunchDims, Program, ProgramInfo};
pub use nvrtc::{compile, compile_ptx, nvrtc_version, Arch, Header, ProgramSource};

use crate::config::{Config, SchedulerKind};
use crate::error::{Error, Result};
use crate::stats::Report;
use crate::task::{Call, CilkTask};
use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The CUDA backend: a device session (context, programs, their device state), reopened after a
/// kernel breaks the context.
pub struct CudaBackend {
    config: Config,
    description: String,
    session: Mutex<Option<Arc<Session>>>,
}

/// One open device and everything loaded into its context. Dropped as a whole when a kernel
/// breaks the context, so nothing of a dead context is ever used again.
struct Session {
    device: CudaDevice,
    programs: Mutex<HashMap<(TypeId, abi::DeviceScheduler), Arc<Loaded>>>,
}

/// A program loaded for one root task and scheduler, with its device state (kept across runs).
struct Loaded {
    asm: program::AssembledProgram,
    program: Program,
    state: Mutex<Option<SchedulerState>>,
}

/// The device state of one loaded program.
enum SchedulerState {
    Levels(Box<levels::LevelsState>),
    Persistent(Box<persistent::PersistentState<CudaDevice>>),
}

/// The device scheduler `config` asks for (`auto`: persistent).
pub(crate) fn device_scheduler(config: &Config) -> Result<abi::DeviceScheduler> {
    match config.scheduler {
        SchedulerKind::Auto | SchedulerKind::Persistent => Ok(abi::DeviceScheduler::Persistent),
        SchedulerKind::Levels => Ok(abi::DeviceScheduler::Levels),
        other => Err(Error::Config(format!(
            "the `{other}` scheduler runs on the cpu backend; the cuda backend runs `persistent` (default) or `levels`"
        ))),
    }
}

/// Drops the device state (channels, frame pools, stacks) of every program of `session` but `keep`
/// that no run is using now; their modules stay loaded and a later run makes the state again.
/// Returns how many were dropped.
fn release_idle(session: &Session, keep: &Arc<Loaded>) -> usize {
    let others: Vec<Arc<Loaded>> = match session.programs.lock() {
        Ok(programs) => programs.values().filter(|l| !Arc::ptr_eq(l, keep)).cloned().collect(),
        Err(_) => return 0,
    };
    let mut dropped = 0;
    for other in others {
        // A state in use by a run on another thread is locked: it stays.
        if let Ok(mut st) = other.state.try_lock() {
            if st.take().is_some() {
                dropped += 1;
            }
        }
    }
    tracing::debug!(dropped, "device memory full: dropped the idle device states of other programs");
    dropped
}

pub(crate) fn task_names(asm: &program::AssembledProgram) -> String {
    asm.tasks.iter().map(|t| t.name).collect::<Vec<_>>().join(", ")
}

/// `KernelFailed` with the tasks behind the kernels it names, so the message says which
/// `#[gpu_cilk]` functions were running.
fn name_tasks(e: Error, asm: &program::AssembledProgram) -> Error {
    match e {
        Error::KernelFailed { kernels, name, description } => {
            let mut tasks: Vec<String> = Vec::new();
            for t in &asm.tasks {
                for q in 0..=t.syncs + 1 {
                    let k = abi::queue_kernel(&t.c_name, q);
                    if kernels.contains(&format!("`{k}`")) {
                        let what = if q == 0 { "its pre-spawn segment".to_string() } else { format!("segment {q}") };
                        tasks.push(format!("`{k}` runs {what} of task `{}`", t.name));
                    }
                }
            }
            if kernels.contains("`gc_persistent`") {
                let names: Vec<String> = asm.tasks.iter().map(|t| format!("`{}`", t.name)).collect();
                tasks.push(format!("`gc_persistent` is the persistent scheduler, running tasks {}", names.join(", ")));
            }
            let kernels = if tasks.is_empty() { kernels } else { format!("{kernels} ({})", tasks.join("; ")) };
            Error::KernelFailed { kernels, name, description }
        }
        e => e,
    }
}

/// Runs the program's layout probe and compares every struct and argument layout the device sees
/// with Rust's (once per loaded program).
fn verify_layout<D: target::Target>(dev: &D, program: &D::Program, asm: &program::AssembledProgram) -> Result<()> {
    let out = dev.alloc_zeroed::<u64>(asm.probes.len().max(1))?;
    // SAFETY: `gc_abi_layout(gc_u64* out)` (written by `abi::layout_probe` for exactly these
    // probes) stores `probes.len()` values into `out`, which holds that many.
    let k = unsafe { dev.kernel::<DevicePtr<u64>>(program, "gc_abi_layout")? };
    dev.launch(&k, LaunchDims::cover(1, 1), &DevicePtr::from_addr(D::addr(&out)))?;
    abi::check_layout(&asm.probes, &dev.dtoh(&out)?)
}

impl CudaBackend {
    /// Opens device 0. Fails with [`Error::BackendUnavailable`] saying why when there is no
    /// driver, no device, or no NVRTC.
    pub fn new(config: &Config) -> Result<Self> {
        device_scheduler(config)?;
        let device = CudaDevice::open(config)?;
        let description = device.description();
        let session = Session { device, programs: Mutex::new(HashMap::new()) };
        Ok(CudaBackend { config: config.clone(), description, session: Mutex::new(Some(Arc::new(session))) })
    }

    /// e.g. "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)".
    pub fn description(&self) -> String {
        self.description.clone()
    }

    /// The open session, opening a fresh one if the last was discarded.
    fn session(&self) -> Result<Arc<Session>> {
        let mut s = self.session.lock().map_err(|_| Error::Internal("device session poisoned".into()))?;
        if let Some(s) = s.as_ref() {
            return Ok(s.clone());
        }
        let device = CudaDevice::open(&self.config)?;
        let fresh = Arc::new(Session { device, programs: Mutex::new(HashMap::new()) });
        *s = Some(fresh.clone());
        Ok(fresh)
    }

    /// Drops `broken` (when it is still the current session) after a kernel broke CUDA: its
    /// buffers and modules cannot be used again, and the next run fails at once (`context::lost`).
    fn discard(&self, broken: Arc<Session>) {
        if let Ok(mut s) = self.session.lock() {
            if s.as_ref().is_some_and(|cur| Arc::ptr_eq(cur, &broken)) {
                *s = None;
            }
        }
        // The last handle to the session frees its buffers and modules (the driver reports errors
        // for them in a broken context, which cudarc records and ignores) and its context.
        drop(broken);
    }

    /// Runs a root call on the GPU: assembles (once per root task) and compiles the program of
    /// every task reachable from the root, then runs the scheduler. When a kernel breaks the CUDA
    /// context ([`Error::KernelFailed`]), the error names the kernel and its task, and the backend
    /// discards the context with everything in it; after that (in this process, whichever
    /// runtime's kernel failed) every run fails at once with [`Error::BackendUnavailable`].
    pub fn run<T: CilkTask>(&self, call: Call<'_, T>) -> Result<Report<T::Output>> {
        if let Some(cause) = context::lost() {
            return Err(context::lost_error(&cause));
        }
        let session = self.session()?;
        let result = self.run_in(&session, call);
        if let Err(e @ Error::KernelFailed { .. }) = &result {
            // The same failure `context` recorded, now naming the tasks behind the kernel.
            context::set_lost(e.to_string(), true);
            self.discard(session);
        }
        result
    }

    fn run_in<T: CilkTask>(&self, session: &Session, call: Call<'_, T>) -> Result<Report<T::Output>> {
        let scheduler = device_scheduler(&self.config)?;
        if scheduler == abi::DeviceScheduler::Levels {
            if let Some(e) = crate::task::Registry::of::<T>().levels_refusal() {
                return Err(e);
            }
        }
        let loaded = self.program_for::<T>(session, scheduler)?;
        let mut state =
            loaded.state.lock().map_err(|_| Error::Internal("device state poisoned by an earlier failure".into()))?;
        let (dev, program, asm, config) = (&session.device, &loaded.program, &loaded.asm, &self.config);
        let make = || -> Result<SchedulerState> {
            Ok(match scheduler {
                abi::DeviceScheduler::Levels => {
                    SchedulerState::Levels(Box::new(levels::LevelsState::new(dev, program, asm, config)?))
                }
                abi::DeviceScheduler::Persistent => {
                    SchedulerState::Persistent(Box::new(persistent::PersistentState::new(dev, program, asm, config)?))
                }
            })
        };
        let result = (|| {
            if state.is_none() {
                *state = Some(match make() {
                    // The device is full, maybe of the states of other programs this runtime ran
                    // before (each keeps its pools across runs): drop those that are idle, retry once.
                    Err(Error::Cuda { name, .. })
                        if name == "CUDA_ERROR_OUT_OF_MEMORY" && release_idle(session, &loaded) > 0 =>
                    {
                        make()?
                    }
                    other => other?,
                });
            }
            let owner = session as *const Session as usize;
            slices::with_device_slices(dev, owner, call.args, T::SLICES, |args| match state.as_mut() {
                Some(SchedulerState::Levels(st)) => {
                    levels::LevelsRun::new(dev, program, asm, st).run::<T::Args, T::Output>(args, config)
                }
                Some(SchedulerState::Persistent(st)) => {
                    persistent::PersistentRun::new(dev, asm, st).run::<T::Args, T::Output>(args, config)
                }
                None => Err(Error::Internal("device state missing".into())),
            })
        })();
        if result.is_err() {
            // A failed run may leave elements in channels; start the next one from fresh state.
            *state = None;
        }
        let ((value, mut stats), transfer) = result.map_err(|e| name_tasks(e, &loaded.asm))?;
        stats.transfer = transfer;
        stats.scheduler = Some(match scheduler {
            abi::DeviceScheduler::Levels => SchedulerKind::Levels,
            abi::DeviceScheduler::Persistent => SchedulerKind::Persistent,
        });
        Ok(Report { value, stats })
    }

    /// `bytes` of device memory for a resident buffer, in the current session's context (runs
    /// in a later session, after a kernel failure, refuse it: [`resident::lookup`]).
    pub(crate) fn resident(&self, bytes: usize) -> Result<Box<dyn resident::ResidentStore>> {
        if let Some(cause) = context::lost() {
            return Err(context::lost_error(&cause));
        }
        let session = self.session()?;
        let owner = Arc::as_ptr(&session) as usize;
        Ok(Box::new(resident::Stored::new(session, |s: &Arc<Session>| &s.device, owner, bytes)?))
    }

    /// The loaded program whose root is `T`, for `scheduler` (compiled through the PTX cache the
    /// first time).
    fn program_for<T: CilkTask>(&self, session: &Session, scheduler: abi::DeviceScheduler) -> Result<Arc<Loaded>> {
        let id = (TypeId::of::<T>(), scheduler);
        let mut programs = session.programs.lock().map_err(|_| Error::Internal("program table poisoned".into()))?;
        if let Some(p) = programs.get(&id) {
            return Ok(p.clone());
        }
        let asm = program::assemble_for(&crate::task::Registry::of::<T>(), scheduler)?;
        // 177: "variable declared but never referenced" (frames restore every field).
        let source =
            ProgramSource::new(format!("gpu_cilk_{}", T::NAME), asm.source.clone()).option("--diag-suppress=177");
        let loaded = session.device.load_program(&source).map_err(|e| match e {
            Error::Compile { compiler, log, .. } => Error::Compile {
                compiler,
                task_or_program: format!("the CUDA program of `{}` (tasks: {})", T::NAME, task_names(&asm)),
                log,
            },
            e => e,
        })?;
        verify_layout(&session.device, &loaded, &asm)?;
        let entry = Arc::new(Loaded { asm, program: loaded, state: Mutex::new(None) });
        programs.insert(id, entry.clone());
        Ok(entry)
    }
}

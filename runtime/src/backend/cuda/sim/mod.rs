//! The host simulation of device code: the CUDA C++ that gpu-cilk generates (and its device
//! headers and test kernels), compiled by g++ with `kernels/sim/gc_sim.h` and run on host threads,
//! so that CI machines without a GPU *run* device code instead of only compiling it. It is for
//! catching logic bugs of device code — lost or duplicated elements, deadlocks, broken termination
//! — before they cost GPU time.
//!
//! Owns: building ([`SimProgram::compile`]: g++, an on-disk cache keyed by SHA-256), loading
//! (`libloading`), launching ([`SimProgram::launch`], [`SimKernel::launch`]) and the host memory
//! that stands in for device memory ([`SimBuffer`]). Must not touch: the GPU path of this backend
//! (driver, NVRTC, scheduler); it shares only [`ProgramSource`], [`LaunchDims`], [`DeviceCopy`]
//! and [`DevicePtr`] with it, so the same sources, parameter structs and launch shapes work on both.
//!
//! One file per concern, each depending only on those above it:
//!
//! - `build.rs`: the compiler (`GPU_CILK_SIM_CXX`, its version), the flags, the cache key, and
//!   running g++ on a [`ProgramSource`] into a shared object;
//! - `scan.rs`: finding the kernels in the preprocessed source and writing their entry points;
//! - `load.rs`: the object's C ABI (the mirror of `gc_sim_launch_args`) and loading it;
//! - `buffer.rs`: simulated device memory ([`SimBuffer`]) and the shared pages under it;
//! - `program.rs`: [`SimProgram`], a built and loaded program (cache lookup, build, load);
//! - `launch.rs`: launch options, typed kernels ([`SimKernel`]) and running a launch (forked or in
//!   process, timeouts, fault reports);
//! - `device.rs`: [`SimDevice`], the [`CudaDevice`]-shaped face of all of it.
//!
//! # The model (details in `gc_sim.h`)
//!
//! Every simulated thread is a warp of **one lane** (`warpSize == 1`), so warp intrinsics are
//! exact for code written against its lane masks (gpu-cilk's is: see `gpu_cilk/portable.cuh`).
//! Atomics are relaxed host atomics, fences are `seq_cst` fences; x86 is TSO, stronger than the
//! GPU's memory model, so a missing fence may go unnoticed here. Nothing about timing carries
//! over. Two launch modes ([`LaunchMode`]):
//!
//! - **independent** (default): a pool of host threads runs the grid one simulated thread at a
//!   time per host thread; no simulated thread may wait for another, and `__syncthreads` fails the
//!   launch naming the kernel. Grids of millions of threads work.
//! - **cooperative**: every simulated thread gets its own host thread, all running at once (up to
//!   4096), for persistent kernels whose threads spin-wait on each other; `__syncthreads` is a
//!   barrier of the block.
//!
//! # Building
//!
//! `g++ -E` of the source finds every `extern "C" __global__ void NAME(...)` definition (after the
//! preprocessor, so comments, `#if`'d-out code and macros are handled; kernels inside an
//! `extern "C" { ... }` block are not found). The build appends, per kernel, an
//! `extern "C" gc_sim_entry_NAME(const void* params)` and a `gc_sim_params_NAME()` (the parameter
//! bytes), plus the list of names, and compiles with
//! `g++ -std=c++17 -O2 -shared -fPIC -pthread -fno-strict-aliasing -DGC_HOST_SIM -include gc_sim.h`
//! into `<cache>/sim/<sha256>.so` (the cache directory of [`PtxCache::from_env`]; a temporary
//! directory when that is `off`). Options of the [`ProgramSource`] that start with `-D`, `-U` or
//! `-I` are passed on; NVRTC's others are ignored. A compile error is [`Error::Compile`] with g++'s
//! whole log; no compiler is [`Error::BackendUnavailable`] naming it.
//!
//! # Launching, faults and isolation
//!
//! By default a launch runs in a **forked child process**: simulated device memory
//! ([`SimBuffer`]) is `MAP_SHARED` anonymous memory, and the loaded object's globals (the
//! `__device__` variables) are remapped `MAP_SHARED` right after loading, so the child's writes
//! are the parent's, as device memory and device globals persist across launches on a GPU
//! (and, as with modules on a GPU, every [`SimProgram::compile`] has its own globals, even of a
//! cached object). A
//! kernel that traps (`__trap()`, `assert`), touches invalid memory, misuses an intrinsic or does
//! not finish within the timeout then comes back as [`Error::SimKernelFailed`] naming the kernel,
//! block and thread, and the test process lives on. Memory a kernel writes must come from
//! [`SimBuffer`] (as it must come from `cudaMalloc` on a GPU): the child's writes to ordinary host
//! memory are lost. `GPU_CILK_SIM_ISOLATE=0` (or [`LaunchOptions::isolate`]) runs launches in
//! the calling process instead (for a debugger or ThreadSanitizer): a fault then aborts the
//! process and there is no timeout.
//!
//! # Environment
//!
//! `GPU_CILK_SIM_CXX` (the compiler, default `g++`), `GPU_CILK_SIM_CXXFLAGS` (extra flags, e.g.
//! `-g -O1`), `GPU_CILK_SIM_ISOLATE` (`0`: in-process), `GPU_CILK_SIM_THREADS` (host threads of an
//! independent launch; default: the machine's), `GPU_CILK_SIM_TIMEOUT_MS` (default 300000).
//!
//! ```no_run
//! use gpu_cilk_runtime::backend::cuda::sim::{SimBuffer, SimProgram};
//! use gpu_cilk_runtime::backend::cuda::{DeviceCopy, DevicePtr, LaunchDims, ProgramSource};
//!
//! #[repr(C)]
//! #[derive(Clone, Copy)]
//! struct Params { out: DevicePtr<u64>, n: u32 }
//! // SAFETY: repr(C) POD, mirrored by `struct Params { unsigned long long* out; unsigned n; }`.
//! unsafe impl DeviceCopy for Params {}
//!
//! # fn main() -> gpu_cilk_runtime::Result<()> {
//! let src = r#"struct Params { unsigned long long* out; unsigned n; };
//! extern "C" __global__ void iota(Params p) {
//!     unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
//!     if (i < p.n) p.out[i] = i;
//! }"#;
//! let program = SimProgram::compile(&ProgramSource::new("iota", src))?;
//! // SAFETY: `iota` takes one `Params` and writes only out[0..n).
//! let iota = unsafe { program.kernel::<Params>("iota")? };
//! let out = SimBuffer::<u64>::zeroed(1000)?;
//! iota.launch(LaunchDims::cover(1000, 256), &Params { out: out.ptr(), n: 1000 })?;
//! assert_eq!(out.to_vec()[999], 999);
//! # Ok(())
//! # }
//! ```
//!
//! [`ProgramSource`]: super::ProgramSource
//! [`LaunchDims`]: super::LaunchDims
//! [`DeviceCopy`]: super::DeviceCopy
//! [`DevicePtr`]: super::DevicePtr
//! [`CudaDevice`]: super::CudaDevice
//! [`PtxCache::from_env`]: super::PtxCache::from_env
//! [`Error::Compile`]: crate::Error::Compile
//! [`Error::BackendUnavailable`]: crate::Error::BackendUnavailable
//! [`Error::SimKernelFailed`]: crate::Error::SimKernelFailed

mod buffer;
mod build;
mod device;
mod launch;
mod load;
mod program;
mod scan;

pub use buffer::SimBuffer;
pub use build::{compiler, compiler_version, CXX_FLAGS};
pub use device::SimDevice;
pub use launch::{LaunchMode, LaunchOptions, SimKernel};
pub use program::SimProgram;

//! The runtime's one error type. Every failure a user can meet comes back as an [`Error`] whose
//! message names what failed (the task function, the level, the capacity, the device) and, where
//! there is one, what to do about it. This module owns the messages, not the detection.

use std::time::Duration;

/// Everything that can go wrong when building a [`crate::Runtime`] or running a task tree.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `GPU_CILK_BACKEND` (or a backend name given to the API) is not one we know.
    #[error("unknown backend `{0}`: expected one of serial, cpu, cuda, cuda-sim, auto")]
    UnknownBackend(String),

    /// The requested backend cannot be used on this machine.
    #[error("the {backend} backend is not available: {reason}")]
    BackendUnavailable {
        /// The backend that was asked for.
        backend: &'static str,
        /// Why it cannot be used (no driver, no device, no NVRTC, not built yet, ...).
        reason: String,
    },

    /// A configuration value is out of range.
    #[error("invalid configuration: {0}")]
    Config(String),

    /// A task's body panicked on a host backend (index out of bounds, division by zero, overflow
    /// in a debug build, an explicit `panic!`, ...).
    #[error("task `{task}` failed at recursion level {level}: {message}")]
    TaskPanicked {
        /// The `#[gpu_cilk]` function whose sub-kernel failed.
        task: &'static str,
        /// Its recursion depth (the root is level 0).
        level: usize,
        /// The panic message, with its source location when the panic hook could record one.
        message: String,
    },

    /// A memory pool the scheduler draws from ran out: the work could not be held, so the run
    /// stops rather than drop a task.
    #[error(
        "{pool} exhausted while spawning `{task}` at recursion level {level}: capacity {capacity} \
         elements; raise it with Config::{knob} (or the matching GPU_CILK_* variable)"
    )]
    PoolExhausted {
        /// Which pool ("channel segment pool", "device heap", ...).
        pool: &'static str,
        /// The task function whose spawn or frame could not be stored.
        task: &'static str,
        /// Its recursion level.
        level: usize,
        /// The pool's capacity.
        capacity: usize,
        /// The `Config` field that sizes the pool.
        knob: &'static str,
    },

    /// A task's `alloc!` found no room in the temporary heap.
    #[error(
        "task `{task}` could not allocate a temporary of {elements} elements ({bytes} bytes) at recursion \
         level {level}: the {heap} of {capacity} bytes is exhausted; raise it with \
         Config::temp_heap_bytes (or GPU_CILK_TEMP_HEAP_BYTES)"
    )]
    TempHeapExhausted {
        /// Which heap ("temporary heap", "device temporary heap").
        heap: &'static str,
        /// The `#[gpu_cilk]` function whose `alloc!` failed.
        task: &'static str,
        /// Its recursion level.
        level: usize,
        /// The requested length in elements.
        elements: u64,
        /// The requested size in bytes, as the backend stores the elements.
        bytes: u64,
        /// The heap's size in bytes.
        capacity: u64,
    },

    /// Two children of one segment were given overlapping ranges of a slice, at least one of them
    /// `&mut` (a determinacy race; found by `Config::check_races` on the cpu stealing scheduler).
    #[error(
        "determinacy race in task `{task}`: the spawn at {second_site} gets {second} of a slice of which the spawn at {first_site}, which may still be running, got {first} (counted from the start of the earlier range); give parallel children disjoint ranges"
    )]
    SliceRace {
        /// The task whose segment spawned both.
        task: &'static str,
        /// The earlier spawn site (`file:line:col`).
        first_site: &'static str,
        /// What it got: "`&mut` elements 0..len" (or `&`).
        first: String,
        /// The later spawn site.
        second_site: &'static str,
        /// What it gets, in elements counted from the start of the earlier range.
        second: String,
    },
    /// The recursion went deeper than the configured limit.
    #[error("task `{task}` recursed deeper than the limit of {limit} levels (Config::max_depth)")]
    DepthExceeded {
        /// The task function at the limit.
        task: &'static str,
        /// The configured limit.
        limit: usize,
    },

    /// A run took longer than the configured timeout.
    #[error("the run did not finish within {0:?} (Config::timeout)")]
    Timeout(Duration),

    /// A CUDA driver call failed (allocation, copy, module load, launch configuration, ...).
    #[error("CUDA error while {op}: {name} ({description})")]
    Cuda {
        /// What gpu-cilk was doing ("allocating 4096 bytes", "launching kernel `fib_down`", ...).
        op: String,
        /// The driver's error name, e.g. `CUDA_ERROR_OUT_OF_MEMORY`.
        name: String,
        /// The driver's description of the error, with a hint where gpu-cilk has one.
        description: String,
    },

    /// A kernel failed while running on the device (illegal address, trap, misaligned access,
    /// ...). CUDA cannot recover from such a failure inside the process: every later cuda run in
    /// the process fails with [`Error::BackendUnavailable`] quoting this error, and `auto`
    /// runtimes created later use the cpu backend. Restart the process to use the GPU again.
    #[error(
        "kernel {kernels} failed on the device: {name} ({description}); CUDA cannot recover from this \
         inside the process: later cuda runs in it fail, restart the process to use the GPU again"
    )]
    KernelFailed {
        /// The kernel(s) launched since the last successful synchronization, e.g. "`fib_down`".
        kernels: String,
        /// The driver's error name, e.g. `CUDA_ERROR_ILLEGAL_ADDRESS`.
        name: String,
        /// The driver's description of the error.
        description: String,
    },

    /// A compiler rejected a CUDA C++ program: NVRTC (the cuda backend), or the host C++ compiler
    /// that builds it for the cuda-sim host simulation; `log` is the compiler's whole log.
    #[error("{compiler} could not compile `{task_or_program}`:\n{log}")]
    Compile {
        /// The compiler that rejected it: `NVRTC`, or e.g. `g++ (the cuda-sim host simulation)`.
        compiler: String,
        /// The task function or program whose generated CUDA C++ failed to compile.
        task_or_program: String,
        /// NVRTC's complete compilation log.
        log: String,
    },

    /// NVRTC failed for a reason other than the program's text (out of memory, invalid option,
    /// internal error).
    #[error("NVRTC failed while {op}: {message}")]
    Nvrtc {
        /// What gpu-cilk asked NVRTC to do.
        op: String,
        /// NVRTC's error.
        message: String,
    },

    /// A task's CUDA code faulted on the device (index out of bounds, division by zero, ...).
    #[error("task `{task}` failed on the device at {location} (recursion level {level}): {message}")]
    DeviceFault {
        /// The `#[gpu_cilk]` function whose sub-kernel faulted.
        task: &'static str,
        /// The Rust source location of the faulting operation.
        location: String,
        /// Its recursion level.
        level: usize,
        /// What went wrong, in Rust's words.
        message: String,
    },

    /// A kernel run by the host simulation of device code (`backend::cuda::sim`) failed or could
    /// not be launched: it trapped, failed an `assert`, touched invalid memory, misused an
    /// intrinsic, did not finish in time, or its launch was invalid.
    #[error("kernel `{kernel}` failed in the host simulation of device code: {message}")]
    SimKernelFailed {
        /// The kernel.
        kernel: String,
        /// What happened, with the block and thread where the simulation knows them.
        message: String,
    },

    /// An internal invariant of the scheduler broke; a bug in gpu-cilk, please report it.
    #[error("internal scheduler error (a gpu-cilk bug): {0}")]
    Internal(String),
}

/// `Result` with the runtime's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Turns a caught panic payload into a message.
pub(crate) fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with a non-string payload".to_string()
    }
}

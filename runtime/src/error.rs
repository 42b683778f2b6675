//! The runtime's one error type. Every failure a user can meet comes back as an [`Error`] whose
//! message names what failed (the task function, the level, the capacity, the device) and, where
//! there is one, what to do about it. This module owns the messages, not the detection.

use std::time::Duration;

/// Everything that can go wrong when building a [`crate::Runtime`] or running a task tree.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// `GPU_CILK_BACKEND` (or a backend name given to the API) is not one we know.
    #[error("unknown backend `{0}`: expected one of serial, cpu, cuda, auto")]
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

    /// An internal invariant of the scheduler broke; a bug in gpu-cilk, please report it.
    #[error("internal scheduler error (a gpu-cilk bug): {0}")]
    Internal(String),
}

/// `Result` with the runtime's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

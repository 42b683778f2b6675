//! The cpu backend: the generated sub-kernels on all host cores, under one of two schedulers
//! (`Config::scheduler` / `GPU_CILK_SCHEDULER`):
//!
//! - `stealing` (the default, `steal/`): Cilk/rayon-style work stealing — per-worker deques,
//!   heap frames with join counters, lazy task creation. Fast, and memory grows with live work
//!   only, at any depth.
//! - `levels` (`levels.rs`, `store.rs`, `queue.rs`): the levelized channel stacks, the host twin
//!   of the cuda backend's host-driven loop, kept for differential tests of the GPU algorithm.
//!
//! This module owns the choice between them and the worker pool they share (a rayon pool whose
//! threads have `Config::stack_bytes` of stack); it must not know how either schedules.

mod levels;
mod queue;
pub mod steal;
mod store;

use crate::config::{Config, SchedulerKind};
use crate::error::{Error, Result};
use crate::stats::Report;
use crate::task::{Call, CilkTask};

/// The cpu backend: a worker pool and the scheduler configuration.
pub struct CpuBackend {
    pool: rayon::ThreadPool,
    /// The stealing scheduler's hand-over between runs (threads lingering after a run).
    lobby: std::sync::Arc<steal::Lobby>,
    config: Config,
    scheduler: SchedulerKind,
}

impl CpuBackend {
    /// A pool of `config.threads` workers (0 = one per core) running `config.scheduler`
    /// (`auto` = `stealing`; `persistent` is the cuda backend's and an error here).
    pub fn new(config: &Config) -> Result<Self> {
        let scheduler = match config.scheduler {
            SchedulerKind::Auto | SchedulerKind::Stealing => SchedulerKind::Stealing,
            SchedulerKind::Levels => SchedulerKind::Levels,
            SchedulerKind::Persistent => {
                return Err(Error::Config(
                    "the `persistent` scheduler runs on the cuda backend only; the cpu backend runs `stealing` \
                     (the default) or `levels` (GPU_CILK_SCHEDULER)"
                        .into(),
                ))
            }
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(config.threads)
            .stack_size(config.stack_bytes)
            .thread_name(|i| format!("gpu-cilk-cpu-{i}"))
            .build()
            .map_err(|e| Error::BackendUnavailable { backend: "cpu", reason: e.to_string() })?;
        Ok(CpuBackend { pool, lobby: Default::default(), config: config.clone(), scheduler })
    }

    /// Worker threads.
    pub fn threads(&self) -> usize {
        self.pool.current_num_threads()
    }

    /// Stealing scheduler: pool threads still awake after the last run, waiting for the next
    /// (`Config::linger_us`; none once that has passed).
    pub fn lingering(&self) -> usize {
        self.lobby.lingering()
    }

    /// The scheduler in use (`Stealing` or `Levels`, never `Auto`).
    pub fn scheduler(&self) -> SchedulerKind {
        self.scheduler
    }

    /// Runs `call` to completion.
    pub fn run<T: CilkTask>(&self, call: Call<'_, T>) -> Result<Report<T::Output>> {
        match self.scheduler {
            SchedulerKind::Levels => match crate::task::Registry::of::<T>().levels_refusal() {
                Some(e) => Err(e),
                None => levels::run(&self.pool, &self.config, call),
            },
            _ => steal::run(&self.pool, &self.lobby, &self.config, call),
        }
    }
}

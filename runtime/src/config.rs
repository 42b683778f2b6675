//! Runtime configuration: which backend, how many threads, how much channel memory, which limits.
//! Values come from code ([`Config`]'s fields and builder methods) or from `GPU_CILK_*`
//! environment variables ([`Config::from_env`]); this module parses and validates them and owns
//! nothing else.

use crate::error::{Error, Result};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// Which backend runs the task tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// The plain recursive function on the calling thread: the oracle.
    Serial,
    /// The generated sub-kernels over levelized channel stacks on all host cores.
    Cpu,
    /// The generated CUDA sub-kernels on an NVIDIA GPU.
    Cuda,
    /// CUDA when a usable GPU, driver and NVRTC are present, otherwise cpu (with one log line).
    Auto,
}

impl BackendKind {
    /// The lower-case name used by `GPU_CILK_BACKEND` and `--backend`.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Serial => "serial",
            BackendKind::Cpu => "cpu",
            BackendKind::Cuda => "cuda",
            BackendKind::Auto => "auto",
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for BackendKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "serial" => Ok(BackendKind::Serial),
            "cpu" => Ok(BackendKind::Cpu),
            "cuda" | "gpu" => Ok(BackendKind::Cuda),
            "auto" | "" => Ok(BackendKind::Auto),
            _ => Err(Error::UnknownBackend(s.to_string())),
        }
    }
}

/// Tunables of a [`crate::Runtime`]. `Config::default()` suits most programs.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The backend (`GPU_CILK_BACKEND`, default `auto`).
    pub backend: BackendKind,
    /// Host worker threads for the cpu backend; 0 = one per core (`GPU_CILK_THREADS`).
    pub threads: usize,
    /// Channel elements one recursion level may hold before the scheduler stops dispatching more
    /// of the level above it (`GPU_CILK_LEVEL_CAPACITY`). The scheduler dispatches at most
    /// `level_capacity / fan-out` tasks at a time, so children always fit.
    pub level_capacity: usize,
    /// Elements per channel segment; channels grow and shrink by whole segments
    /// (`GPU_CILK_SEGMENT_CAPACITY`). Small values exercise spilling.
    pub segment_capacity: usize,
    /// Total channel elements (channel elements and frames, all tasks and levels) the run may hold
    /// at once before it stops with [`Error::PoolExhausted`] (`GPU_CILK_POOL_CAPACITY`).
    pub pool_capacity: usize,
    /// Elements per device channel (one per task, queue and level) on the cuda backend
    /// (`GPU_CILK_DEVICE_LEVEL_CAPACITY`); the scheduler launches at most `capacity / fan-out`
    /// elements at a time so children fit.
    pub device_level_capacity: usize,
    /// Bytes of the device spill pool (`GPU_CILK_DEVICE_SPILL_CAPACITY`): a spawn that finds its
    /// channel full goes there, and the scheduler grows the channel and moves it in after the
    /// launch; only an exhausted pool stops a run.
    pub device_spill_capacity: usize,
    /// Deepest recursion level allowed (`GPU_CILK_MAX_DEPTH`).
    pub max_depth: usize,
    /// Bytes of the heap that task-scoped temporaries (`alloc!`) come from, per run on the cpu
    /// backend and per runtime on the device (`GPU_CILK_TEMP_HEAP_BYTES`). Made only when a
    /// program uses `alloc!`.
    pub temp_heap_bytes: usize,
    /// Longest a run may take; `None` = no limit (`GPU_CILK_TIMEOUT_MS`).
    pub timeout: Option<Duration>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            backend: BackendKind::Auto,
            threads: 0,
            level_capacity: 1 << 14,
            segment_capacity: 1 << 14,
            pool_capacity: 1 << 26,
            device_level_capacity: 1 << 23,
            device_spill_capacity: 1 << 30,
            max_depth: 1 << 16,
            temp_heap_bytes: 1 << 26,
            timeout: None,
        }
    }
}

impl Config {
    /// Defaults overridden by any `GPU_CILK_*` variables that are set.
    pub fn from_env() -> Result<Self> {
        let mut c = Config::default();
        if let Ok(v) = std::env::var("GPU_CILK_BACKEND") {
            c.backend = v.parse()?;
        }
        fn num(name: &str) -> Result<Option<usize>> {
            match std::env::var(name) {
                Ok(v) => v
                    .trim()
                    .parse::<usize>()
                    .map(Some)
                    .map_err(|_| Error::Config(format!("{name}={v:?} is not a non-negative integer"))),
                Err(_) => Ok(None),
            }
        }
        if let Some(v) = num("GPU_CILK_THREADS")? {
            c.threads = v;
        }
        if let Some(v) = num("GPU_CILK_LEVEL_CAPACITY")? {
            c.level_capacity = v;
        }
        if let Some(v) = num("GPU_CILK_SEGMENT_CAPACITY")? {
            c.segment_capacity = v;
        }
        if let Some(v) = num("GPU_CILK_POOL_CAPACITY")? {
            c.pool_capacity = v;
        }
        if let Some(v) = num("GPU_CILK_DEVICE_LEVEL_CAPACITY")? {
            c.device_level_capacity = v;
        }
        if let Some(v) = num("GPU_CILK_DEVICE_SPILL_CAPACITY")? {
            c.device_spill_capacity = v;
        }
        if let Some(v) = num("GPU_CILK_MAX_DEPTH")? {
            c.max_depth = v;
        }
        if let Some(v) = num("GPU_CILK_TEMP_HEAP_BYTES")? {
            c.temp_heap_bytes = v;
        }
        if let Some(v) = num("GPU_CILK_TIMEOUT_MS")? {
            c.timeout = Some(Duration::from_millis(v as u64));
        }
        c.validate()?;
        Ok(c)
    }

    /// Sets the backend.
    pub fn backend(mut self, backend: BackendKind) -> Self {
        self.backend = backend;
        self
    }

    /// Sets the number of host worker threads (0 = one per core).
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// Sets the per-level capacity the scheduler sizes chunks by.
    pub fn level_capacity(mut self, n: usize) -> Self {
        self.level_capacity = n;
        self
    }

    /// Sets the channel segment size.
    pub fn segment_capacity(mut self, n: usize) -> Self {
        self.segment_capacity = n;
        self
    }

    /// Sets the total element pool.
    pub fn pool_capacity(mut self, n: usize) -> Self {
        self.pool_capacity = n;
        self
    }

    /// Sets the device channel capacity (cuda backend).
    pub fn device_level_capacity(mut self, n: usize) -> Self {
        self.device_level_capacity = n;
        self
    }

    /// Sets the device spill pool size in bytes (cuda backend).
    pub fn device_spill_capacity(mut self, bytes: usize) -> Self {
        self.device_spill_capacity = bytes;
        self
    }

    /// Sets the deepest recursion level allowed.
    pub fn max_depth(mut self, n: usize) -> Self {
        self.max_depth = n;
        self
    }

    /// Sets the size of the temporary heap (`alloc!`) in bytes.
    pub fn temp_heap_bytes(mut self, bytes: usize) -> Self {
        self.temp_heap_bytes = bytes;
        self
    }

    /// Sets the run timeout.
    pub fn timeout(mut self, t: Option<Duration>) -> Self {
        self.timeout = t;
        self
    }

    /// Checks that every value is usable.
    pub fn validate(&self) -> Result<()> {
        if self.level_capacity == 0 {
            return Err(Error::Config("level_capacity must be at least 1".into()));
        }
        if self.segment_capacity == 0 {
            return Err(Error::Config("segment_capacity must be at least 1".into()));
        }
        if self.pool_capacity < self.segment_capacity {
            return Err(Error::Config(format!(
                "pool_capacity ({}) must hold at least one segment ({})",
                self.pool_capacity, self.segment_capacity
            )));
        }
        if self.max_depth == 0 {
            return Err(Error::Config("max_depth must be at least 1".into()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_names_round_trip() {
        for b in [BackendKind::Serial, BackendKind::Cpu, BackendKind::Cuda, BackendKind::Auto] {
            assert_eq!(b.name().parse::<BackendKind>().unwrap(), b);
        }
        assert!(matches!("tpu".parse::<BackendKind>(), Err(Error::UnknownBackend(s)) if s == "tpu"));
    }

    #[test]
    fn validation_rejects_zero_sizes() {
        assert!(Config::default().validate().is_ok());
        assert!(Config::default().level_capacity(0).validate().is_err());
        assert!(Config::default().segment_capacity(0).validate().is_err());
        assert!(Config::default().max_depth(0).validate().is_err());
        assert!(Config::default().segment_capacity(64).pool_capacity(8).validate().is_err());
    }
}

//! [`Runtime`]: the one entry point. It picks a backend (from code or `GPU_CILK_BACKEND`), falls
//! back from cuda to cpu with one line saying why, and runs root calls on it. It owns backend
//! selection and nothing of scheduling.

use crate::backend::cuda::memory::DeviceCopy;
use crate::backend::{cpu::CpuBackend, cuda, serial};
use crate::config::{BackendKind, Config};
use crate::error::{Error, Result};
use crate::resident::ResidentBuffer;
use crate::stats::Report;
use crate::task::{CilkTask, IntoCall};
use crate::temp::Scalar;

enum Backend {
    Serial,
    Cpu(CpuBackend),
    Cuda(cuda::CudaBackend),
    #[cfg(target_os = "linux")]
    CudaSim(cuda::sim_backend::SimBackend),
}

/// Runs `#[gpu_cilk]` task trees on one backend.
///
/// ```
/// use gpu_cilk_runtime::{BackendKind, Runtime};
/// let rt = Runtime::with_backend(BackendKind::Serial).unwrap();
/// assert_eq!(rt.backend(), BackendKind::Serial);
/// ```
pub struct Runtime {
    config: Config,
    backend: Backend,
    fallback: Option<String>,
}

impl Runtime {
    /// The backend named by `GPU_CILK_BACKEND` (default `auto`: cuda when usable, else cpu), with
    /// the other `GPU_CILK_*` settings.
    pub fn new() -> Result<Self> {
        Self::with_config(Config::from_env()?)
    }

    /// A specific backend, with the other settings from the environment. Asking for `Cuda` where
    /// it is unusable is an error (ask for `Auto` to fall back).
    pub fn with_backend(kind: BackendKind) -> Result<Self> {
        Self::with_config(Config::from_env()?.backend(kind))
    }

    /// A runtime for exactly this configuration.
    pub fn with_config(config: Config) -> Result<Self> {
        config.validate()?;
        let mut fallback = None;
        let backend = match config.backend {
            BackendKind::Serial => Backend::Serial,
            BackendKind::Cpu => Backend::Cpu(CpuBackend::new(&config)?),
            BackendKind::Cuda => Backend::Cuda(cuda::CudaBackend::new(&config)?),
            #[cfg(target_os = "linux")]
            BackendKind::CudaSim => Backend::CudaSim(cuda::sim_backend::SimBackend::new(&config)?),
            #[cfg(not(target_os = "linux"))]
            BackendKind::CudaSim => {
                return Err(Error::BackendUnavailable {
                    backend: "cuda-sim",
                    reason: "the host simulation of device code runs on Linux only".into(),
                })
            }
            BackendKind::Auto => match cuda::CudaBackend::new(&config) {
                Ok(b) => Backend::Cuda(b),
                Err(e) => {
                    let line = format!("gpu-cilk: using the cpu backend: {e}");
                    if tracing::dispatcher::has_been_set() {
                        tracing::warn!("{line}");
                    } else {
                        eprintln!("{line}");
                    }
                    fallback = Some(e.to_string());
                    Backend::Cpu(CpuBackend::new(&config)?)
                }
            },
        };
        Ok(Runtime { config, backend, fallback })
    }

    /// The backend this runtime runs on (never `Auto`).
    pub fn backend(&self) -> BackendKind {
        match self.backend {
            Backend::Serial => BackendKind::Serial,
            Backend::Cpu(_) => BackendKind::Cpu,
            Backend::Cuda(_) => BackendKind::Cuda,
            #[cfg(target_os = "linux")]
            Backend::CudaSim(_) => BackendKind::CudaSim,
        }
    }

    /// Why `auto` fell back to the cpu backend, if it did.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.fallback.as_deref()
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// A human-readable description of the device or threads in use.
    pub fn device_description(&self) -> String {
        match &self.backend {
            Backend::Serial => "host, 1 thread".to_string(),
            Backend::Cpu(b) => format!("host, {} threads", b.threads()),
            Backend::Cuda(b) => b.description(),
            #[cfg(target_os = "linux")]
            Backend::CudaSim(b) => b.description(),
        }
    }

    /// A copy of `data` resident on this runtime's backend (device memory on cuda and cuda-sim,
    /// host memory otherwise), to pass to many runs as a root slice without transfers: see
    /// [`ResidentBuffer`].
    pub fn upload<T: Scalar + DeviceCopy>(&self, data: &[T]) -> Result<ResidentBuffer<T>> {
        match &self.backend {
            Backend::Serial | Backend::Cpu(_) => Ok(ResidentBuffer::host(data.to_vec())),
            Backend::Cuda(b) => ResidentBuffer::device(data, |bytes| b.resident(bytes)),
            #[cfg(target_os = "linux")]
            Backend::CudaSim(b) => ResidentBuffer::device(data, |bytes| b.resident(bytes)),
        }
    }

    /// As [`Runtime::upload`], taking `data`: on the serial and cpu backends the buffer is `data`
    /// itself, not a copy.
    pub fn upload_vec<T: Scalar + DeviceCopy>(&self, data: Vec<T>) -> Result<ResidentBuffer<T>> {
        match &self.backend {
            Backend::Serial | Backend::Cpu(_) => Ok(ResidentBuffer::host(data)),
            _ => self.upload(&data),
        }
    }

    /// Runs a root call (`f::task(args)`, a [`Call`](crate::Call)) and returns its value.
    pub fn run<'a, C: IntoCall<'a>>(&self, call: C) -> Result<<C::Task as CilkTask>::Output> {
        self.run_with_stats(call).map(|r| r.value)
    }

    /// Runs a root call (`f::task(args)`, a [`Call`](crate::Call)) and returns its value with the run's
    /// statistics.
    pub fn run_with_stats<'a, C: IntoCall<'a>>(&self, call: C) -> Result<Report<<C::Task as CilkTask>::Output>> {
        let call = call.into_call();
        let mut report = match &self.backend {
            Backend::Serial => serial::run(call)?,
            Backend::Cpu(b) => b.run(call)?,
            Backend::Cuda(b) => b.run(call)?,
            #[cfg(target_os = "linux")]
            Backend::CudaSim(b) => b.run(call)?,
        };
        report.stats.backend = Some(self.backend());
        Ok(report)
    }
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").field("backend", &self.backend()).field("config", &self.config).finish()
    }
}

impl From<std::convert::Infallible> for Error {
    fn from(e: std::convert::Infallible) -> Self {
        match e {}
    }
}

//! One CUDA device opened for gpu-cilk: its context and the one stream all work goes on, what it
//! is (name, compute capability, memory), device memory and copies, loading programs through the
//! PTX cache, and synchronization with a timeout that names the kernels a failure came from.
//!
//! Every way opening can fail is an [`Error`]: no driver library, a driver that cannot initialize,
//! no device, an NVRTC that cannot be loaded. Nothing here panics across the API: calls into the
//! dynamically loaded libraries go through [`super::driver::guarded`].

use super::cache::{CompiledPtx, PtxCache};
use super::driver::{self, cuda_error, error_description, error_name, guarded, unavailable, DriverResultExt};
use super::memory::{as_pod, as_pod_mut, DeviceBuffer, DeviceCopy, Pod};
use super::module::Program;
use super::nvrtc::{Arch, ProgramSource};
use crate::config::Config;
use crate::error::{Error, Result};
use cudarc::driver::{sys::CUresult, CudaContext, CudaStream, DriverError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// What the device is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// Device ordinal.
    pub ordinal: usize,
    /// Marketing name, e.g. "NVIDIA H100 80GB HBM3".
    pub name: String,
    /// Compute capability.
    pub arch: Arch,
    /// Global memory in bytes.
    pub total_memory: usize,
    /// Streaming multiprocessors.
    pub multiprocessors: u32,
    /// Most resident threads per multiprocessor.
    pub max_threads_per_sm: u32,
}

impl DeviceInfo {
    /// "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)".
    pub fn description(&self) -> String {
        format!("{} ({}, {:.1} GiB)", self.name, self.arch, self.total_memory as f64 / (1u64 << 30) as f64)
    }
}

/// State shared by the device, its programs and kernels.
pub(crate) struct Shared {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    /// Kernels launched since the last successful synchronization (for error messages).
    pending: Mutex<Vec<Arc<str>>>,
}

impl Shared {
    /// Records a launch so that a failure found at the next synchronization can name it.
    pub(crate) fn launched(&self, name: &Arc<str>) {
        if let Ok(mut p) = self.pending.lock() {
            if p.last() != Some(name) && p.len() < 64 {
                p.push(name.clone());
            }
        }
    }

    fn pending_names(&self) -> String {
        let p = match self.pending.lock() {
            Ok(p) => p.clone(),
            Err(_) => return "(unknown)".into(),
        };
        let mut names: Vec<&str> = Vec::new();
        for n in &p {
            if !names.contains(&&**n) {
                names.push(n);
            }
        }
        match names.as_slice() {
            [] => "(none launched since the last synchronization)".into(),
            [one] => format!("`{one}`"),
            many => format!("{} (one of the kernels launched since the last synchronization)", {
                many.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
            }),
        }
    }

    fn clear_pending(&self) {
        if let Ok(mut p) = self.pending.lock() {
            p.clear();
        }
    }
}

/// An open CUDA device: context, stream, PTX cache, default timeout.
pub struct CudaDevice {
    shared: Arc<Shared>,
    info: DeviceInfo,
    cache: PtxCache,
    timeout: Option<Duration>,
}

impl CudaDevice {
    /// Opens device 0 with `config`'s timeout and the PTX cache the environment names; checks
    /// that NVRTC can be loaded, since nothing runs without it.
    pub fn open(config: &Config) -> Result<Self> {
        Self::open_ordinal(0, config)
    }

    /// Opens device `ordinal`.
    pub fn open_ordinal(ordinal: usize, config: &Config) -> Result<Self> {
        driver::driver_library()?;
        let (shared, info) = guarded("opening the CUDA device", || open_context(ordinal))?;
        driver::nvrtc_library()?;
        Ok(CudaDevice { shared, info, cache: PtxCache::from_env(), timeout: config.timeout })
    }

    /// Uses `cache` for programs loaded from now on.
    pub fn with_cache(mut self, cache: PtxCache) -> Self {
        self.cache = cache;
        self
    }

    /// What the device is.
    pub fn info(&self) -> &DeviceInfo {
        &self.info
    }

    /// "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)".
    pub fn description(&self) -> String {
        self.info.description()
    }

    /// The device's compute capability, the architecture programs are compiled for.
    pub fn arch(&self) -> Arch {
        self.info.arch
    }

    /// The timeout [`Self::sync`] uses (from `Config::timeout`).
    pub fn default_timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// The PTX cache in use.
    pub fn cache(&self) -> &PtxCache {
        &self.cache
    }

    /// Compiles `program` for this device (through the PTX cache) and loads it.
    pub fn load_program(&self, program: &ProgramSource) -> Result<Program> {
        let compiled = self.cache.get_or_compile(program, self.info.arch)?;
        tracing::debug!(
            program = %program.name, cache_hit = compiled.cache_hit, elapsed = ?compiled.elapsed,
            "PTX for {}", self.info.arch
        );
        Program::load(self.shared.clone(), &program.name, &compiled)
    }

    /// Loads PTX already compiled (e.g. by [`PtxCache::get_or_compile`]) as program `name`.
    pub fn load_ptx(&self, name: &str, compiled: &CompiledPtx) -> Result<Program> {
        Program::load(self.shared.clone(), name, compiled)
    }

    /// `n` zeroed elements of device memory.
    pub fn alloc_zeroed<T: DeviceCopy>(&self, n: usize) -> Result<DeviceBuffer<T>> {
        let bytes = n.saturating_mul(std::mem::size_of::<T>());
        let slice = guarded("allocating device memory", || {
            self.shared
                .stream
                .alloc_zeros::<Pod<T>>(n)
                .op(|| format!("allocating {n} × {} ({bytes} bytes) of device memory", std::any::type_name::<T>()))
        })?;
        Ok(DeviceBuffer { slice, stream: self.shared.stream.clone() })
    }

    /// A device buffer holding a copy of `host`.
    pub fn htod<T: DeviceCopy>(&self, host: &[T]) -> Result<DeviceBuffer<T>> {
        let slice = guarded("copying to the device", || {
            self.shared
                .stream
                .clone_htod(as_pod(host))
                .op(|| format!("copying {} bytes to the device", std::mem::size_of_val(host)))
        })?;
        Ok(DeviceBuffer { slice, stream: self.shared.stream.clone() })
    }

    /// Copies `host` into the start of `dst` (in stream order).
    pub fn copy_htod<T: DeviceCopy>(&self, host: &[T], dst: &mut DeviceBuffer<T>) -> Result<()> {
        if host.len() > dst.len() {
            return Err(Error::Internal(format!(
                "copy of {} elements into a device buffer of {}",
                host.len(),
                dst.len()
            )));
        }
        guarded("copying to the device", || {
            let mut view = dst.slice.slice_mut(0..host.len());
            self.shared
                .stream
                .memcpy_htod(as_pod(host), &mut view)
                .op(|| format!("copying {} bytes to the device", std::mem::size_of_val(host)))
        })
    }

    /// Zeroes `buf` (in stream order).
    pub fn zero<T: DeviceCopy>(&self, buf: &mut DeviceBuffer<T>) -> Result<()> {
        guarded("zeroing device memory", || {
            self.shared.stream.memset_zeros(&mut buf.slice).op(|| format!("zeroing {} bytes", buf.num_bytes()))
        })
    }

    /// Waits (up to the default timeout) for all queued work, then copies `buf` to the host.
    pub fn dtoh<T: DeviceCopy>(&self, buf: &DeviceBuffer<T>) -> Result<Vec<T>> {
        let mut out: Vec<T> = Vec::with_capacity(buf.len());
        // SAFETY: `DeviceCopy` types are valid for every bit pattern, zeros included.
        out.resize(buf.len(), unsafe { std::mem::zeroed() });
        self.dtoh_into(buf, &mut out)?;
        Ok(out)
    }

    /// Waits (up to the default timeout) for all queued work, then copies the first
    /// `host.len()` elements of `buf` into `host`.
    pub fn dtoh_into<T: DeviceCopy>(&self, buf: &DeviceBuffer<T>, host: &mut [T]) -> Result<()> {
        if host.len() > buf.len() {
            return Err(Error::Internal(format!(
                "copy of {} elements from a device buffer of {}",
                host.len(),
                buf.len()
            )));
        }
        self.sync()?;
        let (n, bytes) = (host.len(), std::mem::size_of_val(host));
        guarded("copying from the device", || {
            let view = buf.slice.slice(0..n);
            self.shared
                .stream
                .memcpy_dtoh(&view, as_pod_mut(host))
                .op(|| format!("copying {bytes} bytes from the device"))?;
            // A copy into pageable memory returns once it is complete; the stream is idle, so
            // this is only a cheap guarantee that `host` is written before we return.
            self.shared.stream.synchronize().op(|| format!("copying {bytes} bytes from the device"))
        })
    }

    /// [`Self::synchronize`] with the default timeout (`Config::timeout`).
    pub fn sync(&self) -> Result<()> {
        self.synchronize(self.timeout)
    }

    /// Waits until all work queued on the device's stream has finished, or `timeout` has
    /// passed ([`Error::Timeout`]; the work keeps running). A kernel that failed while running
    /// comes back as [`Error::KernelFailed`] naming the kernels launched since the last
    /// synchronization.
    pub fn synchronize(&self, timeout: Option<Duration>) -> Result<()> {
        guarded("synchronizing with the device", || self.synchronize_inner(timeout))
    }

    fn synchronize_inner(&self, timeout: Option<Duration>) -> Result<()> {
        let s = &self.shared;
        if timeout.is_none() {
            // No deadline: one blocking stream synchronization (no event to create and poll) —
            // the scheduler's hot path waits here once per launch.
            s.stream.synchronize().map_err(|e| self.execution_error(e))?;
            s.clear_pending();
            return Ok(());
        }
        let event = s.ctx.new_event(None).op(|| "creating an event to wait on".to_string())?;
        event.record(&s.stream).map_err(|e| self.execution_error(e))?;
        let start = Instant::now();
        let mut nap = Duration::from_micros(20);
        loop {
            match event.try_is_complete() {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => return Err(self.execution_error(e)),
            }
            let waited = start.elapsed();
            if let Some(t) = timeout {
                if waited >= t {
                    tracing::error!("kernel {} still running after {t:?}", s.pending_names());
                    return Err(Error::Timeout(t));
                }
            }
            // Spin (yielding) for the first 200 µs so short kernels are timed precisely, then
            // back off to naps of at most 1 ms.
            if waited < Duration::from_micros(200) {
                std::thread::yield_now();
            } else {
                std::thread::sleep(nap);
                nap = (nap * 2).min(Duration::from_millis(1));
            }
        }
        s.clear_pending();
        Ok(())
    }

    /// An error found while waiting: a kernel failure (naming the pending kernels) or a plain
    /// driver error.
    fn execution_error(&self, e: DriverError) -> Error {
        let kernel_failure = matches!(
            e.0,
            CUresult::CUDA_ERROR_ILLEGAL_ADDRESS
                | CUresult::CUDA_ERROR_ILLEGAL_INSTRUCTION
                | CUresult::CUDA_ERROR_MISALIGNED_ADDRESS
                | CUresult::CUDA_ERROR_INVALID_ADDRESS_SPACE
                | CUresult::CUDA_ERROR_INVALID_PC
                | CUresult::CUDA_ERROR_LAUNCH_FAILED
                | CUresult::CUDA_ERROR_LAUNCH_TIMEOUT
                | CUresult::CUDA_ERROR_HARDWARE_STACK_ERROR
                | CUresult::CUDA_ERROR_ASSERT
                | CUresult::CUDA_ERROR_ECC_UNCORRECTABLE
        );
        if kernel_failure {
            Error::KernelFailed {
                kernels: self.shared.pending_names(),
                name: error_name(&e),
                description: error_description(&e),
            }
        } else {
            cuda_error(format!("waiting for kernel {}", self.shared.pending_names()), e)
        }
    }
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaDevice").field("info", &self.info).field("cache", &self.cache).finish()
    }
}

/// cuInit, the device, its primary context and a stream, and the device's attributes.
fn open_context(ordinal: usize) -> Result<(Arc<Shared>, DeviceInfo)> {
    if let Err(e) = cudarc::driver::result::init() {
        let reason = match e.0 {
            CUresult::CUDA_ERROR_NO_DEVICE => "no CUDA device found (cuInit: CUDA_ERROR_NO_DEVICE)".to_string(),
            _ => {
                format!("the CUDA driver failed to initialize (cuInit: {}: {})", error_name(&e), error_description(&e))
            }
        };
        return Err(unavailable(reason));
    }
    let count = CudaContext::device_count()
        .map_err(|e| unavailable(format!("cannot count CUDA devices: {}", error_name(&e))))?;
    if count <= 0 {
        return Err(unavailable("the CUDA driver reports no devices".into()));
    }
    if ordinal >= count as usize {
        return Err(unavailable(format!("no CUDA device {ordinal}: the driver reports {count}")));
    }
    let ctx = CudaContext::new(ordinal).map_err(|e| {
        unavailable(format!(
            "cannot create a context on CUDA device {ordinal}: {}: {}",
            error_name(&e),
            error_description(&e)
        ))
    })?;
    // SAFETY: gpu-cilk queues every copy, launch and free of this context on the one stream
    // created below, so stream order alone keeps each buffer alive and ordered for every use;
    // cudarc's cross-stream event tracking is not needed. Called before any buffer exists.
    unsafe { ctx.disable_event_tracking() };
    let stream = ctx.new_stream().op(|| "creating a CUDA stream".to_string())?;
    let name = ctx.name().op(|| "reading the device name".to_string())?;
    let (major, minor) = ctx.compute_capability().op(|| "reading the compute capability".to_string())?;
    let total_memory = ctx.total_mem().op(|| "reading the device memory size".to_string())?;
    use cudarc::driver::sys::CUdevice_attribute as A;
    let attr = |a: A, what: &str| ctx.attribute(a).op(|| format!("reading the device's {what}"));
    let multiprocessors = attr(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "multiprocessor count")?;
    let max_threads_per_sm = attr(A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, "threads per multiprocessor")?;
    let info = DeviceInfo {
        ordinal,
        name,
        arch: Arch::new(major.max(0) as u32, minor.max(0) as u32),
        total_memory,
        multiprocessors: multiprocessors.max(0) as u32,
        max_threads_per_sm: max_threads_per_sm.max(0) as u32,
    };
    Ok((Arc::new(Shared { ctx, stream, pending: Mutex::new(Vec::new()) }), info))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn description_format() {
        let info = DeviceInfo {
            ordinal: 0,
            name: "NVIDIA H100 80GB HBM3".into(),
            arch: Arch::new(9, 0),
            total_memory: 84_929_216_512,
            multiprocessors: 132,
            max_threads_per_sm: 2048,
        };
        assert_eq!(info.description(), "NVIDIA H100 80GB HBM3 (sm_90, 79.1 GiB)");
    }

    #[test]
    fn open_without_a_driver_is_a_clear_error() {
        match CudaDevice::open(&Config::default()) {
            Ok(d) => eprintln!("a CUDA device is present here: {}", d.description()),
            Err(e) => {
                let msg = e.to_string();
                assert!(matches!(e, Error::BackendUnavailable { backend: "cuda", .. }), "{msg}");
                eprintln!("(expected on a machine without a GPU) {msg}");
            }
        }
    }
}

//! One CUDA device opened for gpu-cilk: what it is (name, compute capability, memory), device
//! memory and copies, loading programs through the PTX cache, and synchronization with a timeout
//! that names the kernels a failure came from. The context and its stream are [`super::context`]'s.
//!
//! Every way opening can fail is an [`Error`]: no driver library, a driver that cannot initialize,
//! no device, an NVRTC that cannot be loaded. Nothing here panics across the API: calls into the
//! dynamically loaded libraries go through [`super::driver::guarded`]. A driver error that means a
//! kernel broke the context ([`super::context::is_sticky`]) comes back as [`Error::KernelFailed`]
//! naming the kernels launched since the last synchronization, whichever call noticed it.

use super::cache::{CompiledPtx, PtxCache};
use super::context::{self, Context, DeviceInfo, InContext};
use super::driver::{self, guarded};
use super::memory::{as_pod, as_pod_mut, DeviceBuffer, DeviceCopy, Pod};
use super::module::Program;
use super::nvrtc::{Arch, ProgramSource};
use crate::config::Config;
use crate::error::{Error, Result};
use cudarc::driver::DriverError;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// An open CUDA device: context, stream, PTX cache, default timeout.
pub struct CudaDevice {
    shared: Arc<Context>,
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
        let (shared, info) = guarded("opening the CUDA device", || context::open(ordinal))?;
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
            self.shared.stream.alloc_zeros::<Pod<T>>(n).in_ctx(&self.shared, || {
                format!("allocating {n} × {} ({bytes} bytes) of device memory", std::any::type_name::<T>())
            })
        })?;
        Ok(DeviceBuffer { slice, stream: self.shared.stream.clone() })
    }

    /// A device buffer holding a copy of `host`.
    pub fn htod<T: DeviceCopy>(&self, host: &[T]) -> Result<DeviceBuffer<T>> {
        let slice = guarded("copying to the device", || {
            self.shared
                .stream
                .clone_htod(as_pod(host))
                .in_ctx(&self.shared, || format!("copying {} bytes to the device", std::mem::size_of_val(host)))
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
                .in_ctx(&self.shared, || format!("copying {} bytes to the device", std::mem::size_of_val(host)))
        })
    }

    /// Copies the bytes of `value` (`size_of::<T>()` of them, padding included) into the start of
    /// `dst` (in stream order). For sending a `#[repr(C)]` value whose C twin is read as bytes.
    pub fn write_value<T: Copy>(&self, value: &T, dst: &mut DeviceBuffer<u8>) -> Result<()> {
        let bytes = std::mem::size_of::<T>();
        if bytes == 0 {
            return Ok(());
        }
        if bytes > dst.len() {
            return Err(Error::Internal(format!("copy of {bytes} bytes into a device buffer of {}", dst.len())));
        }
        let addr = dst.ptr().addr();
        guarded("copying to the device", || {
            self.shared.ctx.bind_to_thread().in_ctx(&self.shared, || "binding the CUDA context".to_string())?;
            // SAFETY: `addr` is the start of `dst`, which holds at least `bytes` bytes; the driver
            // reads `bytes` bytes of `value` through a raw pointer (padding is never read as a
            // Rust value) before the call returns (a copy from pageable memory is staged
            // synchronously); `dst` is freed only in stream order after this copy.
            unsafe {
                cudarc::driver::result::memcpy_htod_async(
                    addr,
                    std::slice::from_ref(value),
                    self.shared.stream.cu_stream(),
                )
            }
            .in_ctx(&self.shared, || format!("copying {bytes} bytes to the device"))
        })
    }

    /// Sets the stack each device thread gets (`cuCtxSetLimit(CU_LIMIT_STACK_SIZE)`): serial
    /// device recursion (inline task calls) runs on it. The driver reserves it for every resident
    /// thread.
    pub fn set_stack_size(&self, bytes: usize) -> Result<()> {
        guarded("setting the device stack size", || {
            self.shared
                .ctx
                .set_limit(cudarc::driver::sys::CUlimit::CU_LIMIT_STACK_SIZE, bytes)
                .in_ctx(&self.shared, || format!("setting the device stack to {bytes} bytes per thread"))
        })
    }

    /// Zeroes `buf` (in stream order).
    pub fn zero<T: DeviceCopy>(&self, buf: &mut DeviceBuffer<T>) -> Result<()> {
        guarded("zeroing device memory", || {
            self.shared
                .stream
                .memset_zeros(&mut buf.slice)
                .in_ctx(&self.shared, || format!("zeroing {} bytes", buf.num_bytes()))
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
                .in_ctx(&self.shared, || format!("copying {bytes} bytes from the device"))?;
            // A copy into pageable memory returns once it is complete; the stream is idle, so
            // this is only a cheap guarantee that `host` is written before we return.
            self.shared.stream.synchronize().in_ctx(&self.shared, || format!("copying {bytes} bytes from the device"))
        })
    }

    /// Copies `buf` to the host on a stream of its own, WITHOUT waiting for the work queued on
    /// the device's stream: a snapshot of memory that a running kernel may still be writing. For
    /// diagnostics only (a test's watchdog reads a hung kernel's progress words after
    /// [`Self::synchronize`] timed out); a word being written may read old or new, and a value of
    /// several words may be torn.
    pub fn peek_dtoh<T: DeviceCopy>(&self, buf: &DeviceBuffer<T>) -> Result<Vec<T>> {
        let mut out: Vec<T> = Vec::with_capacity(buf.len());
        // SAFETY: `DeviceCopy` types are valid for every bit pattern, zeros included.
        out.resize(buf.len(), unsafe { std::mem::zeroed() });
        let bytes = buf.num_bytes();
        guarded("copying a snapshot from the device", || {
            let s = &self.shared;
            // A non-blocking stream: it does not wait for the device's stream (event tracking is
            // off, see `context`), so the copy runs beside a kernel that has not finished.
            let side = s.ctx.new_stream().in_ctx(s, || "creating a side stream".to_string())?;
            side.memcpy_dtoh(&buf.slice, as_pod_mut(&mut out))
                .in_ctx(s, || format!("copying a {bytes}-byte snapshot from the device"))?;
            side.synchronize().in_ctx(s, || "waiting for a snapshot copy".to_string())
        })?;
        Ok(out)
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
        let event = s.ctx.new_event(None).in_ctx(s, || "creating an event to wait on".to_string())?;
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
        let pending = self.shared.pending_names();
        self.shared.fail(|| format!("waiting for kernel {pending}"), e)
    }

    /// Whether this handle's context is the device's primary context (see [`super::context`]).
    pub fn uses_primary_context(&self) -> bool {
        self.shared.primary
    }
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaDevice").field("info", &self.info).field("cache", &self.cache).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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

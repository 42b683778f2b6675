//! The CUDA context one device handle works in: opening it, the one stream all work goes on, the
//! kernels launched since the last synchronization (so that a failure names them), and the
//! classification of driver errors into "this call failed" and "a kernel broke the context".
//!
//! Owns the context's lifetime and error classification; must not own memory, programs or the
//! scheduler ([`super::device`], [`super::module`] and the schedulers build on it).
//!
//! # A kernel fault ends CUDA for the process
//!
//! Every [`super::CudaDevice`] gets its own (non-primary) context where the driver can make one
//! (`cuCtxCreate_v4`, CUDA 12.5+), else the device's primary context. Either way, a kernel that
//! faults (an illegal or misaligned address, a trap) leaves a *sticky* error that CUDA does not
//! recover from inside the process: on current drivers every later context creation in the
//! process fails with the same error (measured on an H100, driver for CUDA 13.0), and NVIDIA's
//! documentation says the process must be restarted. So the first sticky error is recorded
//! process-wide ([`lost`]): the failing call returns [`Error::KernelFailed`] naming the kernels
//! that ran, and every later attempt to use CUDA in the process ([`open`], a run on an existing
//! backend) fails at once with [`Error::BackendUnavailable`] quoting that first failure, which
//! makes `auto` runtimes created afterwards fall back to the cpu backend.

use super::driver::{error_description, error_name, unavailable, DriverResultExt};
use super::nvrtc::Arch;
use crate::error::{Error, Result};
use cudarc::driver::{sys::CUresult, CudaContext, CudaStream, DriverError};
use std::sync::{Arc, Mutex};

/// The first kernel failure of the process (see the module docs): once set, CUDA is unusable here.
static LOST: Mutex<Option<String>> = Mutex::new(None);

/// Why CUDA can no longer be used in this process, if a kernel broke it: the first
/// [`Error::KernelFailed`]'s message.
pub(crate) fn lost() -> Option<String> {
    LOST.lock().map_or_else(|p| p.into_inner().clone(), |g| g.clone())
}

/// Records `cause` as the failure that ended CUDA in this process: the first one recorded stays,
/// unless `refine` (the same failure, described with more detail: the tasks behind the kernel).
pub(crate) fn set_lost(cause: String, refine: bool) {
    let mut g = LOST.lock().unwrap_or_else(|p| p.into_inner());
    if g.is_none() || refine {
        *g = Some(cause);
    }
}

/// [`Error::BackendUnavailable`] for a process whose CUDA state a kernel broke (`cause`).
pub(crate) fn lost_error(cause: &str) -> Error {
    unavailable(format!(
        "an earlier kernel failure left this process's CUDA state unusable, and CUDA cannot recover \
         from that without restarting the process; the failure was: {cause}"
    ))
}

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

/// A context, its stream, and the kernels launched on it since the last synchronization.
pub(crate) struct Context {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    /// Kernels launched since the last successful synchronization (for error messages).
    pending: Mutex<Vec<Arc<str>>>,
    /// Whether this is the device's primary context (shared with every handle in the process).
    pub(crate) primary: bool,
}

/// Whether a driver error means that a kernel broke the context ("sticky" errors: every later
/// call on the context returns the same error, whatever it is).
pub(crate) fn is_sticky(e: &DriverError) -> bool {
    matches!(
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
            | CUresult::CUDA_ERROR_CONTEXT_IS_DESTROYED
    )
}

impl Context {
    /// Records a launch so that a failure found later can name it.
    pub(crate) fn launched(&self, name: &Arc<str>) {
        if let Ok(mut p) = self.pending.lock() {
            if p.last() != Some(name) && p.len() < 64 {
                p.push(name.clone());
            }
        }
    }

    /// The kernels launched since the last synchronization, for messages.
    pub(crate) fn pending_names(&self) -> String {
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

    /// Forgets the pending kernels (after a successful synchronization).
    pub(crate) fn clear_pending(&self) {
        if let Ok(mut p) = self.pending.lock() {
            p.clear();
        }
    }

    /// The error for a driver call made while doing `op` that failed with `e`: when `e` is a
    /// sticky error it is not about `op` at all but about a kernel that ran before it, so it
    /// becomes [`Error::KernelFailed`] naming the kernels launched since the last
    /// synchronization; anything else is [`Error::Cuda`] naming `op`.
    pub(crate) fn fail(&self, op: impl FnOnce() -> String, e: DriverError) -> Error {
        if is_sticky(&e) {
            let kernels = self.pending_names();
            self.clear_pending();
            let err = Error::KernelFailed {
                kernels,
                name: error_name(&e),
                description: format!("{} (noticed while {})", error_description(&e), op()),
            };
            // The first failure is the cause; a later one is that failure seen from another call.
            set_lost(err.to_string(), false);
            err
        } else {
            Error::Cuda { op: op(), name: error_name(&e), description: error_description(&e) }
        }
    }
}

/// Maps a driver result of a call on a context: sticky errors name the kernel that broke the
/// context ([`Context::fail`]), others the operation.
pub(crate) trait InContext<T> {
    /// `Err(e)` becomes [`Context::fail`]`(op, e)`.
    fn in_ctx(self, ctx: &Context, op: impl FnOnce() -> String) -> Result<T>;
}

impl<T> InContext<T> for std::result::Result<T, DriverError> {
    fn in_ctx(self, ctx: &Context, op: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| ctx.fail(op, e))
    }
}

/// cuInit, the device, a context (non-primary where the driver can make one) and a stream, and
/// the device's attributes.
pub(crate) fn open(ordinal: usize) -> Result<(Arc<Context>, DeviceInfo)> {
    if let Some(cause) = lost() {
        return Err(lost_error(&cause));
    }
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
    let cannot = |e: DriverError| {
        unavailable(format!(
            "cannot create a context on CUDA device {ordinal}: {}: {}",
            error_name(&e),
            error_description(&e)
        ))
    };
    // A driver without cuCtxCreate_v4 makes cudarc panic (a missing symbol): that, like an error,
    // means "use the primary context".
    let own = std::panic::catch_unwind(|| CudaContext::new_non_primary(ordinal, 0));
    let (ctx, primary) = match own {
        Ok(Ok(ctx)) => (ctx, false),
        _ => {
            let ctx = CudaContext::new(ordinal).map_err(cannot)?;
            (ctx, true)
        }
    };
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
    Ok((Arc::new(Context { ctx, stream, pending: Mutex::new(Vec::new()), primary }), info))
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
    fn sticky_errors_are_the_kernel_failures() {
        assert!(is_sticky(&DriverError(CUresult::CUDA_ERROR_MISALIGNED_ADDRESS)));
        assert!(is_sticky(&DriverError(CUresult::CUDA_ERROR_ILLEGAL_ADDRESS)));
        assert!(!is_sticky(&DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY)));
        assert!(!is_sticky(&DriverError(CUresult::CUDA_ERROR_INVALID_VALUE)));
    }
}

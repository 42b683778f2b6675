//! The boundary with `cudarc`'s dynamically loaded libraries: finding `libcuda` and `libnvrtc`,
//! running calls into them so that a failed `dlopen` or a missing symbol (which `cudarc` reports by
//! panicking) comes back as an [`Error`], and turning `CUresult` codes into [`Error`]s that say
//! what gpu-cilk was doing. Every other CUDA module calls the libraries only through this one.

use crate::error::{Error, Result};
use cudarc::driver::{sys::CUresult, DriverError};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

/// The reason given when `libcuda` cannot be loaded.
pub const NO_DRIVER: &str = "no CUDA driver found (libcuda.so): install the NVIDIA driver or use the cpu backend";

/// Whether `libcuda` can be loaded, computed once. `Err` carries the user-facing reason.
pub fn driver_library() -> Result<()> {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: `is_culib_present` only tries `dlopen` on cudarc's candidate names (libcuda.so,
    // libcuda.so.1, ...) and closes what it opened; it calls nothing in the library.
    let present = *PRESENT
        .get_or_init(|| matches!(catch_unwind(|| unsafe { cudarc::driver::sys::is_culib_present() }), Ok(true)));
    if present {
        Ok(())
    } else {
        Err(unavailable(NO_DRIVER.to_string()))
    }
}

/// Whether `libnvrtc` can be loaded, computed once. `Err` carries the user-facing reason.
pub fn nvrtc_library() -> Result<()> {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: as in `driver_library`: only `dlopen`s cudarc's candidate names for libnvrtc.
    let present =
        *PRESENT.get_or_init(|| matches!(catch_unwind(|| unsafe { cudarc::nvrtc::sys::is_culib_present() }), Ok(true)));
    if present {
        Ok(())
    } else {
        Err(unavailable(format!(
            "NVRTC not found (tried {}): put the CUDA toolkit's lib64 (e.g. /usr/local/cuda/lib64) or the \
             nvidia-cuda-nvrtc wheel's nvidia/cuda_nvrtc/lib on LD_LIBRARY_PATH (scripts/nvrtc-env.sh prints it)",
            nvrtc_candidates().join(", ")
        )))
    }
}

/// The file names `cudarc` tries to `dlopen` for NVRTC, in order (for messages and docs).
pub fn nvrtc_candidates() -> Vec<String> {
    cudarc::get_lib_name_candidates("nvrtc").into_iter().filter(|n| !n.contains("64")).collect()
}

/// `Error::BackendUnavailable` for the cuda backend.
pub fn unavailable(reason: String) -> Error {
    Error::BackendUnavailable { backend: "cuda", reason }
}

/// Runs `f`, which calls into a dynamically loaded CUDA library, turning a panic (a library that
/// failed to load after all, a symbol this driver lacks) into [`Error::BackendUnavailable`].
/// `what` names the operation for the message.
pub fn guarded<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => {
            let msg = crate::error::panic_message(payload.as_ref());
            Err(unavailable(format!("{what} failed inside the CUDA library loader: {msg}")))
        }
    }
}

/// The driver's name for an error code, e.g. `CUDA_ERROR_ILLEGAL_ADDRESS`.
pub fn error_name(e: &DriverError) -> String {
    match e.error_name() {
        Ok(s) => s.to_string_lossy().into_owned(),
        Err(_) => format!("{:?}", e.0),
    }
}

/// The driver's description of an error code, with gpu-cilk's hint for the common ones.
pub fn error_description(e: &DriverError) -> String {
    let base = match e.error_string() {
        Ok(s) => s.to_string_lossy().into_owned(),
        Err(_) => "no description from the driver".to_string(),
    };
    let hint = match e.0 {
        CUresult::CUDA_ERROR_UNSUPPORTED_PTX_VERSION => {
            "; NVRTC is newer than the driver: use the NVRTC of the driver's CUDA version or update the driver"
        }
        CUresult::CUDA_ERROR_OUT_OF_MEMORY => "; lower Config::pool_capacity or the problem size",
        CUresult::CUDA_ERROR_NO_DEVICE => "; use the cpu backend on machines without an NVIDIA GPU",
        CUresult::CUDA_ERROR_SYSTEM_DRIVER_MISMATCH => "; the driver library does not match the kernel module",
        _ => "",
    };
    format!("{base}{hint}")
}

/// `Error::Cuda` for a failed driver call made while doing `op`.
pub fn cuda_error(op: impl Into<String>, e: DriverError) -> Error {
    Error::Cuda { op: op.into(), name: error_name(&e), description: error_description(&e) }
}

/// Maps a driver result, naming the operation on failure.
pub trait DriverResultExt<T> {
    /// `Err(DriverError)` becomes `Error::Cuda { op, .. }`.
    fn op(self, op: impl FnOnce() -> String) -> Result<T>;
}

impl<T> DriverResultExt<T> for std::result::Result<T, DriverError> {
    fn op(self, op: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|e| cuda_error(op(), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvrtc_candidates_cover_cuda_12_and_13() {
        let names = nvrtc_candidates();
        for want in ["libnvrtc.so", "libnvrtc.so.12", "libnvrtc.so.13"] {
            assert!(names.iter().any(|n| n == want), "{want} missing from {names:?}");
        }
    }

    #[test]
    fn guarded_turns_panics_into_unavailable() {
        // (The panic message printed by the default hook is expected.)
        let r: Result<()> = guarded("opening the device", || panic!("Missing symbol cuFoo"));
        let msg = r.unwrap_err().to_string();
        assert!(msg.contains("cuda backend is not available"), "{msg}");
        assert!(msg.contains("Missing symbol cuFoo"), "{msg}");
    }
}

//! Loading a simulation object: its C ABI (the mirror of gc_sim.h's `gc_sim_launch_args`, the
//! ABI version, the fault exit code, the entry points) and `dlopen` with one private instance of
//! the object's globals per load.
//!
//! Owns: the boundary to the loaded object's symbols and the lock that keeps `dlopen` and `fork`
//! apart. Must not touch: building (`build.rs`) or the policy of a launch (`launch.rs`).

use super::build::poisoned;
use crate::error::{Error, Result};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

/// `GC_SIM_ABI` of gc_sim.h: the `gc_sim_launch_args` layout [`LaunchArgs`] mirrors.
pub(super) const ABI: u32 = 1;
/// gc_sim.h's `GC_SIM_EXIT_FAULT`: a forked launch that faulted exits with it.
pub(super) const EXIT_FAULT: c_int = 86;

pub(super) type EntryFn = unsafe extern "C" fn(*const c_void);
pub(super) type LaunchFn = unsafe extern "C" fn(*const LaunchArgs) -> c_int;

/// Mirrors `gc_sim_launch_args` of gc_sim.h (ABI 1).
#[repr(C)]
pub(super) struct LaunchArgs {
    pub(super) entry: EntryFn,
    pub(super) params: *const c_void,
    pub(super) kernel: *const c_char,
    pub(super) msg: *mut c_char,
    pub(super) msg_len: u64,
    pub(super) smem_bytes: u64,
    pub(super) grid: [u32; 3],
    pub(super) block: [u32; 3],
    pub(super) mode: u32,
    pub(super) host_threads: u32,
    pub(super) isolated: u32,
    pub(super) yield_every: u32,
}

/// A loaded simulation object (kept loaded for the life of the process: its globals are the
/// simulated device's and unloading buys nothing).
pub(super) struct Loaded {
    _lib: libloading::Library,
    pub(super) launch: LaunchFn,
    pub(super) kernels: Vec<String>,
    pub(super) entries: HashMap<String, (EntryFn, usize)>,
}

/// Serializes `dlopen` with `fork`, so no child starts while the loader lock is held.
pub(super) static FORK_LOCK: Mutex<()> = Mutex::new(());

/// Loads the object at `path` as a program of its own: every call gets its own instance of the
/// object's globals (`__device__` variables), as every module load on a GPU does. The dynamic
/// loader keeps one instance per file (it compares device and inode), so each call opens a
/// private copy of the file, unlinked as soon as it is mapped. Loaded objects are never unloaded
/// (kept in LOADED): no termination routine runs while a launch may still use one.
pub(super) fn load(path: &Path) -> Result<Arc<Loaded>> {
    static LOADED: OnceLock<Mutex<Vec<Arc<Loaded>>>> = OnceLock::new();
    static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let fail = |what: String| Error::BackendUnavailable {
        backend: "sim",
        reason: format!("loading the simulation object {}: {what}", path.display()),
    };
    let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let private = std::env::temp_dir().join(format!("gpu-cilk-sim-load.{}.{n}.so", std::process::id()));
    std::fs::copy(path, &private).map_err(|e| fail(format!("copying it to {}: {e}", private.display())))?;
    let opened = {
        let _fork = FORK_LOCK.lock().map_err(|_| poisoned())?;
        // SAFETY: the object was built by `build` from gc_sim.h and device code: its initializers
        // are the C++ runtime's for gc_sim.h (no static constructors of its own), and it is never
        // unloaded (kept in LOADED), so no termination routine runs while it is in use.
        unsafe { libloading::os::unix::Library::open(Some(&private), libc::RTLD_NOW | libc::RTLD_LOCAL) }
    };
    // The mapping outlives the file.
    let _ = std::fs::remove_file(&private);
    let lib = opened.map_err(|e| fail(e.to_string()))?;
    let lib = libloading::Library::from(lib);
    // SAFETY: (this lookup and those below) each symbol is defined by gc_sim.h or by `wrapper` with
    // exactly the C signature it is read as here.
    let abi: unsafe extern "C" fn() -> u32 =
        *unsafe { lib.get::<unsafe extern "C" fn() -> u32>("gc_sim_abi") }.map_err(|e| fail(e.to_string()))?;
    // SAFETY: `gc_sim_abi` takes nothing and returns a constant.
    let found = unsafe { abi() };
    if found != ABI {
        return Err(fail(format!("it speaks gc_sim ABI {found}, this runtime {ABI}")));
    }
    // SAFETY: as above (a symbol of gc_sim.h / `wrapper` read with its C signature).
    let launch: LaunchFn = *unsafe { lib.get::<LaunchFn>("gc_sim_launch") }.map_err(|e| fail(e.to_string()))?;
    type ShareFn = unsafe extern "C" fn(*mut c_char, u64) -> c_int;
    // SAFETY: as above (a symbol of gc_sim.h / `wrapper` read with its C signature).
    let share: ShareFn = *unsafe { lib.get::<ShareFn>("gc_sim_share_globals") }.map_err(|e| fail(e.to_string()))?;
    let mut msg = vec![0u8; 512];
    // SAFETY: `msg` is a writable buffer of the length passed; nothing else uses this instance
    // of the object yet (it is private to this call), as gc_sim_share_globals requires.
    if unsafe { share(msg.as_mut_ptr().cast(), msg.len() as u64) } != 0 {
        return Err(fail(format!("sharing its globals: {}", c_message(&msg))));
    }
    // SAFETY: as above (a symbol of gc_sim.h / `wrapper` read with its C signature).
    let names: *const *const c_char =
        *unsafe { lib.get::<*const *const c_char>("gc_sim_kernel_names") }.map_err(|e| fail(e.to_string()))?;
    let mut kernels = Vec::new();
    let mut entries = HashMap::new();
    for i in 0.. {
        // SAFETY: `gc_sim_kernel_names` is a null-terminated array of NUL-terminated strings in the
        // object's read-only data (`wrapper`), alive while the object is loaded (forever).
        let p = unsafe { *names.add(i) };
        if p.is_null() {
            break;
        }
        // SAFETY: as above: a NUL-terminated string.
        let name = unsafe { std::ffi::CStr::from_ptr(p) }.to_string_lossy().into_owned();
        // SAFETY: as above (a symbol of gc_sim.h / `wrapper` read with its C signature).
        let entry: EntryFn =
            *unsafe { lib.get::<EntryFn>(format!("gc_sim_entry_{name}")) }.map_err(|e| fail(e.to_string()))?;
        type BytesFn = unsafe extern "C" fn() -> u64;
        // SAFETY: as above (a symbol of gc_sim.h / `wrapper` read with its C signature).
        let bytes: BytesFn =
            *unsafe { lib.get::<BytesFn>(format!("gc_sim_params_{name}")) }.map_err(|e| fail(e.to_string()))?;
        // SAFETY: `gc_sim_params_NAME` takes nothing and returns a constant.
        let bytes = unsafe { bytes() } as usize;
        entries.insert(name.clone(), (entry, bytes));
        kernels.push(name);
    }
    let loaded = Arc::new(Loaded { _lib: lib, launch, kernels, entries });
    LOADED.get_or_init(|| Mutex::new(Vec::new())).lock().map_err(|_| poisoned())?.push(loaded.clone());
    Ok(loaded)
}

pub(super) fn c_message(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).trim().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_args_match_gc_sim_h() {
        // gc_sim_launch_args: 6 eight-byte fields, then 10 u32.
        assert_eq!(std::mem::size_of::<LaunchArgs>(), 6 * 8 + 10 * 4);
        assert!(gpu_cilk_kernels::SIM_H.contains(&format!("GC_SIM_ABI = {ABI};")));
        assert!(gpu_cilk_kernels::SIM_H.contains(&format!("GC_SIM_EXIT_FAULT = {EXIT_FAULT}")));
    }
}

//! The host simulation of device code: the CUDA C++ that gpu-cilk generates (and its device
//! headers and test kernels), compiled by g++ with `kernels/sim/gc_sim.h` and run on host threads,
//! so that CI machines without a GPU *run* device code instead of only compiling it. It is for
//! catching logic bugs of device code — lost or duplicated elements, deadlocks, broken termination
//! — before they cost GPU time.
//!
//! Owns: building ([`SimProgram::compile`]: g++, an on-disk cache keyed by SHA-256), loading
//! (`libloading`), launching ([`SimProgram::launch`], [`SimKernel::launch`]) and the host memory
//! that stands in for device memory ([`SimBuffer`]). Must not touch: the GPU path of this backend
//! (driver, NVRTC, scheduler); it shares only [`ProgramSource`], [`LaunchDims`], [`DeviceCopy`]
//! and [`DevicePtr`] with it, so the same sources, parameter structs and launch shapes work on both.
//!
//! # The model (details in `gc_sim.h`)
//!
//! Every simulated thread is a warp of **one lane** (`warpSize == 1`), so warp intrinsics are
//! exact for code written against its lane masks (gpu-cilk's is: see `gpu_cilk/portable.cuh`).
//! Atomics are relaxed host atomics, fences are `seq_cst` fences; x86 is TSO, stronger than the
//! GPU's memory model, so a missing fence may go unnoticed here. Nothing about timing carries
//! over. Two launch modes ([`LaunchMode`]):
//!
//! - **independent** (default): a pool of host threads runs the grid one simulated thread at a
//!   time per host thread; no simulated thread may wait for another, and `__syncthreads` fails the
//!   launch naming the kernel. Grids of millions of threads work.
//! - **cooperative**: every simulated thread gets its own host thread, all running at once (up to
//!   4096), for persistent kernels whose threads spin-wait on each other; `__syncthreads` is a
//!   barrier of the block.
//!
//! # Building
//!
//! `g++ -E` of the source finds every `extern "C" __global__ void NAME(...)` definition (after the
//! preprocessor, so comments, `#if`'d-out code and macros are handled; kernels inside an
//! `extern "C" { ... }` block are not found). The build appends, per kernel, an
//! `extern "C" gc_sim_entry_NAME(const void* params)` and a `gc_sim_params_NAME()` (the parameter
//! bytes), plus the list of names, and compiles with
//! `g++ -std=c++17 -O2 -shared -fPIC -pthread -fno-strict-aliasing -DGC_HOST_SIM -include gc_sim.h`
//! into `<cache>/sim/<sha256>.so` (the cache directory of [`PtxCache::from_env`]; a temporary
//! directory when that is `off`). Options of the [`ProgramSource`] that start with `-D`, `-U` or
//! `-I` are passed on; NVRTC's others are ignored. A compile error is [`Error::Compile`] with g++'s
//! whole log; no compiler is [`Error::BackendUnavailable`] naming it.
//!
//! # Launching, faults and isolation
//!
//! By default a launch runs in a **forked child process**: simulated device memory
//! ([`SimBuffer`]) is `MAP_SHARED` anonymous memory, and the loaded object's globals (the
//! `__device__` variables) are remapped `MAP_SHARED` right after loading, so the child's writes
//! are the parent's, as device memory and device globals persist across launches on a GPU
//! (and, as with modules on a GPU, every [`SimProgram::compile`] has its own globals, even of a
//! cached object). A
//! kernel that traps (`__trap()`, `assert`), touches invalid memory, misuses an intrinsic or does
//! not finish within the timeout then comes back as [`Error::SimKernelFailed`] naming the kernel,
//! block and thread, and the test process lives on. Memory a kernel writes must come from
//! [`SimBuffer`] (as it must come from `cudaMalloc` on a GPU): the child's writes to ordinary host
//! memory are lost. `GPU_CILK_SIM_ISOLATE=0` (or [`LaunchOptions::isolate`]) runs launches in
//! the calling process instead (for a debugger or ThreadSanitizer): a fault then aborts the
//! process and there is no timeout.
//!
//! # Environment
//!
//! `GPU_CILK_SIM_CXX` (the compiler, default `g++`), `GPU_CILK_SIM_CXXFLAGS` (extra flags, e.g.
//! `-g -O1`), `GPU_CILK_SIM_ISOLATE` (`0`: in-process), `GPU_CILK_SIM_THREADS` (host threads of an
//! independent launch; default: the machine's), `GPU_CILK_SIM_TIMEOUT_MS` (default 300000).
//!
//! ```no_run
//! use gpu_cilk_runtime::backend::cuda::sim::{SimBuffer, SimProgram};
//! use gpu_cilk_runtime::backend::cuda::{DeviceCopy, DevicePtr, LaunchDims, ProgramSource};
//!
//! #[repr(C)]
//! #[derive(Clone, Copy)]
//! struct Params { out: DevicePtr<u64>, n: u32 }
//! // SAFETY: repr(C) POD, mirrored by `struct Params { unsigned long long* out; unsigned n; }`.
//! unsafe impl DeviceCopy for Params {}
//!
//! # fn main() -> gpu_cilk_runtime::Result<()> {
//! let src = r#"struct Params { unsigned long long* out; unsigned n; };
//! extern "C" __global__ void iota(Params p) {
//!     unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
//!     if (i < p.n) p.out[i] = i;
//! }"#;
//! let program = SimProgram::compile(&ProgramSource::new("iota", src))?;
//! // SAFETY: `iota` takes one `Params` and writes only out[0..n).
//! let iota = unsafe { program.kernel::<Params>("iota")? };
//! let out = SimBuffer::<u64>::zeroed(1000)?;
//! iota.launch(LaunchDims::cover(1000, 256), &Params { out: out.ptr(), n: 1000 })?;
//! assert_eq!(out.to_vec()[999], 999);
//! # Ok(())
//! # }
//! ```

use super::cache::PtxCache;
use super::memory::{DeviceCopy, DevicePtr};
use super::module::LaunchDims;
use super::nvrtc::ProgramSource;
use crate::error::{Error, Result};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CString};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Bumped whenever the build's inputs or outputs change meaning (the cache key includes it).
const FORMAT: &str = "gpu-cilk-sim-v1";

/// The flags every simulation object is built with (the cache key includes them).
pub const CXX_FLAGS: &[&str] = &[
    "-std=c++17",
    "-O2",
    "-shared",
    "-fPIC",
    "-pthread",
    // Device code type-puns through reinterpret_cast (frames, channel slots); the simulation is
    // for concurrency bugs, not for aliasing-rule ones.
    "-fno-strict-aliasing",
    "-Wno-unknown-pragmas",
    // Bind everything at load and keep the GOT read-only, so the shared globals (see
    // gc_sim_share_globals) are only the object's own data.
    "-Wl,-z,now",
    "-Wl,-z,relro",
    "-DGC_HOST_SIM",
];

/// `GC_SIM_ABI` of gc_sim.h: the `gc_sim_launch_args` layout [`LaunchArgs`] mirrors.
const ABI: u32 = 1;
/// gc_sim.h's `GC_SIM_EXIT_FAULT`: a forked launch that faulted exits with it.
const EXIT_FAULT: c_int = 86;
/// Bytes of the failure message buffer.
const MSG_BYTES: usize = 4096;

/// How the threads of a launch run (see the module docs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum LaunchMode {
    /// A pool of host threads, one simulated thread at a time each; no thread waits for another.
    #[default]
    Independent,
    /// One host thread per simulated thread, all at once; `__syncthreads` is a block barrier.
    Cooperative,
}

/// How one launch runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchOptions {
    /// Independent or cooperative.
    pub mode: LaunchMode,
    /// Run in a forked child (faults and timeouts become errors). Default: `GPU_CILK_SIM_ISOLATE`
    /// unless it is `0`.
    pub isolate: bool,
    /// Kill an isolated launch that has not finished after this long. Default:
    /// `GPU_CILK_SIM_TIMEOUT_MS`, else 300 s.
    pub timeout: Duration,
    /// Host threads of an independent launch (`None`: `GPU_CILK_SIM_THREADS`, else the machine's).
    pub host_threads: Option<u32>,
    /// Cooperative launches with more simulated threads than cores yield the core every this
    /// many atomics (`None`: 4; `Some(0)`: never): spinning threads let the thread they wait for
    /// run, and threads interleave at finer grain (more contention, more schedules tried).
    pub yield_every: Option<u32>,
}

impl Default for LaunchOptions {
    fn default() -> Self {
        let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
        LaunchOptions {
            mode: LaunchMode::Independent,
            isolate: !matches!(env("GPU_CILK_SIM_ISOLATE"), Some(v) if v.trim() == "0"),
            timeout: env("GPU_CILK_SIM_TIMEOUT_MS")
                .and_then(|v| v.trim().parse().ok())
                .map_or(Duration::from_secs(300), Duration::from_millis),
            host_threads: env("GPU_CILK_SIM_THREADS").and_then(|v| v.trim().parse().ok()),
            yield_every: None,
        }
    }
}

impl LaunchOptions {
    /// The defaults with `mode`.
    pub fn mode(mode: LaunchMode) -> Self {
        LaunchOptions { mode, ..LaunchOptions::default() }
    }
}

// ---- the compiler ---------------------------------------------------------------------------------

/// The compiler command: `GPU_CILK_SIM_CXX`, else `g++`.
pub fn compiler() -> String {
    std::env::var("GPU_CILK_SIM_CXX").ok().filter(|c| !c.trim().is_empty()).unwrap_or_else(|| "g++".to_string())
}

/// The first line of `<compiler> --version`, or why the compiler cannot be run.
pub fn compiler_version() -> Result<String> {
    static VERSIONS: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    let cxx = compiler();
    let versions = VERSIONS.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(v) = versions.lock().map_err(|_| poisoned())?.get(&cxx) {
        return Ok(v.clone());
    }
    let unavailable = |why: String| Error::BackendUnavailable {
        backend: "sim",
        reason: format!(
            "the host simulation of device code compiles with `{cxx}` (set GPU_CILK_SIM_CXX to another C++17 \
             compiler), which {why}"
        ),
    };
    let out = Command::new(&cxx).arg("--version").output().map_err(|e| unavailable(format!("cannot be run: {e}")))?;
    if !out.status.success() {
        return Err(unavailable(format!("failed: {}", String::from_utf8_lossy(&out.stderr).trim())));
    }
    let v = String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or("").trim().to_string();
    versions.lock().map_err(|_| poisoned())?.insert(cxx, v.clone());
    Ok(v)
}

fn poisoned() -> Error {
    Error::Internal("a lock of the host simulation was poisoned by a panic".into())
}

/// Extra flags from `GPU_CILK_SIM_CXXFLAGS` (whitespace-separated).
fn extra_flags() -> Vec<String> {
    std::env::var("GPU_CILK_SIM_CXXFLAGS").map(|f| f.split_whitespace().map(String::from).collect()).unwrap_or_default()
}

/// The program's own options that mean the same to g++ (`-D`, `-U`, `-I`).
fn program_flags(program: &ProgramSource) -> Vec<String> {
    program
        .options
        .iter()
        .filter(|o| o.starts_with("-D") || o.starts_with("-U") || o.starts_with("-I"))
        .cloned()
        .collect()
}

/// The cache key of `program` built by `version` with `flags`: a SHA-256 over length-prefixed
/// fields (as `cache.rs`), 64 hex digits.
fn cache_key(program: &ProgramSource, version: &str, flags: &[String]) -> String {
    let mut h = Sha256::new();
    let mut field = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    field(FORMAT.as_bytes());
    field(version.as_bytes());
    field(gpu_cilk_kernels::SIM_H.as_bytes());
    field(&(flags.len() as u64).to_le_bytes());
    for f in flags {
        field(f.as_bytes());
    }
    field(program.name.as_bytes());
    field(program.source.as_bytes());
    field(&(program.headers.len() as u64).to_le_bytes());
    for hd in &program.headers {
        field(hd.include_name.as_bytes());
        field(hd.text.as_bytes());
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

// ---- finding the kernels --------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Ident(String),
    Str(String),
    Punct(char),
}

/// The tokens of preprocessed C++ that matter for finding kernels: identifiers, string literals
/// (their contents), punctuation; numbers become identifiers, line markers are skipped.
fn lex(text: &str) -> Vec<Tok> {
    let mut toks = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with('#') {
            continue;
        }
        let b = line.as_bytes();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if c.is_ascii_alphanumeric() || c == b'_' {
                let s = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
                toks.push(Tok::Ident(line[s..i].to_string()));
            } else if c == b'"' || c == b'\'' {
                let s = i + 1;
                i += 1;
                while i < b.len() && b[i] != c {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                let e = i.min(b.len());
                if c == b'"' {
                    toks.push(Tok::Str(line.get(s..e).unwrap_or("").to_string()));
                }
                i += 1;
            } else if c.is_ascii_whitespace() {
                i += 1;
            } else {
                toks.push(Tok::Punct(c as char));
                i += 1;
            }
        }
    }
    toks
}

/// The index just past the parenthesized group starting at `toks[open]` (a `(`).
fn skip_group(toks: &[Tok], open: usize) -> usize {
    let mut depth = 0usize;
    let mut i = open;
    while i < toks.len() {
        match toks[i] {
            Tok::Punct('(') => depth += 1,
            Tok::Punct(')') => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    toks.len()
}

/// The names of the `extern "C" __global__` kernels *defined* in preprocessed source, in order.
fn find_kernels(preprocessed: &str) -> Vec<String> {
    let toks = lex(preprocessed);
    let mut names: Vec<String> = Vec::new();
    for i in 2..toks.len() {
        if toks[i] != Tok::Ident("__global__".into())
            || toks[i - 2] != Tok::Ident("extern".into())
            || toks[i - 1] != Tok::Str("C".into())
        {
            continue;
        }
        // `void`, attributes, then NAME ( params ) {
        let mut j = i + 1;
        let mut last: Option<&str> = None;
        while j < toks.len() {
            match &toks[j] {
                Tok::Ident(id) => {
                    last = Some(id);
                    j += 1;
                }
                Tok::Punct('(') => {
                    if matches!(last, Some("__launch_bounds__" | "__attribute__" | "__align__" | "alignas")) {
                        last = None;
                        j = skip_group(&toks, j);
                        continue;
                    }
                    break;
                }
                Tok::Punct('[') | Tok::Punct(']') | Tok::Punct('*') | Tok::Punct(':') => j += 1,
                _ => {
                    last = None;
                    break;
                }
            }
        }
        let Some(name) = last else { continue };
        if j >= toks.len() || name == "void" {
            continue;
        }
        let after = skip_group(&toks, j);
        if toks.get(after) == Some(&Tok::Punct('{')) && !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    names
}

/// The C++ appended to the program: the entry points and the list of kernels (see gc_sim.h).
fn wrapper(source_file: &str, kernels: &[String]) -> String {
    let mut w = format!("#include \"{source_file}\"\n\n// Entry points of the host simulation (gc_sim.h).\n");
    for k in kernels {
        w.push_str(&format!(
            "extern \"C\" void gc_sim_entry_{k}(const void* p) {{ gc_sim_invoke({k}, p); }}\n\
             extern \"C\" unsigned long long gc_sim_params_{k}(void) {{ return gc_sim_param_bytes({k}); }}\n"
        ));
    }
    w.push_str("extern \"C\" const char* const gc_sim_kernel_names[] = {");
    for k in kernels {
        w.push_str(&format!("\"{k}\", "));
    }
    w.push_str("nullptr};\n");
    w
}

// ---- building -------------------------------------------------------------------------------------

/// A fresh directory under `parent` (removed on drop).
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new(parent: &Path) -> std::io::Result<Self> {
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = parent.join(format!("build.{}.{n}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        Ok(ScratchDir(dir))
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn io_err(what: &str, e: std::io::Error) -> Error {
    Error::BackendUnavailable { backend: "sim", reason: format!("{what}: {e}") }
}

/// Runs the compiler; its whole log on failure.
fn run_cxx(program: &ProgramSource, args: &[String], dir: &Path) -> Result<Vec<u8>> {
    let cxx = compiler();
    let out = Command::new(&cxx)
        .args(args)
        .current_dir(dir)
        .output()
        .map_err(|e| io_err(&format!("running `{cxx}` for the host simulation"), e))?;
    if out.status.success() {
        let warnings = String::from_utf8_lossy(&out.stderr);
        if !warnings.trim().is_empty() {
            tracing::debug!(program = %program.name, "{cxx} warnings:\n{warnings}");
        }
        return Ok(out.stdout);
    }
    Err(Error::Compile {
        compiler: format!("{cxx} (the cuda-sim host simulation)"),
        task_or_program: program.name.clone(),
        log: format!(
            "(host simulation: `{cxx} {}` failed)\n{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim_end()
        ),
    })
}

/// Builds `program` into `out` (a shared object); returns its kernels.
fn build(program: &ProgramSource, flags: &[String], dir: &Path, out: &Path) -> Result<Vec<String>> {
    let write = |p: &Path, text: &str| -> Result<()> {
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io_err("writing the simulation's sources", e))?;
        }
        std::fs::write(p, text).map_err(|e| io_err("writing the simulation's sources", e))
    };
    write(&dir.join("gc_sim.h"), gpu_cilk_kernels::SIM_H)?;
    for h in &program.headers {
        if h.include_name.split('/').any(|c| c == ".." || c.is_empty()) || h.include_name.starts_with('/') {
            return Err(Error::Compile {
                compiler: "the cuda-sim host simulation".into(),
                task_or_program: program.name.clone(),
                log: format!("header name `{}` must be a relative path without `..`", h.include_name),
            });
        }
        write(&dir.join("include").join(&h.include_name), &h.text)?;
    }
    let stem: String =
        program.name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' { c } else { '_' }).collect();
    let source_file = format!("{}.cu", if stem.is_empty() { "program" } else { &stem });
    write(&dir.join(&source_file), &program.source)?;

    // Preprocess (as the real build sees it, less gc_sim.h, so `__global__` stays visible).
    let mut pre: Vec<String> = vec!["-E".into(), "-std=c++17".into(), "-DGC_HOST_SIM".into()];
    pre.extend(flags.iter().filter(|f| f.starts_with("-D") || f.starts_with("-U") || f.starts_with("-I")).cloned());
    pre.extend(["-Iinclude".into(), "-x".into(), "c++".into(), source_file.clone()]);
    let preprocessed = run_cxx(program, &pre, dir)?;
    let kernels = find_kernels(&String::from_utf8_lossy(&preprocessed));

    write(&dir.join("gc_sim_entries.cpp"), &wrapper(&source_file, &kernels))?;
    let mut args: Vec<String> = flags.to_vec();
    args.extend([
        "-include".into(),
        "gc_sim.h".into(),
        "-I.".into(),
        "-Iinclude".into(),
        "-x".into(),
        "c++".into(),
        "gc_sim_entries.cpp".into(),
        "-o".into(),
        out.display().to_string(),
    ]);
    run_cxx(program, &args, dir)?;
    Ok(kernels)
}

// ---- loading --------------------------------------------------------------------------------------

type EntryFn = unsafe extern "C" fn(*const c_void);
type LaunchFn = unsafe extern "C" fn(*const LaunchArgs) -> c_int;

/// Mirrors `gc_sim_launch_args` of gc_sim.h (ABI 1).
#[repr(C)]
struct LaunchArgs {
    entry: EntryFn,
    params: *const c_void,
    kernel: *const c_char,
    msg: *mut c_char,
    msg_len: u64,
    smem_bytes: u64,
    grid: [u32; 3],
    block: [u32; 3],
    mode: u32,
    host_threads: u32,
    isolated: u32,
    yield_every: u32,
}

/// A loaded simulation object (kept loaded for the life of the process: its globals are the
/// simulated device's and unloading buys nothing).
struct Loaded {
    _lib: libloading::Library,
    launch: LaunchFn,
    kernels: Vec<String>,
    entries: HashMap<String, (EntryFn, usize)>,
}

/// Serializes `dlopen` with `fork`, so no child starts while the loader lock is held.
static FORK_LOCK: Mutex<()> = Mutex::new(());

/// Loads (once per path per process) the object at `path`.
/// Loads the object at `path` as a program of its own: every call gets its own instance of the
/// object's globals (`__device__` variables), as every module load on a GPU does. The dynamic
/// loader keeps one instance per file (it compares device and inode), so each call opens a
/// private copy of the file, unlinked as soon as it is mapped. Loaded objects are never unloaded
/// (kept in LOADED): no termination routine runs while a launch may still use one.
fn load(path: &Path) -> Result<Arc<Loaded>> {
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

fn c_message(buf: &[u8]) -> String {
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).trim().to_string()
}

// ---- programs and kernels ---------------------------------------------------------------------------

/// A program built for the host simulation and loaded. Cheap to clone.
#[derive(Clone)]
pub struct SimProgram {
    name: String,
    loaded: Arc<Loaded>,
    path: PathBuf,
    cache_hit: bool,
    build_time: Duration,
}

impl std::fmt::Debug for SimProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimProgram")
            .field("name", &self.name)
            .field("kernels", &self.loaded.kernels)
            .field("path", &self.path)
            .field("cache_hit", &self.cache_hit)
            .finish()
    }
}

impl SimProgram {
    /// Builds (or takes from the cache) and loads `program`. Its headers are reachable by their
    /// include names, as with NVRTC.
    pub fn compile(program: &ProgramSource) -> Result<SimProgram> {
        let start = Instant::now();
        let version = compiler_version()?;
        let mut flags: Vec<String> = CXX_FLAGS.iter().map(|s| s.to_string()).collect();
        flags.extend(extra_flags());
        flags.extend(program_flags(program));
        let key = cache_key(program, &version, &flags);
        let cache_dir = PtxCache::from_env().dir().map(|d| d.join("sim"));
        if let Some(dir) = &cache_dir {
            let path = dir.join(format!("{key}.so"));
            if path.is_file() {
                match load(&path) {
                    Ok(loaded) => {
                        return Ok(SimProgram {
                            name: program.name.clone(),
                            loaded,
                            path,
                            cache_hit: true,
                            build_time: start.elapsed(),
                        })
                    }
                    Err(e) => {
                        tracing::warn!(path = %path.display(), "unusable simulation cache entry ({e}); rebuilding")
                    }
                }
            }
        }
        // Build in a scratch directory beside the cache entry (same file system: the rename is
        // atomic), or in the temporary directory when there is no cache.
        let parent = cache_dir.clone().unwrap_or_else(|| std::env::temp_dir().join("gpu-cilk-sim"));
        let scratch = ScratchDir::new(&parent)
            .or_else(|_| ScratchDir::new(&std::env::temp_dir().join("gpu-cilk-sim")))
            .map_err(|e| io_err("creating a build directory for the host simulation", e))?;
        let built = scratch.0.join(format!("{key}.so"));
        build(program, &flags, &scratch.0, &built)?;
        let path = match &cache_dir {
            Some(dir) => {
                let path = dir.join(format!("{key}.so"));
                match std::fs::rename(&built, &path) {
                    Ok(()) => path,
                    Err(e) => {
                        tracing::warn!(path = %path.display(), "cannot store the simulation object ({e}); using it uncached");
                        built.clone()
                    }
                }
            }
            None => built.clone(),
        };
        // Loaded before the scratch directory goes: the mapping outlives the file.
        let loaded = load(&path)?;
        Ok(SimProgram { name: program.name.clone(), loaded, path, cache_hit: false, build_time: start.elapsed() })
    }

    /// The program's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The `extern "C" __global__` kernels it defines, in source order.
    pub fn kernels(&self) -> &[String] {
        &self.loaded.kernels
    }

    /// Whether the object came from the on-disk cache.
    pub fn cache_hit(&self) -> bool {
        self.cache_hit
    }

    /// Time spent in [`SimProgram::compile`] (the g++ build on a miss, the load on a hit).
    pub fn build_time(&self) -> Duration {
        self.build_time
    }

    /// The parameter bytes `kernel` takes (CUDA's layout: for one struct, its size).
    pub fn param_bytes(&self, kernel: &str) -> Result<usize> {
        Ok(self.entry(kernel)?.1)
    }

    fn entry(&self, kernel: &str) -> Result<(EntryFn, usize)> {
        self.loaded.entries.get(kernel).copied().ok_or_else(|| Error::SimKernelFailed {
            kernel: kernel.to_string(),
            message: format!(
                "program `{}` defines no extern \"C\" __global__ kernel of that name (it has: {})",
                self.name,
                self.loaded.kernels.join(", ")
            ),
        })
    }

    /// A typed handle to `kernel`, launched with the default [`LaunchOptions`] (change them with
    /// [`SimKernel::cooperative`] / [`SimKernel::options`]). Fails when the kernel is missing or
    /// takes a different number of parameter bytes than `P` has.
    ///
    /// # Safety
    ///
    /// `P` must be the kernel's parameter type, field for field (`DeviceCopy`'s contract), and
    /// every launch must pass addresses of live [`SimBuffer`]s of the sizes the kernel indexes:
    /// a launch runs the kernel's code, which touches whatever the parameters point to.
    pub unsafe fn kernel<P: DeviceCopy>(&self, kernel: &str) -> Result<SimKernel<P>> {
        let bytes = self.param_bytes(kernel)?;
        if bytes != std::mem::size_of::<P>() {
            return Err(Error::SimKernelFailed {
                kernel: kernel.to_string(),
                message: format!(
                    "it takes {bytes} bytes of parameters; `{}` has {}",
                    std::any::type_name::<P>(),
                    std::mem::size_of::<P>()
                ),
            });
        }
        Ok(SimKernel {
            program: self.clone(),
            name: kernel.to_string(),
            options: LaunchOptions::default(),
            _p: PhantomData,
        })
    }

    /// Runs one launch of `kernel` to its end with `params` (the parameter bytes, CUDA's layout).
    ///
    /// # Safety
    ///
    /// `params` must be what the kernel expects, and every address in it must point to live
    /// [`SimBuffer`] memory of the size the kernel indexes (see [`SimProgram::kernel`]).
    pub unsafe fn launch(&self, kernel: &str, dims: LaunchDims, options: &LaunchOptions, params: &[u8]) -> Result<()> {
        let (entry, bytes) = self.entry(kernel)?;
        if params.len() != bytes {
            return Err(Error::SimKernelFailed {
                kernel: kernel.to_string(),
                message: format!("it takes {bytes} bytes of parameters, the launch passed {}", params.len()),
            });
        }
        let msg = SharedPage::new(MSG_BYTES).map_err(|e| Error::SimKernelFailed {
            kernel: kernel.to_string(),
            message: format!("cannot map the launch's message buffer: {e}"),
        })?;
        let name = CString::new(kernel).map_err(|_| Error::SimKernelFailed {
            kernel: kernel.to_string(),
            message: "the kernel name contains a NUL byte".into(),
        })?;
        let args = LaunchArgs {
            entry,
            params: params.as_ptr().cast(),
            kernel: name.as_ptr(),
            msg: msg.ptr.as_ptr().cast(),
            msg_len: MSG_BYTES as u64,
            smem_bytes: u64::from(dims.shared_mem_bytes),
            grid: [dims.grid.0, dims.grid.1, dims.grid.2],
            block: [dims.block.0, dims.block.1, dims.block.2],
            mode: match options.mode {
                LaunchMode::Independent => 0,
                LaunchMode::Cooperative => 1,
            },
            host_threads: options.host_threads.unwrap_or(0),
            isolated: u32::from(options.isolate),
            yield_every: options.yield_every.map_or(0, |y| if y == 0 { u32::MAX } else { y }),
        };
        let failed = |message: String| Error::SimKernelFailed { kernel: kernel.to_string(), message };
        if !options.isolate {
            // SAFETY: `args` is a valid gc_sim_launch_args whose pointers (params, name, msg) live
            // until the call returns; the caller vouched for what the kernel touches.
            let rc = unsafe { (self.loaded.launch)(&args) };
            return if rc == 0 { Ok(()) } else { Err(failed(msg.message())) };
        }
        let pid = {
            let _fork = FORK_LOCK.lock().map_err(|_| poisoned())?;
            // SAFETY: fork() itself; the child below only calls into the simulation object
            // (C++ that allocates with malloc and starts threads, both safe after fork in glibc)
            // and leaves with _exit, never returning into Rust.
            unsafe { libc::fork() }
        };
        if pid < 0 {
            return Err(failed(format!("fork failed: {}", std::io::Error::last_os_error())));
        }
        if pid == 0 {
            // SAFETY: in the child: `args` and everything it points to were copied with the
            // address space; gc_sim_launch runs the launch and _exit ends the child without
            // running the parent's destructors or atexit handlers.
            unsafe {
                let rc = (self.loaded.launch)(&args);
                libc::_exit(if rc == 0 { 0 } else { 1 });
            }
        }
        match wait_child(pid, options.timeout) {
            Ok(Some(status)) => interpret(status, &msg, options),
            Ok(None) => Err(failed(format!(
                "did not finish within {:?} and was killed ({}){}",
                options.timeout,
                match options.mode {
                    LaunchMode::Independent => {
                        "in independent mode a thread that waits for another thread of the grid can wait forever: \
                         launch such kernels in cooperative mode"
                    }
                    LaunchMode::Cooperative => "a deadlock or livelock?",
                },
                {
                    let m = msg.message();
                    if m.is_empty() {
                        String::new()
                    } else {
                        format!("; {m}")
                    }
                }
            ))),
            Err(e) => Err(failed(format!("waiting for the launch's process: {e}"))),
        }
        .map_err(|e| match e {
            Error::SimKernelFailed { message, .. } => failed(message),
            other => other,
        })
    }
}

/// Turns a child's wait status into the launch's result.
fn interpret(status: c_int, msg: &SharedPage, options: &LaunchOptions) -> Result<()> {
    let message = msg.message();
    let err = |m: String| Err(Error::SimKernelFailed { kernel: String::new(), message: m });
    if libc::WIFEXITED(status) {
        return match libc::WEXITSTATUS(status) {
            0 => Ok(()),
            1 => err(if message.is_empty() { "the launch was refused".into() } else { message }),
            EXIT_FAULT => err(message),
            code => err(format!("the kernel ended its process with exit code {code}")),
        };
    }
    if libc::WIFSIGNALED(status) {
        let sig = libc::WTERMSIG(status);
        let what = format!("the launch's process was killed by signal {sig}");
        let hint = if options.mode == LaunchMode::Cooperative && sig == libc::SIGKILL {
            " (out of memory? a cooperative launch runs one host thread per simulated thread)"
        } else {
            ""
        };
        return err(if message.is_empty() { format!("{what}{hint}") } else { format!("{message} ({what})") });
    }
    err(format!("unexpected wait status {status:#x}"))
}

/// Waits for `pid` up to `timeout`: its wait status, or `None` after killing it at the timeout.
fn wait_child(pid: libc::pid_t, timeout: Duration) -> std::io::Result<Option<c_int>> {
    let deadline = Instant::now() + timeout;
    // pidfd_open (Linux 5.3+) lets poll() wake at the child's exit; else sleep-and-check.
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as c_int;
    let mut pause = Duration::from_micros(20);
    loop {
        let mut status: c_int = 0;
        // SAFETY: waitpid on our own child with a valid status pointer.
        let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
        if r == pid {
            if fd >= 0 {
                // SAFETY: closing the descriptor pidfd_open gave us.
                unsafe { libc::close(fd) };
            }
            return Ok(Some(status));
        }
        if r < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        let now = Instant::now();
        if now >= deadline {
            // SAFETY: killing and reaping our own child.
            unsafe {
                libc::kill(pid, libc::SIGKILL);
                libc::waitpid(pid, &mut status, 0);
                if fd >= 0 {
                    libc::close(fd);
                }
            }
            return Ok(None);
        }
        let left = deadline - now;
        if fd >= 0 {
            let mut p = libc::pollfd { fd, events: libc::POLLIN, revents: 0 };
            let ms = left.as_millis().clamp(1, 1000) as c_int;
            // SAFETY: one valid pollfd.
            unsafe { libc::poll(&mut p, 1, ms) };
        } else {
            std::thread::sleep(pause.min(left));
            pause = (pause * 2).min(Duration::from_millis(5));
        }
    }
}

/// A typed kernel of a [`SimProgram`] (from [`SimProgram::kernel`]).
pub struct SimKernel<P> {
    program: SimProgram,
    name: String,
    options: LaunchOptions,
    _p: PhantomData<fn(P)>,
}

impl<P: DeviceCopy> SimKernel<P> {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Launched in cooperative mode from now on.
    pub fn cooperative(mut self) -> Self {
        self.options.mode = LaunchMode::Cooperative;
        self
    }

    /// Launched with `options` from now on.
    pub fn options(mut self, options: LaunchOptions) -> Self {
        self.options = options;
        self
    }

    /// The options launches use.
    pub fn launch_options(&self) -> &LaunchOptions {
        &self.options
    }

    /// Runs one launch to its end with `options` instead of the kernel's own.
    pub fn launch_with(&self, dims: LaunchDims, params: &P, options: &LaunchOptions) -> Result<()> {
        // SAFETY: as in `launch`.
        let bytes = unsafe { std::slice::from_raw_parts((params as *const P).cast::<u8>(), std::mem::size_of::<P>()) };
        // SAFETY: the caller of `SimProgram::kernel` vouched for `P` and for what launches pass.
        unsafe { self.program.launch(&self.name, dims, options, bytes) }
    }

    /// Runs one launch to its end.
    pub fn launch(&self, dims: LaunchDims, params: &P) -> Result<()> {
        // SAFETY: `P` is plain old data (`DeviceCopy`) of exactly the size checked in
        // `SimProgram::kernel`; viewing it as bytes reads only initialized memory of that size
        // (DeviceCopy types have no padding-dependent invariants; their padding, if any, is copied
        // as whatever bytes it holds, which the kernel never reads).
        let bytes = unsafe { std::slice::from_raw_parts((params as *const P).cast::<u8>(), std::mem::size_of::<P>()) };
        // SAFETY: the caller of `SimProgram::kernel` vouched for `P` and for what launches pass.
        unsafe { self.program.launch(&self.name, dims, &self.options, bytes) }
    }
}

// ---- simulated device memory ------------------------------------------------------------------------

/// Shared anonymous memory: what a forked launch writes, the parent reads.
struct SharedPage {
    ptr: NonNull<u8>,
    len: usize,
}

impl SharedPage {
    fn new(len: usize) -> std::io::Result<SharedPage> {
        let len = len.max(1);
        // SAFETY: a fresh anonymous mapping; no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(|| std::io::Error::other("mmap returned null"))?;
        Ok(SharedPage { ptr, len })
    }

    /// The NUL-terminated message the launch left (empty if none).
    fn message(&self) -> String {
        // SAFETY: the mapping is `len` readable bytes, alive while `self` is; the launch that
        // wrote it has ended.
        let bytes = unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) };
        c_message(bytes)
    }
}

impl Drop for SharedPage {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping `new` made; nothing refers to it any more.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// `len` elements of `T` of simulated device memory: zeroed, page-aligned (so 256-aligned as
/// `cudaMalloc`'s), shared with forked launches; its address is what kernels receive
/// ([`SimBuffer::ptr`]). Reads and writes from the host are copies, made between launches (as
/// `cudaMemcpy` is): do not read a buffer while a launch that writes it runs on another thread.
pub struct SimBuffer<T: DeviceCopy> {
    page: SharedPage,
    len: usize,
    _t: PhantomData<T>,
}

// SAFETY: the buffer owns its mapping; host access goes through &self / &mut self copies.
unsafe impl<T: DeviceCopy> Send for SimBuffer<T> {}
// SAFETY: as above; `&self` methods only read.
unsafe impl<T: DeviceCopy> Sync for SimBuffer<T> {}

impl<T: DeviceCopy> SimBuffer<T> {
    /// `len` zeroed elements.
    pub fn zeroed(len: usize) -> Result<Self> {
        let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| {
            Error::Config(format!(
                "a simulated buffer of {len} elements of {} bytes overflows",
                std::mem::size_of::<T>()
            ))
        })?;
        let page = SharedPage::new(bytes).map_err(|e| Error::Cuda {
            op: format!("allocating {bytes} bytes of simulated device memory"),
            name: "SIM_OUT_OF_MEMORY".into(),
            description: e.to_string(),
        })?;
        Ok(SimBuffer { page, len, _t: PhantomData })
    }

    /// A buffer holding `data`.
    pub fn from_slice(data: &[T]) -> Result<Self> {
        let mut b = Self::zeroed(data.len())?;
        b.copy_from(data);
        Ok(b)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    pub fn num_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// The address kernels receive.
    pub fn addr(&self) -> u64 {
        self.page.ptr.as_ptr() as u64
    }

    /// The address as a kernel parameter field.
    pub fn ptr(&self) -> DevicePtr<T> {
        DevicePtr::from_addr(self.addr())
    }

    /// A copy of the elements.
    pub fn to_vec(&self) -> Vec<T> {
        let mut v = Vec::with_capacity(self.len);
        // SAFETY: the mapping holds `len` elements of T (page-aligned, so aligned for T); every
        // bit pattern is a valid T (`DeviceCopy`); `v` has room for `len` and is set to that
        // length only after the copy.
        unsafe {
            std::ptr::copy_nonoverlapping(self.page.ptr.as_ptr().cast::<T>(), v.as_mut_ptr(), self.len);
            v.set_len(self.len);
        }
        v
    }

    /// Overwrites the first `data.len()` elements. Panics if `data` is longer than the buffer.
    pub fn copy_from(&mut self, data: &[T]) {
        assert!(data.len() <= self.len, "copying {} elements into a buffer of {}", data.len(), self.len);
        // SAFETY: room for `data.len()` elements (checked), aligned, exclusively borrowed.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.page.ptr.as_ptr().cast::<T>(), data.len()) };
    }

    /// Sets every byte to zero.
    pub fn zero(&mut self) {
        // SAFETY: `num_bytes` writable bytes of the mapping, exclusively borrowed.
        unsafe { std::ptr::write_bytes(self.page.ptr.as_ptr(), 0, self.num_bytes()) };
    }
}

impl<T: DeviceCopy> std::fmt::Debug for SimBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SimBuffer<{}>[{}] at {:#x}", std::any::type_name::<T>(), self.len, self.addr())
    }
}

/// The device-shaped face of the simulation: the calls of [`super::CudaDevice`] that tests and
/// the scheduler use (allocation, copies, programs), so code written for a `CudaDevice` ports by
/// changing its types. Synchronous: every launch has ended when it returns.
#[derive(Clone, Debug, Default)]
pub struct SimDevice;

impl SimDevice {
    /// The simulated device (always available where the compiler is; see [`compiler_version`]).
    pub fn new() -> Self {
        SimDevice
    }

    /// `n` zeroed elements.
    pub fn alloc_zeroed<T: DeviceCopy>(&self, n: usize) -> Result<SimBuffer<T>> {
        SimBuffer::zeroed(n)
    }

    /// A buffer holding `data`.
    pub fn htod<T: DeviceCopy>(&self, data: &[T]) -> Result<SimBuffer<T>> {
        SimBuffer::from_slice(data)
    }

    /// A copy of `buf`.
    pub fn dtoh<T: DeviceCopy>(&self, buf: &SimBuffer<T>) -> Result<Vec<T>> {
        Ok(buf.to_vec())
    }

    /// Overwrites the start of `buf` with `data`.
    pub fn htod_into<T: DeviceCopy>(&self, data: &[T], buf: &mut SimBuffer<T>) -> Result<()> {
        buf.copy_from(data);
        Ok(())
    }

    /// Zeroes `buf`.
    pub fn zero<T: DeviceCopy>(&self, buf: &mut SimBuffer<T>) -> Result<()> {
        buf.zero();
        Ok(())
    }

    /// Builds and loads `program` ([`SimProgram::compile`]).
    pub fn load_program(&self, program: &ProgramSource) -> Result<SimProgram> {
        SimProgram::compile(program)
    }

    /// Nothing to wait for: launches are synchronous.
    pub fn sync(&self) -> Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_defined_extern_c_kernels_only() {
        let pre = r#"
# 1 "x.cu"
extern "C" __global__ void a(P p) { }
extern "C" __global__ void b(P p);
extern "C" __global__ void b(P p) { int x = f(1); }
extern "C" __global__ void __launch_bounds__(256, 2) c(Q q) {}
extern "C" __global__ __launch_bounds__(128) void d() {}
__global__ void not_extern_c(P p) {}
extern "C" __device__ void not_global(P p) {}
static const char* s = "extern \"C\" __global__ void in_string() {}";
extern "C" __global__ void e(gc_root_params<fib_task> p) { gc_push_root(p); }
"#;
        assert_eq!(find_kernels(pre), ["a", "b", "c", "d", "e"]);
    }

    #[test]
    fn wrapper_declares_entries_and_names() {
        let w = wrapper("p.cu", &["k1".into(), "k2".into()]);
        assert!(w.starts_with("#include \"p.cu\""));
        assert!(w.contains("extern \"C\" void gc_sim_entry_k1(const void* p) { gc_sim_invoke(k1, p); }"));
        assert!(w.contains("gc_sim_params_k2(void) { return gc_sim_param_bytes(k2); }"));
        assert!(w.contains("gc_sim_kernel_names[] = {\"k1\", \"k2\", nullptr};"));
    }

    #[test]
    fn key_depends_on_every_input() {
        let p = ProgramSource::new("p", "x").header("a.cuh", "y");
        let flags = vec!["-O2".to_string()];
        let base = cache_key(&p, "g++ 12", &flags);
        assert_eq!(base.len(), 64);
        assert_eq!(base, cache_key(&p, "g++ 12", &flags));
        let mut q = p.clone();
        q.source.push(' ');
        let mut r = p.clone();
        r.headers[0].text.push(' ');
        let others = [
            cache_key(&p, "g++ 13", &flags),
            cache_key(&p, "g++ 12", &["-O1".to_string()]),
            cache_key(&q, "g++ 12", &flags),
            cache_key(&r, "g++ 12", &flags),
            cache_key(&p.clone().header("b.cuh", ""), "g++ 12", &flags),
        ];
        for o in others {
            assert_ne!(base, o);
        }
    }

    #[test]
    fn launch_args_match_gc_sim_h() {
        // gc_sim_launch_args: 6 eight-byte fields, then 10 u32.
        assert_eq!(std::mem::size_of::<LaunchArgs>(), 6 * 8 + 10 * 4);
        assert!(gpu_cilk_kernels::SIM_H.contains(&format!("GC_SIM_ABI = {ABI};")));
        assert!(gpu_cilk_kernels::SIM_H.contains(&format!("GC_SIM_EXIT_FAULT = {EXIT_FAULT}")));
    }

    #[test]
    fn only_preprocessor_options_reach_gxx() {
        let p = ProgramSource::new("p", "").option("-DN=3").option("-lineinfo").option("-Ifoo").option("--fmad=false");
        assert_eq!(program_flags(&p), ["-DN=3", "-Ifoo"]);
    }

    #[test]
    fn buffers_round_trip() {
        let mut b = SimBuffer::<u32>::from_slice(&[1, 2, 3]).unwrap();
        assert_eq!(b.to_vec(), [1, 2, 3]);
        assert_eq!(b.addr() % 256, 0);
        assert_eq!(b.ptr().addr(), b.addr());
        b.copy_from(&[7]);
        assert_eq!(b.to_vec(), [7, 2, 3]);
        b.zero();
        assert_eq!(b.to_vec(), [0, 0, 0]);
        assert!(SimBuffer::<u64>::zeroed(0).unwrap().is_empty());
    }
}

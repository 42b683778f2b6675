//! NVRTC: one CUDA C++ program (a source string plus in-memory headers) to PTX for one virtual
//! architecture. Needs `libnvrtc` but no GPU and no driver, so CI compiles every generated program
//! with it. Owns the compiler options; the cache ([`super::cache`]) and loading
//! ([`super::module`]) live elsewhere.
//!
//! **Finding the library.** `cudarc` (built with the `cuda-13000` feature) `dlopen`s, in order,
//! `libnvrtc.so`, `libnvrtc.so.13`, `libnvrtc.so.12`, `libnvrtc.so.11`, ... (see
//! [`super::driver::nvrtc_candidates`]), through the normal loader search (`LD_LIBRARY_PATH`, the
//! ld cache). So CUDA 13's `/usr/local/cuda/lib64/libnvrtc.so.13` and the PyPI wheel
//! `nvidia-cuda-nvrtc-cu12`'s `libnvrtc.so.12` are both found once their directory is on
//! `LD_LIBRARY_PATH`; `scripts/nvrtc-env.sh` prints that line for the wheel.
//!
//! **Options.** `-std=c++17`, `--gpu-architecture=compute_XY`, and `--fmad=false`: Rust never fuses
//! `a * b + c` into one rounding, so neither may the device, or the backends would disagree on
//! float results. No `--use_fast_math` for the same reason.

use super::driver::{guarded, nvrtc_library};
use crate::error::{Error, Result};
use cudarc::nvrtc::result::{self as nvrtc, NvrtcError};
use cudarc::nvrtc::sys;
use std::ffi::{c_char, c_int, CString};
use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

/// Options every program is compiled with, besides the architecture.
pub const DEFAULT_OPTIONS: &[&str] = &["-std=c++17", "--fmad=false"];

/// A GPU architecture (compute capability), e.g. `Arch::new(9, 0)` for an H100.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Arch {
    /// Major compute capability.
    pub major: u32,
    /// Minor compute capability.
    pub minor: u32,
}

impl Arch {
    /// The architecture of compute capability `major.minor`.
    pub const fn new(major: u32, minor: u32) -> Self {
        Arch { major, minor }
    }

    /// The virtual architecture NVRTC compiles for, e.g. `compute_90`.
    pub fn compute(self) -> String {
        format!("compute_{}{}", self.major, self.minor)
    }
}

impl fmt::Display for Arch {
    /// `sm_90`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sm_{}{}", self.major, self.minor)
    }
}

impl FromStr for Arch {
    type Err = Error;
    /// Accepts `sm_90`, `compute_90`, `90` and `9.0`.
    fn from_str(s: &str) -> Result<Self> {
        let bad = || Error::Config(format!("`{s}` is not a GPU architecture (expected e.g. sm_90, compute_90, 9.0)"));
        let t = s.trim();
        let t = t.strip_prefix("sm_").or_else(|| t.strip_prefix("compute_")).unwrap_or(t);
        if let Some((a, b)) = t.split_once('.') {
            return Ok(Arch::new(a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?));
        }
        if t.len() < 2 || !t.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let (a, b) = t.split_at(t.len() - 1);
        Ok(Arch::new(a.parse().map_err(|_| bad())?, b.parse().map_err(|_| bad())?))
    }
}

/// A header made available to `#include "name"` without touching the file system.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Header {
    /// The name used in `#include`, e.g. `gpu_cilk/channel.cuh`.
    pub include_name: String,
    /// The header's text.
    pub text: String,
}

/// One NVRTC compilation unit: a name (for messages and NVRTC's log), the source, in-memory
/// headers and extra options.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ProgramSource {
    /// The task function or program this is, used in error messages.
    pub name: String,
    /// CUDA C++ text; kernels meant to be launched by name are `extern "C" __global__`.
    pub source: String,
    /// Headers it may `#include`.
    pub headers: Vec<Header>,
    /// Options beyond the architecture and [`DEFAULT_OPTIONS`] (e.g. `-DN=8`, `-lineinfo`).
    pub options: Vec<String>,
}

impl ProgramSource {
    /// A program with no headers and no extra options.
    pub fn new(name: impl Into<String>, source: impl Into<String>) -> Self {
        ProgramSource { name: name.into(), source: source.into(), headers: Vec::new(), options: Vec::new() }
    }

    /// Adds a header reachable as `#include "include_name"`.
    pub fn header(mut self, include_name: impl Into<String>, text: impl Into<String>) -> Self {
        self.headers.push(Header { include_name: include_name.into(), text: text.into() });
        self
    }

    /// Adds a compiler option.
    pub fn option(mut self, option: impl Into<String>) -> Self {
        self.options.push(option.into());
        self
    }

    /// The full option list NVRTC gets for `arch`: the architecture, [`DEFAULT_OPTIONS`], this
    /// program's options, then the whitespace-separated words of `GPU_CILK_NVRTC_FLAGS` when set
    /// (for experiments, e.g. `-DGC_JOIN_SC_FENCES`; part of the PTX cache key like every option).
    pub fn options_for(&self, arch: Arch) -> Vec<String> {
        let mut opts = vec![format!("--gpu-architecture={}", arch.compute())];
        opts.extend(DEFAULT_OPTIONS.iter().map(|s| s.to_string()));
        opts.extend(self.options.iter().cloned());
        if let Ok(extra) = std::env::var("GPU_CILK_NVRTC_FLAGS") {
            opts.extend(extra.split_whitespace().map(str::to_string));
        }
        opts
    }
}

/// The loaded NVRTC's version, e.g. `(12, 9)` or `(13, 0)`.
pub fn nvrtc_version() -> Result<(u32, u32)> {
    static VERSION: OnceLock<(u32, u32)> = OnceLock::new();
    if let Some(v) = VERSION.get() {
        return Ok(*v);
    }
    nvrtc_library()?;
    let v = guarded("asking NVRTC for its version", || {
        let (mut major, mut minor): (c_int, c_int) = (0, 0);
        // SAFETY: nvrtcVersion writes two ints through valid, exclusive pointers.
        unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
            .result()
            .map_err(|e| nvrtc_err("asking for its version", e))?;
        Ok((major.max(0) as u32, minor.max(0) as u32))
    })?;
    Ok(*VERSION.get_or_init(|| v))
}

/// Compiles `source` (no headers, default options) to PTX for `arch`. `name` names the program
/// in errors. No GPU needed.
pub fn compile_ptx(source: &str, name: &str, arch: Arch) -> Result<String> {
    compile(&ProgramSource::new(name, source), arch)
}

/// Compiles a program to PTX for `arch`: the PTX text, or [`Error::Compile`] with NVRTC's whole
/// log, or [`Error::BackendUnavailable`] when NVRTC cannot be loaded. No GPU needed.
pub fn compile(program: &ProgramSource, arch: Arch) -> Result<String> {
    nvrtc_library()?;
    let nul = |what: &str| Error::Compile {
        compiler: "NVRTC".into(),
        task_or_program: program.name.clone(),
        log: format!("{what} contains a NUL byte, which NVRTC cannot accept"),
    };
    let src = CString::new(program.source.as_str()).map_err(|_| nul("the source"))?;
    let name = CString::new(format!("{}.cu", program.name)).map_err(|_| nul("the program name"))?;
    let mut texts = Vec::with_capacity(program.headers.len());
    let mut names = Vec::with_capacity(program.headers.len());
    for h in &program.headers {
        texts.push(CString::new(h.text.as_str()).map_err(|_| nul(&format!("header `{}`", h.include_name)))?);
        names.push(CString::new(h.include_name.as_str()).map_err(|_| nul("a header name"))?);
    }
    let text_ptrs: Vec<*const c_char> = texts.iter().map(|c| c.as_ptr()).collect();
    let name_ptrs: Vec<*const c_char> = names.iter().map(|c| c.as_ptr()).collect();
    let options = program.options_for(arch);
    if let Some(bad) = options.iter().find(|o| o.contains('\0')) {
        return Err(nul(&format!("option {bad:?}")));
    }

    guarded("compiling with NVRTC", || {
        let mut prog: sys::nvrtcProgram = std::ptr::null_mut();
        let n_headers = c_int::try_from(texts.len())
            .map_err(|_| Error::Nvrtc { op: "creating a program".into(), message: "too many headers".into() })?;
        // SAFETY: every pointer is to a NUL-terminated CString (or an array of them, of length
        // `n_headers`) that outlives the program: `src`, `name`, `texts`, `names` are dropped
        // after `Program` below destroys it.
        unsafe {
            sys::nvrtcCreateProgram(
                &mut prog,
                src.as_ptr(),
                name.as_ptr(),
                n_headers,
                text_ptrs.as_ptr(),
                name_ptrs.as_ptr(),
            )
        }
        .result()
        .map_err(|e| nvrtc_err("creating a program", e))?;
        let prog = Program(prog);

        // SAFETY: `prog.0` was created above and is destroyed only by `Program::drop`.
        let compiled = unsafe { nvrtc::compile_program(prog.0, &options) };
        let log = prog.log();
        match compiled {
            Ok(()) => {
                if !log.trim().is_empty() {
                    tracing::debug!(program = %program.name, "NVRTC warnings:\n{log}");
                }
                // SAFETY: `prog.0` is live and compiled successfully.
                let ptx = unsafe { nvrtc::get_ptx(prog.0) }.map_err(|e| nvrtc_err("reading the PTX", e))?;
                let bytes: Vec<u8> = ptx.into_iter().map(|c| c as u8).take_while(|&b| b != 0).collect();
                String::from_utf8(bytes)
                    .map_err(|_| Error::Nvrtc { op: "reading the PTX".into(), message: "PTX is not UTF-8".into() })
            }
            Err(NvrtcError(sys::nvrtcResult::NVRTC_ERROR_COMPILATION)) => {
                Err(Error::Compile { compiler: "NVRTC".into(), task_or_program: program.name.clone(), log })
            }
            Err(e) => Err(Error::Nvrtc {
                op: format!("compiling `{}` with options {options:?}", program.name),
                message: if log.trim().is_empty() { format!("{:?}", e.0) } else { format!("{:?}: {log}", e.0) },
            }),
        }
    })
}

fn nvrtc_err(op: &str, e: NvrtcError) -> Error {
    Error::Nvrtc { op: op.to_string(), message: format!("{:?}", e.0) }
}

/// Owns an `nvrtcProgram` and destroys it on drop.
struct Program(sys::nvrtcProgram);

impl Program {
    /// NVRTC's log (empty if it cannot be read).
    fn log(&self) -> String {
        // SAFETY: `self.0` is a live program (destroyed only in `drop`).
        match unsafe { nvrtc::get_program_log(self.0) } {
            Ok(chars) => {
                let bytes: Vec<u8> = chars.into_iter().map(|c| c as u8).take_while(|&b| b != 0).collect();
                String::from_utf8_lossy(&bytes).into_owned()
            }
            Err(e) => format!("(NVRTC's log could not be read: {:?})", e.0),
        }
    }
}

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: `self.0` was created by nvrtcCreateProgram and is destroyed exactly once, here.
        if let Err(e) = unsafe { nvrtc::destroy_program(self.0) } {
            tracing::warn!("nvrtcDestroyProgram failed: {:?}", e.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TINY: &str = r#"extern "C" __global__ void add_one(unsigned long long* p, unsigned n) {
        unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
        if (i < n) p[i] += 1;
    }"#;

    /// Why NVRTC is unusable here, or `None` when it is.
    fn nvrtc_missing() -> Option<String> {
        nvrtc_library().err().map(|e| e.to_string())
    }

    #[test]
    fn arch_parses_and_prints() {
        for s in ["sm_90", "compute_90", "90", "9.0"] {
            assert_eq!(s.parse::<Arch>().unwrap(), Arch::new(9, 0), "{s}");
        }
        assert_eq!("sm_120".parse::<Arch>().unwrap(), Arch::new(12, 0));
        assert_eq!(Arch::new(8, 6).to_string(), "sm_86");
        assert_eq!(Arch::new(8, 6).compute(), "compute_86");
        assert!("sm_x".parse::<Arch>().is_err());
        assert!("9".parse::<Arch>().is_err());
    }

    #[test]
    fn options_are_rust_faithful() {
        let opts = ProgramSource::new("p", "").option("-DX=1").options_for(Arch::new(9, 0));
        assert_eq!(opts, ["--gpu-architecture=compute_90", "-std=c++17", "--fmad=false", "-DX=1"]);
        assert!(!opts.iter().any(|o| o.contains("fast_math")));
    }

    #[test]
    fn missing_nvrtc_is_a_clear_error() {
        if let Some(why) = nvrtc_missing() {
            let err = compile_ptx(TINY, "tiny", Arch::new(9, 0)).unwrap_err();
            assert!(matches!(err, Error::BackendUnavailable { backend: "cuda", .. }));
            assert!(why.contains("LD_LIBRARY_PATH"), "{why}");
        } else {
            eprintln!("SKIPPED missing_nvrtc_is_a_clear_error: NVRTC is present");
        }
    }
}

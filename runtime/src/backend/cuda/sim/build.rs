//! Building a simulation object: the compiler (`GPU_CILK_SIM_CXX`, its version), the flags, the
//! cache key, and running g++ on a program's sources in a scratch directory.
//!
//! Owns: everything that runs the compiler. Must not touch: which file of the cache is used
//! (`program.rs`), loading or running the object (`load.rs`, `launch.rs`); what the kernels are
//! is `scan.rs`'s.

use super::super::nvrtc::ProgramSource;
use super::scan::{find_kernels, wrapper};
use crate::error::{Error, Result};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock};

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

pub(super) fn poisoned() -> Error {
    Error::Internal("a lock of the host simulation was poisoned by a panic".into())
}

/// Extra flags from `GPU_CILK_SIM_CXXFLAGS` (whitespace-separated).
pub(super) fn extra_flags() -> Vec<String> {
    std::env::var("GPU_CILK_SIM_CXXFLAGS").map(|f| f.split_whitespace().map(String::from).collect()).unwrap_or_default()
}

/// The program's own options that mean the same to g++ (`-D`, `-U`, `-I`).
pub(super) fn program_flags(program: &ProgramSource) -> Vec<String> {
    program
        .options
        .iter()
        .filter(|o| o.starts_with("-D") || o.starts_with("-U") || o.starts_with("-I"))
        .cloned()
        .collect()
}

/// The cache key of `program` built by `version` with `flags`: a SHA-256 over length-prefixed
/// fields (as `cache.rs`), 64 hex digits.
pub(super) fn cache_key(program: &ProgramSource, version: &str, flags: &[String]) -> String {
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

/// A fresh directory under `parent` (removed on drop).
pub(super) struct ScratchDir(pub(super) PathBuf);

impl ScratchDir {
    pub(super) fn new(parent: &Path) -> std::io::Result<Self> {
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

pub(super) fn io_err(what: &str, e: std::io::Error) -> Error {
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
pub(super) fn build(program: &ProgramSource, flags: &[String], dir: &Path, out: &Path) -> Result<Vec<String>> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn only_preprocessor_options_reach_gxx() {
        let p = ProgramSource::new("p", "").option("-DN=3").option("-lineinfo").option("-Ifoo").option("--fmad=false");
        assert_eq!(program_flags(&p), ["-DN=3", "-Ifoo"]);
    }
}

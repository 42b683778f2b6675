//! The on-disk PTX cache: compiled programs keyed by a SHA-256 of everything that determines the
//! PTX (source, headers, options, architecture, NVRTC version), so a program NVRTC has compiled
//! once loads in microseconds afterwards. It also measures compiles, so callers can report cold
//! and cached compile times.
//!
//! Directory: `$GPU_CILK_CACHE_DIR`, else `$XDG_CACHE_HOME/gpu-cilk`, else `~/.cache/gpu-cilk`;
//! `GPU_CILK_CACHE_DIR=off` disables the cache. Each entry is `<key>.ptx` plus `<key>.meta` (the
//! cold compile time). Writes go to a temporary file renamed into place, so concurrent processes
//! never read half an entry. Every cache failure (unwritable directory, unreadable entry) is
//! logged and treated as a miss: the cache can make compiling faster, never make it fail.

use super::nvrtc::{self, Arch, ProgramSource};
use crate::error::Result;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Bumped whenever the key's inputs or the entry format change.
const FORMAT: &str = "gpu-cilk-ptx-cache-v1";

/// A cache key: 64 lowercase hex digits.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CacheKey(String);

impl CacheKey {
    /// The key of `program` compiled for `arch` by NVRTC `nvrtc_version`.
    pub fn new(program: &ProgramSource, arch: Arch, nvrtc_version: (u32, u32)) -> Self {
        let mut h = Sha256::new();
        // Every field is length-prefixed so no two different inputs hash the same byte stream.
        let mut field = |bytes: &[u8]| {
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        field(FORMAT.as_bytes());
        field(format!("nvrtc {}.{}", nvrtc_version.0, nvrtc_version.1).as_bytes());
        field(arch.compute().as_bytes());
        let options = program.options_for(arch);
        field(&(options.len() as u64).to_le_bytes());
        for o in &options {
            field(o.as_bytes());
        }
        field(program.name.as_bytes());
        field(program.source.as_bytes());
        field(&(program.headers.len() as u64).to_le_bytes());
        for hd in &program.headers {
            field(hd.include_name.as_bytes());
            field(hd.text.as_bytes());
        }
        let digest = h.finalize();
        CacheKey(digest.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// The hex digest.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A program's PTX and how it was obtained.
#[derive(Clone, Debug)]
pub struct CompiledPtx {
    /// The PTX text.
    pub ptx: String,
    /// Its cache key.
    pub key: CacheKey,
    /// Whether it came from the cache.
    pub cache_hit: bool,
    /// Time spent in this call (the compile on a miss, the read on a hit).
    pub elapsed: Duration,
    /// How long NVRTC took when the entry was compiled (this call's time on a miss; read from the
    /// entry's metadata on a hit, `None` if that was missing).
    pub cold_compile: Option<Duration>,
    /// The NVRTC version that compiled it.
    pub nvrtc_version: (u32, u32),
    /// The architecture it was compiled for.
    pub arch: Arch,
}

/// The PTX cache (or a disabled one that always compiles).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PtxCache {
    dir: Option<PathBuf>,
}

impl PtxCache {
    /// The cache in the directory the environment names (see the module docs).
    pub fn from_env() -> Self {
        match std::env::var_os("GPU_CILK_CACHE_DIR") {
            Some(d) if d == "off" => return PtxCache::disabled(),
            Some(d) if !d.is_empty() => return PtxCache::at(d),
            _ => {}
        }
        let base = std::env::var_os("XDG_CACHE_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").filter(|d| !d.is_empty()).map(|h| PathBuf::from(h).join(".cache")));
        match base {
            Some(b) => PtxCache::at(b.join("gpu-cilk")),
            None => {
                tracing::debug!("no GPU_CILK_CACHE_DIR, XDG_CACHE_HOME or HOME: PTX cache disabled");
                PtxCache::disabled()
            }
        }
    }

    /// A cache in `dir` (created on first write).
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        PtxCache { dir: Some(dir.into()) }
    }

    /// No cache: every lookup misses and nothing is written.
    pub fn disabled() -> Self {
        PtxCache { dir: None }
    }

    /// The directory, if the cache is enabled.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }

    /// The PTX of `program` for `arch`: from the cache, or compiled with NVRTC and stored.
    pub fn get_or_compile(&self, program: &ProgramSource, arch: Arch) -> Result<CompiledPtx> {
        let version = nvrtc::nvrtc_version()?;
        let key = CacheKey::new(program, arch, version);
        self.get_or_compile_with(key, arch, version, || nvrtc::compile(program, arch))
    }

    /// The cache logic with the compiler passed in (tests use a fake one).
    pub fn get_or_compile_with(
        &self,
        key: CacheKey,
        arch: Arch,
        nvrtc_version: (u32, u32),
        compile: impl FnOnce() -> Result<String>,
    ) -> Result<CompiledPtx> {
        let start = Instant::now();
        if let Some((ptx, cold_compile)) = self.lookup(&key) {
            return Ok(CompiledPtx {
                ptx,
                key,
                cache_hit: true,
                elapsed: start.elapsed(),
                cold_compile,
                nvrtc_version,
                arch,
            });
        }
        let ptx = compile()?;
        let elapsed = start.elapsed();
        self.store(&key, &ptx, elapsed);
        Ok(CompiledPtx { ptx, key, cache_hit: false, elapsed, cold_compile: Some(elapsed), nvrtc_version, arch })
    }

    fn paths(&self, key: &CacheKey) -> Option<(PathBuf, PathBuf)> {
        let dir = self.dir.as_ref()?;
        Some((dir.join(format!("{}.ptx", key.0)), dir.join(format!("{}.meta", key.0))))
    }

    /// The cached PTX and its cold compile time, if present and readable.
    fn lookup(&self, key: &CacheKey) -> Option<(String, Option<Duration>)> {
        let (ptx_path, meta_path) = self.paths(key)?;
        let ptx = match std::fs::read_to_string(&ptx_path) {
            Ok(p) if p.contains(".version") => p,
            Ok(_) => {
                tracing::warn!(path = %ptx_path.display(), "PTX cache entry is not PTX; recompiling");
                return None;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return None,
            Err(e) => {
                tracing::warn!(path = %ptx_path.display(), "cannot read PTX cache entry ({e}); recompiling");
                return None;
            }
        };
        let cold = std::fs::read_to_string(meta_path)
            .ok()
            .and_then(|m| m.lines().find_map(|l| l.strip_prefix("compile_us=")).and_then(|v| v.trim().parse().ok()));
        Some((ptx, cold.map(Duration::from_micros)))
    }

    /// Stores an entry; failures are logged, never returned.
    fn store(&self, key: &CacheKey, ptx: &str, compile_time: Duration) {
        let Some((ptx_path, meta_path)) = self.paths(key) else { return };
        let meta = format!("compile_us={}\n", compile_time.as_micros());
        let result = (|| -> std::io::Result<()> {
            if let Some(dir) = &self.dir {
                std::fs::create_dir_all(dir)?;
            }
            // The .meta first: an entry is visible only once its .ptx is renamed into place.
            write_atomically(&meta_path, meta.as_bytes())?;
            write_atomically(&ptx_path, ptx.as_bytes())
        })();
        if let Err(e) = result {
            tracing::warn!(path = %ptx_path.display(), "cannot write the PTX cache ({e}); continuing without it");
        }
    }
}

/// Writes `bytes` to a unique temporary file beside `path`, then renames it onto `path`.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp.{}.{:?}", std::process::id(), std::thread::current().id()));
    let tmp = PathBuf::from(tmp.to_string_lossy().replace(['(', ')'], ""));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    const PTX: &str = "//\n.version 8.5\n.target sm_90\n.address_size 64\n";

    fn program() -> ProgramSource {
        ProgramSource::new("p", "extern \"C\" __global__ void k() {}").header("a.cuh", "#define A 1\n")
    }

    #[test]
    fn key_is_stable_across_runs_and_releases() {
        // Pinned: a change here invalidates every user's cache, so it must be deliberate (bump FORMAT).
        let k = CacheKey::new(&program(), Arch::new(9, 0), (12, 9));
        assert_eq!(k.as_str().len(), 64);
        assert_eq!(k, CacheKey::new(&program(), Arch::new(9, 0), (12, 9)));
        assert_eq!(k.as_str(), "dac0b79453c292bbe3d554bb8fe7a4bc07e1daaaad7c08b0b2658e6a137679d8");
    }

    #[test]
    fn key_depends_on_every_input() {
        let base = CacheKey::new(&program(), Arch::new(9, 0), (12, 9));
        let mut others = vec![
            CacheKey::new(&program(), Arch::new(8, 0), (12, 9)),
            CacheKey::new(&program(), Arch::new(9, 0), (13, 0)),
            CacheKey::new(&program().option("-DX"), Arch::new(9, 0), (12, 9)),
            CacheKey::new(&program().header("b.cuh", ""), Arch::new(9, 0), (12, 9)),
        ];
        let mut p = program();
        p.source.push(' ');
        others.push(CacheKey::new(&p, Arch::new(9, 0), (12, 9)));
        let mut p = program();
        p.headers[0].text.push(' ');
        others.push(CacheKey::new(&p, Arch::new(9, 0), (12, 9)));
        // Moving bytes between fields must change the key (length prefixes).
        let mut p = program();
        p.headers[0].include_name = "a.cuh#define".into();
        p.headers[0].text = " A 1\n".into();
        others.push(CacheKey::new(&p, Arch::new(9, 0), (12, 9)));
        for o in &others {
            assert_ne!(&base, o);
        }
    }

    #[test]
    fn miss_then_hit() {
        let dir = tempfile::tempdir().unwrap();
        let cache = PtxCache::at(dir.path().join("nested"));
        let key = CacheKey::new(&program(), Arch::new(9, 0), (12, 9));
        let calls = Cell::new(0);
        let compile = || {
            calls.set(calls.get() + 1);
            std::thread::sleep(Duration::from_millis(5));
            Ok(PTX.to_string())
        };
        let first = cache.get_or_compile_with(key.clone(), Arch::new(9, 0), (12, 9), compile).unwrap();
        assert!(!first.cache_hit);
        assert!(first.elapsed >= Duration::from_millis(5));
        let second = cache.get_or_compile_with(key.clone(), Arch::new(9, 0), (12, 9), compile).unwrap();
        assert!(second.cache_hit);
        assert_eq!(second.ptx, PTX);
        assert_eq!(calls.get(), 1);
        let cold = second.cold_compile.expect("cold compile time recorded");
        assert!(cold >= Duration::from_millis(5), "{cold:?}");
        assert_eq!(cold, Duration::from_micros(first.elapsed.as_micros() as u64));
    }

    #[test]
    fn disabled_cache_always_compiles() {
        let cache = PtxCache::disabled();
        let key = CacheKey::new(&program(), Arch::new(9, 0), (12, 9));
        for _ in 0..2 {
            let r = cache.get_or_compile_with(key.clone(), Arch::new(9, 0), (12, 9), || Ok(PTX.into())).unwrap();
            assert!(!r.cache_hit);
        }
    }

    #[test]
    fn unwritable_cache_is_not_fatal() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("not-a-dir");
        std::fs::write(&file, "x").unwrap();
        let cache = PtxCache::at(&file);
        let key = CacheKey::new(&program(), Arch::new(9, 0), (12, 9));
        let r = cache.get_or_compile_with(key, Arch::new(9, 0), (12, 9), || Ok(PTX.into())).unwrap();
        assert!(!r.cache_hit);
        assert_eq!(r.ptx, PTX);
    }

    #[test]
    fn corrupt_entry_is_a_miss_and_compile_errors_pass_through() {
        let dir = tempfile::tempdir().unwrap();
        let cache = PtxCache::at(dir.path());
        let key = CacheKey::new(&program(), Arch::new(9, 0), (12, 9));
        std::fs::write(dir.path().join(format!("{}.ptx", key.as_str())), "garbage").unwrap();
        let err = cache
            .get_or_compile_with(key.clone(), Arch::new(9, 0), (12, 9), || {
                Err(crate::Error::Compile { compiler: "NVRTC".into(), task_or_program: "p".into(), log: "boom".into() })
            })
            .unwrap_err();
        assert!(matches!(err, crate::Error::Compile { .. }));
        let r = cache.get_or_compile_with(key, Arch::new(9, 0), (12, 9), || Ok(PTX.into())).unwrap();
        assert!(!r.cache_hit);
    }
}

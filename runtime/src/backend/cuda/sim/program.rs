//! [`SimProgram`]: a program built for the host simulation and loaded — the on-disk cache lookup
//! (`<cache>/sim/<sha256>.so`), the build on a miss, the load.
//!
//! Owns: which object a program is and its kernels' entry points. Must not touch: how g++ runs
//! (`build.rs`), how a launch runs (`launch.rs`, which adds [`SimProgram::kernel`] and
//! [`SimProgram::launch`]).

use super::super::cache::PtxCache;
use super::super::nvrtc::ProgramSource;
use super::build::{build, cache_key, compiler_version, extra_flags, io_err, program_flags, ScratchDir, CXX_FLAGS};
use super::load::{load, EntryFn, Loaded};
use crate::error::{Error, Result};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A program built for the host simulation and loaded. Cheap to clone.
#[derive(Clone)]
pub struct SimProgram {
    pub(super) name: String,
    pub(super) loaded: Arc<Loaded>,
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

    pub(super) fn entry(&self, kernel: &str) -> Result<(EntryFn, usize)> {
        self.loaded.entries.get(kernel).copied().ok_or_else(|| Error::SimKernelFailed {
            kernel: kernel.to_string(),
            message: format!(
                "program `{}` defines no extern \"C\" __global__ kernel of that name (it has: {})",
                self.name,
                self.loaded.kernels.join(", ")
            ),
        })
    }
}

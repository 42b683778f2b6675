//! Standalone CUDA C++ peers built with `nvcc` on the GPU machine (CUB and cuBLAS are host
//! libraries, so these are programs, not NVRTC kernels): [`NvccProgram::build`] writes the
//! embedded source into a temporary folder under `--out`, compiles it for sm_90 and removes the
//! folder when dropped; [`NvccProgram::run`] runs it and returns its CSV rows.
//!
//! Owns only building and running; each benchmark parses its peer's rows.

use std::path::{Path, PathBuf};
use std::time::Instant;

/// A compiled peer.
pub(crate) struct NvccProgram {
    exe: PathBuf,
}

impl NvccProgram {
    /// Compiles `source` (named `name`.cu) with `nvcc -O3 -arch=sm_90` and `libs`; `Err` is the
    /// `n/a: reason` the peer's columns print.
    pub(crate) fn build(nvcc: &Path, out: &Path, name: &str, source: &str, libs: &[&str]) -> Result<Self, String> {
        if !nvcc.exists() {
            return Err(format!("n/a: no nvcc at {} (pass --nvcc)", nvcc.display()));
        }
        let dir = out.join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("n/a: {}: {e}", dir.display()))?;
        let src = dir.join(format!("{name}.cu"));
        std::fs::write(&src, source).map_err(|e| format!("n/a: {}: {e}", src.display()))?;
        let exe = dir.join(name);
        let start = Instant::now();
        let res = std::process::Command::new(nvcc)
            .args(["-O3", "-arch=sm_90", "-o"])
            .arg(&exe)
            .arg(&src)
            .args(libs)
            .output()
            .map_err(|e| format!("n/a: running {}: {e}", nvcc.display()))?;
        let program = NvccProgram { exe };
        if !res.status.success() {
            let err = String::from_utf8_lossy(&res.stderr);
            eprintln!("nvcc failed on {name}.cu:\n{err}");
            return Err(format!(
                "n/a: nvcc failed: {}",
                err.lines().find(|l| l.contains("error")).unwrap_or("see stderr")
            ));
        }
        println!("nvcc:    compiled {name}.cu with {} in {:.1} s", nvcc.display(), start.elapsed().as_secs_f64());
        Ok(program)
    }

    /// Runs the program with `args`; the lines of its standard output that start with one of
    /// `prefixes`, or `Err(n/a: why)` when it failed without printing any.
    pub(crate) fn run(&self, args: &[String], prefixes: &[&str]) -> Result<Vec<String>, String> {
        let out = std::process::Command::new(&self.exe)
            .args(args)
            .output()
            .map_err(|e| format!("n/a: running {}: {e}", self.exe.display()))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let lines: Vec<String> =
            text.lines().filter(|l| prefixes.iter().any(|p| l.starts_with(p))).map(str::to_string).collect();
        if !out.status.success() {
            eprintln!("{} exited with {}: {}", self.exe.display(), out.status, String::from_utf8_lossy(&out.stderr));
        }
        if lines.is_empty() {
            let why = if out.status.success() {
                text.trim().to_string()
            } else {
                String::from_utf8_lossy(&out.stderr).trim().to_string()
            };
            return Err(format!("n/a: no CSV rows from {}: {why}", self.exe.display()));
        }
        Ok(lines)
    }
}

impl Drop for NvccProgram {
    fn drop(&mut self) {
        if let Some(dir) = self.exe.parent() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

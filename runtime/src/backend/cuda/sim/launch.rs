//! Running kernels: launch options ([`LaunchMode`], [`LaunchOptions`]), typed kernels
//! ([`SimKernel`]) and one launch of a [`SimProgram`] — in a forked child that is waited for with a
//! timeout and whose exit becomes the launch's result, or in process.
//!
//! Owns: the policy of a launch (mode, isolation, timeout, host threads) and its fault reports.
//! Must not touch: building or loading (`build.rs`, `load.rs`) or the memory kernels are given
//! (`buffer.rs`).

use super::super::memory::DeviceCopy;
use super::super::module::LaunchDims;
use super::buffer::SharedPage;
use super::build::poisoned;
use super::load::{LaunchArgs, EXIT_FAULT, FORK_LOCK};
use super::program::SimProgram;
use crate::error::{Error, Result};
use std::ffi::{c_int, CString};
use std::marker::PhantomData;
use std::time::{Duration, Instant};

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

impl SimProgram {
    /// A typed handle to `kernel`, launched with the default [`LaunchOptions`] (change them with
    /// [`SimKernel::cooperative`] / [`SimKernel::options`]). Fails when the kernel is missing or
    /// takes a different number of parameter bytes than `P` has.
    ///
    /// # Safety
    ///
    /// `P` must be the kernel's parameter type, field for field (`DeviceCopy`'s contract), and
    /// every launch must pass addresses of live [`SimBuffer`](super::SimBuffer)s of the sizes the kernel indexes:
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
    /// [`SimBuffer`](super::SimBuffer) memory of the size the kernel indexes (see [`SimProgram::kernel`]).
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

//! Loaded programs and their kernels: a [`Program`] is one PTX module loaded into the device's
//! context (loaded once, functions looked up by name and kept); a [`Kernel<P>`] is one
//! `extern "C" __global__` function taking a single parameter struct `P` by value, launched on
//! the device's stream with [`LaunchDims`]. Launch failures name the kernel; failures while it
//! runs surface at the next [`super::CudaDevice::synchronize`], which names it too.

use super::cache::CompiledPtx;
use super::context::Context;
use super::context::InContext;
use super::driver::guarded;
use super::memory::{DeviceCopy, Pod};
use crate::error::{Error, Result};
use cudarc::driver::{CudaFunction, CudaModule, LaunchConfig, PushKernelArg};
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

/// Grid and block shape of a launch, plus dynamic shared memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchDims {
    /// Blocks in the grid (x, y, z).
    pub grid: (u32, u32, u32),
    /// Threads per block (x, y, z).
    pub block: (u32, u32, u32),
    /// Dynamic shared memory per block, in bytes.
    pub shared_mem_bytes: u32,
}

impl LaunchDims {
    /// A 1-D launch of `blocks` blocks of `threads` threads.
    pub const fn linear(blocks: u32, threads: u32) -> Self {
        LaunchDims { grid: (blocks, 1, 1), block: (threads, 1, 1), shared_mem_bytes: 0 }
    }

    /// Enough 1-D blocks of `threads` threads to cover `n` items (at least one block).
    pub fn cover(n: usize, threads: u32) -> Self {
        let blocks = n.div_ceil(threads.max(1) as usize).clamp(1, u32::MAX as usize) as u32;
        Self::linear(blocks, threads)
    }

    /// With `bytes` of dynamic shared memory per block.
    pub const fn shared_mem(mut self, bytes: u32) -> Self {
        self.shared_mem_bytes = bytes;
        self
    }

    /// Total threads launched.
    pub fn threads(&self) -> u64 {
        let g = self.grid.0 as u64 * self.grid.1 as u64 * self.grid.2 as u64;
        g * self.block.0 as u64 * self.block.1 as u64 * self.block.2 as u64
    }
}

/// Compilation facts about a loaded program (for logs and the benchmark's compile-time columns).
#[derive(Clone, Debug)]
pub struct ProgramInfo {
    /// The program's name.
    pub name: String,
    /// Whether its PTX came from the disk cache.
    pub cache_hit: bool,
    /// Time to obtain the PTX in this process (compile on a miss, cache read on a hit).
    pub obtain_time: std::time::Duration,
    /// NVRTC's compile time when the PTX was first compiled, if known.
    pub cold_compile: Option<std::time::Duration>,
    /// Time `cuModuleLoadData` took (the driver's PTX JIT to machine code).
    pub load_time: std::time::Duration,
    /// The NVRTC version that produced the PTX.
    pub nvrtc_version: (u32, u32),
    /// PTX size in bytes.
    pub ptx_bytes: usize,
}

/// A PTX module loaded into the device's context.
pub struct Program {
    module: Arc<CudaModule>,
    functions: Mutex<HashMap<String, CudaFunction>>,
    shared: Arc<Context>,
    info: ProgramInfo,
}

impl Program {
    /// Loads `compiled` (from [`super::cache::PtxCache`]) into the device's context.
    pub(crate) fn load(shared: Arc<Context>, name: &str, compiled: &CompiledPtx) -> Result<Self> {
        let start = std::time::Instant::now();
        let ctx = shared.ctx.clone();
        let module = guarded("loading a PTX module", || {
            ctx.load_module(cudarc::nvrtc::Ptx::from_src(compiled.ptx.clone()))
                .in_ctx(&shared, || format!("loading the PTX of `{name}` into the device (the driver JIT-compiles it)"))
        })?;
        let info = ProgramInfo {
            name: name.to_string(),
            cache_hit: compiled.cache_hit,
            obtain_time: compiled.elapsed,
            cold_compile: compiled.cold_compile,
            load_time: start.elapsed(),
            nvrtc_version: compiled.nvrtc_version,
            ptx_bytes: compiled.ptx.len(),
        };
        Ok(Program { module, functions: Mutex::new(HashMap::new()), shared, info })
    }

    /// How the program was compiled and loaded.
    pub fn info(&self) -> &ProgramInfo {
        &self.info
    }

    /// The kernel `name`, taking one parameter struct `P` by value.
    ///
    /// # Safety
    ///
    /// The program's `name` must be declared `extern "C" __global__ void name(P p)` with `P`'s
    /// exact layout on the CUDA side, and every launch must give it parameters under which it
    /// accesses only live device memory within bounds, without data races with other work on the
    /// device. Then [`Kernel::launch`] is safe: buffers a launch uses are freed only in stream
    /// order after it.
    pub unsafe fn kernel<P: DeviceCopy>(&self, name: &str) -> Result<Kernel<P>> {
        let func = {
            let mut fns = self.functions.lock().map_err(|_| Error::Internal("kernel table poisoned".into()))?;
            match fns.get(name) {
                Some(f) => f.clone(),
                None => {
                    let f = guarded("looking up a kernel", || {
                        self.module.load_function(name).in_ctx(&self.shared, || {
                            format!(
                                "looking up kernel `{name}` in program `{}` (is it `extern \"C\" __global__`?)",
                                self.info.name
                            )
                        })
                    })?;
                    fns.insert(name.to_string(), f.clone());
                    f
                }
            }
        };
        Ok(Kernel { name: Arc::from(name), func, shared: self.shared.clone(), _params: PhantomData })
    }
}

impl std::fmt::Debug for Program {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Program").field("info", &self.info).finish()
    }
}

/// One kernel of a [`Program`], launched with a `P` parameter struct.
pub struct Kernel<P: DeviceCopy> {
    name: Arc<str>,
    func: CudaFunction,
    shared: Arc<Context>,
    _params: PhantomData<fn(P)>,
}

impl<P: DeviceCopy> Clone for Kernel<P> {
    fn clone(&self) -> Self {
        Kernel { name: self.name.clone(), func: self.func.clone(), shared: self.shared.clone(), _params: PhantomData }
    }
}

impl<P: DeviceCopy> Kernel<P> {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Queues one launch on the device's stream (asynchronous: errors while it runs are reported
    /// by the next synchronization, naming this kernel).
    pub fn launch(&self, dims: LaunchDims, params: &P) -> Result<()> {
        let arg = Pod(*params);
        let cfg = LaunchConfig { grid_dim: dims.grid, block_dim: dims.block, shared_mem_bytes: dims.shared_mem_bytes };
        guarded("launching a kernel", || {
            let mut builder = self.shared.stream.launch_builder(&self.func);
            builder.arg(&arg);
            // SAFETY: a `Kernel<P>` exists only through `Program::kernel`, whose caller promised
            // that the kernel takes exactly one `P` by value and is memory-safe for the
            // parameters it is launched with; `arg` outlives the call (cuLaunchKernel copies the
            // parameter bytes before returning).
            unsafe { builder.launch(cfg) }.in_ctx(&self.shared, || {
                format!(
                    "launching kernel `{}` (grid {:?}, block {:?}, {} B shared)",
                    self.name, dims.grid, dims.block, dims.shared_mem_bytes
                )
            })
        })?;
        self.shared.launched(&self.name);
        Ok(())
    }

    /// Lets launches of this kernel use up to `bytes` of dynamic shared memory (needed above the
    /// default 48 KiB).
    pub fn set_max_dynamic_shared_memory(&self, bytes: usize) -> Result<()> {
        use cudarc::driver::sys::CUfunction_attribute as A;
        guarded("setting a kernel attribute", || {
            self.func
                .set_attribute(A::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes.min(i32::MAX as usize) as i32)
                .in_ctx(&self.shared, || format!("allowing kernel `{}` {bytes} bytes of shared memory", self.name))
        })
    }

    /// How many blocks of `block_threads` threads (with `shared_mem_bytes` of dynamic shared
    /// memory) fit on one multiprocessor at once.
    pub fn max_active_blocks_per_sm(&self, block_threads: u32, shared_mem_bytes: usize) -> Result<u32> {
        guarded("querying occupancy", || {
            self.func
                .occupancy_max_active_blocks_per_multiprocessor(block_threads, shared_mem_bytes, None)
                .in_ctx(&self.shared, || format!("querying the occupancy of kernel `{}`", self.name))
        })
    }
}

impl<P: DeviceCopy> std::fmt::Debug for Kernel<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kernel<{}>(`{}`)", std::any::type_name::<P>(), self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_dims_cover() {
        assert_eq!(LaunchDims::cover(0, 256).grid.0, 1);
        assert_eq!(LaunchDims::cover(256, 256).grid.0, 1);
        assert_eq!(LaunchDims::cover(257, 256).grid.0, 2);
        assert_eq!(LaunchDims::linear(3, 128).threads(), 384);
        assert_eq!(LaunchDims::linear(1, 32).shared_mem(64).shared_mem_bytes, 64);
    }
}

//! The machine a device test suite runs on, so that each device component (channel, allocator,
//! ticket queue, ...) has one suite, written once against [`Target`] and instantiated by
//! [`device_suite!`] for the host simulation of device code (runs everywhere, CI included) and
//! for the GPU (`#[ignore]`d: run with `--include-ignored`, as `scripts/gpu-check.sh` does).
//!
//! Owns that seam, the opening of either machine under the rules of [`crate::gate`], and
//! [`ptx_params`]; must not hold any component's checks (those are the suites').

use crate::gate;
pub use gpu_cilk_runtime::backend::cuda::CudaDevice;
use gpu_cilk_runtime::backend::cuda::{
    compile, Arch, DeviceBuffer, DeviceCopy, DevicePtr, Kernel, LaunchDims, Program, ProgramSource,
};
use gpu_cilk_runtime::{Config, Error, Result};

/// A buffer in a [`Target`]'s memory.
pub trait DeviceMem<T: DeviceCopy> {
    /// The address kernels receive.
    fn ptr(&self) -> DevicePtr<T>;
    /// Elements in the buffer.
    fn len(&self) -> usize;
    /// Whether the buffer holds no element.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A kernel of a [`Target`]'s program taking one parameter struct `P`.
pub trait Launch<P: DeviceCopy> {
    /// The kernel's name.
    fn name(&self) -> &str;
    /// One launch (asynchronous on a GPU: [`Target::sync`] or a copy back waits for it).
    fn launch(&self, dims: LaunchDims, params: &P) -> Result<()>;
}

/// A machine device code runs on: the GPU ([`CudaDevice`]) or the host simulation
/// (`SimDevice`: one-lane warps, x86's memory model, seconds per launch of thousands of threads).
pub trait Target: Sized {
    /// A buffer of `T`s in the machine's memory.
    type Buffer<T: DeviceCopy>: DeviceMem<T>;
    /// A loaded program.
    type Program;
    /// A kernel of a loaded program.
    type Kernel<P: DeviceCopy>: Launch<P>;

    /// Whether this is the host simulation (suites shrink grids that the host must cycle through).
    const SIMULATED: bool;

    /// The machine for test `test`, or `None` after printing why it is skipped (see [`gate`]).
    fn open(test: &str) -> Option<Self>;
    /// `n` zeroed `T`s.
    fn alloc_zeroed<T: DeviceCopy>(&self, n: usize) -> Result<Self::Buffer<T>>;
    /// A buffer holding a copy of `host`.
    fn htod<T: DeviceCopy>(&self, host: &[T]) -> Result<Self::Buffer<T>>;
    /// Waits for the machine, then copies `buf` back.
    fn dtoh<T: DeviceCopy>(&self, buf: &Self::Buffer<T>) -> Result<Vec<T>>;
    /// Zeroes `buf` (in order with the launches).
    fn zero<T: DeviceCopy>(&self, buf: &mut Self::Buffer<T>) -> Result<()>;
    /// Waits for everything launched.
    fn sync(&self) -> Result<()>;
    /// Compiles and loads `source`.
    fn load_program(&self, source: &ProgramSource) -> Result<Self::Program>;
    /// Kernel `name` of `program`.
    ///
    /// # Safety
    /// `P` is the kernel's parameter, and every launch passes live buffers of the sizes the kernel
    /// indexes.
    unsafe fn kernel<P: DeviceCopy>(program: &Self::Program, name: &str) -> Result<Self::Kernel<P>>;
    /// Kernel `name` of `program`, for grids whose threads wait for each other (blocking calls):
    /// on a GPU an ordinary kernel launched with a grid small enough to be resident; in the
    /// simulation launched cooperatively (every simulated thread on its own host thread).
    ///
    /// # Safety
    /// As [`Target::kernel`].
    unsafe fn resident_kernel<P: DeviceCopy>(program: &Self::Program, name: &str) -> Result<Self::Kernel<P>>;
}

/// Device 0 for GPU test `test`.
///
/// # Panics
/// When no CUDA device can be opened (the test was asked to run, so that is a failure).
pub fn gpu_device(test: &str) -> CudaDevice {
    CudaDevice::open(&Config::default()).unwrap_or_else(|e| gate::no_gpu(test, &e))
}

/// The [`DeviceMem`], [`Launch`] and [`Target`] impls of a machine whose device, buffer, program
/// and kernel types have the GPU's inherent methods (the simulation's mirror them): `$open(test)`
/// opens it, `$resident(kernel)` makes a kernel one for grids whose threads wait for each other.
macro_rules! impl_target {
    ($dev:ident, $buf:ident, $program:ident, $kernel:ident, simulated: $sim:expr, open: $open:path, resident: $resident:path) => {
        impl<T: DeviceCopy> DeviceMem<T> for $buf<T> {
            fn ptr(&self) -> DevicePtr<T> {
                $buf::ptr(self)
            }
            fn len(&self) -> usize {
                $buf::len(self)
            }
        }

        impl<P: DeviceCopy> Launch<P> for $kernel<P> {
            fn name(&self) -> &str {
                $kernel::name(self)
            }
            fn launch(&self, dims: LaunchDims, params: &P) -> Result<()> {
                $kernel::launch(self, dims, params)
            }
        }

        impl Target for $dev {
            type Buffer<T: DeviceCopy> = $buf<T>;
            type Program = $program;
            type Kernel<P: DeviceCopy> = $kernel<P>;
            const SIMULATED: bool = $sim;

            fn open(test: &str) -> Option<Self> {
                $open(test)
            }
            fn alloc_zeroed<T: DeviceCopy>(&self, n: usize) -> Result<$buf<T>> {
                $dev::alloc_zeroed(self, n)
            }
            fn htod<T: DeviceCopy>(&self, host: &[T]) -> Result<$buf<T>> {
                $dev::htod(self, host)
            }
            fn dtoh<T: DeviceCopy>(&self, buf: &$buf<T>) -> Result<Vec<T>> {
                $dev::dtoh(self, buf)
            }
            fn zero<T: DeviceCopy>(&self, buf: &mut $buf<T>) -> Result<()> {
                $dev::zero(self, buf)
            }
            fn sync(&self) -> Result<()> {
                $dev::sync(self)
            }
            fn load_program(&self, source: &ProgramSource) -> Result<$program> {
                $dev::load_program(self, source)
            }
            unsafe fn kernel<P: DeviceCopy>(program: &$program, name: &str) -> Result<$kernel<P>> {
                // SAFETY: the caller's promise, passed on.
                unsafe { program.kernel(name) }
            }
            unsafe fn resident_kernel<P: DeviceCopy>(program: &$program, name: &str) -> Result<$kernel<P>> {
                // SAFETY: the caller's promise, passed on.
                Ok($resident(unsafe { program.kernel(name) }?))
            }
        }
    };
}

/// [`gpu_device`] as [`Target::open`] (never `None`: a GPU test without a GPU fails).
fn open_gpu(test: &str) -> Option<CudaDevice> {
    Some(gpu_device(test))
}

impl_target!(CudaDevice, DeviceBuffer, Program, Kernel, simulated: false, open: open_gpu, resident: std::convert::identity);

#[cfg(target_os = "linux")]
pub use gpu_cilk_runtime::backend::cuda::sim::SimDevice;
#[cfg(target_os = "linux")]
pub use simulated::sim_device;

#[cfg(target_os = "linux")]
mod simulated {
    use super::{gate, DeviceMem, Launch, Target};
    use gpu_cilk_runtime::backend::cuda::sim::{compiler_version, SimBuffer, SimDevice, SimKernel, SimProgram};
    use gpu_cilk_runtime::backend::cuda::{DeviceCopy, DevicePtr, LaunchDims, ProgramSource};
    use gpu_cilk_runtime::Result;

    /// The simulated device, or `None` after printing why `test` is skipped (no C++ compiler;
    /// a failure instead under `GPU_CILK_REQUIRE_SIM=1`).
    pub fn sim_device(test: &str) -> Option<SimDevice> {
        match compiler_version() {
            Ok(_) => Some(SimDevice::new()),
            Err(e) => {
                gate::sim_missing(test, &e);
                None
            }
        }
    }

    impl_target!(SimDevice, SimBuffer, SimProgram, SimKernel, simulated: true, open: sim_device, resident: SimKernel::cooperative);
}

/// Instantiates a device suite for both targets: for each `test`, a function
/// `fn test<D: Target>(dev: D)` of the including module, run as `sim::test` on the host
/// simulation (skipped visibly without a C++ compiler unless `GPU_CILK_REQUIRE_SIM=1`) and as
/// `gpu::test` on the GPU (`#[ignore]`d with the reason `scripts/stage-gpu.sh` looks for in a test
/// binary; a run without a usable GPU fails).
#[macro_export]
macro_rules! device_suite {
    ($($test:ident),+ $(,)?) => {
        /// The suite on the host simulation of device code.
        #[cfg(target_os = "linux")]
        mod sim {
            $(
                #[test]
                fn $test() {
                    type D = $crate::target::SimDevice;
                    if let Some(dev) = <D as $crate::Target>::open(stringify!($test)) {
                        super::$test::<D>(dev);
                    }
                }
            )+
        }

        /// The suite on the GPU.
        mod gpu {
            $(
                #[test]
                #[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
                fn $test() {
                    type D = $crate::target::CudaDevice;
                    if let Some(dev) = <D as $crate::Target>::open(stringify!($test)) {
                        super::$test::<D>(dev);
                    }
                }
            )+
        }
    };
}

/// Compiles `source` with NVRTC for `compute_80` and `compute_90` (no GPU needed), checks that
/// each `(kernel, bytes)` is in the PTX taking exactly one parameter of `bytes` bytes (the size of
/// its Rust mirror) and returns the PTX of each architecture for further checks. Empty, after
/// printing why `test` is skipped, when NVRTC cannot be loaded and is not required (see [`gate`]).
///
/// # Panics
/// On a compile error, a missing kernel or a parameter list that does not match.
pub fn ptx_params<K: AsRef<str>>(test: &str, source: &ProgramSource, kernels: &[(K, usize)]) -> Vec<(Arch, String)> {
    let mut out = Vec::new();
    for arch in [Arch::new(8, 0), Arch::new(9, 0)] {
        let ptx = match compile(source, arch) {
            Ok(p) => p,
            Err(e @ Error::BackendUnavailable { .. }) if !gate::require_nvrtc() => {
                gate::nvrtc_missing(test, &e);
                return Vec::new();
            }
            Err(e) => panic!("compiling {} for {arch}: {e}", source.name),
        };
        for (kernel, size) in kernels {
            let kernel = kernel.as_ref();
            let entry = format!(".entry {kernel}(");
            let at = ptx.find(&entry).unwrap_or_else(|| panic!("{arch}: `{kernel}` missing from the PTX"));
            let params = &ptx[at + entry.len()..];
            let params = &params[..params.find(')').expect("end of the parameter list")];
            assert_eq!(params.matches(".param").count(), 1, "{arch}: `{kernel}` must take one parameter: {params}");
            let want = format!("{kernel}_param_0[{size}]");
            assert!(params.contains(&want), "{arch}: `{kernel}` takes {params:?}, the Rust mirror is {size} bytes");
        }
        out.push((arch, ptx));
    }
    out
}

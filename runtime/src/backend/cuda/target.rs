//! What the persistent scheduler's host side needs from the machine its kernel runs on: device
//! memory, copies, loading kernels and launching the one resident grid. Two implementations: the
//! GPU ([`CudaDevice`]) and the host simulation of device code ([`super::sim::SimDevice`], CI runs
//! the whole scheduler on it).
//!
//! Owns that seam and nothing else: sizing and the run protocol are `persistent`'s.

use super::memory::{DeviceBuffer, DeviceCopy};
use super::module::{Kernel, LaunchDims, Program};
use super::CudaDevice;
use crate::error::Result;

/// A machine a device program runs on.
pub(crate) trait Target {
    /// A buffer of `T`s in the machine's memory.
    type Buffer<T: DeviceCopy>;
    /// A loaded program.
    type Program;
    /// A kernel of a loaded program taking one parameter struct `P`.
    type Kernel<P: DeviceCopy>;

    /// `n` zeroed `T`s.
    fn alloc_zeroed<T: DeviceCopy>(&self, n: usize) -> Result<Self::Buffer<T>>;
    /// Zeroes `buf` (in order with the launches).
    fn zero<T: DeviceCopy>(&self, buf: &mut Self::Buffer<T>) -> Result<()>;
    /// Copies `host` into the start of `buf`.
    fn copy_htod<T: DeviceCopy>(&self, host: &[T], buf: &mut Self::Buffer<T>) -> Result<()>;
    /// Waits for the machine, then copies `buf` back.
    fn dtoh<T: DeviceCopy>(&self, buf: &Self::Buffer<T>) -> Result<Vec<T>>;
    /// Copies the bytes of `value` into the start of `buf`.
    fn write_value<T: Copy>(&self, value: &T, buf: &mut Self::Buffer<u8>) -> Result<()>;
    /// The address kernels receive for `buf`.
    fn addr<T: DeviceCopy>(buf: &Self::Buffer<T>) -> u64;
    /// Elements in `buf`.
    fn len<T: DeviceCopy>(buf: &Self::Buffer<T>) -> usize;
    /// Kernel `name` of `program`.
    ///
    /// # Safety
    /// As [`Program::kernel`]: `P` is the kernel's parameter, and launches pass live buffers of
    /// the sizes the kernel indexes.
    unsafe fn kernel<P: DeviceCopy>(&self, program: &Self::Program, name: &str) -> Result<Self::Kernel<P>>;
    /// One launch (asynchronous on a GPU).
    fn launch<P: DeviceCopy>(&self, kernel: &Self::Kernel<P>, dims: LaunchDims, params: &P) -> Result<()>;
    /// One launch of a grid whose threads wait for each other (a persistent kernel): on a GPU an
    /// ordinary launch sized to be resident; in the simulation every thread runs at once.
    fn launch_resident<P: DeviceCopy>(&self, kernel: &Self::Kernel<P>, dims: LaunchDims, params: &P) -> Result<()>;
    /// Waits for everything launched (with `Config::timeout` on a GPU).
    fn sync(&self) -> Result<()>;
    /// Lanes per warp (32 on a GPU, 1 in the simulation).
    fn warp_size(&self) -> u32;
    /// The grid of `threads`-thread blocks, each using `smem` bytes of dynamic shared memory, that
    /// fills the machine with `kernel` resident, with at most `max_per_sm` blocks per
    /// multiprocessor (0: as many as fit): (blocks, threads per block).
    fn resident_grid<P: DeviceCopy>(
        &self,
        kernel: &Self::Kernel<P>,
        threads: u32,
        smem: usize,
        max_per_sm: u32,
    ) -> Result<(u32, u32)>;
    /// Gives serial device recursion `bytes` of stack per thread (a no-op where the stack is the
    /// host's).
    fn set_stack_size(&self, bytes: usize) -> Result<()>;
}

impl Target for CudaDevice {
    type Buffer<T: DeviceCopy> = DeviceBuffer<T>;
    type Program = Program;
    type Kernel<P: DeviceCopy> = Kernel<P>;

    fn alloc_zeroed<T: DeviceCopy>(&self, n: usize) -> Result<DeviceBuffer<T>> {
        CudaDevice::alloc_zeroed(self, n)
    }
    fn zero<T: DeviceCopy>(&self, buf: &mut DeviceBuffer<T>) -> Result<()> {
        CudaDevice::zero(self, buf)
    }
    fn copy_htod<T: DeviceCopy>(&self, host: &[T], buf: &mut DeviceBuffer<T>) -> Result<()> {
        CudaDevice::copy_htod(self, host, buf)
    }
    fn dtoh<T: DeviceCopy>(&self, buf: &DeviceBuffer<T>) -> Result<Vec<T>> {
        CudaDevice::dtoh(self, buf)
    }
    fn write_value<T: Copy>(&self, value: &T, buf: &mut DeviceBuffer<u8>) -> Result<()> {
        CudaDevice::write_value(self, value, buf)
    }
    fn addr<T: DeviceCopy>(buf: &DeviceBuffer<T>) -> u64 {
        buf.ptr().addr()
    }
    fn len<T: DeviceCopy>(buf: &DeviceBuffer<T>) -> usize {
        buf.len()
    }
    unsafe fn kernel<P: DeviceCopy>(&self, program: &Program, name: &str) -> Result<Kernel<P>> {
        // SAFETY: the caller's promise, passed on.
        unsafe { program.kernel::<P>(name) }
    }
    fn launch<P: DeviceCopy>(&self, kernel: &Kernel<P>, dims: LaunchDims, params: &P) -> Result<()> {
        kernel.launch(dims, params)
    }
    fn launch_resident<P: DeviceCopy>(&self, kernel: &Kernel<P>, dims: LaunchDims, params: &P) -> Result<()> {
        kernel.launch(dims, params)
    }
    fn sync(&self) -> Result<()> {
        CudaDevice::sync(self)
    }
    fn warp_size(&self) -> u32 {
        32
    }
    fn resident_grid<P: DeviceCopy>(
        &self,
        kernel: &Kernel<P>,
        threads: u32,
        smem: usize,
        max_per_sm: u32,
    ) -> Result<(u32, u32)> {
        kernel.set_max_dynamic_shared_memory(smem)?;
        let mut per_sm = kernel.max_active_blocks_per_sm(threads, smem)?.max(1);
        if max_per_sm > 0 {
            per_sm = per_sm.min(max_per_sm);
        }
        Ok((per_sm * self.info().multiprocessors.max(1), threads))
    }
    fn set_stack_size(&self, bytes: usize) -> Result<()> {
        CudaDevice::set_stack_size(self, bytes)
    }
}

#[cfg(target_os = "linux")]
mod simulated {
    use super::Target;
    use crate::backend::cuda::memory::DeviceCopy;
    use crate::backend::cuda::module::LaunchDims;
    use crate::backend::cuda::sim::{LaunchMode, LaunchOptions, SimBuffer, SimDevice, SimKernel, SimProgram};
    use crate::error::{Error, Result};

    /// Simulated threads per block and blocks of a resident grid: 2 × 4 one-lane warps, so
    /// donation, stealing and joins across warps and blocks all happen, on a few host threads.
    const SIM_THREADS: u32 = 4;
    const SIM_BLOCKS: u32 = 2;

    impl Target for SimDevice {
        type Buffer<T: DeviceCopy> = SimBuffer<T>;
        type Program = SimProgram;
        type Kernel<P: DeviceCopy> = SimKernel<P>;

        fn alloc_zeroed<T: DeviceCopy>(&self, n: usize) -> Result<SimBuffer<T>> {
            SimDevice::alloc_zeroed(self, n)
        }
        fn zero<T: DeviceCopy>(&self, buf: &mut SimBuffer<T>) -> Result<()> {
            SimDevice::zero(self, buf)
        }
        fn copy_htod<T: DeviceCopy>(&self, host: &[T], buf: &mut SimBuffer<T>) -> Result<()> {
            SimDevice::htod_into(self, host, buf)
        }
        fn dtoh<T: DeviceCopy>(&self, buf: &SimBuffer<T>) -> Result<Vec<T>> {
            SimDevice::dtoh(self, buf)
        }
        fn write_value<T: Copy>(&self, value: &T, buf: &mut SimBuffer<u8>) -> Result<()> {
            let bytes = std::mem::size_of::<T>();
            if bytes > buf.len() {
                return Err(Error::Internal(format!("copy of {bytes} bytes into a buffer of {}", buf.len())));
            }
            // SAFETY: `buf` is simulated device memory of at least `bytes` bytes at its address,
            // owned by this process and not touched by a running launch (launches are synchronous);
            // an untyped byte copy of `value` (padding included) is what the device side reads.
            unsafe {
                std::ptr::copy_nonoverlapping((value as *const T).cast::<u8>(), buf.addr() as *mut u8, bytes);
            }
            Ok(())
        }
        fn addr<T: DeviceCopy>(buf: &SimBuffer<T>) -> u64 {
            buf.addr()
        }
        fn len<T: DeviceCopy>(buf: &SimBuffer<T>) -> usize {
            buf.len()
        }
        unsafe fn kernel<P: DeviceCopy>(&self, program: &SimProgram, name: &str) -> Result<SimKernel<P>> {
            // SAFETY: the caller's promise, passed on.
            unsafe { program.kernel::<P>(name) }
        }
        fn launch<P: DeviceCopy>(&self, kernel: &SimKernel<P>, dims: LaunchDims, params: &P) -> Result<()> {
            kernel.launch(dims, params)
        }
        fn launch_resident<P: DeviceCopy>(&self, kernel: &SimKernel<P>, dims: LaunchDims, params: &P) -> Result<()> {
            kernel.launch_with(dims, params, &LaunchOptions::mode(LaunchMode::Cooperative))
        }
        fn sync(&self) -> Result<()> {
            SimDevice::sync(self)
        }
        fn warp_size(&self) -> u32 {
            1
        }
        fn resident_grid<P: DeviceCopy>(&self, _: &SimKernel<P>, _: u32, _: usize, _: u32) -> Result<(u32, u32)> {
            Ok((SIM_BLOCKS, SIM_THREADS))
        }
        fn set_stack_size(&self, _: usize) -> Result<()> {
            Ok(())
        }
    }
}

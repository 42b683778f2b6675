//! [`SimDevice`]: the device-shaped face of the simulation, so code written for a `CudaDevice`
//! ports by changing its types.
//!
//! Owns: nothing of its own; it forwards to [`SimBuffer`] and [`SimProgram`]. Must not touch:
//! anything below them.

use super::super::memory::DeviceCopy;
use super::super::nvrtc::ProgramSource;
use super::buffer::SimBuffer;
use super::program::SimProgram;
use crate::error::Result;

/// The device-shaped face of the simulation: the calls of [`CudaDevice`](super::super::CudaDevice) that tests and
/// the scheduler use (allocation, copies, programs), so code written for a `CudaDevice` ports by
/// changing its types. Synchronous: every launch has ended when it returns.
#[derive(Clone, Debug, Default)]
pub struct SimDevice;

impl SimDevice {
    /// The simulated device (always available where the compiler is; see [`compiler_version`](super::compiler_version)).
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

//! One ticket queue (`gc_tq<T>`, ticket_queue.cuh) of the persistent scheduler on the device: its
//! header and its element and turn arrays, with the reset that makes it an empty queue. The global
//! pool, the frame free ring and the ready heap's three rings are each one.
//!
//! Owns: that memory and its reset. Must not own: what the queue carries or who uses it.

use super::super::abi::GcTq;
use super::super::target::Target;
use crate::error::{Error, Result};

/// A ticket queue of `capacity` elements of `elem_bytes` each (`capacity` a power of two).
pub(super) struct Ring<D: Target> {
    hdr: D::Buffer<GcTq>,
    data: D::Buffer<u8>,
    turns: D::Buffer<u64>,
    capacity: u64,
}

impl<D: Target> Ring<D> {
    pub(super) fn new(dev: &D, capacity: u64, elem_bytes: u64) -> Result<Self> {
        Ok(Ring {
            hdr: dev.alloc_zeroed::<GcTq>(1)?,
            data: dev.alloc_zeroed::<u8>(bytes(capacity, elem_bytes)?)?,
            turns: dev.alloc_zeroed::<u64>(capacity as usize)?,
            capacity,
        })
    }

    /// Empties the queue (zeroed turns and counters: ticket_queue.cuh's empty queue).
    pub(super) fn reset(&mut self, dev: &D) -> Result<()> {
        dev.zero(&mut self.turns)?;
        let q =
            GcTq { data: D::addr(&self.data), turns: D::addr(&self.turns), mask: self.capacity - 1, ..GcTq::default() };
        dev.copy_htod(&[q], &mut self.hdr)
    }

    /// The device address of the header (what the kernel parameter points at).
    pub(super) fn addr(&self) -> u64 {
        D::addr(&self.hdr)
    }
}

/// `n * size` as a buffer length, or a configuration error.
pub(super) fn bytes(n: u64, size: u64) -> Result<usize> {
    n.checked_mul(size)
        .and_then(|b| usize::try_from(b).ok())
        .ok_or_else(|| Error::Config(format!("a device buffer of {n} × {size} bytes overflows")))
}

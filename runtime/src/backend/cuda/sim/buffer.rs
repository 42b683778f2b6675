//! Simulated device memory: [`SimBuffer`] and the shared anonymous pages under it (also the
//! message page of a launch), which a forked launch writes and the parent reads.
//!
//! Owns: host memory that stands in for device memory and its copies. Must not touch: programs
//! or launches.

use super::super::memory::{DeviceCopy, DevicePtr};
use super::load::c_message;
use crate::error::{Error, Result};
use std::marker::PhantomData;
use std::ptr::NonNull;

/// Shared anonymous memory: what a forked launch writes, the parent reads.
pub(super) struct SharedPage {
    pub(super) ptr: NonNull<u8>,
    len: usize,
}

impl SharedPage {
    pub(super) fn new(len: usize) -> std::io::Result<SharedPage> {
        let len = len.max(1);
        // SAFETY: a fresh anonymous mapping; no existing memory is affected.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error());
        }
        let ptr = NonNull::new(p.cast::<u8>()).ok_or_else(|| std::io::Error::other("mmap returned null"))?;
        Ok(SharedPage { ptr, len })
    }

    /// The NUL-terminated message the launch left (empty if none).
    pub(super) fn message(&self) -> String {
        // SAFETY: the mapping is `len` readable bytes, alive while `self` is; the launch that
        // wrote it has ended.
        let bytes = unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) };
        c_message(bytes)
    }
}

impl Drop for SharedPage {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly the mapping `new` made; nothing refers to it any more.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// `len` elements of `T` of simulated device memory: zeroed, page-aligned (so 256-aligned as
/// `cudaMalloc`'s), shared with forked launches; its address is what kernels receive
/// ([`SimBuffer::ptr`]). Reads and writes from the host are copies, made between launches (as
/// `cudaMemcpy` is): do not read a buffer while a launch that writes it runs on another thread.
pub struct SimBuffer<T: DeviceCopy> {
    page: SharedPage,
    len: usize,
    _t: PhantomData<T>,
}

// SAFETY: the buffer owns its mapping; host access goes through &self / &mut self copies.
unsafe impl<T: DeviceCopy> Send for SimBuffer<T> {}
// SAFETY: as above; `&self` methods only read.
unsafe impl<T: DeviceCopy> Sync for SimBuffer<T> {}

impl<T: DeviceCopy> SimBuffer<T> {
    /// `len` zeroed elements.
    pub fn zeroed(len: usize) -> Result<Self> {
        let bytes = len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| {
            Error::Config(format!(
                "a simulated buffer of {len} elements of {} bytes overflows",
                std::mem::size_of::<T>()
            ))
        })?;
        let page = SharedPage::new(bytes).map_err(|e| Error::Cuda {
            op: format!("allocating {bytes} bytes of simulated device memory"),
            name: "SIM_OUT_OF_MEMORY".into(),
            description: e.to_string(),
        })?;
        Ok(SimBuffer { page, len, _t: PhantomData })
    }

    /// A buffer holding `data`.
    pub fn from_slice(data: &[T]) -> Result<Self> {
        let mut b = Self::zeroed(data.len())?;
        b.copy_from(data);
        Ok(b)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    pub fn num_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// The address kernels receive.
    pub fn addr(&self) -> u64 {
        self.page.ptr.as_ptr() as u64
    }

    /// The address as a kernel parameter field.
    pub fn ptr(&self) -> DevicePtr<T> {
        DevicePtr::from_addr(self.addr())
    }

    /// A copy of the elements.
    pub fn to_vec(&self) -> Vec<T> {
        let mut v = Vec::with_capacity(self.len);
        // SAFETY: the mapping holds `len` elements of T (page-aligned, so aligned for T); every
        // bit pattern is a valid T (`DeviceCopy`); `v` has room for `len` and is set to that
        // length only after the copy.
        unsafe {
            std::ptr::copy_nonoverlapping(self.page.ptr.as_ptr().cast::<T>(), v.as_mut_ptr(), self.len);
            v.set_len(self.len);
        }
        v
    }

    /// Overwrites the first `data.len()` elements. Panics if `data` is longer than the buffer.
    pub fn copy_from(&mut self, data: &[T]) {
        assert!(data.len() <= self.len, "copying {} elements into a buffer of {}", data.len(), self.len);
        // SAFETY: room for `data.len()` elements (checked), aligned, exclusively borrowed.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.page.ptr.as_ptr().cast::<T>(), data.len()) };
    }

    /// Sets every byte to zero.
    pub fn zero(&mut self) {
        // SAFETY: `num_bytes` writable bytes of the mapping, exclusively borrowed.
        unsafe { std::ptr::write_bytes(self.page.ptr.as_ptr(), 0, self.num_bytes()) };
    }
}

impl<T: DeviceCopy> std::fmt::Debug for SimBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SimBuffer<{}>[{}] at {:#x}", std::any::type_name::<T>(), self.len, self.addr())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_round_trip() {
        let mut b = SimBuffer::<u32>::from_slice(&[1, 2, 3]).unwrap();
        assert_eq!(b.to_vec(), [1, 2, 3]);
        assert_eq!(b.addr() % 256, 0);
        assert_eq!(b.ptr().addr(), b.addr());
        b.copy_from(&[7]);
        assert_eq!(b.to_vec(), [7, 2, 3]);
        b.zero();
        assert_eq!(b.to_vec(), [0, 0, 0]);
        assert!(SimBuffer::<u64>::zeroed(0).unwrap().is_empty());
    }
}

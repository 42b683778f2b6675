//! Typed device memory: [`DeviceBuffer<T>`] (an allocation on the device's stream) and
//! [`DevicePtr<T>`] (its address, the form kernels receive inside a parameter struct), for the
//! plain-old-data element types of [`DeviceCopy`]. Allocation and copies themselves are methods of
//! [`super::CudaDevice`], which owns the stream and the timeout.

use cudarc::driver::{CudaSlice, DevicePtr as _, DeviceRepr, ValidAsZeroBits};
use std::marker::PhantomData;
use std::sync::Arc;

/// Plain old data that may be copied between host and device byte for byte.
///
/// # Safety
///
/// Implement only for `Copy` types with a C-compatible layout (`#[repr(C)]` or
/// `#[repr(transparent)]` over such types), no padding-dependent invariants, no host pointers
/// or references, and for which **every bit pattern is a valid value** (the device may write
/// anything, and buffers start zeroed). The CUDA side must declare the identical layout.
pub unsafe trait DeviceCopy: Copy + Send + Sync + 'static {}

macro_rules! device_copy {
    ($($t:ty),*) => { $(
        // SAFETY: primitive integers and floats are POD and valid for every bit pattern.
        unsafe impl DeviceCopy for $t {}
    )* };
}
device_copy!(u8, i8, u16, i16, u32, i32, u64, i64, u128, i128, usize, isize, f32, f64);

// SAFETY: an array of POD is POD with the same bit-pattern validity.
unsafe impl<T: DeviceCopy, const N: usize> DeviceCopy for [T; N] {}

/// `T` as cudarc sees it: a transparent wrapper that carries [`DeviceCopy`]'s promise into
/// cudarc's `DeviceRepr` and `ValidAsZeroBits`.
#[repr(transparent)]
#[derive(Clone, Copy)]
pub(crate) struct Pod<T>(pub(crate) T);

// SAFETY: `T: DeviceCopy` is C-layout POD, and `Pod<T>` is `repr(transparent)` over it.
unsafe impl<T: DeviceCopy> DeviceRepr for Pod<T> {}
// SAFETY: `DeviceCopy` requires every bit pattern, all zeros included, to be valid.
unsafe impl<T: DeviceCopy> ValidAsZeroBits for Pod<T> {}

/// Views host data as `Pod<T>` for cudarc.
pub(crate) fn as_pod<T: DeviceCopy>(s: &[T]) -> &[Pod<T>] {
    // SAFETY: `Pod<T>` is `repr(transparent)` over `T`: same size, alignment and validity, so a
    // slice of one is a slice of the other with the same length; the lifetime is kept.
    unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<Pod<T>>(), s.len()) }
}

/// Views host data mutably as `Pod<T>` for cudarc.
pub(crate) fn as_pod_mut<T: DeviceCopy>(s: &mut [T]) -> &mut [Pod<T>] {
    // SAFETY: as in `as_pod`; the exclusive borrow is carried over.
    unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<Pod<T>>(), s.len()) }
}

/// A device address of `T`s, as a kernel parameter: 8 bytes, the layout of a CUDA `T*`.
///
/// Obtained from [`DeviceBuffer::ptr`]; valid while that buffer lives (its release is ordered
/// on the device's stream after every kernel launched before it).
#[repr(transparent)]
pub struct DevicePtr<T> {
    addr: u64,
    _t: PhantomData<*mut T>,
}

impl<T> DevicePtr<T> {
    /// The null device pointer.
    pub const fn null() -> Self {
        DevicePtr { addr: 0, _t: PhantomData }
    }

    /// The device address `addr` (of a buffer of the machine a kernel runs on: a GPU's, or the host
    /// simulation's memory).
    pub const fn from_addr(addr: u64) -> Self {
        DevicePtr { addr, _t: PhantomData }
    }

    /// The raw address.
    pub fn addr(self) -> u64 {
        self.addr
    }

    /// The address `count` elements further (no bounds check: a kernel parameter, not a reference).
    pub fn offset(self, count: usize) -> Self {
        DevicePtr { addr: self.addr.wrapping_add((count * std::mem::size_of::<T>()) as u64), _t: PhantomData }
    }
}

impl<T> Clone for DevicePtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for DevicePtr<T> {}
impl<T> std::fmt::Debug for DevicePtr<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DevicePtr({:#x})", self.addr)
    }
}
// SAFETY: a device address is an integer; sharing it between host threads touches no memory.
unsafe impl<T> Send for DevicePtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for DevicePtr<T> {}
// SAFETY: an 8-byte integer: POD, every bit pattern valid (the kernel decides what to do with it).
unsafe impl<T: 'static> DeviceCopy for DevicePtr<T> {}

/// `n` elements of `T` in device memory, freed (in stream order) on drop.
pub struct DeviceBuffer<T: DeviceCopy> {
    pub(crate) slice: CudaSlice<Pod<T>>,
    pub(crate) stream: Arc<cudarc::driver::CudaStream>,
}

impl<T: DeviceCopy> DeviceBuffer<T> {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.slice.len()
    }

    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.slice.len() == 0
    }

    /// Size in bytes.
    pub fn num_bytes(&self) -> usize {
        self.slice.len() * std::mem::size_of::<T>()
    }

    /// The buffer's device address, to put in a kernel's parameter struct.
    pub fn ptr(&self) -> DevicePtr<T> {
        let (addr, _sync) = self.slice.device_ptr(&self.stream);
        DevicePtr { addr, _t: PhantomData }
    }
}

impl<T: DeviceCopy> std::fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceBuffer<{}>[{}] at {:?}", std::any::type_name::<T>(), self.len(), self.ptr())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_ptr_is_a_c_pointer() {
        assert_eq!(std::mem::size_of::<DevicePtr<u64>>(), 8);
        assert_eq!(std::mem::align_of::<DevicePtr<u64>>(), 8);
        let p = DevicePtr::<u32> { addr: 0x1000, _t: PhantomData };
        assert_eq!(p.offset(3).addr(), 0x100c);
        assert_eq!(DevicePtr::<u8>::null().addr(), 0);
    }

    #[test]
    fn pod_views_keep_length() {
        let mut v = vec![1u32, 2, 3];
        assert_eq!(as_pod(&v).len(), 3);
        as_pod_mut(&mut v)[1].0 = 7;
        assert_eq!(v, [1, 7, 3]);
    }
}

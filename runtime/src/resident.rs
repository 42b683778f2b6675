//! [`ResidentBuffer`]: data that stays where the backend runs tasks across many root runs —
//! uploaded once ([`Runtime::upload`](crate::Runtime::upload)), handed to any number of runs as a
//! root task's slice ([`ResidentBuffer::arg`], [`ResidentBuffer::arg_mut`]), read back once
//! ([`ResidentBuffer::to_vec`], [`ResidentBuffer::download`]). On the serial and cpu backends it
//! is host memory (the slices are the data; nothing is copied). On cuda (and its host
//! simulation) it is device memory plus a host placeholder of the same length whose address
//! range names the buffer: a root slice inside the placeholder reaches the task as the device
//! memory, neither uploaded before the run nor downloaded after it (`Stats::transfer` counts only
//! the other slices).
//!
//! Owns the public type and its host form; the device side (registry, store) is
//! `backend::cuda::resident`.

use crate::backend::cuda::memory::DeviceCopy;
use crate::backend::cuda::resident::{self, ResidentStore};
use crate::error::{Error, Result};
use crate::temp::Scalar;

/// A buffer of `T`s (the integer and float scalars) resident on a runtime's backend (module docs).
///
/// ```
/// use gpu_cilk_runtime::{BackendKind, Runtime};
/// let rt = Runtime::with_backend(BackendKind::Serial).unwrap();
/// let mut buf = rt.upload(&[3u32, 1, 2]).unwrap();
/// buf.arg_mut().sort_unstable(); // stands in for `rt.run(f::task(buf.arg_mut()))`
/// assert_eq!(buf.to_vec().unwrap(), [1, 2, 3]);
/// ```
pub struct ResidentBuffer<T: Scalar + DeviceCopy> {
    /// The data (host backends) or the placeholder (device backends).
    host: Vec<T>,
    device: Option<Device>,
}

/// The device side of a buffer: the store and its registration.
struct Device {
    store: Box<dyn ResidentStore>,
    id: u64,
}

impl<T: Scalar + DeviceCopy> ResidentBuffer<T> {
    /// Host memory holding `data` (serial and cpu backends).
    pub(crate) fn host(data: Vec<T>) -> Self {
        ResidentBuffer { host: data, device: None }
    }

    /// Device memory from `make(bytes)` holding a copy of `data`, with a zeroed placeholder.
    pub(crate) fn device(data: &[T], make: impl FnOnce(usize) -> Result<Box<dyn ResidentStore>>) -> Result<Self> {
        let bytes = std::mem::size_of_val(data);
        let store = make(bytes)?;
        store.write(as_bytes(data))?;
        let host = resident::zeroed_vec::<T>(data.len());
        let id = resident::register(host.as_ptr() as usize, bytes, store.as_ref())?;
        Ok(ResidentBuffer { host, device: Some(Device { store, id }) })
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.host.len()
    }

    /// No elements.
    pub fn is_empty(&self) -> bool {
        self.host.is_empty()
    }

    /// The buffer lives in device memory (cuda, cuda-sim) rather than host memory.
    pub fn on_device(&self) -> bool {
        self.device.is_some()
    }

    /// The buffer as a `&[T]` to pass to a root task of this buffer's runtime
    /// (`rt.run(f::task(buf.arg()))`; sub-slices work too). On a device backend its elements
    /// are a placeholder, not the data: read the data with [`ResidentBuffer::to_vec`].
    pub fn arg(&self) -> &[T] {
        &self.host
    }

    /// The buffer as a `&mut [T]` to pass to a root task of this buffer's runtime; what the run
    /// writes stays in the buffer. As [`ResidentBuffer::arg`], the elements are a placeholder
    /// on a device backend.
    pub fn arg_mut(&mut self) -> &mut [T] {
        &mut self.host
    }

    /// Overwrites the buffer with `data` (one upload on a device backend, a copy on the host).
    pub fn upload(&mut self, data: &[T]) -> Result<()> {
        if data.len() != self.len() {
            return Err(Error::Config(format!(
                "upload of {} elements into a resident buffer of {}",
                data.len(),
                self.len()
            )));
        }
        match &self.device {
            Some(d) => d.store.write(as_bytes(data)),
            None => {
                self.host.copy_from_slice(data);
                Ok(())
            }
        }
    }

    /// Copies the buffer into `out` (one download on a device backend, after the device's queued
    /// work; a copy on the host).
    pub fn download(&self, out: &mut [T]) -> Result<()> {
        if out.len() != self.len() {
            return Err(Error::Config(format!(
                "download of a resident buffer of {} elements into {}",
                self.len(),
                out.len()
            )));
        }
        match &self.device {
            None => out.copy_from_slice(&self.host),
            Some(d) => {
                let bytes = d.store.read()?;
                let want = std::mem::size_of_val(out);
                let src = bytes.get(..want).ok_or_else(|| {
                    Error::Internal(format!("a resident buffer gave back {} of {want} bytes", bytes.len()))
                })?;
                // SAFETY: `out` is `want` writable bytes; `T: DeviceCopy` is valid for every bit
                // pattern, so any bytes make valid elements; `src` and `out` do not overlap.
                unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), out.as_mut_ptr().cast::<u8>(), want) };
            }
        }
        Ok(())
    }

    /// The buffer's contents (a download on a device backend).
    pub fn to_vec(&self) -> Result<Vec<T>> {
        if self.device.is_none() {
            return Ok(self.host.clone());
        }
        let mut out = resident::zeroed_vec::<T>(self.len());
        self.download(&mut out)?;
        Ok(out)
    }

    /// The host data, without a copy, on the serial and cpu backends; `Err(self)` on a device
    /// backend (use [`ResidentBuffer::to_vec`]).
    pub fn into_host_vec(mut self) -> std::result::Result<Vec<T>, Self> {
        if self.device.is_some() {
            return Err(self);
        }
        Ok(std::mem::take(&mut self.host))
    }
}

impl<T: Scalar + DeviceCopy> Drop for ResidentBuffer<T> {
    fn drop(&mut self) {
        if let Some(d) = &self.device {
            // The placeholder stops naming the device memory before either is freed.
            resident::unregister(d.id);
        }
    }
}

impl<T: Scalar + DeviceCopy> std::fmt::Debug for ResidentBuffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResidentBuffer")
            .field("type", &std::any::type_name::<T>())
            .field("len", &self.len())
            .field("on_device", &self.on_device())
            .finish()
    }
}

fn as_bytes<T: Scalar + DeviceCopy>(data: &[T]) -> &[u8] {
    // SAFETY: `T: Scalar` is one of the sealed integer and float primitives: no padding, every
    // byte initialized; the view covers exactly `data`'s memory and borrows it.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data)) }
}

//! Device-resident root slices: the device side of [`crate::resident::ResidentBuffer`] on the
//! cuda backend and its host simulation. A resident buffer is device memory plus a host
//! *placeholder* of the same length (zeroed pages, never the data) whose address range names it:
//! the buffer registers `(placeholder range → device address, owner)` here, and
//! [`super::slices::with_device_slices`] asks [`lookup`] before uploading a root's slice; a slice
//! inside a registered placeholder is passed as the matching device address and neither uploaded
//! nor downloaded.
//!
//! Owns the registry and the byte-level store (upload, download, free); the public type and its
//! host form live in `crate::resident`.

use super::memory::DeviceCopy;
use super::target::Target;
use crate::error::{Error, Result};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// A device that holds resident buffers: a byte buffer on it, copies in and out.
pub(crate) trait ResidentStore: Send + Sync {
    /// The device address of the first byte.
    fn addr(&self) -> u64;
    /// Copies `host` into the start of the buffer.
    fn write(&self, host: &[u8]) -> Result<()>;
    /// Copies the whole buffer back (waiting for the device first).
    fn read(&self) -> Result<Vec<u8>>;
    /// The identity of the device context the buffer lives in (see [`lookup`]).
    fn owner(&self) -> usize;
}

/// A [`ResidentStore`] on any [`Target`]: `keep` keeps the device (and its context) alive, `dev`
/// reaches it.
pub(crate) struct Stored<K, D: Target> {
    keep: K,
    dev: fn(&K) -> &D,
    owner: usize,
    addr: u64,
    buf: Mutex<D::Buffer<u8>>,
}

impl<K, D: Target> Stored<K, D>
where
    D::Buffer<u8>: Send,
{
    /// `bytes` (at least 1) zeroed bytes on `dev(&keep)`.
    pub(crate) fn new(keep: K, dev: fn(&K) -> &D, owner: usize, bytes: usize) -> Result<Self> {
        let buf = dev(&keep).alloc_zeroed::<u8>(bytes.max(1))?;
        let addr = D::addr(&buf);
        Ok(Stored { keep, dev, owner, addr, buf: Mutex::new(buf) })
    }
}

impl<K: Send + Sync, D: Target> ResidentStore for Stored<K, D>
where
    D::Buffer<u8>: Send,
{
    fn addr(&self) -> u64 {
        self.addr
    }
    fn write(&self, host: &[u8]) -> Result<()> {
        if host.is_empty() {
            return Ok(());
        }
        let mut buf = self.buf.lock().map_err(|_| poisoned())?;
        (self.dev)(&self.keep).copy_htod(host, &mut buf)
    }
    fn read(&self) -> Result<Vec<u8>> {
        let buf = self.buf.lock().map_err(|_| poisoned())?;
        (self.dev)(&self.keep).dtoh(&buf)
    }
    fn owner(&self) -> usize {
        self.owner
    }
}

fn poisoned() -> Error {
    Error::Internal("a resident buffer's lock was poisoned by a panic".into())
}

/// One registered placeholder range.
#[derive(Clone, Copy, Debug)]
struct Entry {
    id: u64,
    host: usize,
    bytes: usize,
    owner: usize,
    addr: u64,
}

static REGISTRY: Mutex<Vec<Entry>> = Mutex::new(Vec::new());
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh owner identity for a backend whose device has no stable address (the simulation).
pub(crate) fn fresh_owner() -> usize {
    NEXT_ID.fetch_add(1, Ordering::Relaxed) as usize
}

/// Registers the placeholder `[host, host + bytes)` as naming `store`'s memory; returns the id
/// [`unregister`] takes.
pub(crate) fn register(host: usize, bytes: usize, store: &dyn ResidentStore) -> Result<u64> {
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let entry = Entry { id, host, bytes, owner: store.owner(), addr: store.addr() };
    REGISTRY.lock().map_err(|_| poisoned())?.push(entry);
    Ok(id)
}

/// Forgets the placeholder registered as `id` (a buffer's drop).
pub(crate) fn unregister(id: u64) {
    if let Ok(mut r) = REGISTRY.lock() {
        r.retain(|e| e.id != id);
    }
}

/// Where the root slice `[ptr, ptr + bytes)` of a run on the device `owner` lives: `Ok(Some(addr))`
/// when it lies inside a resident buffer's placeholder (the device address of its first byte),
/// `Ok(None)` for ordinary host memory (upload it), an error when it lies in a buffer of another
/// device context (another runtime's, or one lost after a kernel failure). `elem_size` is checked
/// against the device address's alignment.
pub(crate) fn lookup(ptr: usize, bytes: usize, elem_size: usize, owner: usize, name: &str) -> Result<Option<u64>> {
    let registry = REGISTRY.lock().map_err(|_| poisoned())?;
    let Some(e) = registry.iter().find(|e| e.bytes > 0 && ptr >= e.host && ptr - e.host < e.bytes) else {
        return Ok(None);
    };
    if e.owner != owner {
        return Err(Error::Config(format!(
            "the slice `{name}` lies in a resident buffer of another runtime or of a device context lost \
             after a kernel failure: upload it with the runtime that runs the task"
        )));
    }
    let off = ptr - e.host;
    if bytes > e.bytes - off {
        return Err(Error::Internal(format!("the slice `{name}` runs past the end of its resident buffer")));
    }
    let addr = e.addr + off as u64;
    if elem_size > 0 && addr % elem_size.min(8) as u64 != 0 {
        return Err(Error::Internal(format!("the slice `{name}` is misaligned in its resident buffer")));
    }
    Ok(Some(addr))
}

/// `n` zeroed `T`s in host memory that is not touched until written (the allocator's zeroed
/// pages): the placeholder of a resident buffer of `n` elements.
pub(crate) fn zeroed_vec<T: DeviceCopy>(n: usize) -> Vec<T> {
    if n == 0 || std::mem::size_of::<T>() == 0 {
        return Vec::new();
    }
    let Ok(layout) = std::alloc::Layout::array::<T>(n) else {
        return Vec::new();
    };
    // SAFETY: `layout` has a non-zero size (n > 0, T not zero-sized).
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<T>();
    if ptr.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    // SAFETY: `ptr` was allocated by the global allocator with `Layout::array::<T>(n)` (the layout
    // `Vec<T>` uses for capacity `n`), and all `n` elements are initialized: zero bytes are a
    // valid `T` (`DeviceCopy`: every bit pattern is valid).
    unsafe { Vec::from_raw_parts(ptr, n, n) }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake(u64, usize);
    impl ResidentStore for Fake {
        fn addr(&self) -> u64 {
            self.0
        }
        fn write(&self, _: &[u8]) -> Result<()> {
            Ok(())
        }
        fn read(&self) -> Result<Vec<u8>> {
            Ok(Vec::new())
        }
        fn owner(&self) -> usize {
            self.1
        }
    }

    #[test]
    fn lookup_maps_ranges_inside_a_placeholder_and_only_for_its_owner() {
        let host = zeroed_vec::<u32>(16);
        assert!(host.iter().all(|&x| x == 0));
        let base = host.as_ptr() as usize;
        let id = register(base, 64, &Fake(0x1000, 7)).unwrap();
        assert_eq!(lookup(base, 64, 4, 7, "a").unwrap(), Some(0x1000));
        assert_eq!(lookup(base + 8, 16, 4, 7, "a").unwrap(), Some(0x1008));
        assert!(lookup(base + 8, 64, 4, 7, "a").is_err(), "past the end");
        assert!(lookup(base, 4, 4, 8, "a").is_err(), "another owner");
        assert_eq!(lookup(base + 64, 4, 4, 7, "a").unwrap(), None, "just after it");
        unregister(id);
        assert_eq!(lookup(base, 64, 4, 7, "a").unwrap(), None);
    }
}

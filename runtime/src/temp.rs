//! Task-scoped temporaries: the storage behind `let t = alloc!(f32, n);` in a `#[gpu_cilk]`
//! function.
//!
//! A [`Temp<T>`] is a `Copy` handle `{ ptr, len }` (`#[repr(C)]`, 16 bytes, the layout of the
//! device's `gc_temp<T>`) to `len` zero-initialized elements. It lives until its task ends (through
//! the task's continuations) and children may receive it as an argument and write into it. On the
//! host every element is one [`AtomicU64`] word accessed with `Relaxed` ordering, so children
//! writing disjoint (or even the same) elements concurrently is data-race-free safe Rust; the
//! ordering between a child's writes and its parent's reads after `sync!()` comes from the
//! scheduler (the same edge that orders a child's result before the continuation).
//!
//! Where the words live:
//! - cpu backend: one [`XHeap`] per run (`Config::temp_heap_bytes`), taken
//!   at the first `alloc!` of the run and handed back for later runs when it ends (arenas are
//!   reused, never deallocated); a task's temporaries are returned to it when the task finishes.
//!   Exhaustion is [`Error::TempHeapExhausted`](crate::Error).
//! - serial function (and any [`Spawn`](crate::Spawn) implementation that keeps the default
//!   methods): a process-wide pool of leaked, reused blocks ([`TempScope`]): never unmapped, so
//!   a handle can never dangle.
//!
//! Handles are only made by the runtime ([`Temp::from_raw`] is `unsafe`), always over storage that
//! is never deallocated (leaked serial blocks, reused run arenas), so a handle can never dangle,
//! even one that outlived its task: using it then is a logic error, never undefined behavior.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::alloc::{Offset, XHeap, XHeapConfig};

mod sealed {
    pub trait Sealed {}
}

/// An element type of a [`Temp`]: the integer and float scalars (not `bool`, not `i128`/`u128`).
pub trait Scalar: sealed::Sealed + Copy + Default + Send + Sync + fmt::Debug + 'static {
    /// The CUDA C++ spelling (`gc_f32`).
    const CXX: &'static str;
    /// The value's bits, zero-extended to a word.
    fn to_word(self) -> u64;
    /// The value from its word.
    fn from_word(w: u64) -> Self;
}

macro_rules! scalar_int {
    ($($t:ty => $c:literal),*) => {$(
        impl sealed::Sealed for $t {}
        impl Scalar for $t {
            const CXX: &'static str = $c;
            fn to_word(self) -> u64 { self as u64 }
            fn from_word(w: u64) -> Self { w as $t }
        }
    )*};
}
scalar_int!(u8 => "gc_u8", u16 => "gc_u16", u32 => "gc_u32", u64 => "gc_u64", usize => "gc_usize",
            i8 => "gc_i8", i16 => "gc_i16", i32 => "gc_i32", i64 => "gc_i64", isize => "gc_isize");

impl sealed::Sealed for f32 {}
impl Scalar for f32 {
    const CXX: &'static str = "gc_f32";
    fn to_word(self) -> u64 {
        u64::from(self.to_bits())
    }
    fn from_word(w: u64) -> Self {
        f32::from_bits(w as u32)
    }
}
impl sealed::Sealed for f64 {}
impl Scalar for f64 {
    const CXX: &'static str = "gc_f64";
    fn to_word(self) -> u64 {
        self.to_bits()
    }
    fn from_word(w: u64) -> Self {
        f64::from_bits(w)
    }
}

/// A task-scoped temporary: `len` elements of `T`, made by `alloc!(T, len)`.
///
/// Generated code indexes it (`t[i]`, `t[i] = v`, `t[i] += v` become [`get`](Temp::get) and
/// [`set`](Temp::set)); out-of-bounds indices panic with Rust's message.
#[repr(C)]
pub struct Temp<T: Scalar> {
    ptr: NonNull<AtomicU64>,
    len: u64,
    _elem: PhantomData<T>,
}

// SAFETY: the handle points to atomic words that outlive it (module docs); sharing or sending it
// only shares atomics.
unsafe impl<T: Scalar> Send for Temp<T> {}
// SAFETY: as above.
unsafe impl<T: Scalar> Sync for Temp<T> {}

impl<T: Scalar> Clone for Temp<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: Scalar> Copy for Temp<T> {}

impl<T: Scalar> Default for Temp<T> {
    /// An empty temporary (the value of a frame field before its `alloc!` runs).
    fn default() -> Self {
        Temp { ptr: NonNull::dangling(), len: 0, _elem: PhantomData }
    }
}

impl<T: Scalar> fmt::Debug for Temp<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Temp<{}>(len {})", std::any::type_name::<T>(), self.len)
    }
}

impl<T: Scalar> Temp<T> {
    /// A handle to `len` words at `ptr`.
    ///
    /// # Safety
    /// `ptr` must point to `len` valid [`AtomicU64`] words (any `ptr` when `len == 0`) that stay
    /// valid for as long as the handle or any copy of it can be used.
    pub unsafe fn from_raw(ptr: NonNull<AtomicU64>, len: usize) -> Self {
        Temp { ptr, len: len as u64, _elem: PhantomData }
    }

    /// The first word (for the allocator that made it).
    pub fn as_ptr(&self) -> NonNull<AtomicU64> {
        self.ptr
    }

    /// Elements.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// No elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[track_caller]
    fn word(&self, i: usize) -> &AtomicU64 {
        if i as u64 >= self.len {
            panic!("index out of bounds: the len is {} but the index is {i}", self.len);
        }
        // SAFETY: `i < len` and the words are valid while the handle is (`from_raw`'s contract).
        unsafe { &*self.ptr.as_ptr().add(i) }
    }

    /// Element `i`.
    ///
    /// # Panics
    /// With Rust's message when `i >= len`.
    #[track_caller]
    pub fn get(&self, i: usize) -> T {
        T::from_word(self.word(i).load(Ordering::Relaxed))
    }

    /// Sets element `i`.
    ///
    /// # Panics
    /// With Rust's message when `i >= len`.
    #[track_caller]
    pub fn set(&self, i: usize, v: T) {
        self.word(i).store(v.to_word(), Ordering::Relaxed)
    }
}

/// The host pool of the serial function: blocks of `2^k` words, leaked once and reused forever.
struct SerialPool {
    /// Free blocks by size class (words).
    free: BTreeMap<usize, Vec<usize>>,
    /// Blocks handed out and not yet returned: address → size class. Only these are accepted back,
    /// so a foreign or double free can never put memory that is not ours into the pool.
    live: BTreeMap<usize, usize>,
}

static SERIAL_POOL: Mutex<SerialPool> = Mutex::new(SerialPool { free: BTreeMap::new(), live: BTreeMap::new() });

fn serial_pool() -> std::sync::MutexGuard<'static, SerialPool> {
    SERIAL_POOL.lock().unwrap_or_else(|p| p.into_inner())
}

fn class_words(len: usize) -> usize {
    len.max(1).next_power_of_two()
}

/// `len` zeroed words from the process-wide pool (never freed to the system, so never dangling).
pub(crate) fn serial_alloc<T: Scalar>(len: usize) -> Temp<T> {
    let words = class_words(len);
    let reused = serial_pool().free.get_mut(&words).and_then(Vec::pop);
    let addr = match reused {
        Some(a) => a,
        None => {
            let block: &'static [AtomicU64] = Box::leak((0..words).map(|_| AtomicU64::new(0)).collect());
            block.as_ptr() as usize
        }
    };
    serial_pool().live.insert(addr, words);
    let ptr = NonNull::new(addr as *mut AtomicU64).unwrap_or(NonNull::dangling());
    // SAFETY: `addr` is a leaked (never freed) block of `words >= len` atomic words.
    let t = unsafe { Temp::from_raw(ptr, len) };
    for i in 0..len {
        t.set(i, T::default());
    }
    t
}

/// Returns a block of [`serial_alloc`] to the pool (anything else, or a second free, is ignored).
pub(crate) fn serial_free<T: Scalar>(t: Temp<T>) {
    let addr = t.ptr.as_ptr() as usize;
    let mut pool = serial_pool();
    if let Some(words) = pool.live.remove(&addr) {
        pool.free.entry(words).or_default().push(addr);
    }
}

/// The temporaries of one call of a serial function: `alloc!` allocates through it and it frees
/// them all when the function returns (an RAII guard the compiler emits at the start of the
/// serial function).
#[derive(Default)]
pub struct TempScope {
    live: RefCell<Vec<(NonNull<AtomicU64>, usize)>>,
}

impl TempScope {
    /// An empty scope.
    pub fn new() -> Self {
        Self::default()
    }

    /// `len` zeroed elements, freed when the scope is dropped.
    pub fn alloc<T: Scalar>(&self, len: usize) -> Temp<T> {
        let t = serial_alloc::<T>(len);
        self.live.borrow_mut().push((t.ptr, len));
        t
    }
}

impl Drop for TempScope {
    fn drop(&mut self) {
        for (ptr, len) in self.live.get_mut().drain(..) {
            // SAFETY: the pair came from `serial_alloc` (leaked storage of at least `len` words).
            serial_free(unsafe { Temp::<u64>::from_raw(ptr, len) });
        }
    }
}

/// Heaps of finished cpu runs, by size, for later runs. A run heap's arena is never deallocated:
/// a handle that outlived its run (only a hand-written `CilkTask` could return one) still points
/// to valid atomic words (reading another run's data is a logic error, not undefined behavior).
static IDLE_HEAPS: Mutex<Vec<(usize, Box<XHeap>)>> = Mutex::new(Vec::new());

/// The temporaries of one cpu run: an [`XHeap`] of `bytes`, taken at the first `alloc!` (a heap
/// of a finished run of the same size, or a new one) and handed back for reuse when the run ends.
pub(crate) struct RunHeap {
    bytes: usize,
    heap: std::sync::OnceLock<Option<Box<XHeap>>>,
}

impl RunHeap {
    pub(crate) fn new(bytes: usize) -> Self {
        RunHeap { bytes, heap: std::sync::OnceLock::new() }
    }

    fn heap(&self) -> Option<&XHeap> {
        self.heap
            .get_or_init(|| {
                let mut idle = IDLE_HEAPS.lock().unwrap_or_else(|p| p.into_inner());
                if let Some(i) = idle.iter().position(|(b, _)| *b == self.bytes) {
                    return Some(idle.swap_remove(i).1);
                }
                drop(idle);
                let shift = if self.bytes < 1 << 22 { 12 } else { 16 };
                XHeap::new(XHeapConfig::new(self.bytes).page_shift(shift)).ok().map(Box::new)
            })
            .as_deref()
    }

    /// The configured size in bytes.
    pub(crate) fn capacity(&self) -> usize {
        self.bytes
    }

    /// `len` zeroed elements (one word each), or `None` when the heap cannot hold them.
    pub(crate) fn alloc<T: Scalar>(&self, len: usize) -> Option<Temp<T>> {
        let heap = self.heap()?;
        let off = heap.alloc(len.checked_mul(8)?)?;
        let first = heap.word(off, 0)?;
        if len > 0 {
            heap.word(off, len as u64 - 1)?; // the whole piece lies in the arena
        }
        // SAFETY: the piece holds `len` words of the arena, which lives as long as this `RunHeap`
        // (the whole run), and no handle outlives the run (module docs).
        let t = unsafe { Temp::from_raw(NonNull::from(first), len) };
        for i in 0..len {
            t.set(i, T::default());
        }
        Some(t)
    }

    /// Returns `t` to the heap (a handle it did not make is ignored).
    pub(crate) fn free<T: Scalar>(&self, t: Temp<T>) {
        let Some(heap) = self.heap.get().and_then(Option::as_deref) else { return };
        let Some(base) = heap.word(Offset::from_bytes(0), 0) else { return };
        let off = (t.ptr.as_ptr() as usize).wrapping_sub(base as *const AtomicU64 as usize);
        let _ = heap.free(Offset::from_bytes(off as u64));
    }
}

impl Drop for RunHeap {
    fn drop(&mut self) {
        if let Some(Some(mut heap)) = self.heap.take() {
            if heap.stats().live_blocks == 0 {
                heap.trim(); // free superblocks back to pages, so large requests fit again
                IDLE_HEAPS.lock().unwrap_or_else(|p| p.into_inner()).push((self.bytes, heap));
            } else {
                // A failed run left pieces allocated: keep the arena alive but out of use.
                Box::leak(heap);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_round_trip_and_start_at_zero() {
        let s = TempScope::new();
        let a = s.alloc::<f32>(3);
        let b = s.alloc::<i8>(2);
        assert_eq!(a.get(2), 0.0);
        a.set(1, -1.5);
        b.set(0, -3);
        assert_eq!((a.get(1), b.get(0), a.len()), (-1.5, -3, 3));
        assert_eq!(std::mem::size_of::<Temp<f64>>(), 16);
    }

    #[test]
    fn foreign_and_double_frees_are_ignored() {
        let words: &'static [AtomicU64] = Box::leak(vec![AtomicU64::new(7)].into_boxed_slice());
        // SAFETY: one leaked word.
        let foreign = unsafe { Temp::<u64>::from_raw(NonNull::from(&words[0]), 1) };
        serial_free(foreign);
        serial_free(Temp::<u64>::default());
        let t = serial_alloc::<u64>(1);
        assert_ne!(t.as_ptr(), foreign.as_ptr());
        serial_free(t);
        serial_free(t);
        let (a, b) = (serial_alloc::<u64>(1), serial_alloc::<u64>(1));
        assert_ne!(a.as_ptr(), b.as_ptr(), "a double free must not hand one block out twice");
    }

    #[test]
    #[should_panic(expected = "index out of bounds: the len is 2 but the index is 2")]
    fn out_of_bounds_panics_like_rust() {
        serial_alloc::<u32>(2).get(2);
    }
}

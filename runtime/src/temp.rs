//! Task-scoped temporaries: the storage behind `let t = alloc!(f32, n);` in a `#[gpu_cilk]`
//! function.
//!
//! A [`Temp<T>`] is a `Copy` handle `{ ptr, len }` (`#[repr(C)]`, 16 bytes, the layout of the
//! device's `gc_temp<T>`) to `len` zero-initialized elements. It lives until its task ends (through
//! the task's continuations) and children may receive it as an argument and write into it. On the
//! host an element is stored in its own type's width: a [`TempElem`]'s `Cell` (`AtomicU32` for an
//! `f32`, a `#[repr(C)]` struct of its fields' cells for a `#[derive(DeviceStruct)]` struct),
//! accessed with `Relaxed` ordering, so children writing disjoint (or even the same) elements
//! concurrently is data-race-free safe Rust, and an element costs the bytes it costs on the
//! device; the ordering between a child's writes and its parent's reads after `sync!()` comes
//! from the scheduler (the same edge that orders a child's result before the continuation).
//!
//! Where the elements live:
//! - cpu backend: one [`XHeap`] per run (`Config::temp_heap_bytes`), taken
//!   at the first `alloc!` of the run and handed back for later runs when it ends (arenas are
//!   reused, never deallocated); a task's temporaries are returned to it when the task finishes
//!   ([`Spawn::free_temp`](crate::Spawn::free_temp) is `unsafe`: a freed piece may next hold
//!   elements of another width, and an atomic access of one width racing with one of another is
//!   undefined behavior, so no copy of a freed handle may be used again). Exhaustion is
//!   [`Error::TempHeapExhausted`](crate::Error).
//! - serial function (and any [`Spawn`](crate::Spawn) implementation that keeps the default
//!   methods): a process-wide pool of leaked, reused blocks ([`TempScope`]), reused only for the
//!   same element cell type, so a handle that outlived its scope still addresses valid cells of
//!   its own type: using it is a logic error, never undefined behavior.

use std::any::TypeId;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::mem::{align_of, size_of, MaybeUninit};
use std::ptr::NonNull;
use std::sync::atomic::{
    AtomicBool, AtomicI16, AtomicI32, AtomicI64, AtomicI8, AtomicIsize, AtomicU16, AtomicU32, AtomicU64, AtomicU8,
    AtomicUsize, Ordering,
};
use std::sync::Mutex;

use crate::alloc::{XHeap, XHeapConfig};

mod sealed {
    pub trait Sealed {}
}

/// An element type of a [`Temp`]: how one element is stored on the host, shared by the tasks
/// that hold the handle. Implemented for the integer and float scalars, `bool`, arrays of
/// elements, and by `#[derive(DeviceStruct)]` for a struct (a `#[repr(C)]` struct of its fields'
/// cells, the struct's own layout).
///
/// # Safety
/// `Cell` must be valid when all its bytes are zero, and [`load`](TempElem::load) of such a cell
/// must give the element whose bytes are all zero (what `alloc!` promises); it must have no drop
/// glue and an alignment of at most 8; and every byte of it must be accessed
/// only through atomics of one fixed width per byte offset (so cells of one type never race with
/// different-sized accesses).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the element of a temporary",
    label = "not an integer or float scalar or a `#[derive(gpu_cilk::DeviceStruct)]` struct",
    note = "a struct element needs `#[derive(Clone, Copy, Default, Debug, gpu_cilk::DeviceStruct)] #[repr(C)]`"
)]
pub unsafe trait TempElem: Copy + Send + Sync + 'static {
    /// One element's shared storage.
    type Cell: Sync + 'static;
    /// The element in `cell` (`Relaxed` loads).
    fn load(cell: &Self::Cell) -> Self;
    /// Stores `v` in `cell` (`Relaxed` stores).
    fn store(cell: &Self::Cell, v: Self);
}

/// An element type that is a scalar: the integer and float types (not `bool`, not
/// `i128`/`u128`), which tasks may also take as generic `Key`s.
pub trait Scalar: sealed::Sealed + TempElem + Copy + Default + Send + Sync + fmt::Debug + 'static {
    /// The CUDA C++ spelling (`gc_f32`).
    const CXX: &'static str;
}

macro_rules! elem_atomic {
    ($($t:ty => $a:ty),*) => {$(
        // SAFETY: an atomic integer has the size and (at most 8-byte) alignment of its integer,
        // zero bytes are its zero, it has no drop glue and is only accessed at its own width.
        unsafe impl TempElem for $t {
            type Cell = $a;
            #[inline]
            fn load(cell: &$a) -> Self { cell.load(Ordering::Relaxed) }
            #[inline]
            fn store(cell: &$a, v: Self) { cell.store(v, Ordering::Relaxed) }
        }
    )*};
}
elem_atomic!(u8 => AtomicU8, u16 => AtomicU16, u32 => AtomicU32, u64 => AtomicU64, usize => AtomicUsize,
             i8 => AtomicI8, i16 => AtomicI16, i32 => AtomicI32, i64 => AtomicI64, isize => AtomicIsize,
             bool => AtomicBool);

macro_rules! elem_float {
    ($($t:ty => $a:ty),*) => {$(
        // SAFETY: as the integers: the float's bits in the atomic of its width (zero bits are 0.0).
        unsafe impl TempElem for $t {
            type Cell = $a;
            #[inline]
            fn load(cell: &$a) -> Self { <$t>::from_bits(cell.load(Ordering::Relaxed)) }
            #[inline]
            fn store(cell: &$a, v: Self) { cell.store(v.to_bits(), Ordering::Relaxed) }
        }
    )*};
}
elem_float!(f32 => AtomicU32, f64 => AtomicU64);

// SAFETY: an array of cells is valid all-zero, has the elements' size times `N`, their alignment
// and no drop glue when each cell does; each cell keeps its own widths.
unsafe impl<T: TempElem, const N: usize> TempElem for [T; N] {
    type Cell = [T::Cell; N];
    #[inline]
    fn load(cell: &Self::Cell) -> Self {
        std::array::from_fn(|i| T::load(&cell[i]))
    }
    #[inline]
    fn store(cell: &Self::Cell, v: Self) {
        for (c, x) in cell.iter().zip(v) {
            T::store(c, x);
        }
    }
}

macro_rules! scalar {
    ($($t:ty => $c:literal),*) => {$(
        impl sealed::Sealed for $t {}
        impl Scalar for $t {
            const CXX: &'static str = $c;
        }
    )*};
}
scalar!(u8 => "gc_u8", u16 => "gc_u16", u32 => "gc_u32", u64 => "gc_u64", usize => "gc_usize",
        i8 => "gc_i8", i16 => "gc_i16", i32 => "gc_i32", i64 => "gc_i64", isize => "gc_isize",
        f32 => "gc_f32", f64 => "gc_f64");

/// A task-scoped temporary: `len` elements of `T`, made by `alloc!(T, len)`.
///
/// Generated code indexes it (`t[i]`, `t[i] = v`, `t[i] += v` become [`get`](Temp::get) and
/// [`set`](Temp::set)); out-of-bounds indices panic with Rust's message.
#[repr(C)]
pub struct Temp<T: TempElem> {
    ptr: NonNull<T::Cell>,
    len: u64,
    _elem: PhantomData<T>,
}

// SAFETY: the handle points to cells that outlive it (module docs) and are `Sync`; sharing or
// sending it only shares them.
unsafe impl<T: TempElem> Send for Temp<T> {}
// SAFETY: as above.
unsafe impl<T: TempElem> Sync for Temp<T> {}

impl<T: TempElem> Clone for Temp<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: TempElem> Copy for Temp<T> {}

impl<T: TempElem> Default for Temp<T> {
    /// An empty temporary (the value of a frame field before its `alloc!` runs).
    fn default() -> Self {
        Temp { ptr: NonNull::dangling(), len: 0, _elem: PhantomData }
    }
}

impl<T: TempElem> fmt::Debug for Temp<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Temp<{}>(len {})", std::any::type_name::<T>(), self.len)
    }
}

impl<T: TempElem> Temp<T> {
    /// A handle to `len` cells at `ptr`.
    ///
    /// # Safety
    /// `ptr` must point to `len` valid cells of `T` (any `ptr` when `len == 0`) that stay valid
    /// for as long as the handle or any copy of it can be used, and that no access of another
    /// width overlaps while it can be (see [`TempElem`]).
    pub unsafe fn from_raw(ptr: NonNull<T::Cell>, len: usize) -> Self {
        Temp { ptr, len: len as u64, _elem: PhantomData }
    }

    /// The first cell (for the allocator that made it).
    pub fn as_ptr(&self) -> NonNull<T::Cell> {
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
    #[inline]
    fn cell(&self, i: usize) -> &T::Cell {
        if i as u64 >= self.len {
            panic!("index out of bounds: the len is {} but the index is {i}", self.len);
        }
        // SAFETY: `i < len` and the cells are valid while the handle is (`from_raw`'s contract).
        unsafe { &*self.ptr.as_ptr().add(i) }
    }

    /// Element `i`.
    ///
    /// # Panics
    /// With Rust's message when `i >= len`.
    #[track_caller]
    #[inline]
    pub fn get(&self, i: usize) -> T {
        T::load(self.cell(i))
    }

    /// Sets element `i`.
    ///
    /// # Panics
    /// With Rust's message when `i >= len`.
    #[track_caller]
    #[inline]
    pub fn set(&self, i: usize, v: T) {
        T::store(self.cell(i), v)
    }
}

/// The element whose bytes are all zero.
fn zero<T: TempElem>() -> T {
    // SAFETY: all-zero bytes are a valid `T::Cell` (`TempElem`'s contract); this one is local.
    let cell = unsafe { MaybeUninit::<T::Cell>::zeroed().assume_init() };
    T::load(&cell)
}

/// `len` cells of `T` in bytes, when the cells fit the 8-byte alignment of both pools.
fn cell_bytes<T: TempElem>(len: usize) -> Option<usize> {
    (align_of::<T::Cell>() <= 8).then_some(())?;
    len.checked_mul(size_of::<T::Cell>())
}

/// The host pool of the serial function: blocks of `2^k` bytes (at least 8), leaked once and
/// reused forever, each only for the one cell type it was first made for.
struct SerialPool {
    /// Free blocks by cell type and size class (bytes).
    free: BTreeMap<(TypeId, usize), Vec<usize>>,
    /// Blocks handed out and not yet returned: address → (cell type, size class). Only these are
    /// accepted back, so a foreign or double free can never put memory that is not ours (or not
    /// of that cell type) into the pool.
    live: BTreeMap<usize, (TypeId, usize)>,
}

static SERIAL_POOL: Mutex<SerialPool> = Mutex::new(SerialPool { free: BTreeMap::new(), live: BTreeMap::new() });

fn serial_pool() -> std::sync::MutexGuard<'static, SerialPool> {
    SERIAL_POOL.lock().unwrap_or_else(|p| p.into_inner())
}

/// `len` zeroed elements from the process-wide pool (never freed to the system, so never dangling).
///
/// # Panics
/// When `len` elements exceed the address space.
pub(crate) fn serial_alloc<T: TempElem>(len: usize) -> Temp<T> {
    let Some(bytes) = cell_bytes::<T>(len) else { panic!("alloc!: {len} elements exceed the address space") };
    let class = bytes.max(8).next_power_of_two();
    let key = (TypeId::of::<T::Cell>(), class);
    let reused = serial_pool().free.get_mut(&key).and_then(Vec::pop);
    let (addr, fresh) = match reused {
        Some(a) => (a, false),
        None => match crate::alloc::zeroed::words(class / 8) {
            Some(block) => (Box::leak(block).as_ptr() as usize, true),
            None => panic!("alloc!: {len} elements exceed the address space"),
        },
    };
    serial_pool().live.insert(addr, key);
    let ptr = NonNull::new(addr as *mut T::Cell).unwrap_or(NonNull::dangling());
    // SAFETY: `addr` is a leaked (never freed) block of at least `len` cells, 8-aligned (words),
    // zeroed when made, and only ever used for cells of `T::Cell` (the pool's key), so every
    // access to it is at the cell's own widths.
    let t = unsafe { Temp::from_raw(ptr, len) };
    if !fresh {
        // Atomic stores: a stale handle of the same cell type may still access the block.
        let z = zero::<T>();
        for i in 0..len {
            t.set(i, z);
        }
    }
    t
}

/// Returns a block of [`serial_alloc`] to the pool (anything else, or a second free, is ignored).
pub(crate) fn serial_free<T: TempElem>(t: Temp<T>) {
    serial_free_raw(t.ptr.as_ptr() as usize, TypeId::of::<T::Cell>());
}

/// [`serial_free`] of the block at `addr` made for cells of type `cell`.
fn serial_free_raw(addr: usize, cell: TypeId) {
    let mut pool = serial_pool();
    if pool.live.get(&addr).is_some_and(|k| k.0 == cell) {
        if let Some(key) = pool.live.remove(&addr) {
            pool.free.entry(key).or_default().push(addr);
        }
    }
}

/// The temporaries of one call of a serial function: `alloc!` allocates through it and it frees
/// them all when the function returns (an RAII guard the compiler emits at the start of the
/// serial function).
#[derive(Default)]
pub struct TempScope {
    /// Each block's address and cell type.
    live: RefCell<Vec<(usize, TypeId)>>,
}

impl TempScope {
    /// An empty scope.
    pub fn new() -> Self {
        Self::default()
    }

    /// `len` zeroed elements, freed when the scope is dropped.
    pub fn alloc<T: TempElem>(&self, len: usize) -> Temp<T> {
        let t = serial_alloc::<T>(len);
        self.live.borrow_mut().push((t.ptr.as_ptr() as usize, TypeId::of::<T::Cell>()));
        t
    }
}

impl Drop for TempScope {
    fn drop(&mut self) {
        for (addr, cell) in self.live.get_mut().drain(..) {
            serial_free_raw(addr, cell);
        }
    }
}

/// Heaps of finished cpu runs, by size, for later runs. A run heap's arena is never deallocated.
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

    /// `len` zeroed elements, or `None` when the heap cannot hold them.
    pub(crate) fn alloc<T: TempElem>(&self, len: usize) -> Option<Temp<T>> {
        let heap = self.heap()?;
        let bytes = cell_bytes::<T>(len)?;
        let off = heap.alloc(bytes)?;
        let p = heap.piece_ptr(off, bytes as u64)?;
        // SAFETY: the piece was just allocated, so nothing else accesses its bytes (the heap's
        // alloc/free hand it over with a happens-before edge, and `free`'s contract forbids
        // using a handle to it after it was freed), and it lies in the arena (`piece_ptr`).
        unsafe { p.as_ptr().write_bytes(0, bytes) };
        // SAFETY: the piece holds `len` zeroed cells (8-aligned: pieces are, and `cell_bytes`
        // checked the cell's alignment) of an arena that lives as long as this `RunHeap` (the
        // whole run) and then stays allocated; it is freed only by `free`, whose contract ends
        // every use of the handle.
        Some(unsafe { Temp::from_raw(p.cast(), len) })
    }

    /// Returns `t` to the heap (a handle it did not make is ignored).
    ///
    /// # Safety
    /// Neither `t` nor any copy of it is used after this call (the piece may next hold cells of
    /// another width; see [`TempElem`]).
    pub(crate) unsafe fn free<T: TempElem>(&self, t: Temp<T>) {
        let Some(heap) = self.heap.get().and_then(Option::as_deref) else { return };
        if let Some(off) = heap.offset_of(t.ptr.as_ptr().cast()) {
            let _ = heap.free(off);
        }
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
    fn elements_take_their_own_width() {
        let s = TempScope::new();
        let (a, b) = (s.alloc::<f32>(2), s.alloc::<[u16; 3]>(2));
        let at = |t: NonNull<u8>, i: usize| t.as_ptr().wrapping_add(i) as usize;
        assert_eq!(at(a.as_ptr().cast(), 4), a.cell(1) as *const AtomicU32 as usize);
        assert_eq!(at(b.as_ptr().cast(), 6), b.cell(1) as *const [AtomicU16; 3] as usize);
        b.set(1, [1, 2, 3]);
        assert_eq!((b.get(0), b.get(1)), ([0; 3], [1, 2, 3]));
    }

    #[test]
    fn serial_blocks_are_reused_only_for_their_cell_type() {
        let t = serial_alloc::<u8>(8);
        t.set(7, 9);
        serial_free(t);
        let other = serial_alloc::<u16>(4); // the same 8-byte class, another cell type
        assert_ne!(other.as_ptr().cast::<u8>(), t.as_ptr().cast::<u8>());
        serial_free(t); // already free: ignored
        let again = serial_alloc::<u8>(8);
        assert_eq!(again.as_ptr(), t.as_ptr(), "a block is reused for its own cell type");
        assert_eq!(again.get(7), 0, "and zeroed");
        serial_free(again);
        serial_free(other);
    }

    #[test]
    fn run_heap_pieces_start_at_zero_when_reused() {
        let heap = RunHeap::new(1 << 16);
        let t = heap.alloc::<f64>(100).expect("fits");
        t.set(99, -2.5);
        // SAFETY: `t` is not used again.
        unsafe { heap.free(t) };
        let u = heap.alloc::<u32>(200).expect("fits");
        assert_eq!((0..200).map(|i| u.get(i)).max(), Some(0));
        assert!(heap.alloc::<u64>(1 << 20).is_none(), "8 MiB exceed a 64 KiB heap");
        // SAFETY: `u` is not used again.
        unsafe { heap.free(u) };
    }

    #[test]
    #[should_panic(expected = "index out of bounds: the len is 2 but the index is 2")]
    fn out_of_bounds_panics_like_rust() {
        serial_alloc::<u32>(2).get(2);
    }
}

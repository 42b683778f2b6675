//! Slices that cross the task boundary: [`RawSlice`], the `(pointer, length)` pair that a task's
//! `Args` and `Frame` hold for a `&[T]`/`&mut [T]` parameter, and [`SliceField`], where such a
//! pair lies in a root's `Args` (so the cuda backend can upload the data and patch the pointer).
//!
//! # The lifetime story (why erasing the borrow is sound)
//!
//! A `#[gpu_cilk]` function `f(a: &mut [u32])` keeps its plain Rust form (the serial oracle, which
//! borrowck checks as written). Its task form cannot keep the lifetime (`CilkTask::Args` is
//! `'static`), so generated code stores a `RawSlice` and rebuilds the reference at the start of
//! every segment. Three rules make that sound:
//!
//! 1. **Only generated code makes `Args` that hold a slice**: making a non-empty `RawSlice` is
//!    `unsafe` ([`RawSlice::from_mut`]), `f::args(..)` is an `unsafe fn` for a task with slice
//!    parameters, and the only safe way in is `f::task(a, ..)`, which returns a
//!    [`Call`](crate::Call) that borrows the caller's slices for its lifetime `'a`.
//!    [`Runtime::run`](crate::Runtime::run) consumes the call and returns only after every task of
//!    the tree has finished (or, on an error, after every worker stopped running task code), so
//!    no task touches the slice after the borrow ends. Such a `Call` is neither `Copy` nor `Clone`:
//!    one borrow, one run.
//! 2. **Children get sub-ranges of their parent's slices** (`&mut a[lo..hi]`, `split_at_mut`),
//!    checked by Rust's indexing; the compiler accepts sub-slices and splits only of slice
//!    parameters and of locals bound to slices of them (never of a local array, which would
//!    dangle once the segment ends), and a parent's continuation runs only after all children of the
//!    segment finished (an explicit `sync!()` or the implicit one of a `return`), which the
//!    schedulers order with a release/acquire pair (the join). So by induction every slice a task
//!    sees lies inside the root's and is valid while the task runs.
//! 3. **Disjointness of `&mut` ranges given to logically parallel tasks is the programmer's
//!    obligation** (as in Cilk, where it is a determinacy race). The serial function cannot show
//!    such a race (spawn there is a call, so borrowck sees two sequential borrows). A program that
//!    hands overlapping `&mut` ranges to two tasks that run in parallel has a data race on the cpu
//!    backend (undefined behavior) and nondeterministic results on cuda. `Config::check_races`
//!    (`GPU_CILK_CHECK_RACES=1`) makes the cpu stealing scheduler check every segment's children
//!    against each other and fail with `Error::SliceRace` instead; since every slice is a
//!    sub-range of its parent's, disjoint siblings make disjoint subtrees, so what it leaves out is
//!    a parent touching a range it gave away before its `sync!()`. See `docs/dsl.md`.

use std::fmt;
use std::marker::PhantomData;

/// A `&[T]` or `&mut [T]` with its lifetime erased: `#[repr(C)]` `{ ptr, len: u64 }`, the same
/// layout as the device's `gc_slice<T>` (checked with the other `Args` fields on cuda).
#[repr(C)]
pub struct RawSlice<T> {
    ptr: *mut T,
    len: u64,
    _elem: PhantomData<T>,
}

// SAFETY: a `RawSlice` is a pointer and a length; every dereference is an `unsafe` call whose
// caller guarantees validity (module docs). Sending or sharing the pair itself touches no data.
unsafe impl<T: Send> Send for RawSlice<T> {}
// SAFETY: as above.
unsafe impl<T: Sync> Sync for RawSlice<T> {}

impl<T> Clone for RawSlice<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for RawSlice<T> {}

impl<T> Default for RawSlice<T> {
    /// An empty slice (dangling pointer, length 0).
    fn default() -> Self {
        RawSlice { ptr: std::ptr::NonNull::dangling().as_ptr(), len: 0, _elem: PhantomData }
    }
}

impl<T> fmt::Debug for RawSlice<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RawSlice<{}>({:p}, len {})", std::any::type_name::<T>(), self.ptr, self.len)
    }
}

impl<T> RawSlice<T> {
    /// The pair of a shared slice.
    ///
    /// # Safety
    /// Task code will dereference the pair ([`RawSlice::as_ref`]) wherever `Args` or a `Frame`
    /// holding it goes: `s` must outlive every such use (module docs). Only generated code calls
    /// this, under that argument; safe code can make only the empty [`RawSlice::default`].
    pub unsafe fn from_ref(s: &[T]) -> Self {
        RawSlice { ptr: s.as_ptr().cast_mut(), len: s.len() as u64, _elem: PhantomData }
    }

    /// The pair of a mutable slice.
    ///
    /// # Safety
    /// As [`RawSlice::from_ref`], and no one else may use `s`'s elements while task code may
    /// use the pair (except through sub-ranges handed on, module docs rule 3).
    pub unsafe fn from_mut(s: &mut [T]) -> Self {
        RawSlice { ptr: s.as_mut_ptr(), len: s.len() as u64, _elem: PhantomData }
    }

    /// The pair of `len` elements at `ptr` (a view's extent, `crate::view`).
    ///
    /// # Safety
    /// As [`RawSlice::from_ref`] (or `from_mut`), for the `len` elements at `ptr`.
    pub(crate) unsafe fn from_parts(ptr: *mut T, len: usize) -> Self {
        RawSlice { ptr, len: len as u64, _elem: PhantomData }
    }

    /// The one-element pair of a shared value (a shared bound, `crate::bound`).
    ///
    /// # Safety
    /// As [`RawSlice::from_ref`].
    pub unsafe fn from_one(x: &T) -> Self {
        // SAFETY: the caller's contract.
        unsafe { Self::from_ref(std::slice::from_ref(x)) }
    }

    /// The element of a one-element pair again ([`RawSlice::from_one`]).
    ///
    /// # Safety
    /// As [`RawSlice::as_ref`], and the pair holds at least one element.
    pub unsafe fn as_one<'a>(self) -> &'a T {
        // SAFETY: the caller's contract: `ptr` points to a valid element for `'a`.
        unsafe { &*self.ptr }
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len as usize
    }

    /// No elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first element's address.
    pub fn as_ptr(&self) -> *mut T {
        self.ptr
    }

    /// The slice again, shared.
    ///
    /// # Safety
    /// The pair must come from a live slice (`from_ref`/`from_mut`) that stays valid for `'a`
    /// and that no one mutates during `'a` except through this slice's own sub-ranges.
    pub unsafe fn as_ref<'a>(self) -> &'a [T] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: the caller's contract: `ptr` points to `len` valid elements for `'a`.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len as usize) }
    }

    /// The slice again, mutable.
    ///
    /// # Safety
    /// The pair must come from a live `&mut [T]` (`from_mut`) that stays valid for `'a`, and no
    /// other code may access these elements during `'a` except through this slice.
    pub unsafe fn as_mut<'a>(self) -> &'a mut [T] {
        if self.len == 0 {
            return &mut [];
        }
        // SAFETY: the caller's contract: `ptr` points to `len` valid elements, exclusively ours.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len as usize) }
    }
}

/// Where a slice parameter lies in a task's `Args` (see `CilkTask::SLICES`): the cuda backend
/// uploads a root's slices before the run, patches the pointers, and downloads the mutable ones
/// after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SliceField {
    /// The parameter's name.
    pub name: &'static str,
    /// Byte offset of its [`RawSlice`] in `Args`.
    pub offset: usize,
    /// `size_of::<T>()`.
    pub elem_size: usize,
    /// `&mut [T]` (downloaded after the run) rather than `&[T]`.
    pub mutable: bool,
    /// A shared monotone bound `&Max<T>`/`&Min<T>`/`&Sum<T>` (a one-element pair): downloaded
    /// after the run like a `&mut` slice, and never a race (every task may improve it at once,
    /// through atomics), so the race check skips it.
    pub bound: bool,
    /// A strided 2-D view `Mat<T>`/`MatMut<T>` (a [`RawMat`](crate::RawMat), whose first 16
    /// bytes are the `RawSlice` of its extent): the race check compares its rows, and the cuda
    /// backend copies back only its rows.
    pub view: bool,
}

/// The `(address, length)` of the slice `f` in `args` (the `Args` of a task whose `SLICES`
/// holds `f`), or `None` when `f` does not lie inside `args`.
pub(crate) fn read_field<A>(args: &A, f: &SliceField) -> Option<(usize, usize)> {
    if f.offset + std::mem::size_of::<RawSlice<u8>>() > std::mem::size_of::<A>() {
        return None;
    }
    // SAFETY: in bounds (checked above); `Args` is `#[repr(C)]` with a `RawSlice<T>` at
    // `f.offset`, whose layout does not depend on `T`; read unaligned, touching no element.
    let raw = unsafe { std::ptr::read_unaligned((args as *const A).cast::<u8>().add(f.offset).cast::<RawSlice<u8>>()) };
    Some((raw.as_ptr() as usize, raw.len()))
}

/// A value of any type, for the borrow-check witnesses that `#[gpu_cilk]` writes into the serial
/// function (`macros/src/expand/race_witness.rs`): they stand for the arguments that are not
/// slices in a closure that is never called. A call (not `unreachable!()`, whose type `!` would
/// make the rest of the witness dead code that the borrow checker skips).
#[doc(hidden)]
pub fn race_witness_value<T>() -> T {
    unreachable!("gpu-cilk race witnesses are never called")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_has_the_device_layout() {
        let mut v = vec![1u32, 2, 3];
        // SAFETY: `v` outlives the use and nothing else touches it meanwhile.
        let r = unsafe { RawSlice::from_mut(&mut v[1..]) };
        assert_eq!(r.len(), 2);
        // SAFETY: as above.
        let s = unsafe { r.as_mut() };
        s[0] = 7;
        assert_eq!(v, [1, 7, 3]);
        assert_eq!(std::mem::size_of::<RawSlice<u8>>(), 16);
        assert_eq!(std::mem::offset_of!(RawSlice<u8>, len), 8);
        // SAFETY: an empty pair is always valid.
        assert!(unsafe { RawSlice::<f64>::default().as_ref() }.is_empty());
    }
}

//! Continuation frames on the heap: [`Cell`] holds a suspended task's frame (or its deferred
//! return value), its [`Join`] counter, and where its own value goes ([`Dest`]). This module owns
//! their layout, their allocation (with each worker's [`CellCache`]) and the type-erased entry
//! that resumes a cell whose children are all done ([`Header::resume`]). What resuming does (run
//! the next segment, or deliver the deferred value) is the segment runner's, reached through
//! [`Exec`]: this module is generic over the scheduler that implements it and names neither the
//! worker nor the segment runner. It does not decide when anything runs (the worker loop and the
//! segment runner do).
//!
//! # Life of a frame
//!
//! A segment allocates its task's cell at its first spawn that becomes a real task, before
//! pushing that child, so the child's destination (`frame + Place offset`) is known when it is
//! pushed. Children write their results straight into the cell's frame storage while the segment
//! is still running; when the segment ends with `Step::Sync(frame)` the owner copies its frame
//! value into the storage *around* the byte ranges its real children own (each child writes only
//! its own `Place` range, the owner every other byte, so no byte has two writers), then seals the
//! join counter. Whoever brings the counter to 0 — the last child, or the owner when the children
//! were faster — resumes the frame: it reads the frame out, runs the next segment (reusing the
//! cell for that segment's children) and finally frees the cell. A `Step::Return(v)` with
//! children outstanding (an implicit sync) stores `v` in the cell instead of a frame; resuming
//! such a cell delivers `v`.

use super::join::Join;
use crate::task::CilkTask;
use std::alloc::Layout;
use std::mem::MaybeUninit;
use std::ptr::{self, NonNull};

/// What a scheduler provides for its frames (the stealing scheduler's `worker::Stealing`, which
/// the segment runner implements): the per-thread state its tasks run on, and how a cell of one
/// task type resumes. The storage here is generic over it, so it needs neither.
pub(super) trait Exec: Sized + 'static {
    /// The per-thread state a task runs on, during a run that borrows `'r`.
    type Worker<'r>;

    /// Resumes cell `h` of task `T` whose counter reached 0: delivers its deferred value, or runs
    /// its next segment (reusing the cell). Returns the next ready frame, if delivering made one
    /// ready.
    ///
    /// # Safety
    /// As [`Header::resume`], and `h` must be a `Cell<Self, T>`.
    unsafe fn resume_cell<T: CilkTask>(h: NonNull<Header<Self>>, w: &mut Self::Worker<'_>) -> Ready<Self>;
}

/// Where a task's value goes: a typed location inside the parent's frame storage (null for a
/// discarded result) and the parent's header to signal (null for the root).
pub(super) struct Dest<K: Exec> {
    pub(super) slot: *mut u8,
    pub(super) parent: *mut Header<K>,
}

impl<K: Exec> Clone for Dest<K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K: Exec> Copy for Dest<K> {}

/// What a resume or a delivery found ready to run next: a frame whose children are all done.
pub(super) type Ready<K> = Option<NonNull<Header<K>>>;

/// Resumes a cell of one task type (`Exec::resume_cell::<T>`, monomorphized).
type ResumeFn<K> = for<'r> unsafe fn(NonNull<Header<K>>, &mut <K as Exec>::Worker<'r>) -> Ready<K>;

/// `Header::next` of a cell that holds a deferred return value instead of a frame.
pub(super) const DEFERRED: usize = usize::MAX;

/// The type-erased head of every [`Cell`]; children hold a pointer to it.
#[repr(C)]
pub(super) struct Header<K: Exec> {
    pub(super) join: Join,
    /// Runs the continuation; set at allocation.
    resume: ResumeFn<K>,
    /// The task's own destination. Written by the owner before the seal, read by the resumer.
    pub(super) dest: Dest<K>,
    /// The segment to run next, or [`DEFERRED`]. Written before the seal.
    pub(super) next: usize,
    /// The task's recursion depth. Written before the seal.
    pub(super) depth: usize,
}

impl<K: Exec> Header<K> {
    /// Runs the continuation of a cell whose join counter reached 0.
    ///
    /// # Safety
    /// `h` must be a live cell whose counter this thread brought to 0 (so it owns the cell).
    pub(super) unsafe fn resume(h: NonNull<Header<K>>, w: &mut K::Worker<'_>) -> Ready<K> {
        // SAFETY: the caller owns the live cell; `resume` was set at allocation and never changes.
        unsafe { ((*h.as_ptr()).resume)(h, w) }
    }
}

/// A frame of task `T` on the heap. `#[repr(C)]` with the header first, so a `*mut Header` of a
/// cell is a `*mut Cell<K, T>` for the `T` its `resume` function was made for.
#[repr(C)]
pub(super) struct Cell<K: Exec, T: CilkTask> {
    head: Header<K>,
    frame: MaybeUninit<T::Frame>,
    ret: MaybeUninit<T::Output>,
}

impl<K: Exec, T: CilkTask> Cell<K, T> {
    /// Bytes of one cell, for the stats.
    pub(super) const BYTES: usize = std::mem::size_of::<Self>();

    /// The size class of this cell in a [`CellCache`], if it has one.
    const CLASS: Option<usize> = class_of(Layout::new::<Self>());

    /// A new cell with a zero counter, from `cache` when it holds a freed cell of this size. The
    /// caller accounts for it (the worker's live-frame count).
    pub(super) fn alloc(cache: &mut CellCache) -> *mut Header<K> {
        let head = Header {
            join: Join::new(),
            resume: K::resume_cell::<T>,
            dest: Dest { slot: ptr::null_mut(), parent: ptr::null_mut() },
            next: 0,
            depth: 0,
        };
        let Some(class) = Self::CLASS else {
            let cell = Box::new(Cell::<K, T> { head, frame: MaybeUninit::uninit(), ret: MaybeUninit::uninit() });
            return Box::into_raw(cell).cast();
        };
        let block = cache.take(class);
        // SAFETY: `block` is an allocation of `class_layout(class)`, at least as large and as
        // aligned as a `Cell<K, T>` (`class_of`), that nobody else uses; the header is the cell's
        // first field (`repr(C)`); the frame and value storage stay uninitialized.
        unsafe { block.as_ptr().cast::<Header<K>>().write(head) };
        block.as_ptr().cast()
    }

    /// Frees a cell made by [`Cell::alloc`] for this `T`, without dropping its contents (the
    /// frame was moved out, or was never complete): into `cache` while it has room.
    ///
    /// # Safety
    /// `h` came from `Cell::<K, T>::alloc`, is owned by the caller and is not used afterwards.
    pub(super) unsafe fn free(cache: &mut CellCache, h: *mut Header<K>) {
        match Self::CLASS {
            // SAFETY: a cell with a class came from `CellCache::take` of that class (`alloc`),
            // and the caller gives it up.
            Some(class) => unsafe { cache.put(class, h.cast()) },
            // SAFETY: guaranteed by the caller (a boxed cell); `MaybeUninit` fields have no drop
            // glue.
            None => drop(unsafe { Box::from_raw(h.cast::<Cell<K, T>>()) }),
        }
    }

    /// The first byte of the frame storage of cell `h`.
    ///
    /// # Safety
    /// `h` must be a live `Cell<K, T>`.
    pub(super) unsafe fn frame_ptr(h: *mut Header<K>) -> *mut u8 {
        // SAFETY: `h` is a live `Cell<K, T>` (caller); `addr_of_mut!` makes no reference.
        unsafe { ptr::addr_of_mut!((*h.cast::<Cell<K, T>>()).frame).cast() }
    }

    /// Stores a deferred return value.
    ///
    /// # Safety
    /// `h` must be a live `Cell<K, T>` owned by the caller (before its seal).
    pub(super) unsafe fn put_deferred(h: *mut Header<K>, v: T::Output) {
        // SAFETY: as above; nothing else reads or writes `ret` before the seal.
        unsafe { ptr::addr_of_mut!((*h.cast::<Cell<K, T>>()).ret).write(MaybeUninit::new(v)) };
    }

    /// Takes what a finished segment left in cell `h`: its deferred value, or its frame.
    ///
    /// # Safety
    /// `h` must be a live `Cell<K, T>` whose counter reached 0 through this thread (or `all_done`
    /// held), with `next` as stored by its owner.
    pub(super) unsafe fn take(h: *mut Header<K>, next: usize) -> Result<T::Frame, T::Output> {
        let cell = h.cast::<Cell<K, T>>();
        if next == DEFERRED {
            // SAFETY: the owner wrote `ret` before sealing; the counter's acquire orders it.
            Err(unsafe { ptr::addr_of!((*cell).ret).read().assume_init() })
        } else {
            // SAFETY: every byte of the frame that is not padding was written, by the owner or by
            // the child that owns its range, before their counter operations, which this thread
            // acquired (module docs of `join`).
            Ok(unsafe { ptr::addr_of!((*cell).frame).cast::<T::Frame>().read() })
        }
    }
}

/// Bytes per size class of [`CellCache`] (a cache line: cells never share one, so two workers
/// touching two cells never contend for a line), and the number of classes.
const CLASS_BYTES: usize = 64;
const CLASSES: usize = 8;
/// Freed cells a worker keeps per class (at most 8 × 64 × 512 bytes = 256 KiB a worker).
const KEEP: usize = 64;

/// The size class of a cell of `layout`: `None` when it is larger than the largest class or
/// needs a stronger alignment than a class gives.
const fn class_of(layout: Layout) -> Option<usize> {
    if layout.align() > CLASS_BYTES || layout.size() > CLASS_BYTES * CLASSES || layout.size() == 0 {
        return None;
    }
    Some(layout.size().div_ceil(CLASS_BYTES) - 1)
}

/// The layout of every block of size class `class`.
fn class_layout(class: usize) -> Layout {
    match Layout::from_size_align((class + 1) * CLASS_BYTES, CLASS_BYTES) {
        Ok(l) => l,
        // A multiple of 64 bytes up to 512, aligned to 64: always a valid layout.
        Err(_) => unreachable!("class layouts are valid"),
    }
}

/// One worker's freed cells, by size class, for its next cells: a suspended task's cell is
/// allocated and freed once per task, and most are freed by the worker that allocated them
/// within a few tasks, so a short per-worker list serves most allocations without the global
/// allocator (whose free path was ~40 of the ~700 instructions of a task, callgrind). A cell
/// freed on another worker goes to that worker's list: every block of a class has the same
/// layout. Dropping the cache (the worker leaving its run) frees what it holds.
#[derive(Default)]
pub(super) struct CellCache {
    free: [Vec<NonNull<u8>>; CLASSES],
}

impl CellCache {
    /// A block of `class_layout(class)`, owned by the caller.
    fn take(&mut self, class: usize) -> NonNull<u8> {
        if let Some(b) = self.free[class].pop() {
            return b;
        }
        let layout = class_layout(class);
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { std::alloc::alloc(layout) };
        match NonNull::new(p) {
            Some(b) => b,
            None => std::alloc::handle_alloc_error(layout),
        }
    }

    /// Gives back a block of `class` (kept while the list has room, else freed).
    ///
    /// # Safety
    /// `block` came from [`CellCache::take`] of `class` (on any worker's cache) and is not used
    /// afterwards.
    unsafe fn put(&mut self, class: usize, block: *mut u8) {
        let Some(block) = NonNull::new(block) else { return };
        let list = &mut self.free[class];
        if list.len() < KEEP {
            if list.capacity() == 0 {
                list.reserve_exact(KEEP);
            }
            list.push(block);
        } else {
            // SAFETY: guaranteed by the caller (allocated with this layout, given up).
            unsafe { std::alloc::dealloc(block.as_ptr(), class_layout(class)) };
        }
    }
}

impl Drop for CellCache {
    fn drop(&mut self) {
        for (class, list) in self.free.iter_mut().enumerate() {
            for b in list.drain(..) {
                // SAFETY: every block in the lists came from `take` of its class and was given up.
                unsafe { std::alloc::dealloc(b.as_ptr(), class_layout(class)) };
            }
        }
    }
}

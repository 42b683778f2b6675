//! A stealable task: [`Job`], what sits in a worker's deque. It owns the task record (the
//! callee's arguments, its destination, its depth) and how to run or discard it, with the callee's
//! type erased to two monomorphized function pointers, so running a job needs no registry lookup.
//!
//! A record of up to [`INLINE_BYTES`] (fib's is 40 bytes, queens' 48) lives inside the job
//! itself, so creating and running such a task allocates nothing: the deque moves the record
//! with the job (a job is a few cache-line-sized words). A larger record goes on the heap.

use super::frame::{deliver, Dest, Ready};
use super::segment::{run_segments, Ended, Link, Start};
use super::worker::Worker;
use crate::task::CilkTask;
use std::mem::{align_of, size_of, ManuallyDrop, MaybeUninit};
use std::ptr::NonNull;

/// The largest task record kept inside its job instead of on the heap.
pub(super) const INLINE_BYTES: usize = 48;

/// A job's record storage: the record itself when it fits ([`fits`]), else a pointer to its
/// heap copy in the first word.
#[repr(C, align(16))]
struct Store([MaybeUninit<u8>; INLINE_BYTES]);

/// Whether `C`'s record lives inside its job.
const fn fits<C: CilkTask>() -> bool {
    size_of::<Record<C>>() <= INLINE_BYTES && align_of::<Record<C>>() <= align_of::<Store>()
}

/// The record of one spawned task of `C` (inside its job, or on the heap: [`fits`]).
struct Record<C: CilkTask> {
    args: C::Args,
    dest: Dest,
    depth: usize,
    /// The task's level in its worker's splitting region (the spawner's plus the spawn's
    /// weight): where it resumes counting when its own worker runs it ([`Job::run`]).
    nest: usize,
}

/// A spawned task waiting in a deque. Dropping a job that never ran frees its record (only a
/// failing run drops jobs; its parent's frame then never resumes).
pub(super) struct Job {
    store: Store,
    run: unsafe fn(&mut Store, &mut Worker<'_>, bool) -> Ready,
    discard: unsafe fn(&mut Store),
}

// SAFETY: a job is a unique owner of its record (a `Record<C>`, inline or boxed, of `Send` data:
// `C::Args: Send`, and `Dest` points into a frame that is shared by protocol, see `frame`);
// moving it to another worker moves that ownership.
unsafe impl Send for Job {}

impl Job {
    /// Bytes of one record of `C`, for the stats.
    pub(super) const fn bytes<C: CilkTask>() -> usize {
        std::mem::size_of::<Record<C>>()
    }

    /// A job running `C` with `args`, delivering to `dest`, at recursion `depth` and level `nest`
    /// of the splitting region (0 for the root and prioritized tasks).
    pub(super) fn new<C: CilkTask>(args: C::Args, dest: Dest, depth: usize, nest: usize) -> Job {
        let record = Record::<C> { args, dest, depth, nest };
        let mut store = Store([MaybeUninit::uninit(); INLINE_BYTES]);
        if fits::<C>() {
            // SAFETY: the record fits the store's size and alignment (`fits`).
            unsafe { store.0.as_mut_ptr().cast::<Record<C>>().write(record) };
        } else {
            let boxed = NonNull::from(Box::leak(Box::new(record)));
            // SAFETY: a pointer fits the store (16-byte aligned, 48 bytes).
            unsafe { store.0.as_mut_ptr().cast::<NonNull<Record<C>>>().write(boxed) };
        }
        Job { store, run: run_record::<C>, discard: discard_record::<C> }
    }

    /// Runs the task (its segments until it finishes or suspends). Returns a frame made ready by
    /// its delivery, if any. `own`: the job comes from this worker's own deque, so its spawns
    /// go on counting the splitting region's levels where its spawner left off (see
    /// [`policy`](super::policy)); a stolen or prioritized job starts from 0.
    pub(super) fn run(self, w: &mut Worker<'_>, own: bool) -> Ready {
        let mut job = ManuallyDrop::new(self);
        let run = job.run;
        // SAFETY: the record was made by `new` for the `C` of `run`, and `ManuallyDrop` keeps
        // `Drop` from dropping it a second time.
        unsafe { run(&mut job.store, w, own) }
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        // SAFETY: the record was made by `new` for the `C` of `discard` and was not run.
        unsafe { (self.discard)(&mut self.store) }
    }
}

/// Moves the record out of `store` (freeing its heap copy, if any).
///
/// # Safety
/// `store` was filled by `Job::new::<C>`, and its record is not taken again.
unsafe fn take<C: CilkTask>(store: &mut Store) -> Record<C> {
    let at = store.0.as_mut_ptr();
    if fits::<C>() {
        // SAFETY: `new` wrote a `Record<C>` here (guaranteed by the caller).
        unsafe { at.cast::<Record<C>>().read() }
    } else {
        // SAFETY: `new` wrote the pointer of a leaked `Box<Record<C>>` here.
        *unsafe { Box::from_raw(at.cast::<NonNull<Record<C>>>().read().as_ptr()) }
    }
}

/// # Safety
/// `store` came from `Job::new::<C>` and its record is consumed here.
unsafe fn run_record<C: CilkTask>(store: &mut Store, w: &mut Worker<'_>, own: bool) -> Ready {
    // SAFETY: guaranteed by the caller.
    let Record { args, dest, depth, nest } = unsafe { take::<C>(store) };
    w.frame_free(Job::bytes::<C>());
    w.nest = if own { nest } else { 0 };
    match run_segments::<C>(w, Start::Pre(args), Link::Dest(dest), depth, std::ptr::null_mut()) {
        Ended::Delivered(ready) => ready,
        Ended::Suspended => None,
        // SAFETY: a `Link::Dest` task never hands its value back; deliver it if it did.
        Ended::Value(v) => unsafe { deliver::<C::Output>(w, dest, v) },
    }
}

/// # Safety
/// `store` came from `Job::new::<C>` and its record is consumed here.
unsafe fn discard_record<C: CilkTask>(store: &mut Store) {
    // SAFETY: guaranteed by the caller. The record (its arguments) is dropped here.
    let _record = unsafe { take::<C>(store) };
}

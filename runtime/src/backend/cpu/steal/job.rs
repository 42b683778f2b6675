//! A stealable task: [`Job`], what sits in a worker's deque. It owns the task record (the
//! callee's arguments, its destination, its depth) and its type-erased entries, two monomorphized
//! function pointers that run or discard it, so running a job needs no registry lookup. What
//! running a record does is the segment runner's, reached through [`RunJob`]: this module is
//! generic over the scheduler that implements it and names neither the worker nor the segment
//! runner.
//!
//! A record of up to [`INLINE_BYTES`] (fib's is 40 bytes, queens' 48) lives inside the job
//! itself, so creating and running such a task allocates nothing: the deque moves the record
//! with the job (a job is a few cache-line-sized words). A larger record goes on the heap.

use super::frame::{Dest, Exec, Ready};
use crate::task::CilkTask;
use std::mem::{align_of, size_of, ManuallyDrop, MaybeUninit};
use std::ptr::NonNull;

/// How a scheduler runs the record of a job (the stealing scheduler's `worker::Stealing`, which
/// the segment runner implements).
pub(super) trait RunJob: Exec {
    /// Runs a task of `C` from its record, taken out of its job: from `args`, delivering to
    /// `dest`, at recursion `depth` and level `nest` of the splitting region (`own`: the job came
    /// from this worker's own deque, see [`Job::run`]). Returns a frame made ready by its
    /// delivery, if any.
    fn run_job<C: CilkTask>(
        w: &mut Self::Worker<'_>,
        args: C::Args,
        dest: Dest<Self>,
        depth: usize,
        nest: usize,
        own: bool,
    ) -> Ready<Self>;
}

/// The largest task record kept inside its job instead of on the heap.
pub(super) const INLINE_BYTES: usize = 48;

/// A job's record storage: the record itself when it fits ([`fits`]), else a pointer to its
/// heap copy in the first word.
#[repr(C, align(16))]
struct Store([MaybeUninit<u8>; INLINE_BYTES]);

/// Whether `C`'s record lives inside its job.
const fn fits<K: Exec, C: CilkTask>() -> bool {
    size_of::<Record<K, C>>() <= INLINE_BYTES && align_of::<Record<K, C>>() <= align_of::<Store>()
}

/// The record of one spawned task of `C` (inside its job, or on the heap: [`fits`]).
struct Record<K: Exec, C: CilkTask> {
    args: C::Args,
    dest: Dest<K>,
    depth: usize,
    /// The task's level in its worker's splitting region (the spawner's plus the spawn's
    /// weight): where it resumes counting when its own worker runs it ([`Job::run`]).
    nest: usize,
}

/// A spawned task waiting in a deque. Dropping a job that never ran frees its record (only a
/// failing run drops jobs; its parent's frame then never resumes).
pub(super) struct Job<K: RunJob> {
    store: Store,
    run: for<'r> unsafe fn(&mut Store, &mut <K as Exec>::Worker<'r>, bool) -> Ready<K>,
    discard: unsafe fn(&mut Store),
}

// SAFETY: a job is a unique owner of its record (a `Record<K, C>`, inline or boxed, of `Send`
// data: `C::Args: Send`, and `Dest` points into a frame that is shared by protocol, see `frame`);
// moving it to another worker moves that ownership.
unsafe impl<K: RunJob> Send for Job<K> {}

impl<K: RunJob> Job<K> {
    /// Bytes of one record of `C`, for the stats.
    pub(super) const fn bytes<C: CilkTask>() -> usize {
        std::mem::size_of::<Record<K, C>>()
    }

    /// A job running `C` with `args`, delivering to `dest`, at recursion `depth` and level `nest`
    /// of the splitting region (0 for the root and prioritized tasks).
    pub(super) fn new<C: CilkTask>(args: C::Args, dest: Dest<K>, depth: usize, nest: usize) -> Self {
        let record = Record::<K, C> { args, dest, depth, nest };
        let mut store = Store([MaybeUninit::uninit(); INLINE_BYTES]);
        if fits::<K, C>() {
            // SAFETY: the record fits the store's size and alignment (`fits`).
            unsafe { store.0.as_mut_ptr().cast::<Record<K, C>>().write(record) };
        } else {
            let boxed = NonNull::from(Box::leak(Box::new(record)));
            // SAFETY: a pointer fits the store (16-byte aligned, 48 bytes).
            unsafe { store.0.as_mut_ptr().cast::<NonNull<Record<K, C>>>().write(boxed) };
        }
        Job { store, run: run_record::<K, C>, discard: discard_record::<K, C> }
    }

    /// Runs the task (its segments until it finishes or suspends). Returns a frame made ready by
    /// its delivery, if any. `own`: the job comes from this worker's own deque, so its spawns
    /// go on counting the splitting region's levels where its spawner left off (see
    /// [`policy`](super::policy)); a stolen or prioritized job starts from 0.
    pub(super) fn run(self, w: &mut K::Worker<'_>, own: bool) -> Ready<K> {
        let mut job = ManuallyDrop::new(self);
        let run = job.run;
        // SAFETY: the record was made by `new` for the `C` of `run`, and `ManuallyDrop` keeps
        // `Drop` from dropping it a second time.
        unsafe { run(&mut job.store, w, own) }
    }
}

impl<K: RunJob> Drop for Job<K> {
    fn drop(&mut self) {
        // SAFETY: the record was made by `new` for the `C` of `discard` and was not run.
        unsafe { (self.discard)(&mut self.store) }
    }
}

/// Moves the record out of `store` (freeing its heap copy, if any).
///
/// # Safety
/// `store` was filled by `Job::<K>::new::<C>`, and its record is not taken again.
unsafe fn take<K: Exec, C: CilkTask>(store: &mut Store) -> Record<K, C> {
    let at = store.0.as_mut_ptr();
    if fits::<K, C>() {
        // SAFETY: `new` wrote a `Record<K, C>` here (guaranteed by the caller).
        unsafe { at.cast::<Record<K, C>>().read() }
    } else {
        // SAFETY: `new` wrote the pointer of a leaked `Box<Record<K, C>>` here.
        *unsafe { Box::from_raw(at.cast::<NonNull<Record<K, C>>>().read().as_ptr()) }
    }
}

/// # Safety
/// `store` came from `Job::<K>::new::<C>` and its record is consumed here.
unsafe fn run_record<K: RunJob, C: CilkTask>(store: &mut Store, w: &mut K::Worker<'_>, own: bool) -> Ready<K> {
    // SAFETY: guaranteed by the caller.
    let Record { args, dest, depth, nest } = unsafe { take::<K, C>(store) };
    K::run_job::<C>(w, args, dest, depth, nest, own)
}

/// # Safety
/// `store` came from `Job::<K>::new::<C>` and its record is consumed here.
unsafe fn discard_record<K: Exec, C: CilkTask>(store: &mut Store) {
    // SAFETY: guaranteed by the caller. The record (its arguments) is dropped here.
    let _record = unsafe { take::<K, C>(store) };
}

//! A stealable task: [`Job`], what sits in a worker's deque. It owns the task record (the
//! callee's arguments, its destination, its depth) and how to run or discard it, with the callee's
//! type erased to two monomorphized function pointers, so running a job needs no registry lookup.

use super::frame::{deliver, Dest, Ready};
use super::segment::{run_segments, Ended, Link, Start};
use super::worker::Worker;
use crate::task::CilkTask;
use std::mem::ManuallyDrop;
use std::ptr::NonNull;

/// The heap record of one spawned task of `C`.
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
    record: NonNull<u8>,
    run: unsafe fn(NonNull<u8>, &mut Worker<'_>, bool) -> Ready,
    discard: unsafe fn(NonNull<u8>),
}

// SAFETY: a job is a unique owner of its record (a `Box<Record<C>>` of `Send` data: `C::Args:
// Send`, and `Dest` points into a frame that is shared by protocol, see `frame`); moving it to
// another worker moves that ownership.
unsafe impl Send for Job {}

impl Job {
    /// Bytes of one record of `C`, for the stats.
    pub(super) const fn bytes<C: CilkTask>() -> usize {
        std::mem::size_of::<Record<C>>()
    }

    /// A job running `C` with `args`, delivering to `dest`, at recursion `depth` and level `nest`
    /// of the splitting region (0 for the root and prioritized tasks).
    pub(super) fn new<C: CilkTask>(args: C::Args, dest: Dest, depth: usize, nest: usize) -> Job {
        let record = NonNull::from(Box::leak(Box::new(Record::<C> { args, dest, depth, nest }))).cast();
        Job { record, run: run_record::<C>, discard: discard_record::<C> }
    }

    /// Runs the task (its segments until it finishes or suspends). Returns a frame made ready by
    /// its delivery, if any. `own`: the job comes from this worker's own deque, so its spawns
    /// go on counting the splitting region's levels where its spawner left off (see
    /// [`policy`](super::policy)); a stolen or prioritized job starts from 0.
    pub(super) fn run(self, w: &mut Worker<'_>, own: bool) -> Ready {
        let job = ManuallyDrop::new(self);
        // SAFETY: the record was made by `new` for the `C` of `run`, and `ManuallyDrop` keeps
        // `Drop` from freeing it a second time.
        unsafe { (job.run)(job.record, w, own) }
    }
}

impl Drop for Job {
    fn drop(&mut self) {
        // SAFETY: the record was made by `new` for the `C` of `discard` and was not run.
        unsafe { (self.discard)(self.record) }
    }
}

/// # Safety
/// `record` came from `Job::new::<C>` and is consumed here.
unsafe fn run_record<C: CilkTask>(record: NonNull<u8>, w: &mut Worker<'_>, own: bool) -> Ready {
    // SAFETY: guaranteed by the caller.
    let Record { args, dest, depth, nest } = *unsafe { Box::from_raw(record.cast::<Record<C>>().as_ptr()) };
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
/// `record` came from `Job::new::<C>` and is consumed here.
unsafe fn discard_record<C: CilkTask>(record: NonNull<u8>) {
    // SAFETY: guaranteed by the caller.
    drop(unsafe { Box::from_raw(record.cast::<Record<C>>().as_ptr()) });
}

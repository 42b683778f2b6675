//! The join counter of a continuation frame: which of a task and its children is the *last* to
//! finish, and so runs the continuation. It owns this one atomic protocol and nothing else
//! (no frame layout, no scheduling); `runtime/tests/join_loom.rs` model-checks it with loom.
//!
//! # Protocol
//!
//! A segment's children are pushed (and may run, be stolen and finish) *while the segment is
//! still running*, so the counter can be touched before the owner knows how many children it
//! will have. It therefore starts at 0 and counts in two directions:
//!
//! - each child, after writing its result into the frame, subtracts 1 ([`Join::child_done`]);
//! - the owner, after writing the frame, adds the number `n` of children it spawned
//!   ([`Join::seal`]), once.
//!
//! The counter reaches 0 exactly once, by the last of these `n + 1` operations: before the seal it
//! is `-(children done) <= 0` and a child sees a previous value of `1` only after the seal; the
//! owner sees `-n` only if all `n` children are done. Whoever brings it to 0 runs the
//! continuation. [`Join::all_done`] lets the owner skip the seal when every child has already
//! finished (no other party will touch the counter again), and [`Join::reset`] makes a frame that
//! its owner holds exclusively reusable for the next segment.
//!
//! # Memory orderings
//!
//! Children write their results with plain stores, then `fetch_sub(AcqRel)`; the owner writes the
//! frame with plain stores, then `fetch_add(AcqRel)`. All of these read-modify-writes belong to
//! the counter's release sequence, so the party whose operation reads the final value (and
//! brings it to 0) synchronizes with every earlier party: it acquires every child's result and
//! the owner's frame before it runs the continuation. `all_done` is an `Acquire` load that reads
//! the last child's decrement, with the same effect. `reset` is `Relaxed`: it runs only while one
//! thread owns the frame (after the counter reached 0, before any new child exists), and the
//! push of the next child to a deque publishes it.

#[cfg(loom)]
use loom::sync::atomic::{AtomicIsize, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicIsize, Ordering};

/// A frame's join counter (see the module docs for the protocol).
#[derive(Debug)]
pub struct Join {
    n: AtomicIsize,
}

impl Default for Join {
    fn default() -> Self {
        Self::new()
    }
}

impl Join {
    /// A counter for a segment that has spawned nothing yet.
    pub fn new() -> Self {
        Join { n: AtomicIsize::new(0) }
    }

    /// A child finished; call it after writing the child's result. Returns `true` when the
    /// caller was the last party and must run the continuation.
    #[inline]
    pub fn child_done(&self) -> bool {
        self.n.fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// The owner's segment ended having spawned `children >= 1` children; call it after writing
    /// the frame. Returns `true` when every child had already finished, so the owner runs the
    /// continuation itself.
    #[inline]
    pub fn seal(&self, children: usize) -> bool {
        let c = children as isize;
        self.n.fetch_add(c, Ordering::AcqRel) == -c
    }

    /// Before [`seal`](Join::seal): whether all `children` have already finished. When `true` no
    /// other party will ever touch the counter again, and the owner may continue without sealing.
    #[inline]
    pub fn all_done(&self, children: usize) -> bool {
        self.n.load(Ordering::Acquire) == -(children as isize)
    }

    /// Starts a new segment on a frame its owner holds exclusively (the counter has reached 0, or
    /// `all_done` held).
    #[inline]
    pub fn reset(&self) {
        self.n.store(0, Ordering::Relaxed);
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Join;

    #[test]
    fn the_last_child_resumes_after_the_seal() {
        let j = Join::new();
        assert!(!j.child_done()); // a child finishes before the owner knows the count
        assert!(!j.all_done(3));
        assert!(!j.seal(3));
        assert!(!j.child_done());
        assert!(j.child_done());
    }

    #[test]
    fn the_owner_resumes_when_every_child_was_faster() {
        let j = Join::new();
        assert!(!j.child_done());
        assert!(!j.child_done());
        assert!(j.all_done(2));
        assert!(j.seal(2));
        j.reset();
        assert!(!j.seal(1));
        assert!(j.child_done());
    }
}

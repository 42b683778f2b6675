//! A growable channel: one (task, segment, level) channel of the cpu backend, made of fixed
//! [`Channel`] segments. Producers reserve in the newest segment; when it is full they *spill*
//! into a fresh segment taken from the run's element pool, so a spawn is never dropped — only an
//! exhausted pool stops the run. Consumers drain segments oldest first. Segments that are empty
//! at a quiescent point go back to the pool.
//!
//! The phase protocol of [`Channel`] holds here too: during one dispatch a queue is only produced
//! into or only consumed from (the scheduler dispatches one queue at a time and never produces into
//! the queue it is draining).

use crate::channel::{Channel, Ticket};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::Mutex;

/// The run-wide budget of channel elements that all segments draw from.
#[derive(Debug)]
pub(crate) struct Pool {
    capacity: usize,
    used: AtomicUsize,
    spilled: AtomicUsize,
}

impl Pool {
    pub(crate) fn new(capacity: usize) -> Self {
        Pool { capacity, used: AtomicUsize::new(0), spilled: AtomicUsize::new(0) }
    }

    fn take(&self, n: usize) -> bool {
        // Relaxed: a pure counter; nothing is published through it.
        let before = self.used.fetch_add(n, Ordering::Relaxed);
        if before + n > self.capacity {
            self.used.fetch_sub(n, Ordering::Relaxed);
            return false;
        }
        true
    }

    fn give(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::Relaxed);
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Segments allocated beyond each queue's first.
    pub(crate) fn spilled(&self) -> usize {
        self.spilled.load(Ordering::Relaxed)
    }
}

/// The pool could not supply another segment.
#[derive(Debug)]
pub(crate) struct Exhausted;

/// One growable channel.
pub(crate) struct Queue<E> {
    segment_capacity: usize,
    /// All segments, oldest first. Boxed so their addresses are stable while the list changes
    /// (producers hold `&Channel` through `tail` while another producer appends).
    #[allow(clippy::vec_box)]
    segments: Mutex<Vec<Box<Channel<E>>>>,
    /// The segment producers reserve in (the last of `segments`), or null before the first.
    tail: AtomicPtr<Channel<E>>,
}

impl<E> Queue<E> {
    pub(crate) fn new(segment_capacity: usize) -> Self {
        Queue {
            segment_capacity: segment_capacity.max(1).next_power_of_two(),
            segments: Mutex::new(Vec::new()),
            tail: AtomicPtr::new(std::ptr::null_mut()),
        }
    }

    /// Reserves one slot, spilling into a new segment when the newest one is full.
    pub(crate) fn reserve(&self, pool: &Pool) -> Result<(&Channel<E>, Ticket), Exhausted> {
        self.reserve_n(1, pool).map(|(seg, t, _)| (seg, t))
    }

    /// Reserves a run of up to `n` consecutive slots of one segment with one fetch-and-add
    /// ([`Channel::talloc_n`]), spilling into a new segment when the newest one is full: returns
    /// the segment, the run's first ticket and its length (`1..=n`, for `n >= 1`). Callers that
    /// need `n` slots loop until they got them all (a partial run filled the old segment, so the
    /// next call spills), and publish each run with [`Channel::enq_n`].
    pub(crate) fn reserve_n(&self, n: usize, pool: &Pool) -> Result<(&Channel<E>, Ticket, usize), Exhausted> {
        loop {
            // Acquire: pairs with the Release store below, so the segment's construction is visible.
            let tail = self.tail.load(Ordering::Acquire);
            if !tail.is_null() {
                // SAFETY: `tail` points into a `Box` owned by `segments`; segments are only removed
                // by `recycle`, which takes `&mut self`, so none is freed while `&self` is alive.
                let seg = unsafe { &*tail };
                if let Some((t, got)) = seg.talloc_n(n.max(1)) {
                    return Ok((seg, t, got));
                }
            }
            self.grow(tail, pool)?;
        }
    }

    /// Appends a segment unless another producer already replaced `seen`.
    fn grow(&self, seen: *mut Channel<E>, pool: &Pool) -> Result<(), Exhausted> {
        let mut segs = self.segments.lock().unwrap_or_else(|e| e.into_inner());
        if self.tail.load(Ordering::Acquire) != seen {
            return Ok(()); // someone else grew it; retry there
        }
        if !pool.take(self.segment_capacity) {
            return Err(Exhausted);
        }
        if !segs.is_empty() {
            pool.spilled.fetch_add(1, Ordering::Relaxed);
        }
        let mut seg = Box::new(Channel::new(self.segment_capacity));
        let ptr: *mut Channel<E> = &mut *seg;
        segs.push(seg);
        // Release: publishes the fully constructed segment to producers' Acquire loads.
        self.tail.store(ptr, Ordering::Release);
        Ok(())
    }

    /// Published elements waiting, all segments (exact at a quiescent point).
    pub(crate) fn len(&self) -> usize {
        self.segments.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|s| s.len()).sum()
    }

    /// Slots in use, all segments (exact at a quiescent point).
    pub(crate) fn occupancy(&self) -> usize {
        self.segments.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|s| s.occupancy()).sum()
    }

    /// Plans the consumption of up to `n` elements: (segment, count) pairs, oldest first.
    /// Call at a quiescent point; the plan stays valid until `recycle`.
    pub(crate) fn plan(&self, n: usize) -> Vec<(&Channel<E>, usize)> {
        let segs = self.segments.lock().unwrap_or_else(|e| e.into_inner());
        let mut left = n;
        let mut plan = Vec::new();
        for seg in segs.iter() {
            if left == 0 {
                break;
            }
            let take = seg.len().min(left);
            if take > 0 {
                let ptr: *const Channel<E> = &**seg;
                // SAFETY: the Box stays in `segments` until `recycle(&mut self)`, which cannot run
                // while the returned borrows of `self` are alive.
                plan.push((unsafe { &*ptr }, take));
                left -= take;
            }
        }
        plan
    }

    /// Returns empty segments (all but the newest) to the pool. Quiescent point only.
    pub(crate) fn recycle(&mut self, pool: &Pool) {
        let segs = self.segments.get_mut().unwrap_or_else(|e| e.into_inner());
        let Some(last) = segs.len().checked_sub(1) else { return };
        let mut i = 0;
        segs.retain(|s| {
            let keep = i == last || s.occupancy() > 0;
            i += 1;
            if !keep {
                pool.give(s.capacity());
            }
            keep
        });
        // The newest segment is still last, so `tail` is unchanged.
    }

    /// Returns every segment to the pool (end of run).
    pub(crate) fn release(&mut self, pool: &Pool) {
        let segs = self.segments.get_mut().unwrap_or_else(|e| e.into_inner());
        for s in segs.drain(..) {
            pool.give(s.capacity());
        }
        *self.tail.get_mut() = std::ptr::null_mut();
    }
}

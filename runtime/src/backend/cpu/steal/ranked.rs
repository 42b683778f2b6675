//! Prioritized ready work (`spawn!(f(..), priority = key)`): [`Ranked`], one lock-protected
//! binary max-heap per run, shared by all workers, ordered by key, then newest spawn first.
//!
//! Why this structure and not the batched heap twin (`crate::heap`): the stealing scheduler takes
//! one job at a time, at the moment a worker runs out of its own work, so the batch interface of
//! the generalized heap (k keys per node, delete-min of whole batches) would be emptied one key at
//! a time and give nothing back for its node locks; a per-worker heap would serve each worker's
//! best, not the run's best (what best-first branch-and-bound prunes with). A single
//! `Mutex<BinaryHeap>` holds the global order exactly, costs one uncontended lock per push and
//! pop on the cpu backend's few workers, and an atomic length lets a worker skip the lock when it
//! is empty (every run without priority spawns). See `docs/architecture.md`.
//!
//! This module owns the queue only; the worker decides when to look at it.

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// One prioritized job: larger `key` first; among equal keys the later spawn (larger `seq`), so
/// ties are explored depth-first as Cilk's own deque would (a branch-and-bound search with many
/// equal bounds, such as subset sum, would otherwise go breadth-first over all of them: measured
/// on a 30-item subset-sum instance, 4.6 M nodes with oldest-first ties against about 1,000).
struct Entry<J> {
    key: u64,
    seq: u64,
    job: J,
}

impl<J> PartialEq for Entry<J> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}
impl<J> Eq for Entry<J> {}
impl<J> PartialOrd for Entry<J> {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl<J> Ord for Entry<J> {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        self.key.cmp(&other.key).then_with(|| self.seq.cmp(&other.seq))
    }
}

/// The run's prioritized ready jobs (`J` is the scheduler's `Job`).
pub(super) struct Ranked<J> {
    heap: Mutex<(BinaryHeap<Entry<J>>, u64)>,
    /// Jobs in `heap` (`Relaxed`: a hint to skip the lock; the lock orders the jobs themselves).
    len: AtomicUsize,
}

impl<J> Default for Ranked<J> {
    fn default() -> Self {
        Ranked { heap: Mutex::new((BinaryHeap::new(), 0)), len: AtomicUsize::new(0) }
    }
}

impl<J> Ranked<J> {
    /// Adds `job` with priority `key`.
    pub(super) fn push(&self, key: u64, job: J) {
        let mut g = self.heap.lock().unwrap_or_else(|p| p.into_inner());
        let seq = g.1;
        g.1 += 1;
        g.0.push(Entry { key, seq, job });
        self.len.store(g.0.len(), Ordering::Relaxed);
    }

    /// Whether no job waits (a hint: `Relaxed`).
    pub(super) fn is_empty(&self) -> bool {
        self.len.load(Ordering::Relaxed) == 0
    }

    /// The job with the largest key, if any.
    pub(super) fn pop(&self) -> Option<J> {
        if self.len.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut g = self.heap.lock().unwrap_or_else(|p| p.into_inner());
        let e = g.0.pop();
        self.len.store(g.0.len(), Ordering::Relaxed);
        e.map(|e| e.job)
    }
}

#[cfg(test)]
mod tests {
    use super::Ranked;

    #[test]
    fn larger_keys_first_then_newest_first() {
        let r = Ranked::default();
        for (job, key) in [(0u32, 3u64), (1, 9), (2, 3), (3, 1), (4, 9), (5, u64::MAX), (6, 0)] {
            r.push(key, job);
        }
        let order: Vec<u32> = std::iter::from_fn(|| r.pop()).collect();
        assert_eq!(order, vec![5, 4, 1, 2, 0, 3, 6]);
        assert!(r.pop().is_none());
    }
}

//! Prioritized ready work (`spawn!(f(..), priority = key)`): [`Ranked`], one lock-protected
//! binary max-heap per run, shared by all workers, ordered by key, then newest spawn first,
//! holding at most `Config::priority_queue_capacity` jobs.
//!
//! Why this structure and not the batched heap twin (`crate::heap`): the stealing scheduler takes
//! one job at a time, at the moment a worker runs out of its own work, so the batch interface of
//! the generalized heap (k keys per node, delete-min of whole batches) would be emptied one key at
//! a time and give nothing back for its node locks; a per-worker queue would serve each worker's
//! best, not the run's best (what best-first branch-and-bound prunes with). A single
//! `Mutex<BinaryHeap>` holds the global order exactly, costs one uncontended lock per push and
//! pop on the cpu backend's few workers, and an atomic length lets a worker skip the lock when it
//! is empty (every run without priority spawns).
//!
//! **The bound.** A best-first search keeps every pending node, and its frontier can grow to
//! millions (knapsack's strongly correlated instances reached 24 GB). So the queue holds at most
//! `capacity` jobs. A priority spawn that finds it full ([`Ranked::is_full`]) is a plain spawn
//! (the segment runner's lazy task creation: a task on the own deque, an inline sub-kernel call
//! or a serial call), so it runs depth-first in the serial order and its subtree's memory is the
//! usual P × depth; a push that still finds the queue full (another worker filled it after the
//! check) is handed back ([`Ranked::push`]) and goes on the spawner's own deque. A worker takes
//! its own deque's work before the queue's, so once the queue is full the search dives
//! depth-first from the best node it took — the classic hybrid of best-first search under a
//! memory bound: the dive finds good incumbents early and prunes, and the queue is served
//! best-first again as the dives end. Memory is the queue's `capacity` jobs plus, per worker, a
//! depth-first path with its pending siblings: proportional to the live work. (Two variants
//! measured on `knapsack --kind sc --n 200 --r 7000`, 2 cores: handing back the queue's *worst*
//! job, so that it always held the best ones seen, made the workers dive from the worst nodes,
//! more than 5 minutes; putting the new job on the deque, which runs a node's children in the
//! reverse of the serial order, explored 1.1e8 nodes in 26 s at a capacity of 1024.)
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
    /// The jobs, best on top, and the next spawn's sequence number.
    queue: Mutex<(BinaryHeap<Entry<J>>, u64)>,
    /// Jobs in `queue` (`Relaxed`: a hint to skip the lock; the lock orders the jobs themselves).
    len: AtomicUsize,
    /// The most jobs `queue` holds (at least 1).
    capacity: usize,
}

impl<J> Ranked<J> {
    /// An empty queue that holds at most `capacity` jobs (0 counts as 1).
    pub(super) fn new(capacity: usize) -> Self {
        Ranked { queue: Mutex::new((BinaryHeap::new(), 0)), len: AtomicUsize::new(0), capacity: capacity.max(1) }
    }

    /// Adds `job` with priority `key`, or hands it back when the queue is full (the caller runs
    /// it depth-first).
    pub(super) fn push(&self, key: u64, job: J) -> Option<J> {
        let mut g = self.queue.lock().unwrap_or_else(|p| p.into_inner());
        if g.0.len() >= self.capacity {
            return Some(job);
        }
        let seq = g.1;
        g.1 += 1;
        g.0.push(Entry { key, seq, job });
        self.len.store(g.0.len(), Ordering::Relaxed);
        None
    }

    /// Whether the queue is full (a hint: `Relaxed`).
    pub(super) fn is_full(&self) -> bool {
        self.len.load(Ordering::Relaxed) >= self.capacity
    }

    /// Whether no job waits (a hint: `Relaxed`).
    pub(super) fn is_empty(&self) -> bool {
        self.len.load(Ordering::Relaxed) == 0
    }

    /// The job with the largest key (the newest among equal keys), if any.
    pub(super) fn pop(&self) -> Option<J> {
        if self.len.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let mut g = self.queue.lock().unwrap_or_else(|p| p.into_inner());
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
        let r = Ranked::new(usize::MAX);
        for (job, key) in [(0u32, 3u64), (1, 9), (2, 3), (3, 1), (4, 9), (5, u64::MAX), (6, 0)] {
            assert!(r.push(key, job).is_none());
        }
        let order: Vec<u32> = std::iter::from_fn(|| r.pop()).collect();
        assert_eq!(order, vec![5, 4, 1, 2, 0, 3, 6]);
        assert!(r.pop().is_none());
        assert!(r.is_empty());
    }

    #[test]
    fn a_full_queue_hands_the_new_job_back() {
        for capacity in [1, 2, 3] {
            let r = Ranked::new(capacity);
            let keys = [5u64, 1, 9, 5, 7, 0, 9, 3, 8, 2];
            let mut handed_back = Vec::new();
            for (job, &key) in keys.iter().enumerate() {
                if let Some(j) = r.push(key, job) {
                    handed_back.push(j);
                }
                // Never more than the capacity queued.
                assert!(r.len.load(std::sync::atomic::Ordering::Relaxed) <= capacity);
            }
            assert_eq!(handed_back, (capacity..keys.len()).collect::<Vec<_>>(), "capacity {capacity}");
            // The queued ones come out best first; room again after a pop.
            let kept: Vec<usize> = std::iter::from_fn(|| r.pop()).collect();
            let mut first: Vec<(u64, usize)> = keys[..capacity].iter().copied().zip(0..).collect();
            first.sort_unstable_by(|a, b| b.cmp(a));
            assert_eq!(kept, first.iter().map(|&(_, j)| j).collect::<Vec<_>>());
            assert!(r.push(0, 99).is_none());
        }
        // A capacity of 0 holds one job.
        let r = Ranked::new(0);
        assert!(r.push(1, 'a').is_none());
        assert_eq!(r.push(2, 'b'), Some('b'));
        assert_eq!(r.pop(), Some('a'));
    }
}

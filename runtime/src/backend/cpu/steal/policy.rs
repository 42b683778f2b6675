//! Lazy task creation: what a spawn becomes. This module owns the decision only; the segment
//! runner carries it out.
//!
//! A spawn becomes
//! 1. a **task** (a heap record pushed on the worker's own deque, stealable) while that deque
//!    holds fewer than `Config::spawn_queue` tasks, or, inside the splitting region (below), fewer
//!    than `Config::spawn_queue_idle` while some worker is idle: there is then little work for
//!    thieves to take from this worker, so making more is worth its cost (about a heap record and
//!    a deque push/pop). A recursion with one spawn per level therefore makes every spawn a task
//!    (the deque never holds more than the one just pushed) and never recurses on the thread
//!    stack;
//! 2. otherwise an **inline sub-kernel call**: the callee's `prespawn`/`resume` run at once on
//!    this worker's stack, and its own spawns go through this policy again, so its subtree can
//!    still be split when thieves empty the deque. This is the *splitting region*: the spawns
//!    fewer than `Config::inline_nesting` levels below the last task this worker **stole** (or
//!    the root), with the `i`-th spawn of a segment counting as [`weight`]`(i)` levels (the bits
//!    of `i`: a loop of `k` spawns counts like a binary splitting of `k`), so the region ends
//!    where the work below is a small share of the stolen piece whatever the fan-out. The level
//!    goes on counting through the worker's own tasks: a task records its level, and when its
//!    own worker pops it the count resumes there; only a stolen (or prioritized) task, or a
//!    resumed frame, starts again from 0. So a stolen piece of work is split in its top levels
//!    and not again in every task below it. With the count restarting at every task (and one
//!    level per spawn), a worker that always saw some idle worker (the usual case on 16 cores)
//!    ran about one call in ten of fib(35) as an inline sub-kernel call (2.7 million, ~20 ns
//!    each) and made 90,000 tasks; it now makes a few thousand of each (docs/notes/benchmark-history.md,
//!    2 cores, 2026-11-26). Since the region is paid once per steal, it no longer shrinks while
//!    every worker is busy (it used to be a third as deep then, which left serial calls of a
//!    quarter of a stolen fib subtree: milliseconds that no thief could split). An inline
//!    sub-kernel call costs more than a plain call: the frame value is built, stashed results
//!    are written into it and it is moved into the continuation — ~20 ns for fib, measured at
//!    ~80 ns for queens' 256-byte frame. With one worker there is nobody to split for: no inline
//!    sub-kernel calls at all;
//! 3. below that, a **serial call**: the generated serial function (`C::serial`), with no
//!    scheduling cost at all — the automatic cutoff. Its subtree cannot be split, but it sits
//!    several spawns below the piece of work this worker stole, and thieves take the oldest
//!    (largest) tasks of a deque first, so the pieces that cannot be split are the small ones —
//!    in a balanced tree. In an unbalanced one (a UTS binomial tree, where a node's subtree is
//!    tiny or enormous whatever its depth, and Strassen's or cilksort's first levels, where one
//!    serial call is seconds) the deque's pieces are soon gone and the serial call holds the rest
//!    where no thief can reach it. Two rules, driven by the thieves' *demand*, keep pending work
//!    stealable there:
//!    - **no serial call while more workers starve than the deque can feed**: a worker that has
//!      looked at every deque through its spinning phase (`worker::STARVE_ROUNDS` idle rounds, a
//!      few microseconds) and found nothing counts as *hungry*; while at least as many workers
//!      are hungry as the spawner's deque holds tasks (and at least one; it holds `spawn_queue` or more, or it would make
//!      a task), a spawn below the region is an inline sub-kernel call (or a task while the deque
//!      is short, as in the region), never a serial call, so the spawner's next spawns can feed
//!      them within one task's time. (Any hungry worker at all was too weak a signal: on a
//!      loaded machine a worker starves whenever its victim is descheduled, and queens(13) on
//!      2 cores ran 2× slower.)
//!    - **a serial call that starved a worker deepens the region**: a serial call that ends with
//!      the spawner's own deque empty while some worker *started* starving during it (a run-wide
//!      epoch counter, read before and after: two `Relaxed` loads per serial call), and a worker
//!      still starving that has waited at least `worker::STARVED` (50 µs; one clock read, only
//!      in this case), held work that was needed; the run's region becomes [`deepened`]`(its
//!      level)`, half as deep again as that call, so that level and the next ones are split from
//!      then on (geometric, so a tree whose big subtrees hide at every depth is split all the way
//!      down after a few such calls, while a balanced tree, where thieves find siblings in the
//!      deque and never starve that long, keeps its region; without the 50 µs, queens(13) on
//!      2 loaded cores deepened its region on every short wait and ran 2× slower).
//!      keeps its region). The region starts at `Config::inline_nesting` and only grows, per run.
//!
//! This is lazy task creation in the sense of Mohr, Kranz and Halstead (1991) with the
//! deque-occupancy test of lazy binary splitting (Tzannes et al., PPoPP 2010): a spawn costs a
//! task only when a thief may want it. The remaining risk: a serial call of a subtree that is
//! itself very deep recurses on the worker's stack as the serial function would
//! (`Config::stack_bytes`, 64 MiB by default); `Config::max_depth` is not checked inside it.

/// What one spawn becomes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Choice {
    /// A stealable task.
    Task,
    /// The callee's sub-kernels, run at once on this worker.
    Inline,
    /// The callee's serial function, run at once on this worker.
    Serial,
}

/// The policy's thresholds (from `Config` and the worker count).
#[derive(Clone, Copy, Debug)]
pub(super) struct Policy {
    /// Make a task while the own deque holds fewer than this.
    spawn_queue: usize,
    /// ... or fewer than this while some worker is idle.
    spawn_queue_idle: usize,
    /// Run spawns that are not tasks as sub-kernels while fewer than this many levels (weighted,
    /// see [`weight`]) below the last stolen task: the splitting region.
    nesting: usize,
    /// Tests only: make a task at every odd inline nesting, so inline calls end with real
    /// children of their own (which otherwise needs a thief's timing).
    #[cfg(test)]
    pub(super) odd_nesting_tasks: bool,
}

impl Policy {
    /// The policy of `Config::spawn_queue`, `Config::spawn_queue_idle` and
    /// `Config::inline_nesting` for `workers` workers.
    pub(super) fn new(spawn_queue: usize, spawn_queue_idle: usize, inline_nesting: usize, workers: usize) -> Self {
        Policy {
            spawn_queue,
            // One worker: nobody is ever idle while it runs (and nobody to split for).
            spawn_queue_idle: if workers > 1 { spawn_queue_idle.max(spawn_queue) } else { spawn_queue },
            nesting: if workers > 1 { inline_nesting } else { 0 },
            #[cfg(test)]
            odd_nesting_tasks: false,
        }
    }

    /// The splitting region a run starts with (it deepens while the run learns the tree's shape:
    /// [`deepened`]).
    pub(super) fn initial_region(&self) -> usize {
        self.nesting
    }

    /// The choice for a spawn made while the own deque holds `queued` tasks, by a spawner `nest`
    /// levels (weighted, [`weight`] minus 1 included) below the last task this worker stole (see
    /// the module docs), in a run whose splitting region is now `region` levels deep; `idle()`
    /// says whether some worker is idle, `hungry()` how many workers have found nothing to steal
    /// for a while (asked only where the answer matters).
    #[inline]
    pub(super) fn choose(
        &self,
        queued: usize,
        nest: usize,
        region: usize,
        idle: impl FnOnce() -> bool,
        hungry: impl FnOnce() -> usize,
    ) -> Choice {
        #[cfg(test)]
        if self.odd_nesting_tasks && nest % 2 == 1 {
            return Choice::Task;
        }
        if queued < self.spawn_queue {
            return Choice::Task;
        }
        // A serial call cannot be split once it runs: never while more workers starve than this
        // worker's deque can feed.
        if nest >= region && hungry() < queued.max(1) {
            return Choice::Serial;
        }
        if queued < self.spawn_queue_idle && idle() {
            Choice::Task
        } else {
            Choice::Inline
        }
    }
}

/// The splitting region after a serial call made `nest` levels below the last stolen task
/// starved another worker (see the module docs): deep enough that a spawn at that level is split,
/// and half as deep again, so a tree whose big subtrees hide at any depth (a critical branching
/// process) is split all the way down after a few such calls.
#[inline]
pub(super) fn deepened(nest: usize) -> usize {
    nest.saturating_add(nest / 2).saturating_add(2)
}

/// How many levels the `i`-th spawn (from 1) of a segment counts in the splitting region: the
/// bits of `i`, so 1 for the first spawn, 2 for the second and third, 3 for the fourth to
/// seventh... A loop of `k` spawns thus counts like a binary splitting of `k` (about `log2 k`
/// levels for most of them), and fib's smaller second child one level more than its first: the
/// region ends where the work below is about `2^-nesting` of the stolen task's, whatever the
/// fan-out, instead of after a fixed number of spawn levels (8 levels of queens' loops are
/// millions of calls; 8 levels of fib are a few hundred).
#[inline]
pub(super) fn weight(i: usize) -> usize {
    (usize::BITS - i.leading_zeros()) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tasks_while_the_deque_is_short_then_sub_kernels_then_serial_calls() {
        let p = Policy::new(2, 2, 6, 4);
        let r = p.initial_region();
        assert_eq!(r, 6);
        let (yes, no) = (|| true, || false);
        let (one, none_hungry, many) = (|| 1, || 0, || 9);
        // (queued, nest, region, idle, hungry workers)
        assert_eq!(p.choose(0, 9, r, no, none_hungry), Choice::Task);
        assert_eq!(p.choose(1, 0, r, no, none_hungry), Choice::Task);
        assert_eq!(p.choose(2, 0, r, no, none_hungry), Choice::Inline);
        assert_eq!(p.choose(2, 5, r, no, none_hungry), Choice::Inline);
        assert_eq!(p.choose(2, 5, r, yes, none_hungry), Choice::Inline);
        assert_eq!(p.choose(9, 5, r, yes, none_hungry), Choice::Inline);
        assert_eq!(p.choose(2, 6, r, yes, none_hungry), Choice::Serial);
        assert_eq!(p.choose(2, 6, r, no, none_hungry), Choice::Serial);
        // A deeper region (after a serial call starved a worker) splits that level too.
        assert_eq!(p.choose(2, 6, deepened(6), no, none_hungry), Choice::Inline);
        let every = Policy::new(usize::MAX, usize::MAX, 0, 2);
        assert_eq!(every.choose(1 << 40, 0, every.initial_region(), yes, many), Choice::Task);
        let none = Policy::new(0, 0, 0, 2);
        assert_eq!(none.choose(0, 0, 0, yes, none_hungry), Choice::Serial);
        let alone = Policy::new(2, 2, 6, 1);
        assert_eq!(alone.initial_region(), 0);
        assert_eq!(alone.choose(0, 0, 0, yes, none_hungry), Choice::Task);
        assert_eq!(alone.choose(2, 0, 0, yes, none_hungry), Choice::Serial);
        let wide = Policy::new(2, 8, 6, 4);
        assert_eq!(wide.choose(5, 0, r, yes, none_hungry), Choice::Task);
        assert_eq!(wide.choose(5, 0, r, no, none_hungry), Choice::Inline);
        assert_eq!(wide.choose(8, 0, r, yes, none_hungry), Choice::Inline);
        assert_eq!(wide.choose(8, 6, r, yes, none_hungry), Choice::Serial);
        // Below the splitting region only the short-deque test makes tasks...
        assert_eq!(wide.choose(5, 6, r, yes, none_hungry), Choice::Serial);
        assert_eq!(wide.choose(1, 6, r, yes, none_hungry), Choice::Task);
        // ... unless more workers starve than the deque can feed: then nothing becomes a serial
        // call.
        assert_eq!(wide.choose(5, 6, r, yes, many), Choice::Task);
        assert_eq!(wide.choose(8, 60, r, yes, many), Choice::Inline);
        assert_eq!(wide.choose(2, 6, r, yes, || 2), Choice::Task);
        assert_eq!(wide.choose(2, 6, r, yes, one), Choice::Serial);
        assert_eq!(wide.choose(9, 6, r, yes, || 8), Choice::Serial);
        let wide_alone = Policy::new(2, 8, 6, 1);
        assert_eq!(wide_alone.choose(5, 0, 0, yes, none_hungry), Choice::Serial);
    }

    #[test]
    fn a_starving_worker_deepens_the_region_past_the_call_and_geometrically() {
        assert!(deepened(0) > 0 && deepened(6) > 6);
        // From the default 8 to the depth of a 1,700-level tree (about 3,400 weighted) in a few
        // steps, not one step per level.
        let (mut r, mut steps) = (8, 0);
        while r <= 3_400 {
            r = deepened(r);
            steps += 1;
        }
        assert!(steps <= 16, "{steps} steps");
        assert_eq!(deepened(usize::MAX), usize::MAX);
    }

    #[test]
    fn a_spawn_weighs_the_bits_of_its_index() {
        let w: Vec<usize> = (1..=9).map(weight).collect();
        assert_eq!(w, [1, 2, 2, 3, 3, 3, 3, 4, 4]);
    }
}

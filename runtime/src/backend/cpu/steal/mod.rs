//! The stealing scheduler (`GPU_CILK_SCHEDULER=stealing`, the cpu backend's default): Cilk- and
//! rayon-style work stealing over the generated sub-kernels (Blumofe and Leiserson's
//! work-stealing scheduler with Cilk-5's "work-first" frames; lazy task creation after Mohr,
//! Kranz and Halstead).
//!
//! - [`worker`]: one worker per pool thread with its own deque (crossbeam-deque); it runs its
//!   newest task first (depth-first, like the serial order) and steals the oldest task of a
//!   random other worker when it has none (the largest piece of work there).
//! - [`job`]: a stealable task, a record `(args, destination, depth, level)` with the callee's
//!   type erased to monomorphized function pointers, inside the deque entry when it is small
//!   (no allocation per task), else on the heap.
//! - [`ranked`]: prioritized ready work (`spawn!(f(..), priority = key)`), one lock-protected
//!   max-heap per run that a worker serves best-first when its own deque is empty, before it
//!   steals; such a spawn is a real task (never inlined), so the order holds, while the heap
//!   holds fewer than `Config::priority_queue_capacity` tasks, and a plain spawn (depth-first)
//!   beyond that, so memory stays bounded.
//! - [`frame`] and [`join`]: a task whose segment ends with real children outstanding leaves its
//!   frame in a heap cell with a join counter; the last child to finish (or the owner, if the
//!   children were faster) resumes it on its own worker — there is no level barrier.
//! - [`segment`]: runs a task's segments and carries out, at each spawn, the
//!   [`policy`]: a stealable task while the own deque is short, else an inline call of
//!   the callee's sub-kernels, and below the splitting region (`Config::inline_nesting` levels
//!   under the last stolen task, deepened by serial calls that starved a worker) a plain call of
//!   the generated serial function — never while a worker is starving.
//! - [`gate`]: which pool threads take part in a run. A run asks every pool thread to join and
//!   ends when its root delivered, with whichever threads joined by then; it never waits for a
//!   thread that is asleep or not scheduled (a late one finds the gate closed).
//! - [`lobby`]: between runs, a thread that left a run stays awake for `Config::linger_us` and
//!   joins the backend's next run at once (through its gate), instead of sleeping in the pool
//!   until that run's broadcast wakes it.
//!
//! Layers (each file imports only those before it): `join`, `gate`, `policy`, `ranked`, `lobby`;
//! then `frame` and `job`, the task storage, generic over the scheduler (`frame::Exec`,
//! `job::RunJob`) so that they name neither the worker nor the segment runner; then `worker`,
//! which instantiates them for [`worker::Stealing`] and runs jobs and frames through their
//! type-erased entries; then `segment`, which implements those entries for `Stealing`; then this
//! module.
//!
//! Memory: a suspended task holds one cell; every cell belongs to a task on some worker's current
//! path or to a task in a deque, and each worker runs depth-first, so live memory is about
//! P × the serial recursion depth (the bound of Blumofe and Leiserson), at any depth: a million
//! nested single spawns hold a million small cells, never a million stack frames.
//!
//! This module owns the run's setup and its result; it must not touch the levelized scheduler.

mod frame;
pub mod gate;
mod job;
pub mod join;
mod lobby;
mod policy;
mod ranked;
mod segment;
mod worker;

pub use gate::Gate;
pub use join::Join;
pub use lobby::Lobby;

use crate::config::{Config, SchedulerKind};
use crate::error::{Error, Result};
use crate::stats::Report;
use crate::stats::{Stats, TaskStats};
use crate::task::{Call, CilkTask, Registry};
use crate::temp::RunHeap;
use lobby::MAX_LINGER_US;
use std::mem::MaybeUninit;
use std::sync::Arc;
use std::time::{Duration, Instant};
use worker::{Dest, Job, Shared};

/// Runs `call` to completion on every thread of `pool` (`lobby`: the pool's threads lingering
/// after the last run).
pub(super) fn run<T: CilkTask>(
    pool: &rayon::ThreadPool,
    lobby: &Arc<Lobby>,
    config: &Config,
    call: Call<'_, T>,
) -> Result<Report<T::Output>> {
    run_with(pool, lobby, config, call, |_| {})
}

/// [`run`], with `adjust` applied to the run's shared state first (tests change the policy).
fn run_with<T: CilkTask>(
    pool: &rayon::ThreadPool,
    lobby: &Arc<Lobby>,
    config: &Config,
    call: Call<'_, T>,
    adjust: impl FnOnce(&mut Shared<'_>),
) -> Result<Report<T::Output>> {
    let start = Instant::now();
    let threads = pool.current_num_threads().max(1);
    let temps = RunHeap::new(config.temp_heap_bytes);
    let mut result = MaybeUninit::<T::Output>::uninit();
    let deques: Vec<_> = (0..threads).map(|_| crossbeam_deque::Worker::new_lifo()).collect();
    let root = Dest { slot: result.as_mut_ptr().cast(), parent: std::ptr::null_mut() };
    deques[0].push(Job::new::<T>(call.args, root, 0, 0));
    let gate = Arc::new(Gate::default());
    let mut shared = Shared::new(deques, &temps, config, start, Job::bytes::<T>(), Arc::clone(&gate));
    adjust(&mut shared);
    // Each pool thread that comes while the run is open runs one worker until the run is done
    // or failing: a thread still lingering after the last run (`lobby`) at once, the others
    // through this broadcast. The run does not wait for the rest (asleep, or not scheduled on a
    // loaded machine): `gate.wait` returns once the run ended and every thread that joined has
    // left, so no task of this run is running afterwards and no thread touches `shared` again.
    let at = &shared as *const Shared<'_> as usize;
    let number = lobby.open(&gate, at);
    let linger = Duration::from_micros(config.linger_us.min(MAX_LINGER_US));
    pool.spawn_broadcast({
        let (gate, lobby) = (Arc::clone(&gate), Arc::clone(lobby));
        move |ctx| {
            join(&gate, at, ctx.index());
            // Stay awake a little for the next run (once: see `lobby`).
            if let Some((_, gate, at)) = lobby.wait(number, linger) {
                join(&gate, at, ctx.index());
            }
        }
    });
    gate.wait();
    lobby.close(number);
    let per_worker = shared.take_results();
    if let Some(e) = shared.take_error() {
        return Err(e);
    }
    if !shared.done() {
        return Err(Error::Internal("the stealing scheduler stopped before the root task finished".into()));
    }
    // SAFETY: `done` is set only after the root task wrote its value through `root.slot`, and
    // that thread's `gate.end()` afterwards, whose lock `gate.wait` took, orders that write
    // before this read.
    let value = unsafe { result.assume_init() };
    let (peak, peak_bytes) = shared.peaks();
    let mut stats = Stats {
        scheduler: Some(SchedulerKind::Stealing),
        tasks: Registry::of::<T>()
            .entries()
            .iter()
            .map(|e| TaskStats { name: e.name, ..TaskStats::default() })
            .collect(),
        peak_occupancy: peak,
        peak_live_frames: peak,
        peak_frame_bytes: peak_bytes,
        root_done: shared.root_done_at(),
        ..Stats::default()
    };
    let reg = Registry::of::<T>();
    for w in per_worker {
        stats.tasks_created += w.tasks_created;
        stats.tasks_inlined += w.tasks_inlined;
        stats.calls_inlined += w.calls_inlined;
        stats.steals += w.steals;
        stats.workers += 1;
        stats.idle += w.idle;
        stats.late += w.late;
        stats.parks += w.parks;
        stats.wakeups += w.wakeups;
        stats.spread = stats.spread.max(w.first.unwrap_or_default());
        // A worker that never took a task was idle from the start to the end.
        stats.idle_start += w.first.unwrap_or(w.idle);
        stats.idle_end += w.idle_end;
        stats.levels = stats.levels.max(w.levels());
        for (id, name, pre, cont) in w.tasks {
            let i = match reg.entries().iter().position(|e| e.id == id) {
                Some(i) => i,
                None => {
                    stats.tasks.push(TaskStats { name, ..TaskStats::default() });
                    stats.tasks.len() - 1
                }
            };
            add_levels(&mut stats.tasks[i].tasks_per_level, &pre);
            add_levels(&mut stats.tasks[i].continuations_per_level, &cont);
        }
    }
    stats.wall = start.elapsed();
    Ok(Report { value, stats })
}

/// Runs worker `index` of the run whose gate is `gate` and whose shared state is at `at`, if the
/// gate still admits the calling thread.
fn join(gate: &Gate, at: usize, index: usize) {
    let Some(_inside) = gate.enter() else { return };
    // SAFETY: the gate admitted this thread, so the run (`run_with`) has not returned from
    // `gate.wait` and will not before `_inside` is dropped at the end of this function: its
    // `shared`, at `at`, is alive and not moved (it is borrowed there until then).
    let sh = unsafe { &*(at as *const Shared<'_>) };
    sh.work(index);
}

fn add_levels(into: &mut Vec<u64>, from: &[u64]) {
    if into.len() < from.len() {
        into.resize(from.len(), 0);
    }
    for (a, b) in into.iter_mut().zip(from) {
        *a += b;
    }
}

#[cfg(test)]
mod tests {
    //! Paths that need a thief's timing in a real run, forced by a test policy: an inline
    //! sub-kernel call whose own spawns become tasks, so it ends with real children outstanding
    //! and becomes a real child of its caller after the fact (`Link::Inline` registration), with
    //! both a frame and an implicit-sync return (a deferred value) left in its cell.
    use super::*;
    use crate::task::{Place, Spawn, Step};

    /// `tree(d, early)`: a full binary tree of depth `d`; every node returns `1 + children`, and
    /// with `early` the odd depths return at once with their children outstanding (implicit
    /// sync), their value `7` then standing for their subtree.
    struct Tree;

    #[repr(C)]
    struct TreeFrame {
        x: u64,
        y: u64,
    }

    fn tree_serial(d: u32, early: bool) -> u64 {
        if d == 0 {
            return 1;
        }
        let (x, y) = (tree_serial(d - 1, early), tree_serial(d - 1, early));
        if early && d % 2 == 1 {
            return 7;
        }
        1 + x + y
    }

    impl CilkTask for Tree {
        type Args = (u32, bool);
        type Frame = TreeFrame;
        type Output = u64;
        const NAME: &'static str = "tree";
        const SYNCS: usize = 1;
        const FANOUT: Option<usize> = Some(2);

        fn serial((d, early): (u32, bool)) -> u64 {
            tree_serial(d, early)
        }

        fn prespawn<S: Spawn<Self>>((d, early): (u32, bool), cx: &mut S) -> Step<Self> {
            if d == 0 {
                return Step::Return(1);
            }
            cx.spawn::<Tree>((d - 1, early), Place::field(std::mem::offset_of!(TreeFrame, x), |f| &f.x));
            cx.spawn::<Tree>((d - 1, early), Place::field(std::mem::offset_of!(TreeFrame, y), |f| &f.y));
            if early && d % 2 == 1 {
                return Step::Return(7);
            }
            Step::Sync(TreeFrame { x: 0, y: 0 })
        }

        fn resume<S: Spawn<Self>>(_segment: usize, f: TreeFrame, _cx: &mut S) -> Step<Self> {
            Step::Return(1 + f.x + f.y)
        }

        fn register<R: crate::task::Registrar>(reg: &mut R) {
            reg.add::<Self>();
        }
    }

    /// `prio(d, id)`: a full binary tree of depth `d` whose children are priority spawns with
    /// pseudo-random keys (so best-first order wanders all over the tree); every node returns
    /// `1 + children`.
    struct Prio;

    fn mix(x: u64) -> u64 {
        let z = (x ^ (x >> 31)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z ^ (z >> 29)
    }

    impl CilkTask for Prio {
        type Args = (u32, u64);
        type Frame = TreeFrame;
        type Output = u64;
        const NAME: &'static str = "prio";
        const SYNCS: usize = 1;
        const FANOUT: Option<usize> = Some(2);

        fn serial((d, _): (u32, u64)) -> u64 {
            (1u64 << (d + 1)) - 1
        }

        fn prespawn<S: Spawn<Self>>((d, id): (u32, u64), cx: &mut S) -> Step<Self> {
            if d == 0 {
                return Step::Return(1);
            }
            let (l, r) = (2 * id + 1, 2 * id + 2);
            let x = Place::field(std::mem::offset_of!(TreeFrame, x), |f: &TreeFrame| &f.x);
            let y = Place::field(std::mem::offset_of!(TreeFrame, y), |f: &TreeFrame| &f.y);
            cx.spawn_prio::<Prio>((d - 1, l), x, mix(l), "x");
            cx.spawn_prio::<Prio>((d - 1, r), y, mix(r), "y");
            Step::Sync(TreeFrame { x: 0, y: 0 })
        }

        fn resume<S: Spawn<Self>>(_segment: usize, f: TreeFrame, _cx: &mut S) -> Step<Self> {
            Step::Return(1 + f.x + f.y)
        }

        fn register<R: crate::task::Registrar>(reg: &mut R) {
            reg.add::<Self>();
        }
    }

    #[test]
    fn a_full_priority_queue_runs_spawns_depth_first_and_bounds_memory() {
        const DEPTH: u32 = 13;
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            let peak = |capacity: usize| {
                let config = Config::default().priority_queue_capacity(capacity);
                let r = run_with(&pool, &Arc::default(), &config, Call::<Prio>::new((DEPTH, 0)), |_| {}).unwrap();
                assert_eq!(r.value, (1 << (DEPTH + 1)) - 1, "capacity {capacity}, {threads} threads");
                r.stats.peak_live_frames
            };
            // Unbounded, best-first over random keys keeps thousands of nodes pending (this is
            // what the bound is for: the test would not notice a bound that did nothing).
            let unbounded = peak(usize::MAX);
            assert!(unbounded > 1_000, "{unbounded} live frames unbounded, {threads} threads");
            // Bounded: the queue, plus per worker a depth-first path with its pending siblings
            // (and the live counters' per-worker batches of 32).
            for capacity in [1, 2, 3, 16] {
                let bound = capacity * (DEPTH as usize + 1) + threads * (3 * DEPTH as usize + 2 + 32);
                let p = peak(capacity);
                assert!(p <= bound, "{p} live frames at capacity {capacity}, {threads} threads (bound {bound})");
            }
        }
    }

    #[test]
    fn back_to_back_runs_take_lingering_threads_and_the_threads_stop_lingering() {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(3).build().unwrap();
        let lobby = Arc::new(Lobby::default());
        // Long enough for the next run to find the threads awake even on a loaded machine.
        let config = Config::default().linger_us(5_000);
        for round in 0..50 {
            let early = round % 2 == 1;
            let r = run_with(&pool, &lobby, &config, Call::<Tree>::new((8, early)), |_| {}).unwrap();
            assert_eq!(r.value, tree_serial(8, early), "round {round}");
            assert!(r.stats.workers >= 1 && r.stats.spread <= r.stats.root_done, "{}", r.stats);
        }
        // Every thread goes back to the pool (to sleep there) once its linger has passed.
        let t = Instant::now();
        while lobby.lingering() > 0 {
            assert!(t.elapsed() < Duration::from_secs(10), "threads still lingering after 10 s");
            std::thread::sleep(Duration::from_millis(1));
        }
        // Off: nobody lingers after a run.
        let off = Config::default().linger_us(0);
        run_with(&pool, &lobby, &off, Call::<Tree>::new((4, false)), |_| {}).unwrap();
        let t = Instant::now();
        while lobby.lingering() > 0 {
            // Threads from the runs before, at most (their 5 ms linger was over already).
            assert!(t.elapsed() < Duration::from_secs(10), "threads still lingering after 10 s");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn inline_calls_that_end_with_real_children_become_real_children() {
        for threads in [1, 2, 3] {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            for early in [false, true] {
                for spawn_queue in [1, 2] {
                    let config = Config::default().spawn_queue(spawn_queue).inline_nesting(30);
                    let r = run_with(&pool, &Arc::default(), &config, Call::<Tree>::new((9, early)), |sh| {
                        // Inline sub-kernel calls even on one worker (`new` would make none), at
                        // every other level (its depth 9 weighs at most 18 < 30 levels).
                        *sh.policy_mut() = policy::Policy::new(spawn_queue, spawn_queue, 30, 2);
                        sh.policy_mut().odd_nesting_tasks = true;
                        sh.restart_region();
                    })
                    .unwrap();
                    assert_eq!(r.value, tree_serial(9, early), "{threads} threads, early {early}");
                    let s = &r.stats;
                    assert!(s.tasks_created > 0 && s.tasks_inlined > 0, "{s}");
                    assert_eq!(s.total_tasks(), 1 + s.tasks_created + s.tasks_inlined);
                }
            }
        }
    }
}

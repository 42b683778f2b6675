//! The workers: one per pool thread, each with its own deque (crossbeam-deque: the owner pushes
//! and pops the newest end, thieves steal the oldest), looping over its own newest task, else the
//! run's best prioritized task ([`Ranked`], `spawn!(.., priority = key)`), else a task stolen
//! from a random other worker, else backing off. It owns the run's shared state
//! ([`Shared`]: the stealers, the done/failed flags, the first error, the live-frame counters) and
//! each worker's private state ([`Worker`]), and [`Stealing`], the scheduler that the generic
//! task storage (`job`, `frame`) is instantiated for, with its aliases ([`Job`], [`Header`], ..).
//! It does not run sub-kernels itself: it runs jobs and resumes frames through their type-erased
//! entries, which lead to the segment runner (`segment` implements `frame::Exec` and
//! `job::RunJob` for [`Stealing`]), and it must not name the segment runner.
//!
//! Termination: the root's delivery sets `done`; every task is a descendant of the root and is
//! counted in its parent's join counter, so nothing is left in any deque then. Failure (a panic,
//! an exhausted temporary heap, `max_depth`, the timeout) records the first error and sets
//! `failed`: workers stop at their next task boundary, drop what is left in their own deques, and
//! never resume another frame, so a failing run stops as soon as the running tasks return. Idle
//! workers spin, then yield, then park; a new task wakes one parked worker at once unless an idle
//! worker is still awake to take it (like rayon's
//! sleep protocol: a worker that parked while the run's work was scarce would otherwise miss the
//! next piece for its whole park interval), `done` and `failed` wake them all, and a short
//! timeout covers a wake-up lost to a race.

use super::frame::{self, CellCache};
use super::gate::Gate;
use super::job;
use super::lobby::MAX_LINGER_US;
use super::policy::Policy;
use super::ranked::Ranked;
use crate::config::Config;
use crate::error::panic_message;
use crate::error::Error;
use crate::task::CilkTask;
use crate::temp::RunHeap;
use crossbeam_deque::{Steal, Stealer};
use std::any::TypeId;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// The stealing scheduler, as the task storage sees it: its tasks run on a [`Worker`], and the
/// segment runner implements how a job runs and a cell resumes (`frame::Exec`, `job::RunJob`).
pub(super) enum Stealing {}

/// A stealable task of this scheduler.
pub(super) type Job = job::Job<Stealing>;
/// The type-erased head of a heap frame of this scheduler.
pub(super) type Header = frame::Header<Stealing>;
/// Where a task's value goes.
pub(super) type Dest = frame::Dest<Stealing>;
/// A frame made ready to resume, if any.
pub(super) type Ready = frame::Ready<Stealing>;
/// A heap frame of task `T`.
pub(super) type Cell<T> = frame::Cell<Stealing, T>;

/// Idle rounds of spinning, then of yielding, before an idle worker parks (a round tries every
/// other worker's deque once).
const SPIN_ROUNDS: u32 = 7;
const YIELD_ROUNDS: u32 = 32;

/// Idle rounds after which a worker counts as starving (`Demand`): the end of its spinning phase.
/// It has then tried every other deque this many times over one to a few microseconds, so work
/// that exists somewhere is held where no thief can take it (inside a serial call). (After 4
/// rounds instead, a 100,000-link chain, whose links the idle worker steals one after another,
/// ran 25% slower on 2 cores: every link that changed workers paid the starving and fed
/// transitions' atomics.)
const STARVE_ROUNDS: u32 = SPIN_ROUNDS;

/// How long a worker must have starved before a serial call that held the work it needed
/// deepens the splitting region (`policy`): long against a steal and a task (tens of
/// microseconds at most when work exists), short against the milliseconds a big serial call of
/// an unbalanced tree holds its work.
const STARVED: Duration = Duration::from_micros(50);

/// How long a parked idle worker sleeps at most: a new task wakes one parked worker at once
/// ([`Worker::push_task`]); the timeout only covers a wake-up lost to a race.
const PARK: Duration = Duration::from_micros(100);

/// Frames and records counted locally before they are added to the shared live counters.
const LIVE_BATCH: isize = 32;

/// What all workers of one run share.
pub(super) struct Shared<'a> {
    stealers: Vec<Stealer<Job>>,
    /// Prioritized ready jobs (`spawn!(.., priority = key)`), best first.
    ranked: Ranked<Job>,
    /// Each worker's deque until its thread takes it.
    deques: Vec<Mutex<Option<crossbeam_deque::Worker<Job>>>>,
    /// The root delivered its value (set with `Release` after the write).
    done: AtomicBool,
    /// When (nanoseconds after `start`) the root delivered its value, for the stats.
    done_at: AtomicU64,
    /// The run is failing; `error` holds why.
    failed: AtomicBool,
    error: Mutex<Option<Error>>,
    /// Worker threads by index, to unpark at the end (one slot each: workers joining at once
    /// never wait for each other here).
    threads: Vec<OnceLock<Thread>>,
    /// Which pool threads joined the run; told when it ends.
    gate: Arc<Gate>,
    /// The counts of the workers that have left.
    results: Vec<Mutex<Option<WorkerStats>>>,
    temps: &'a RunHeap,
    policy: Policy,
    /// Workers looking for work (`Relaxed`: a hint for the policy only). Written whenever a
    /// worker runs out of work or finds some: on a cache line of its own, away from the flags
    /// every spawn reads.
    idle: Padded<AtomicUsize>,
    max_depth: usize,
    check_races: bool,
    /// How long an idle worker keeps looking (yielding) before it parks (`Config::idle_awake_us`).
    awake: Duration,
    deadline: Option<(Instant, Duration)>,
    /// When the run started (for the idle times).
    start: Instant,
    /// The live-frame counters (written in per-worker batches): on a cache line of their own.
    counts: Padded<LiveCounts>,
    /// Parked idle workers, for a spawn to wake one (`count` is read at every task push: on a
    /// cache line of its own, written only when a worker parks or is woken).
    sleepers: Padded<Sleepers>,
    /// Starving workers and the splitting region they deepen (read at spawns and serial calls:
    /// on a cache line of its own, written only when a worker starts starving or the region
    /// deepens).
    demand: Padded<Demand>,
}

/// Workers that found nothing to steal for a while, and the splitting region that follows from
/// them (see `policy`). Every access is `Relaxed`: these are hints for the policy, and the work
/// itself moves through the deques, whose own orderings publish it.
///
/// Invariants: `hungry` counts the workers whose `Worker::hungry` is set (each adds 1 when it
/// sets it and subtracts 1 when it clears it, at the latest when it leaves the run), so it is
/// never negative and 0 after the run; `epoch` only grows (one step per worker that starts
/// starving), so a serial call that reads the same value before and after saw no worker start
/// starving in between (within the `Relaxed` reads' staleness, which only delays a deepening);
/// `region` only grows (`fetch_max`).
struct Demand {
    hungry: AtomicUsize,
    epoch: AtomicU64,
    /// When (nanoseconds after the run's start) the last worker to start starving did.
    since: AtomicU64,
    region: AtomicUsize,
}

/// Idle workers that parked, waiting for a task ([`Worker::push_task`] wakes one) or their
/// timeout ([`PARK`]).
#[derive(Default)]
struct Sleepers {
    /// `list.len()` (`Relaxed`: a hint; a wake-up lost to a race costs at most [`PARK`]).
    count: AtomicUsize,
    list: Mutex<Vec<Thread>>,
}

/// The run's live task records and frames, and their peaks (`Relaxed`: statistics only).
struct LiveCounts {
    live: AtomicIsize,
    live_bytes: AtomicIsize,
    peak: AtomicIsize,
    peak_bytes: AtomicIsize,
}

/// A value alone on its cache line(s) (128 bytes: two 64-byte lines, since x86 prefetches in
/// pairs), so writes to it do not slow down reads of its neighbours on other cores.
#[repr(align(128))]
struct Padded<T>(T);

impl<T> std::ops::Deref for Padded<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<'a> Shared<'a> {
    /// The shared state of a run over `deques` (one per worker; the root is already in one).
    pub(super) fn new(
        deques: Vec<crossbeam_deque::Worker<Job>>,
        temps: &'a RunHeap,
        config: &Config,
        start: Instant,
        root_bytes: usize,
        gate: Arc<Gate>,
    ) -> Self {
        let workers = deques.len();
        Shared {
            stealers: deques.iter().map(crossbeam_deque::Worker::stealer).collect(),
            ranked: Ranked::new(config.priority_queue_capacity),
            deques: deques.into_iter().map(|d| Mutex::new(Some(d))).collect(),
            done: AtomicBool::new(false),
            done_at: AtomicU64::new(0),
            failed: AtomicBool::new(false),
            error: Mutex::new(None),
            threads: (0..workers).map(|_| OnceLock::new()).collect(),
            gate,
            results: (0..workers).map(|_| Mutex::new(None)).collect(),
            temps,
            policy: Policy::new(config.spawn_queue, config.spawn_queue_idle, config.inline_nesting, workers),
            // Every worker starts out looking for work (counted until it finds some), so the first
            // spawns of a run already see idle workers and keep their subtrees splittable.
            idle: Padded(AtomicUsize::new(workers)),
            max_depth: config.max_depth,
            check_races: config.check_races,
            awake: Duration::from_micros(config.idle_awake_us.min(MAX_LINGER_US)),
            deadline: config.timeout.map(|t| (start + t, t)),
            start,
            counts: Padded(LiveCounts {
                live: AtomicIsize::new(1),
                live_bytes: AtomicIsize::new(root_bytes as isize),
                peak: AtomicIsize::new(1),
                peak_bytes: AtomicIsize::new(root_bytes as isize),
            }),
            sleepers: Padded(Sleepers::default()),
            demand: Padded(Demand {
                hungry: AtomicUsize::new(0),
                epoch: AtomicU64::new(0),
                since: AtomicU64::new(0),
                region: AtomicUsize::new(policy_region(config, workers)),
            }),
        }
    }

    /// Runs worker `index` of this run on the calling thread, if it is not taken yet, and keeps
    /// its counts for [`Shared::take_results`].
    pub(super) fn work(&'a self, index: usize) {
        if let Some(w) = Worker::new(self, index) {
            let stats = w.run();
            if let Some(slot) = self.results.get(index) {
                *slot.lock().unwrap_or_else(|p| p.into_inner()) = Some(stats);
            }
        }
    }

    /// The counts of every worker that ran (after the run).
    pub(super) fn take_results(&self) -> Vec<WorkerStats> {
        self.results.iter().filter_map(|r| r.lock().unwrap_or_else(|p| p.into_inner()).take()).collect()
    }

    /// Whether the root delivered its value.
    pub(super) fn done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// When the root delivered its value, after the run's start (read after the run).
    pub(super) fn root_done_at(&self) -> Duration {
        Duration::from_nanos(self.done_at.load(Ordering::Relaxed))
    }

    /// The first error of a failed run.
    pub(super) fn take_error(&self) -> Option<Error> {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// Tests only: the policy in force.
    #[cfg(test)]
    pub(super) fn policy_mut(&mut self) -> &mut Policy {
        &mut self.policy
    }

    /// Tests only: start the splitting region where the policy in force starts it.
    #[cfg(test)]
    pub(super) fn restart_region(&mut self) {
        *self.demand.0.region.get_mut() = self.policy.initial_region();
    }

    /// The peaks of live frames and their bytes.
    pub(super) fn peaks(&self) -> (usize, usize) {
        (
            self.counts.peak.load(Ordering::Relaxed).max(0) as usize,
            self.counts.peak_bytes.load(Ordering::Relaxed).max(0) as usize,
        )
    }

    /// Wakes one parked worker, if any and no idle worker is awake: a task was just made
    /// available. Returns how many it woke.
    #[cold]
    #[inline(never)]
    fn wake_one(&self) -> u64 {
        // Like rayon: not while an idle worker is still awake (spinning or yielding), which will
        // find the task itself; waking costs the spawner a system call.
        let parked = self.sleepers.count.load(Ordering::Relaxed);
        if self.idle.load(Ordering::Relaxed) > parked {
            return 0;
        }
        let mut list = self.sleepers.list.lock().unwrap_or_else(|p| p.into_inner());
        let Some(t) = list.pop() else { return 0 };
        self.sleepers.count.store(list.len(), Ordering::Relaxed);
        drop(list);
        t.unpark();
        1
    }

    /// Whether a parked worker should be woken for a new task.
    #[inline]
    fn has_sleepers(&self) -> bool {
        self.sleepers.count.load(Ordering::Relaxed) > 0
    }

    fn wake_all(&self) {
        for t in self.threads.iter().filter_map(OnceLock::get) {
            t.unpark();
        }
    }
}

/// The splitting region a run of `workers` workers starts with.
fn policy_region(config: &Config, workers: usize) -> usize {
    Policy::new(config.spawn_queue, config.spawn_queue_idle, config.inline_nesting, workers).initial_region()
}

/// Positions in a worker's per-segment stacks when a segment started.
#[derive(Clone, Copy, Debug)]
pub(super) struct Marks {
    pub(super) ranges: usize,
    pub(super) stash: usize,
    pub(super) stash_bytes: usize,
}

/// Per task function: (type, name, pre-spawn runs per level, continuation runs per level).
type TaskCounts = (TypeId, &'static str, Vec<u64>, Vec<u64>);

/// One worker's counts, summed into [`crate::Stats`] at the end of the run.
#[derive(Default)]
pub(super) struct WorkerStats {
    pub(super) tasks: Vec<TaskCounts>,
    /// The entry of `tasks` that counted last (the fast path of [`WorkerStats::segment`]).
    last: usize,
    pub(super) tasks_created: u64,
    pub(super) tasks_inlined: u64,
    pub(super) calls_inlined: u64,
    pub(super) steals: u64,
    /// Time without work (from the run's start: `late` included), parks, wake-ups sent.
    pub(super) idle: Duration,
    pub(super) late: Duration,
    pub(super) parks: u64,
    pub(super) wakeups: u64,
    /// From the run's start until this worker took its first task (`None`: it took none).
    pub(super) first: Option<Duration>,
    /// From the end of this worker's last task until it left the run (its part of the run's
    /// end: waiting for the others to finish, then noticing that the root delivered).
    pub(super) idle_end: Duration,
}

impl WorkerStats {
    /// Counts a segment of `T` at `depth` (a pre-spawn run, or a continuation). Runs once per
    /// segment, inline sub-kernel calls included, so the usual case (the same task function as
    /// last time, a level seen before) is a compare and an increment.
    #[inline]
    pub(super) fn segment<T: CilkTask>(&mut self, depth: usize, continuation: bool) {
        if let Some(t) = self.tasks.get_mut(self.last) {
            if t.0 == TypeId::of::<T>() {
                let per_level = if continuation { &mut t.3 } else { &mut t.2 };
                if let Some(c) = per_level.get_mut(depth) {
                    *c += 1;
                    return;
                }
            }
        }
        self.segment_slow::<T>(depth, continuation);
    }

    /// [`WorkerStats::segment`] for another task function or a new level.
    #[cold]
    #[inline(never)]
    fn segment_slow<T: CilkTask>(&mut self, depth: usize, continuation: bool) {
        let id = TypeId::of::<T>();
        let i = match self.tasks.iter().position(|t| t.0 == id) {
            Some(i) => i,
            None => {
                self.tasks.push((id, T::NAME, Vec::new(), Vec::new()));
                self.tasks.len() - 1
            }
        };
        self.last = i;
        let t = &mut self.tasks[i];
        let per_level = if continuation { &mut t.3 } else { &mut t.2 };
        if per_level.len() <= depth {
            per_level.resize(depth + 1, 0);
        }
        per_level[depth] += 1;
    }

    /// Deepest recursion level that ran sub-kernels, + 1 (a level's count exists once a segment
    /// ran there).
    pub(super) fn levels(&self) -> usize {
        self.tasks.iter().map(|t| t.2.len().max(t.3.len())).max().unwrap_or(0)
    }
}

/// One worker thread's state during a run.
pub(super) struct Worker<'r> {
    sh: &'r Shared<'r>,
    index: usize,
    /// This worker's deque (the owner's end).
    pub(super) local: crossbeam_deque::Worker<Job>,
    pub(super) policy: Policy,
    pub(super) max_depth: usize,
    /// `Config::check_races`.
    pub(super) check_races: bool,
    /// Levels of spawns below the task this worker stole last (or the root), counted on through
    /// its own tasks (`Job::run`): where the policy's splitting region ends.
    pub(super) nest: usize,
    /// Byte ranges of the running segments' real children in their frames (a stack: each
    /// segment owns the entries above its [`Marks`]).
    pub(super) ranges: Vec<(usize, usize)>,
    /// Values of inline children, stashed until their segment's frame exists: bytes, and
    /// (frame offset, start in `stash_bytes`, length).
    pub(super) stash_bytes: Vec<u8>,
    pub(super) stash_at: Vec<(usize, usize, usize)>,
    /// The task function and level running now, for the error if it panics.
    pub(super) current: (&'static str, usize),
    pub(super) stats: WorkerStats,
    /// Freed continuation cells for this worker's next ones.
    pub(super) cells: CellCache,
    rng: u64,
    live: Live,
    jobs_since_clock: u32,
    /// This worker is counted in `Demand::hungry`.
    hungry: bool,
}

/// A worker's view of the run's live frames: the shared count when it last added its own
/// changes (`base`), its changes since (`delta`), and the highest `base + delta` it has seen,
/// which is the true count within the other workers' unflushed changes (±[`LIVE_BATCH`] each).
#[derive(Clone, Copy, Default)]
struct Live {
    base: [isize; 2],
    delta: [isize; 2],
    peak: [isize; 2],
}

impl<'r> Worker<'r> {
    /// Worker `index` of the run `sh` (takes its deque).
    pub(super) fn new(sh: &'r Shared<'r>, index: usize) -> Option<Self> {
        let local = sh.deques.get(index)?.lock().unwrap_or_else(|p| p.into_inner()).take()?;
        let late = sh.start.elapsed();
        if let Some(slot) = sh.threads.get(index) {
            // Set once: this worker's deque was still there, so no thread took this index yet.
            let _ = slot.set(std::thread::current());
        }
        Some(Worker {
            sh,
            index,
            local,
            policy: sh.policy,
            max_depth: sh.max_depth,
            check_races: sh.check_races,
            nest: 0,
            ranges: Vec::with_capacity(64),
            stash_bytes: Vec::with_capacity(256),
            stash_at: Vec::with_capacity(64),
            current: ("?", 0),
            stats: WorkerStats { late, ..WorkerStats::default() },
            cells: CellCache::default(),
            rng: 0x9e37_79b9_7f4a_7c15 ^ ((index as u64 + 1) << 17),
            live: Live {
                base: [sh.counts.live.load(Ordering::Relaxed), sh.counts.live_bytes.load(Ordering::Relaxed)],
                ..Live::default()
            },
            jobs_since_clock: 0,
            hungry: false,
        })
    }

    /// The worker loop: own newest task, else a stolen one, else back off; until the run is
    /// done or failing. Returns this worker's counts.
    pub(super) fn run(mut self) -> WorkerStats {
        // > 0 while this worker is counted in `Shared::idle` (it starts counted, idle since the
        // run's start).
        let mut idle = 1u32;
        let mut idle_since = self.sh.start;
        loop {
            if self.failing() {
                break;
            }
            let own = self.local.pop();
            let from_own = own.is_some();
            let job = match own.or_else(|| self.sh.ranked.pop()) {
                Some(j) => j,
                None => match self.steal() {
                    Some(j) => j,
                    None => {
                        if self.sh.done() || self.clock_expired() {
                            break;
                        }
                        if idle == 0 {
                            self.sh.idle.fetch_add(1, Ordering::Relaxed);
                            idle_since = Instant::now();
                        }
                        self.backoff(&mut idle, idle_since);
                        continue;
                    }
                },
            };
            if idle > 0 {
                self.sh.idle.fetch_sub(1, Ordering::Relaxed);
                self.fed();
                let now = Instant::now();
                self.stats.idle += now.saturating_duration_since(idle_since);
                if self.stats.first.is_none() {
                    self.stats.first = Some(now.saturating_duration_since(self.sh.start));
                }
            }
            idle = 0;
            self.jobs_since_clock += 1;
            if self.jobs_since_clock >= 64 {
                self.jobs_since_clock = 0;
                if self.clock_expired() {
                    drop(job);
                    break;
                }
            }
            self.execute(job, from_own);
        }
        if idle > 0 {
            self.sh.idle.fetch_sub(1, Ordering::Relaxed);
            self.fed();
            let span = idle_since.elapsed();
            self.stats.idle += span;
            if self.stats.first.is_some() {
                self.stats.idle_end = span;
            }
        }
        // Only a failing run leaves tasks behind; their records are freed, never run.
        while let Some(job) = self.local.pop() {
            drop(job);
        }
        self.flush_live();
        self.stats
    }

    /// Runs `job` (from this worker's own deque: `own`), then every frame its completion makes
    /// ready, in a loop (never recursively: a chain of a million frames finishing one after
    /// another stays flat on the stack).
    fn execute(&mut self, job: Job, own: bool) {
        let ran = catch_unwind(AssertUnwindSafe(|| {
            let mut ready = job.run(self, own);
            while let Some(h) = ready {
                if self.failing() {
                    break; // the frame stays suspended; the failing run never resumes it
                }
                self.nest = 0;
                // SAFETY: `h` is a frame whose counter this thread brought to 0.
                ready = unsafe { Header::resume(h, self) };
            }
        }));
        if let Err(payload) = ran {
            let (task, level) = self.current;
            self.ranges.clear();
            self.stash_at.clear();
            self.stash_bytes.clear();
            self.nest = 0;
            self.fail(Error::TaskPanicked { task, level, message: panic_message(&*payload) });
        }
    }

    /// A task from another worker's deque (the oldest there), trying every other worker once
    /// from a random one.
    fn steal(&mut self) -> Option<Job> {
        let n = self.sh.stealers.len();
        if n < 2 {
            return None;
        }
        // xorshift64
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let first = (self.rng % n as u64) as usize;
        for k in 0..n {
            let victim = (first + k) % n;
            if victim == self.index {
                continue;
            }
            loop {
                match self.sh.stealers[victim].steal() {
                    Steal::Success(job) => {
                        self.stats.steals += 1;
                        return Some(job);
                    }
                    Steal::Empty => break,
                    Steal::Retry => std::hint::spin_loop(),
                }
            }
        }
        None
    }

    /// Pushes a new task of `C` on this worker's deque.
    #[inline]
    pub(super) fn push_task<C: CilkTask>(&mut self, job: Job) {
        self.local.push(job);
        self.stats.tasks_created += 1;
        self.frame_alloc(Job::bytes::<C>());
        if self.sh.has_sleepers() {
            self.stats.wakeups += self.sh.wake_one();
        }
    }

    /// Whether the run's best-first queue is full (a hint; `ranked`'s bound).
    #[inline]
    pub(super) fn ranked_full(&self) -> bool {
        self.sh.ranked.is_full()
    }

    /// Adds a new task of `C` with priority `key` to the run's prioritized jobs, or, if the queue
    /// filled up since [`Worker::ranked_full`] said it was not, to this worker's own deque
    /// (`ranked`'s bound).
    pub(super) fn push_ranked<C: CilkTask>(&mut self, key: u64, job: Job) {
        if let Some(spilled) = self.sh.ranked.push(key, job) {
            self.local.push(spilled);
        }
        self.stats.tasks_created += 1;
        self.frame_alloc(Job::bytes::<C>());
        if self.sh.has_sleepers() {
            self.stats.wakeups += self.sh.wake_one();
        }
    }

    /// The count of workers looking for work.
    #[inline]
    pub(super) fn idle_workers(&self) -> &'r AtomicUsize {
        &self.sh.idle
    }

    /// How many workers have found nothing to steal for a while.
    #[inline]
    pub(super) fn hungry_workers(&self) -> usize {
        self.sh.demand.hungry.load(Ordering::Relaxed)
    }

    /// Whether some worker still starves and the last one to start starving did so at least
    /// [`STARVED`] ago (reads the clock).
    #[cold]
    #[inline(never)]
    pub(super) fn starved(&self) -> bool {
        let d = &self.sh.demand;
        if d.hungry.load(Ordering::Relaxed) == 0 {
            return false;
        }
        let since = Duration::from_nanos(d.since.load(Ordering::Relaxed));
        self.sh.start.elapsed().saturating_sub(since) >= STARVED
    }

    /// How many times a worker started starving in this run so far.
    #[inline]
    pub(super) fn hunger_epoch(&self) -> u64 {
        self.sh.demand.epoch.load(Ordering::Relaxed)
    }

    /// The run's splitting region now.
    #[inline]
    pub(super) fn region(&self) -> usize {
        self.sh.demand.region.load(Ordering::Relaxed)
    }

    /// A serial call at level `nest` ended while this worker had nothing left for thieves and
    /// some worker started starving during it: split that level from now on.
    #[cold]
    #[inline(never)]
    pub(super) fn deepen(&self, nest: usize) {
        self.sh.demand.region.fetch_max(super::policy::deepened(nest), Ordering::Relaxed);
    }

    /// This worker starts starving: it looked at every deque for a while and found nothing.
    #[cold]
    #[inline(never)]
    fn starve(&mut self) {
        if !self.hungry {
            self.hungry = true;
            let d = &self.sh.demand;
            let now = u64::try_from(self.sh.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
            d.since.store(now, Ordering::Relaxed);
            d.hungry.fetch_add(1, Ordering::Relaxed);
            d.epoch.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// This worker found work (or leaves the run): no longer starving.
    #[inline]
    fn fed(&mut self) {
        if self.hungry {
            self.hungry = false;
            self.sh.demand.hungry.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// The run's temporary heap.
    pub(super) fn temps(&self) -> &'r RunHeap {
        self.sh.temps
    }

    /// Whether the run is failing (nothing new should start).
    #[inline]
    pub(super) fn failing(&self) -> bool {
        self.sh.failed.load(Ordering::Relaxed)
    }

    /// Fails the run with `e` (the first error wins).
    pub(super) fn fail(&self, e: Error) {
        {
            let mut first = self.sh.error.lock().unwrap_or_else(|p| p.into_inner());
            if first.is_none() {
                *first = Some(e);
            }
        }
        self.sh.failed.store(true, Ordering::Release);
        self.sh.wake_all();
        self.sh.gate.end();
    }

    /// The root delivered its value.
    pub(super) fn root_done(&self) {
        let at = u64::try_from(self.sh.start.elapsed().as_nanos()).unwrap_or(u64::MAX);
        self.sh.done_at.store(at, Ordering::Relaxed);
        self.sh.done.store(true, Ordering::Release);
        // The run's thread first (it wakes while the others are unparked).
        self.sh.gate.end();
        self.sh.wake_all();
    }

    /// Whether the run's timeout has passed (and if so, fails it).
    fn clock_expired(&self) -> bool {
        match self.sh.deadline {
            Some((at, limit)) if Instant::now() >= at => {
                self.fail(Error::Timeout(limit));
                true
            }
            _ => false,
        }
    }

    /// Positions of the per-segment stacks, for a segment starting now.
    #[inline]
    pub(super) fn marks(&self) -> Marks {
        Marks { ranges: self.ranges.len(), stash: self.stash_at.len(), stash_bytes: self.stash_bytes.len() }
    }

    /// A task record or frame of `bytes` was allocated.
    #[inline]
    pub(super) fn frame_alloc(&mut self, bytes: usize) {
        let l = &mut self.live;
        l.delta[0] += 1;
        l.delta[1] += bytes as isize;
        for k in 0..2 {
            l.peak[k] = l.peak[k].max(l.base[k] + l.delta[k]);
        }
        if l.delta[0] >= LIVE_BATCH {
            self.flush_live();
        }
    }

    /// A task record or frame of `bytes` was freed.
    #[inline]
    pub(super) fn frame_free(&mut self, bytes: usize) {
        self.live.delta[0] -= 1;
        self.live.delta[1] -= bytes as isize;
        if self.live.delta[0] <= -LIVE_BATCH {
            self.flush_live();
        }
    }

    /// One idle round of a worker idle since `since`: spin, then yield (at least
    /// [`YIELD_ROUNDS`] rounds, and until `Config::idle_awake_us` has passed), then park until a new
    /// task or [`PARK`] (`done` and `failed` unpark too).
    fn backoff(&mut self, step: &mut u32, since: Instant) {
        if *step == STARVE_ROUNDS {
            self.starve();
        }
        if *step < SPIN_ROUNDS {
            for _ in 0..(1u32 << *step) {
                std::hint::spin_loop();
            }
        } else if *step < SPIN_ROUNDS + YIELD_ROUNDS || (!self.sh.awake.is_zero() && since.elapsed() < self.sh.awake) {
            std::thread::yield_now();
        } else {
            let s = &self.sh.sleepers;
            let me = std::thread::current();
            {
                let mut list = s.list.lock().unwrap_or_else(|p| p.into_inner());
                list.push(me.clone());
                s.count.store(list.len(), Ordering::Relaxed);
            }
            // A task pushed just before this worker was listed woke nobody: look once more.
            if !self.sh.done() && self.sh.ranked.is_empty() && self.sh.stealers.iter().all(Stealer::is_empty) {
                std::thread::park_timeout(PARK);
                self.stats.parks += 1;
            }
            let mut list = s.list.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(i) = list.iter().position(|t| t.id() == me.id()) {
                list.swap_remove(i);
                s.count.store(list.len(), Ordering::Relaxed);
            }
        }
        *step = step.saturating_add(1);
    }

    /// Adds this worker's changes to the shared counts and its peaks to the shared peaks
    /// (`Relaxed`: statistics only, read after the run's join).
    fn flush_live(&mut self) {
        let l = &mut self.live;
        let c = &self.sh.counts;
        let counters = [(&c.live, &c.peak), (&c.live_bytes, &c.peak_bytes)];
        for (k, (count, peak)) in counters.into_iter().enumerate() {
            l.base[k] = count.fetch_add(l.delta[k], Ordering::Relaxed) + l.delta[k];
            l.delta[k] = 0;
            l.peak[k] = l.peak[k].max(l.base[k]);
            peak.fetch_max(l.peak[k], Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run's shared state with `workers` empty deques, every worker counted idle.
    fn shared(heap: &RunHeap, workers: usize) -> Shared<'_> {
        let deques = (0..workers).map(|_| crossbeam_deque::Worker::new_lifo()).collect();
        Shared::new(deques, heap, &Config::default(), Instant::now(), 0, Arc::new(Gate::default()))
    }

    /// Lists the calling thread as parked (as `Worker::backoff` does) and parks until unparked.
    fn park_listed(sh: &Shared<'_>) {
        {
            let mut list = sh.sleepers.list.lock().unwrap();
            list.push(std::thread::current());
            sh.sleepers.count.store(list.len(), Ordering::Relaxed);
        }
        // No timeout: only `wake_one` ends this (a spurious wake-up parks again while listed).
        loop {
            std::thread::park();
            if !sh.sleepers.list.lock().unwrap().iter().any(|t| t.id() == std::thread::current().id()) {
                return;
            }
        }
    }

    #[test]
    fn a_new_task_wakes_a_parked_worker_only_when_no_idle_worker_is_awake() {
        let heap = RunHeap::new(1 << 12);
        let sh = shared(&heap, 2);
        assert!(!sh.has_sleepers());
        // Nobody parked: nobody to wake.
        sh.idle.store(0, Ordering::Relaxed);
        assert_eq!(sh.wake_one(), 0);
        std::thread::scope(|s| {
            // One idle worker, and it is parked.
            sh.idle.store(1, Ordering::Relaxed);
            let sleeper = s.spawn(|| park_listed(&sh));
            while !sh.has_sleepers() {
                std::thread::yield_now();
            }
            // A second idle worker still awake takes the task: no wake-up.
            sh.idle.store(2, Ordering::Relaxed);
            assert_eq!(sh.wake_one(), 0);
            assert!(sh.has_sleepers());
            // Every idle worker parked: the push wakes one (the test hangs if not).
            sh.idle.store(1, Ordering::Relaxed);
            assert_eq!(sh.wake_one(), 1);
            assert!(!sh.has_sleepers());
            sleeper.join().unwrap();
        });
    }
}

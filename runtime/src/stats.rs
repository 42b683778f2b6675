//! Run statistics: what ran where, how deep, how much channel memory was live at once, how long.
//! Backends fill a [`Stats`]; this module owns its shape and its printed form, nothing else.

use crate::config::{BackendKind, SchedulerKind};
use std::fmt;
use std::time::Duration;

/// Per-task-function counts, indexed by recursion level (the root is level 0).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskStats {
    /// The `#[gpu_cilk]` function.
    pub name: &'static str,
    /// Pre-spawn sub-kernels run (= tasks started) per level. (On the stealing scheduler a spawn
    /// that ran as the plain serial function is not a task: see [`Stats::calls_inlined`].)
    pub tasks_per_level: Vec<u64>,
    /// Continuation sub-kernels run per level.
    pub continuations_per_level: Vec<u64>,
}

impl TaskStats {
    /// Tasks started, all levels.
    pub fn tasks(&self) -> u64 {
        self.tasks_per_level.iter().sum()
    }

    /// Continuations run, all levels.
    pub fn continuations(&self) -> u64 {
        self.continuations_per_level.iter().sum()
    }
}

/// What one run did. Returned with the result by [`crate::Runtime::run_with_stats`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    /// The backend that ran it.
    pub backend: Option<BackendKind>,
    /// The scheduler that ran it (`None` for the serial backend).
    pub scheduler: Option<SchedulerKind>,
    /// Wall time of the run, from the root's dispatch to its result.
    pub wall: Duration,
    /// Per task function (empty for the serial backend, which only calls the function).
    pub tasks: Vec<TaskStats>,
    /// Recursion levels reached (deepest level + 1).
    pub levels: usize,
    /// Most channel elements and frames live at once, over all channels.
    pub peak_occupancy: usize,
    /// Most elements live at once in any single (task, segment, level) channel.
    pub peak_channel_occupancy: usize,
    /// Sub-kernel dispatches (one per (channel, chunk)).
    pub dispatches: u64,
    /// Channel segments taken beyond each channel's first because a level overflowed its capacity.
    pub spilled_segments: u64,
    /// Stealing scheduler: spawns that became stealable tasks (a heap record in a deque).
    pub tasks_created: u64,
    /// Stealing scheduler: spawns run at once on the spawning worker as sub-kernels (still
    /// splittable: their own spawns may become tasks).
    pub tasks_inlined: u64,
    /// Stealing scheduler: spawns run at once as a plain call of the callee's serial form (lazy
    /// task creation).
    pub calls_inlined: u64,
    /// Tasks taken from another worker's deque (stealing) or from the device's global pool
    /// (persistent).
    pub steals: u64,
    /// Most frames (tasks waiting for children) live at once. On the stealing scheduler: task
    /// records and continuation frames on the heap, counted in per-worker batches, so within ±32
    /// per worker of the exact peak.
    pub peak_live_frames: usize,
    /// Their bytes.
    pub peak_frame_bytes: usize,
    /// Stealing scheduler: pool threads that took part in the run (its workers).
    pub workers: usize,
    /// Stealing scheduler: time the workers spent without work, summed over them: from the run's
    /// start until each joined ([`Stats::late`], included here), then every span between running
    /// out of tasks and finding one (stealing, spinning, parked), until each left. `workers ×
    /// wall − idle` is the time spent running tasks and their scheduling.
    pub idle: Duration,
    /// Stealing scheduler: the part of [`Stats::idle`] before the workers joined the run (pool
    /// threads waking up), summed over them.
    pub late: Duration,
    /// Stealing scheduler: times an idle worker parked (after spinning and yielding in vain).
    pub parks: u64,
    /// Stealing scheduler: times a new task woke a parked worker.
    pub wakeups: u64,
    /// Stealing scheduler: from the run's start until the last worker that ran any task took
    /// its first one (how long the work took to reach every worker: pool threads waking up and
    /// the first steals).
    pub spread: Duration,
    /// Stealing scheduler: from the run's start until the root task delivered its value; the
    /// rest of [`Stats::wall`] is the run's end (telling the run's thread, the workers leaving,
    /// these stats).
    pub root_done: Duration,
    /// Stealing scheduler: the part of [`Stats::idle`] before each worker's first task (from the
    /// run's start: [`Stats::late`] included), summed over the workers.
    pub idle_start: Duration,
    /// Stealing scheduler: the part of [`Stats::idle`] after each worker's last task, until it
    /// left the run (the others still finishing, then the root's delivery noticed), summed.
    pub idle_end: Duration,
    /// Persistent device scheduler: items a warp sent to the global pool for hungry warps.
    pub donated: u64,
    /// Persistent device scheduler: pending spawns a busy lane handed to an idle lane of its warp.
    pub shared: u64,
    /// Persistent device scheduler: lane-stack entries promoted to frames of the global frame
    /// pool (slow clones: a child of theirs was handed away, or the lane's stack spilled).
    pub promoted: u64,
    /// Persistent device scheduler: lane stacks that overflowed and spilled into the frame pool and
    /// the global pool.
    pub spills: u64,
    /// Persistent device scheduler: spawns queued in the ready heap and served best first:
    /// priority spawns (`spawn!(f(..), priority = key)`) it took as its reserve, and spawns it
    /// (programs with priority spawns only).
    pub prioritized: u64,
    /// Persistent device scheduler: priority spawns that found every slot of the ready heap taken
    /// ([`Config::device_priority_slots`](crate::Config::device_priority_slots)) and ran as plain
    /// spawns (their order is lost, not their work).
    pub priority_fallbacks: u64,
    /// cuda backends: time spent copying the root's slice arguments to the device before the run
    /// and the mutable ones back after it (zero without slices, and on host backends, which
    /// use the caller's memory in place). Not part of [`Stats::wall`].
    pub transfer: Duration,
    /// Persistent device scheduler: where the warps' time went (from `clock64`, summed over
    /// warps), for tuning and for the benchmark tables.
    pub device_profile: Option<DeviceProfile>,
}

/// Where the persistent device scheduler's warps spent their time in one run. Cycles are each
/// warp's own SM clock, summed over all warps of the grid.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceProfile {
    /// Resident warps of the grid.
    pub warps: u64,
    /// Rounds run (every busy lane of a warp ran one step: a segment of the task on top of its
    /// lane stack).
    pub rounds: u64,
    /// Lane steps those rounds ran: `steps / rounds` is the number of busy lanes per round.
    pub steps: u64,
    /// Warp cycles spent finding no work (polls and sleeps).
    pub idle_cycles: u64,
    /// Warp cycles spent running segments and continuations.
    pub run_cycles: u64,
    /// Warp cycles in the scheduler loop in all (the rest: taking, donating, frame lists).
    pub all_cycles: u64,
}

impl DeviceProfile {
    /// The share of `cycles` in all cycles, in percent.
    fn pct(&self, cycles: u64) -> f64 {
        if self.all_cycles == 0 {
            0.0
        } else {
            100.0 * cycles as f64 / self.all_cycles as f64
        }
    }
}

impl fmt::Display for DeviceProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let per = if self.rounds == 0 { 0.0 } else { self.steps as f64 / self.rounds as f64 };
        write!(
            f,
            "{} warps, {} rounds of {per:.1} busy lanes; warp time {:.1}% running, {:.1}% idle, {:.1}% scheduling",
            self.warps,
            self.rounds,
            self.pct(self.run_cycles),
            self.pct(self.idle_cycles),
            self.pct(self.all_cycles.saturating_sub(self.run_cycles + self.idle_cycles)),
        )
    }
}

impl Stats {
    /// Tasks started, all functions and levels.
    pub fn total_tasks(&self) -> u64 {
        self.tasks.iter().map(TaskStats::tasks).sum()
    }

    /// Tasks per second of wall time.
    pub fn tasks_per_second(&self) -> f64 {
        let s = self.wall.as_secs_f64();
        if s > 0.0 {
            self.total_tasks() as f64 / s
        } else {
            0.0
        }
    }
}

impl fmt::Display for Stats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let backend = self.backend.map(|b| b.name()).unwrap_or("?");
        writeln!(f, "backend            {backend}")?;
        writeln!(f, "wall time          {:.3} ms", self.wall.as_secs_f64() * 1e3)?;
        if !self.transfer.is_zero() {
            writeln!(
                f,
                "slice transfers    {:.3} ms (host <-> device, not in the wall time)",
                self.transfer.as_secs_f64() * 1e3
            )?;
        }
        if self.tasks.is_empty() {
            return Ok(());
        }
        writeln!(f, "tasks              {}", self.total_tasks())?;
        writeln!(f, "tasks/s            {:.3e}", self.tasks_per_second())?;
        writeln!(f, "levels             {}", self.levels)?;
        if self.scheduler == Some(SchedulerKind::Stealing) {
            writeln!(f, "scheduler          stealing")?;
            writeln!(
                f,
                "spawns             {} tasks created, {} run inline as sub-kernels, {} as serial calls",
                self.tasks_created, self.tasks_inlined, self.calls_inlined
            )?;
            writeln!(f, "steals             {}", self.steals)?;
            writeln!(
                f,
                "idle               {:.3} ms summed over {} workers ({:.3} ms before they joined), {} parks, {} wake-ups by new tasks",
                self.idle.as_secs_f64() * 1e3,
                self.workers,
                self.late.as_secs_f64() * 1e3,
                self.parks,
                self.wakeups
            )?;
            writeln!(
                f,
                "phases             last worker's first task at {:.3} ms, root done at {:.3} ms, returned {:.3} ms later; \
                 idle before the first task {:.3} ms, after the last {:.3} ms (summed)",
                self.spread.as_secs_f64() * 1e3,
                self.root_done.as_secs_f64() * 1e3,
                self.wall.saturating_sub(self.root_done).as_secs_f64() * 1e3,
                self.idle_start.as_secs_f64() * 1e3,
                self.idle_end.as_secs_f64() * 1e3
            )?;
            writeln!(
                f,
                "peak live frames   {} ({:.1} KiB)",
                self.peak_live_frames,
                self.peak_frame_bytes as f64 / 1024.0
            )?;
        } else if self.scheduler == Some(SchedulerKind::Persistent) {
            writeln!(f, "scheduler          persistent (one resident grid)")?;
            writeln!(
                f,
                "spawns             {} tasks, {} handed to idle lanes of their warp; {} frames promoted to the frame pool, {} lane stacks spilled",
                self.total_tasks(),
                self.shared,
                self.promoted,
                self.spills
            )?;
            writeln!(f, "pool               {} items donated to hungry warps, {} taken", self.donated, self.steals)?;
            if self.prioritized + self.priority_fallbacks > 0 {
                writeln!(
                    f,
                    "priorities         {} spawns served best first from the ready heap, {} plain (heap slots full)",
                    self.prioritized, self.priority_fallbacks
                )?;
            }
            writeln!(
                f,
                "frames             {} slots used at most ({:.1} KiB)",
                self.peak_live_frames,
                self.peak_frame_bytes as f64 / 1024.0
            )?;
            if let Some(p) = &self.device_profile {
                writeln!(f, "warps              {p}")?;
            }
        } else {
            if let Some(s) = self.scheduler {
                writeln!(f, "scheduler          {s}")?;
            }
            writeln!(
                f,
                "peak occupancy     {} elements (largest channel {})",
                self.peak_occupancy, self.peak_channel_occupancy
            )?;
            writeln!(f, "dispatches         {}", self.dispatches)?;
            writeln!(f, "spilled segments   {}", self.spilled_segments)?;
        }
        let per = if self.scheduler == Some(SchedulerKind::Persistent) { "(not per level)" } else { "tasks per level" };
        writeln!(f, "{:<16} {:>12} {:>14}  {per}", "function", "tasks", "continuations")?;
        for t in &self.tasks {
            let shown: Vec<String> = t.tasks_per_level.iter().take(12).map(u64::to_string).collect();
            let more = if t.tasks_per_level.len() > 12 { " .." } else { "" };
            writeln!(f, "{:<16} {:>12} {:>14}  [{}{}]", t.name, t.tasks(), t.continuations(), shown.join(" "), more)?;
        }
        Ok(())
    }
}

/// A result together with the statistics of the run that produced it.
#[derive(Clone, Debug)]
pub struct Report<T> {
    /// The root task's return value.
    pub value: T,
    /// What the run did.
    pub stats: Stats,
}

//! Run statistics: what ran where, how deep, how much channel memory was live at once, how long.
//! Backends fill a [`Stats`]; this module owns its shape and its printed form, nothing else.

use crate::config::BackendKind;
use std::fmt;
use std::time::Duration;

/// Per-task-function counts, indexed by recursion level (the root is level 0).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskStats {
    /// The `#[gpu_cilk]` function.
    pub name: &'static str,
    /// Pre-spawn sub-kernels run (= tasks started) per level.
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
        if self.tasks.is_empty() {
            return Ok(());
        }
        writeln!(f, "tasks              {}", self.total_tasks())?;
        writeln!(f, "tasks/s            {:.3e}", self.tasks_per_second())?;
        writeln!(f, "levels             {}", self.levels)?;
        writeln!(
            f,
            "peak occupancy     {} elements (largest channel {})",
            self.peak_occupancy, self.peak_channel_occupancy
        )?;
        writeln!(f, "dispatches         {}", self.dispatches)?;
        writeln!(f, "spilled segments   {}", self.spilled_segments)?;
        writeln!(f, "{:<16} {:>12} {:>14}  tasks per level", "function", "tasks", "continuations")?;
        for t in &self.tasks {
            let shown: Vec<String> = t.tasks_per_level.iter().take(12).map(u64::to_string).collect();
            let more = if t.tasks_per_level.len() > 12 { " .." } else { "" };
            writeln!(f, "{:<16} {:>12} {:>14}  [{}{}]", t.name, t.tasks(), t.continuations(), shown.join(" "), more)?;
        }
        Ok(())
    }
}

//! Chunk planning of the levelized device scheduler: pure arithmetic, unit-tested without a GPU.
//!
//! A launch consumes a chunk of one channel at level `L`; its children go to level `L + 1`, whose
//! pre-spawn channels are empty (the deepest level with work runs first). The chunk is as large as
//! possible while the children it plans for fit: in a full channel (`device_level_capacity`), and
//! even at the largest fan-out ever seen, in a full channel plus the spill pool — so a planning
//! error costs a spill, never the run.

/// Fan-out statistics of one task function, kept across runs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct FanoutStats {
    /// The compiler's bound (`FANOUT`), when it has one.
    pub(crate) static_bound: Option<u64>,
    /// The largest fan-out seen anywhere (one segment's spawns).
    pub(crate) max_seen: u64,
    /// Per level: (children spawned, tasks run) by pre-spawn launches.
    pub(crate) per_level: Vec<(u64, u64)>,
}

impl FanoutStats {
    /// Statistics for a task with compiler bound `bound`.
    pub(crate) fn new(bound: Option<usize>) -> Self {
        FanoutStats { static_bound: bound.map(|b| b as u64), max_seen: 0, per_level: Vec::new() }
    }

    /// The largest fan-out to plan for: the compiler's bound, else the largest seen (at least 1).
    pub(crate) fn largest(&self) -> u64 {
        self.static_bound.unwrap_or(self.max_seen).max(1)
    }

    /// Children to plan per task when sizing a pre-spawn chunk at `level`: the compiler's bound
    /// when it has one; otherwise, since a spawn that finds no room spills instead of failing, the
    /// mean fan-out seen at this level with 50% headroom once 1024 tasks of it have run (the
    /// largest seen anywhere before that), so wide levels of a dynamic task are not cut into
    /// needlessly small chunks by one large fan-out near the root.
    pub(crate) fn plan(&self, level: usize) -> u64 {
        let max = self.largest();
        if self.static_bound.is_some() {
            return max;
        }
        match self.per_level.get(level) {
            Some(&(children, tasks)) if tasks >= 1024 => (children * 3 / (2 * tasks)).clamp(1, max),
            _ => max,
        }
    }

    /// Records a pre-spawn launch of `tasks` tasks at `level` that spawned `children`, whose
    /// largest single fan-out was `seen`.
    pub(crate) fn record(&mut self, level: usize, tasks: u64, children: u64, seen: u64) {
        self.max_seen = self.max_seen.max(seen);
        if self.per_level.len() <= level {
            self.per_level.resize(level + 1, (0, 0));
        }
        self.per_level[level].0 += children;
        self.per_level[level].1 += tasks;
    }
}

/// The largest chunk of `pending` elements to launch when each may spawn `fanout` children
/// (planning figure) and at most `largest` (worst case): the children must fit a channel of
/// `capacity` elements, and at the worst case a full channel plus `spill_records` spilled ones.
pub(crate) fn chunk(pending: u64, fanout: u64, largest: u64, capacity: u64, spill_records: u64) -> u64 {
    let fanout = fanout.max(1);
    let by_plan = (capacity / fanout).max(1);
    let by_worst = ((capacity + spill_records) / largest.max(1)).max(1);
    pending.min(by_plan).min(by_worst)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_bounds_are_used_as_they_are() {
        let s = FanoutStats::new(Some(2));
        assert_eq!(s.plan(0), 2);
        assert_eq!(s.plan(30), 2);
        assert_eq!(s.largest(), 2);
    }

    #[test]
    fn dynamic_fanout_uses_the_level_mean_after_1024_tasks() {
        let mut s = FanoutStats::new(None);
        assert_eq!(s.plan(0), 1, "nothing seen yet: plan for one child");
        s.record(0, 1, 14, 14);
        assert_eq!(s.plan(3), 14, "an unseen level plans for the largest");
        s.record(3, 2048, 4096, 9);
        // mean 2, +50% = 3
        assert_eq!(s.plan(3), 3);
        s.record(4, 1000, 9000, 9);
        assert_eq!(s.plan(4), 14, "fewer than 1024 tasks: the largest");
    }

    #[test]
    fn chunks_fit_the_children() {
        // 1 M pending, fan-out 2, channels of 8 M: 4 M fit, so all of it.
        assert_eq!(chunk(1 << 20, 2, 2, 1 << 23, 0), 1 << 20);
        // 16 M pending: only capacity / 2.
        assert_eq!(chunk(1 << 24, 2, 2, 1 << 23, 0), 1 << 22);
        // Planned mean 3 but a task may spawn 14: the worst case must fit channel + spill.
        assert_eq!(chunk(1 << 24, 3, 14, 1 << 20, 1 << 20), (2 << 20) / 14);
        // Tiny channels still make progress.
        assert_eq!(chunk(5, 16, 16, 4, 0), 1);
        assert_eq!(chunk(0, 2, 2, 64, 0), 0);
    }
}

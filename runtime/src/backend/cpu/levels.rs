//! The levelized scheduler (`GPU_CILK_SCHEDULER=levels`): the host twin of the cuda backend's
//! host-driven loop, kept for differential tests of the GPU algorithm.
//!
//! 1. Find the deepest level `L` with pending work (only `L` and `L + 1` can have gained work since
//!    the last dispatch, so the search is amortized O(1)).
//! 2. Pick one channel at `L` — continuation channels first (their children are all done, because
//!    nothing deeper is pending, and running them frees frames), then the pre-spawn channel.
//! 3. Dispatch a chunk of at most `level_capacity / fan-out` elements of it across the rayon pool,
//!    so the children it spawns fit in level `L + 1` (which is empty: `L` is the deepest level with
//!    work). Fan-out is the compiler's static bound, or the largest seen so far when spawns sit in
//!    loops; a spawn that still finds no room spills into a new channel segment (see `queue`), so
//!    no task is dropped, and only an exhausted element pool stops the run.
//! 4. Repeat until no level has work; the root's result is then in its cell.
//!
//! Live memory is therefore about depth × (chunk elements + chunk frames), not the size of the
//! task tree. `store` runs the sub-kernels; `queue` is the growable channel. This module owns the
//! loop only; it must not touch the stealing scheduler (`steal/`).

use super::queue::Pool;
use super::store::{Dest, ErasedStore, PreElem, Shared, StoreBuilder, TaskStore};
use crate::config::{Config, SchedulerKind};
use crate::error::panic_message;
use crate::error::{Error, Result};
use crate::stats::Report;
use crate::stats::{Stats, TaskStats};
use crate::task::{Call, CilkTask};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

/// Runs `call` to completion on `pool` with the levelized scheduler.
pub(super) fn run<T: CilkTask>(
    pool: &rayon::ThreadPool,
    config: &Config,
    call: Call<'_, T>,
) -> Result<Report<T::Output>> {
    let (mut stores, ids) = StoreBuilder::of::<T>(config.segment_capacity);
    let elements = Pool::new(config.pool_capacity);
    let temps = crate::temp::RunHeap::new(config.temp_heap_bytes);
    let threads = pool.current_num_threads();
    // The whole scheduler loop runs on a pool worker: each dispatch is then a parallel iterator
    // forked from inside the pool (idle workers steal its pieces), not a job injected from
    // outside with the caller blocking on a latch, which cost a cross-thread wake-up and a
    // condvar round trip per dispatch.
    let result = pool.install(|| schedule::<T>(config, threads, call, &mut stores, &ids, &elements, &temps));
    for s in &mut stores {
        s.release(&elements);
    }
    result
}

fn schedule<T: CilkTask>(
    cfg: &Config,
    threads: usize,
    call: Call<'_, T>,
    stores: &mut [Box<dyn ErasedStore>],
    ids: &[std::any::TypeId],
    pool: &Pool,
    temps: &crate::temp::RunHeap,
) -> Result<Report<T::Output>> {
    let start = Instant::now();
    let mut result = T::Output::default();
    for s in stores.iter_mut() {
        s.ensure_level(0);
    }
    let root = stores[0]
        .as_any()
        .downcast_ref::<TaskStore<T>>()
        .ok_or_else(|| Error::Internal("the root task is not the registry's first entry".into()))?;
    root.push(pool, 0, PreElem { args: call.args, dest: Dest::to(std::ptr::addr_of_mut!(result)) })?;

    let mut stats = Stats {
        tasks: stores.iter().map(|s| TaskStats { name: s.name(), ..TaskStats::default() }).collect(),
        scheduler: Some(SchedulerKind::Levels),
        ..Stats::default()
    };
    let mut live: usize = 1;
    stats.peak_occupancy = 1;
    let mut hint = 0usize;
    loop {
        if let Some(limit) = cfg.timeout {
            if start.elapsed() > limit {
                return Err(Error::Timeout(limit));
            }
        }
        let Some(level) = deepest_with_work(stores, hint) else { break };
        let (si, queue, len) = pick_queue(stores, level)
            .ok_or_else(|| Error::Internal(format!("level {level} reported work but no queue has any")))?;
        if level + 1 >= cfg.max_depth {
            return Err(Error::DepthExceeded { task: stores[si].name(), limit: cfg.max_depth });
        }
        for s in stores.iter_mut() {
            s.ensure_level(level + 1);
        }
        let n = len.min((cfg.level_capacity / stores[si].fanout()).max(1));
        stats.peak_channel_occupancy = stats.peak_channel_occupancy.max(stores[si].occupancy(level, queue));
        let chunk = chunk_len(n, threads);
        let sh = Shared { stores, ids, pool, temps };
        let tally = catch_unwind(AssertUnwindSafe(|| sh.stores[si].dispatch(&sh, level, queue, n, chunk)))
            .map_err(|p| Error::TaskPanicked { task: stores[si].name(), level, message: panic_message(&*p) })?;
        if let Some(e) = tally.error {
            return Err(e);
        }
        stats.dispatches += 1;
        stats.peak_occupancy = stats.peak_occupancy.max(live + tally.produced);
        live = (live + tally.produced).saturating_sub(tally.ran as usize);
        let ts = &mut stats.tasks[si];
        let per_level = if queue == 0 { &mut ts.tasks_per_level } else { &mut ts.continuations_per_level };
        if per_level.len() <= level {
            per_level.resize(level + 1, 0);
        }
        per_level[level] += tally.ran;
        stats.levels = stats.levels.max(level + 1);
        stores[si].recycle(level, pool);
        hint = level + 1;
    }
    stats.wall = start.elapsed();
    stats.spilled_segments = pool.spilled() as u64;
    Ok(Report { value: result, stats })
}

/// The deepest level `<= hint` with pending work in any queue of any store.
fn deepest_with_work(stores: &[Box<dyn ErasedStore>], hint: usize) -> Option<usize> {
    (0..=hint).rev().find(|&l| stores.iter().any(|s| (0..s.queues()).any(|q| s.pending(l, q) > 0)))
}

/// The queue to drain at `level`: a continuation queue if any has work, else a pre-spawn queue.
fn pick_queue(stores: &[Box<dyn ErasedStore>], level: usize) -> Option<(usize, usize, usize)> {
    let found = |conts: bool| {
        stores.iter().enumerate().find_map(|(si, s)| {
            let qs: Vec<usize> = if conts { (1..s.queues()).collect() } else { vec![0] };
            qs.into_iter().find_map(|q| {
                let n = s.pending(level, q);
                (n > 0).then_some((si, q, n))
            })
        })
    };
    found(true).or_else(|| found(false))
}

/// Elements per rayon job when dispatching `n` over `threads` workers: about four jobs per worker
/// (room for stealing to even out uneven tasks), at least [`MIN_CHUNK`] and at most 1024. Each job
/// claims its elements with one fetch-and-add and batches its spawns, so larger jobs mean fewer
/// contended atomics.
fn chunk_len(n: usize, threads: usize) -> usize {
    n.div_ceil(threads.max(1) * 4).clamp(MIN_CHUNK, 1024)
}

/// The smallest rayon job: a stolen job costs about as much as tens of small tasks, so small
/// dispatches (the top levels, the narrow levels of irregular trees) run on fewer workers.
const MIN_CHUNK: usize = 16;

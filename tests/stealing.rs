//! The cpu backend's stealing scheduler: deep recursion in heap frames (a 100,000-deep chain of
//! single spawns), failures (panics naming the task and level, `max_depth`, the timeout) that
//! leave the runtime usable, the scheduler setting, and the memory stats.

use gpu_cilk_examples::workloads::chain as chain_workload;
use gpu_cilk_examples::workloads::fib as fib_workload;

use chain_workload::chain;
use fib_workload::fib;
use gpu_cilk::prelude::*;
use std::time::Duration;

fn stealing(threads: usize) -> Config {
    Config::default().backend(BackendKind::Cpu).scheduler(SchedulerKind::Stealing).threads(threads)
}

#[test]
fn a_chain_100000_deep_runs_in_heap_frames() {
    const N: u32 = 100_000;
    for threads in [1, 2, 4] {
        let rt = Runtime::with_config(stealing(threads)).unwrap();
        let r = rt.run_with_stats(chain::task(N)).unwrap();
        assert_eq!(r.value, N as u64);
        let s = &r.stats;
        // The deque never holds more than the one task just pushed: every spawn is a task (none
        // recursed on a worker's stack), and every level waited in a frame on the heap.
        assert_eq!(s.tasks_created, N as u64, "{threads} threads: {s}");
        assert_eq!(s.calls_inlined + s.tasks_inlined, 0, "{s}");
        assert_eq!(s.levels, N as usize + 1);
        assert!(s.peak_live_frames >= N as usize / 2, "{s}");
        assert!(s.peak_frame_bytes >= s.peak_live_frames * 16, "{s}");
    }
}

#[test]
fn the_default_depth_limit_admits_a_million_levels() {
    assert!(Config::default().max_depth > 1_000_000);
}

/// Reads `a[i]` of a four-element array at the bottom of a `depth`-deep chain.
#[gpu_cilk]
pub fn fall(depth: u32, i: u32) -> u32 {
    if depth == 0 {
        let a: [u32; 4] = [1, 2, 3, 4];
        return a[i as usize];
    }
    let x = spawn!(fall(depth - 1, i));
    sync!();
    x + 1
}

#[test]
fn a_panic_names_the_task_and_its_level_and_the_runtime_stays_usable() {
    for threads in [1, 2, 3] {
        let rt = Runtime::with_config(stealing(threads)).unwrap();
        assert_eq!(rt.run(fall::task(5, 1)).unwrap(), 7);
        match rt.run(fall::task(5, 9)) {
            Err(Error::TaskPanicked { task, level, message }) => {
                assert_eq!((task, level), ("fall", 5));
                assert!(message.contains("index out of bounds"), "{message}");
            }
            other => panic!("expected TaskPanicked, got {other:?}"),
        }
        assert_eq!(rt.run(fib::task(20)).unwrap(), 6765);
    }
}

/// A panic deep in a wide tree: many tasks in flight when it happens, on every policy.
#[gpu_cilk]
pub fn wide_fall(n: u32, bad: u32) -> u64 {
    if n < 2 {
        let a: [u64; 2] = [0, 1];
        return a[(n + bad) as usize];
    }
    let x = spawn!(wide_fall(n - 1, bad));
    let y = spawn!(wide_fall(n - 2, bad));
    sync!();
    x + y
}

#[test]
fn a_panic_among_many_tasks_fails_the_run_on_every_policy() {
    for config in [stealing(2), stealing(3).spawn_queue(usize::MAX), stealing(2).spawn_queue(1).inline_nesting(0)] {
        let rt = Runtime::with_config(config).unwrap();
        assert_eq!(rt.run(wide_fall::task(18, 0)).unwrap(), fib(18));
        match rt.run(wide_fall::task(18, 7)) {
            Err(Error::TaskPanicked { task, message, .. }) => {
                assert_eq!(task, "wide_fall");
                assert!(message.contains("index out of bounds"), "{message}");
            }
            other => panic!("expected TaskPanicked, got {other:?}"),
        }
        assert_eq!(rt.run(wide_fall::task(16, 0)).unwrap(), fib(16));
    }
}

/// Recurses forever, one spawn per level, doing a little work on each.
#[gpu_cilk]
pub fn endless(acc: u64) -> u64 {
    let mut a: u64 = acc;
    let mut i: u32 = 0;
    while i < 2000 {
        a = a.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        i += 1;
    }
    let x = spawn!(endless(a));
    sync!();
    x
}

#[test]
fn runaway_recursion_stops_at_max_depth() {
    let rt = Runtime::with_config(stealing(2).max_depth(3000)).unwrap();
    match rt.run(endless::task(1)) {
        Err(Error::DepthExceeded { task, limit }) => assert_eq!((task, limit), ("endless", 3000)),
        other => panic!("expected DepthExceeded, got {other:?}"),
    }
    assert_eq!(rt.run(chain::task(1000)).unwrap(), 1000);
}

#[test]
fn runaway_recursion_stops_at_the_timeout() {
    let rt = Runtime::with_config(stealing(2).timeout(Some(Duration::from_millis(200)))).unwrap();
    match rt.run(endless::task(1)) {
        Err(Error::Timeout(t)) => assert_eq!(t, Duration::from_millis(200)),
        other => panic!("expected Timeout, got {other:?}"),
    }
    assert_eq!(rt.run(chain::task(1000)).unwrap(), 1000);
}

#[test]
fn the_scheduler_setting_selects_and_persistent_is_refused_on_cpu() {
    let levels =
        Runtime::with_config(Config::default().backend(BackendKind::Cpu).scheduler(SchedulerKind::Levels)).unwrap();
    let r = levels.run_with_stats(fib::task(12)).unwrap();
    assert_eq!((r.value, r.stats.scheduler), (144, Some(SchedulerKind::Levels)));
    let auto = Runtime::with_config(Config::default().backend(BackendKind::Cpu)).unwrap();
    assert_eq!(auto.run_with_stats(fib::task(12)).unwrap().stats.scheduler, Some(SchedulerKind::Stealing));
    match Runtime::with_config(Config::default().backend(BackendKind::Cpu).scheduler(SchedulerKind::Persistent)) {
        Err(Error::Config(m)) => assert!(m.contains("persistent") && m.contains("cuda"), "{m}"),
        other => panic!("expected a configuration error, got {other:?}"),
    }
}

#[test]
fn stats_print_the_stealing_counts() {
    let rt = Runtime::with_config(stealing(2)).unwrap();
    let stats = rt.run_with_stats(fib::task(20)).unwrap().stats;
    let text = stats.to_string();
    for line in ["scheduler          stealing", "spawns ", "steals ", "idle ", "phases ", "peak live frames "] {
        assert!(text.contains(line), "{line:?} missing from\n{text}");
    }
    // Idle time is counted per worker within the run: the part before joining is part of it,
    // and no worker is idle longer than the run.
    assert!((1..=2).contains(&stats.workers), "{stats}");
    assert!(stats.late <= stats.idle, "{stats}");
    assert!(stats.idle <= stats.wall * stats.workers as u32, "{stats}");
    // The phases: some worker took the root before it delivered, which was before the return.
    assert!(stats.spread <= stats.root_done, "{stats}");
    assert!(!stats.root_done.is_zero() && stats.root_done <= stats.wall, "{stats}");
    // Idle before the first task and after the last are disjoint parts of the idle time.
    assert!(stats.idle_start + stats.idle_end <= stats.idle, "{stats}");
    assert!(stats.late <= stats.idle_start, "{stats}");
}

//! Priority spawns on the device schedulers (`spawn!(f(..), priority = key)`): the persistent
//! scheduler queues them in its ready heap (ready_heap.cuh) and serves them best first; the
//! results stay the serial function's (`tests/differential.rs` checks that over many trees and
//! every backend); here, that with a reserve as large as the heap every priority spawn of a
//! segment goes through it, that a full heap turns spawns into plain ones without losing any, and
//! that a reserve of 0 and `device_priority_servers = 0` keep spawns out of it. On the host simulation in CI, on a GPU with `--include-ignored`.

use gpu_cilk_test_support::programs::backends;

use gpu_cilk::prelude::*;
use gpu_cilk::runtime::{BackendKind, SchedulerKind};

/// A binary tree of depth `d` whose every spawn carries a priority (of three key types).
#[gpu_cilk]
fn ptree(seed: u64, d: u32) -> u64 {
    if d == 0 {
        return seed % 1000;
    }
    let a = spawn!(ptree((seed * 3 + 1) % 100_003, d - 1), priority = seed % 17);
    let b = spawn!(ptree((seed * 5 + 2) % 100_019, d - 1), priority = -(d as i64));
    let c = spawn!(pleaf(seed), priority = (seed % 5) as f64 * 0.5);
    sync!();
    a + b + c + 1
}

#[gpu_cilk]
fn pleaf(seed: u64) -> u64 {
    seed % 7
}

/// Priority spawns of `ptree(_, d)`: three per inner node.
fn spawns(d: u32) -> u64 {
    3 * ((1u64 << d) - 1)
}

fn check(base: Config) {
    let tasks = base.scheduler(SchedulerKind::Persistent);
    let d = 7;
    let want = ptree(11, d);

    // The defaults: the heap takes only what the warps' stacks and the pool cannot hold (nothing
    // in a tree this small, but that depends on the schedule).
    let rt = Runtime::with_config(tasks.clone()).unwrap();
    let r = rt.run_with_stats(ptree::task(11, d)).unwrap();
    assert_eq!(r.value, want);
    assert!(r.stats.prioritized <= spawns(d), "{}", r.stats);

    // A reserve as large as the heap: every priority spawn goes through it.
    let strict = tasks.clone().device_priority_slots(4096).device_priority_reserve(4096);
    let rt = Runtime::with_config(strict.clone()).unwrap();
    let r = rt.run_with_stats(ptree::task(11, d)).unwrap();
    assert_eq!(r.value, want);
    assert_eq!(r.stats.prioritized, spawns(d), "every priority spawn through the ready heap\n{}", r.stats);
    assert_eq!(r.stats.priority_fallbacks, 0, "{}", r.stats);
    // Later runs on the same runtime reuse the heap (reset between runs).
    for s in 0..4u64 {
        let r = rt.run_with_stats(ptree::task(s, 5)).unwrap();
        assert_eq!(r.value, ptree(s, 5), "run {s}");
        assert_eq!(r.stats.prioritized, spawns(5), "run {s}\n{}", r.stats);
    }

    // Three slots: most spawns find them taken and run as plain spawns; none is lost.
    let rt = Runtime::with_config(strict.device_priority_slots(3).device_priority_reserve(3).device_priority_window(1))
        .unwrap();
    let r = rt.run_with_stats(ptree::task(11, d)).unwrap();
    assert_eq!(r.value, want);
    assert_eq!(r.stats.prioritized + r.stats.priority_fallbacks, spawns(d), "{}", r.stats);
    assert!(r.stats.priority_fallbacks > 0, "3 slots for {} spawns\n{}", spawns(d), r.stats);

    // A reserve of 0: priority spawns go depth-first like plain ones (the warps' stacks hold the
    // whole tree, so none needs the heap as its overflow).
    let rt = Runtime::with_config(tasks.clone().device_priority_reserve(0)).unwrap();
    let r = rt.run_with_stats(ptree::task(11, d)).unwrap();
    assert_eq!(r.value, want);
    assert_eq!(r.stats.prioritized + r.stats.priority_fallbacks, 0, "{}", r.stats);

    // No server: priorities off, plain spawns.
    let rt = Runtime::with_config(tasks.device_priority_servers(0)).unwrap();
    let r = rt.run_with_stats(ptree::task(11, d)).unwrap();
    assert_eq!(r.value, want);
    assert_eq!(r.stats.prioritized + r.stats.priority_fallbacks, 0, "{}", r.stats);
}

#[test]
fn priority_spawns_go_through_the_ready_heap_on_the_simulation() {
    let sim = Config::default().backend(BackendKind::CudaSim);
    if let Err(e) = Runtime::with_config(sim.clone()) {
        backends::gate::sim_missing("the ready heap on cuda-sim", &e);
        return;
    }
    check(sim);
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn priority_spawns_go_through_the_ready_heap_on_cuda() {
    let cuda = Config::default().backend(BackendKind::Cuda);
    if let Err(e) = Runtime::with_config(cuda.clone()) {
        backends::gate::no_gpu("the ready heap on cuda", &e);
    }
    check(cuda);
}

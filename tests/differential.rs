//! Differential tests: the examples' own task functions and randomized task trees give the same
//! answer on every backend as the serial oracle (the plain Rust function): serial, cpu (also with
//! capacities so small that every level spills) and, where a GPU is usable, cuda (also with tiny
//! device channels). `GPU_CILK_REQUIRE_GPU=1` (set by scripts/gpu-check.sh) makes a missing GPU a
//! failure instead of a skip.

#[path = "support/backends.rs"]
mod backends;
#[path = "../examples/workloads/fib.rs"]
mod fib_workload;
#[path = "../examples/workloads/queens.rs"]
mod queens_workload;
#[path = "support/random_tree.rs"]
mod random_tree;

use fib_workload::fib;
use gpu_cilk::prelude::*;
use queens_workload::{queens, queens_bits, KNOWN};
use random_tree::rnode;

fn runtimes() -> Vec<Runtime> {
    backends::all(Config::default())
}

#[test]
fn fib_equals_serial_on_every_backend() {
    for rt in runtimes() {
        for n in [0u32, 1, 2, 3, 10, 17, 22] {
            assert_eq!(rt.run(fib::task(n)).unwrap(), fib(n), "fib({n}) on {:?}", rt.config());
        }
    }
}

#[test]
fn queens_equals_known_counts_on_every_backend() {
    for rt in runtimes() {
        for n in 1..=8u32 {
            let k = KNOWN[n as usize];
            assert_eq!(rt.run(queens::task(n, 0, [0; 16])).unwrap(), k, "queens({n}) on {:?}", rt.config());
            assert_eq!(rt.run(queens_bits::task(n, 0, 0, 0)).unwrap(), k, "queens_bits({n}) on {:?}", rt.config());
        }
    }
}

#[test]
fn cpu_stats_count_every_task() {
    let rt = Runtime::with_config(Config::default().backend(BackendKind::Cpu)).unwrap();
    let r = rt.run_with_stats(fib::task(15)).unwrap();
    assert_eq!(r.value, 610);
    // fib(n) makes 2 fib(n+1) - 1 calls; every one is a task.
    assert_eq!(r.stats.total_tasks(), 2 * 987 - 1);
    assert_eq!(r.stats.levels, 15);
    assert!(r.stats.peak_occupancy > 0 && r.stats.peak_occupancy < r.stats.total_tasks() as usize);
}

#[test]
fn randomized_task_trees_equal_serial() {
    let rts = runtimes();
    for seed in 0..150u64 {
        let depth = (seed % 6) as u32;
        let expected = rnode(seed, depth);
        for rt in &rts {
            assert_eq!(
                rt.run(rnode::task(seed, depth)).unwrap(),
                expected,
                "rnode({seed}, {depth}) on {:?}",
                rt.config()
            );
        }
    }
}

#[test]
fn an_exhausted_device_spill_pool_is_an_error_not_a_hang() {
    // One-element channels: the root's second child must spill, and the pool holds no record.
    let Some(rt) = backends::cuda(Config::default().device_level_capacity(1).device_spill_capacity(8)) else { return };
    match rt.run(fib::task(20)) {
        Err(gpu_cilk::Error::PoolExhausted { task, .. }) => assert_eq!(task, "fib"),
        other => panic!("expected PoolExhausted, got {other:?}"),
    }
    // The runtime stays usable after the failed run.
    let ok = Runtime::with_config(Config::default().backend(BackendKind::Cuda)).unwrap();
    assert_eq!(ok.run(fib::task(20)).unwrap(), 6765);
}

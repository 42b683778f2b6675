//! The real `#[gpu_cilk]` macro on the shapes the subset promises (the example workloads and
//! `test-support/src/programs/fixtures.rs`): straight-line spawns, spawns in loops into array elements,
//! mutual recursion between three tasks, a unit task with discarded spawns, a unit task that falls
//! off its end with children outstanding (`fill_rec`), early returns with
//! children outstanding (implicit sync), device helpers and plain calls. Each must equal the plain
//! serial function the macro keeps on the host backends and, in `#[ignore]`d GPU tests (run with
//! `--include-ignored` on a GPU machine), on cuda.

use gpu_cilk::prelude::*;

use gpu_cilk_examples::workloads::queens as queens_workload;
use gpu_cilk_test_support::programs::backends;
use gpu_cilk_test_support::programs::fixtures;

use fixtures::*;
use queens_workload::queens;

fn fib_matches_serial(rts: &[Runtime]) {
    for rt in rts {
        for n in [0u32, 1, 2, 7, 15] {
            assert_eq!(rt.run(fib::task(n)).expect("runs"), fib(n), "fib({n}) on {:?}", rt.config());
        }
    }
}

#[test]
fn fib_matches_serial_on_the_host_backends() {
    fib_matches_serial(&backends::host(Config::default()));
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn fib_matches_serial_on_cuda() {
    fib_matches_serial(&backends::cuda_all(Config::default()));
}

fn queens_matches_serial_and_known_counts(rts: &[Runtime]) {
    let known = [1u64, 1, 0, 0, 2, 10, 4, 40];
    for rt in rts {
        for n in 1..=7u32 {
            let got = rt.run(queens::task(n, 0, [0; 16])).expect("runs");
            assert_eq!(got, queens(n, 0, [0; 16]), "queens({n}) on {:?}", rt.config());
            assert_eq!(got, known[n as usize], "queens({n})");
        }
    }
}

#[test]
fn queens_matches_serial_and_known_counts_on_the_host_backends() {
    queens_matches_serial_and_known_counts(&backends::host(Config::default()));
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn queens_matches_serial_and_known_counts_on_cuda() {
    queens_matches_serial_and_known_counts(&backends::cuda_all(Config::default()));
}

fn wide_matches_serial(rts: &[Runtime]) {
    for rt in rts {
        for (d, k) in [(0, 3), (1, 1), (3, 3), (2, 8)] {
            assert_eq!(rt.run(wide::task(d, k)).expect("runs"), wide(d, k), "wide({d},{k}) on {:?}", rt.config());
        }
    }
}

#[test]
fn wide_matches_serial_on_the_host_backends() {
    wide_matches_serial(&backends::host(Config::default()));
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn wide_matches_serial_on_cuda() {
    wide_matches_serial(&backends::cuda_all(Config::default()));
}

fn mutual_recursion_matches_serial(rts: &[Runtime]) {
    for rt in rts {
        for n in [0u32, 1, 4, 9] {
            assert_eq!(rt.run(ping::task(n)).expect("runs"), ping(n), "ping({n}) on {:?}", rt.config());
            assert_eq!(rt.run(pong::task(n)).expect("runs"), pong(n), "pong({n})");
            assert_eq!(rt.run(other::pang::task(n)).expect("runs"), other::pang(n), "pang({n})");
        }
    }
}

#[test]
fn mutual_recursion_matches_serial_on_the_host_backends() {
    mutual_recursion_matches_serial(&backends::host(Config::default()));
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn mutual_recursion_matches_serial_on_cuda() {
    mutual_recursion_matches_serial(&backends::cuda_all(Config::default()));
}

/// A unit task that falls off its end after spawning (no `sync!()`) completes only after its
/// children: the parent's `sync!()` sees every element the whole subtree wrote.
fn falling_off_after_spawns_waits_for_the_children(rts: &[Runtime]) {
    for rt in rts {
        for n in [1usize, 2, 7, 100, 1000] {
            let mut want = vec![0u32; n];
            let expect = fill_root(&mut want);
            let mut a = vec![0u32; n];
            let got = rt.run(fill_root::task(&mut a)).expect("runs");
            assert_eq!((got, &a), (expect, &want), "fill_root(n = {n}) on {:?}", rt.config());
            assert!(a.iter().all(|&x| x != 0), "every element written, n = {n}");
        }
    }
}

#[test]
fn falling_off_after_spawns_waits_for_the_children_on_the_host_backends() {
    falling_off_after_spawns_waits_for_the_children(&backends::host(Config::default()));
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn falling_off_after_spawns_waits_for_the_children_on_cuda() {
    falling_off_after_spawns_waits_for_the_children(&backends::cuda_all(Config::default()));
}

fn unit_task_with_discarded_spawns_runs(rts: &[Runtime]) {
    for rt in rts {
        rt.run(walk::task(4, 3)).expect("runs");
        walk(4, 3);
    }
}

#[test]
fn unit_task_with_discarded_spawns_runs_on_the_host_backends() {
    unit_task_with_discarded_spawns_runs(&backends::host(Config::default()));
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn unit_task_with_discarded_spawns_runs_on_cuda() {
    unit_task_with_discarded_spawns_runs(&backends::cuda_all(Config::default()));
}

fn early_returns_with_outstanding_children_match_serial(rts: &[Runtime]) {
    for rt in rts {
        for n in 0..12u32 {
            assert_eq!(rt.run(early::task(n)).expect("runs"), early(n), "early({n}) on {:?}", rt.config());
        }
    }
}

#[test]
fn early_returns_with_outstanding_children_match_serial_on_the_host_backends() {
    early_returns_with_outstanding_children_match_serial(&backends::host(Config::default()));
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn early_returns_with_outstanding_children_match_serial_on_cuda() {
    early_returns_with_outstanding_children_match_serial(&backends::cuda_all(Config::default()));
}

fn locals_across_two_syncs_match_serial(rts: &[Runtime]) {
    for rt in rts {
        for n in 0..6u32 {
            assert_eq!(rt.run(mixed::task(n)).expect("runs"), mixed(n), "mixed({n}) on {:?}", rt.config());
        }
    }
}

#[test]
fn locals_across_two_syncs_match_serial_on_the_host_backends() {
    locals_across_two_syncs_match_serial(&backends::host(Config::default()));
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn locals_across_two_syncs_match_serial_on_cuda() {
    locals_across_two_syncs_match_serial(&backends::cuda_all(Config::default()));
}

#[test]
fn generated_constants_describe_the_shape() {
    use gpu_cilk::runtime::CilkTask;
    assert_eq!(<fib::Task as CilkTask>::SYNCS, 1);
    assert_eq!(<fib::Task as CilkTask>::FANOUT, Some(2));
    assert_eq!(<queens::Task as CilkTask>::FANOUT, None);
    assert_eq!(<wide::Task as CilkTask>::SYNCS, 2);
    assert_eq!(<pong::Task as CilkTask>::SYNCS, 2);
    assert_eq!(<walk::Task as CilkTask>::FANOUT, None);
    assert_eq!(<early::Task as CilkTask>::FANOUT, Some(3));
    assert_eq!(<leaf::Task as CilkTask>::SYNCS, 0);
    let names: Vec<&str> = gpu_cilk::runtime::Registry::of::<ping::Task>().entries().iter().map(|e| e.name).collect();
    assert_eq!(names, ["ping", "pong", "pang"]);
}

/// Tasks without parameters, as root and as children, with and without outputs (issue 8 point 1).
fn parameterless_tasks_run(rts: &[Runtime]) {
    for rt in rts {
        assert_eq!(rt.run(no_params::task()).expect("runs"), no_params(), "on {:?}", rt.config());
        rt.run(nothing::task()).expect("runs");
    }
}

#[test]
fn parameterless_tasks_run_on_the_host_backends() {
    parameterless_tasks_run(&backends::host(Config::default()));
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn parameterless_tasks_run_on_cuda() {
    parameterless_tasks_run(&backends::cuda_all(Config::default()));
}

fn generated_regressions_match_serial(rts: &[Runtime]) {
    for rt in rts {
        for n in 0..8u32 {
            let got = rt.run(generated_regressions::task(n)).expect("runs");
            assert_eq!(got, generated_regressions(n), "generated_regressions({n}) on {:?}", rt.config());
        }
    }
}

/// Issue 8: what the random program generator found miscompiled in CUDA (array literal
/// arguments, a unit task ending in `if`, parenthesized comparisons, a literal argument of a
/// method on a call), each a value the cuda-sim backends must get right.
#[test]
fn generated_regressions_match_serial_on_the_host_backends() {
    generated_regressions_match_serial(&backends::host(Config::default()));
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn generated_regressions_match_serial_on_cuda() {
    generated_regressions_match_serial(&backends::cuda_all(Config::default()));
}

/// `bound_mix`: priority spawns with keys of four types and bounds of every kind and width; the
/// result and the final bounds equal the serial function's.
fn bound_mix_matches_serial(rts: &[Runtime]) {
    let fresh = || (Max::new(0u32), Min::new(i32::MAX), Sum::new(0i64), Max::new(i64::MIN));
    for n in [0u32, 1, 5, 11] {
        let (hi, lo, sum, far) = fresh();
        let want = bound_mix(n, &hi, &lo, &sum, &far);
        let want = (want, hi.get(), lo.get(), sum.get(), far.get());
        for rt in rts {
            let (hi, lo, sum, far) = fresh();
            let got = rt.run(bound_mix::task(n, &hi, &lo, &sum, &far)).expect("runs");
            assert_eq!((got, hi.get(), lo.get(), sum.get(), far.get()), want, "bound_mix({n}) on {:?}", rt.config());
        }
    }
}

#[test]
fn bound_mix_matches_serial_on_the_host_backends() {
    bound_mix_matches_serial(&backends::host(Config::default()));
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn bound_mix_matches_serial_on_cuda() {
    bound_mix_matches_serial(&backends::cuda_all(Config::default()));
}

//! `sync!()` inside control flow (`test-support/src/programs/control.rs`): every backend that can run such
//! tasks (serial, cpu with the stealing scheduler, the cuda persistent scheduler on the host
//! simulation and, in `#[ignore]`d GPU tests, on a GPU) gives the serial function's results; the
//! levels schedulers refuse them with an error that names the task. Also arrays and tuples as
//! results of tasks and helpers (`hash5`, `range_mm`, `minmax`, `mm_rounds`), and slice
//! parameters in state-machine tasks (`chunk_sums`, `slice_bsum`).

use gpu_cilk::prelude::*;
use gpu_cilk::runtime::SchedulerKind;

use gpu_cilk_test_support::programs::backends;
use gpu_cilk_test_support::programs::control;

use control::*;

/// The backends that run state-machine tasks: every host one but the cpu levels scheduler.
fn host() -> Vec<Runtime> {
    backends::host(Config::default()).into_iter().filter(|rt| rt.config().scheduler != SchedulerKind::Levels).collect()
}

fn cuda() -> Vec<Runtime> {
    backends::cuda_all(Config::default())
        .into_iter()
        .filter(|rt| rt.config().scheduler != SchedulerKind::Levels)
        .collect()
}

fn all_equal_serial(rts: &[Runtime]) {
    assert!(!rts.is_empty());
    for rt in rts {
        let c = rt.config();
        for (lo, hi) in [(0u32, 1u32), (0, 2), (3, 40), (0, 100)] {
            assert_eq!(rt.run(bsum::task(lo, hi)).expect("bsum"), bsum(lo, hi), "bsum({lo}, {hi}) on {c:?}");
        }
        for (n, r) in [(1u32, 0u32), (2, 1), (5, 6), (9, 13)] {
            assert_eq!(rt.run(rounds::task(n, r)).expect("rounds"), rounds(n, r), "rounds({n}, {r}) on {c:?}");
        }
        for n in [1u64, 2, 7, 27, 97] {
            assert_eq!(rt.run(steps::task(n)).expect("steps"), steps(n), "steps({n}) on {c:?}");
        }
        for (n, m) in [(0u32, 3u32), (1, 1), (4, 5), (6, 9)] {
            assert_eq!(rt.run(grid::task(n, m)).expect("grid"), grid(n, m), "grid({n}, {m}) on {c:?}");
        }
        for s in [0u32, 1, 5, 123] {
            assert_eq!(rt.run(until::task(s)).expect("until"), until(s), "until({s}) on {c:?}");
        }
        for (s, d) in [(0u32, 0u32), (5, 1), (77, 4)] {
            assert_eq!(rt.run(hash5::task(s, d)).expect("hash5"), hash5(s, d), "hash5({s}, {d}) on {c:?}");
        }
        for (lo, hi) in [(0u32, 1u32), (3, 20), (0, 64)] {
            assert_eq!(rt.run(range_mm::task(lo, hi)).expect("mm"), range_mm(lo, hi), "range_mm({lo}, {hi}) on {c:?}");
        }
        for n in [0u32, 1, 6] {
            assert_eq!(rt.run(mm_rounds::task(n)).expect("mm_rounds"), mm_rounds(n), "mm_rounds({n}) on {c:?}");
        }
        for (n, r) in [(3u32, 0u32), (5, 1), (16, 4), (33, 9)] {
            assert_eq!(rt.run(relax_root::task(n, r)).expect("relax"), relax_root(n, r), "relax({n}, {r}) on {c:?}");
        }
        slices_equal_serial(rt);
    }
}

/// Slice parameters in state-machine tasks: the result and every element the task (and its
/// children) wrote through its `&mut` slices equal the serial function's.
fn slices_equal_serial(rt: &Runtime) {
    let c = rt.config();
    for (n, chunk) in [(1usize, 1usize), (7, 3), (64, 8), (100, 7), (257, 32)] {
        let input: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761) >> 7).collect();
        let chunks = n.div_ceil(chunk);
        let (mut a, mut out) = (input.clone(), vec![0u64; chunks]);
        let (mut a0, mut out0) = (input.clone(), vec![0u64; chunks]);
        let want = chunk_sums(&mut a0, &mut out0, chunk);
        let got = rt.run(chunk_sums::task(&mut a, &mut out, chunk)).expect("chunk_sums");
        assert_eq!(got, want, "chunk_sums(n = {n}, chunk = {chunk}) on {c:?}");
        assert_eq!(a, a0, "chunk_sums(n = {n}, chunk = {chunk}): the scaled input on {c:?}");
        assert_eq!(out, out0, "chunk_sums(n = {n}, chunk = {chunk}): the chunk sums on {c:?}");
    }
    for n in [0usize, 1, 4, 5, 9, 33, 200] {
        let input: Vec<u32> = (0..n as u32).map(|i| i * 3 + 1).collect();
        let (mut out, mut out0) = (vec![0u64; n], vec![0u64; n]);
        let want = slice_bsum(&input, &mut out0);
        let got = rt.run(slice_bsum::task(&input, &mut out)).expect("slice_bsum");
        assert_eq!(got, want, "slice_bsum(n = {n}) on {c:?}");
        assert_eq!(out, out0, "slice_bsum(n = {n}): out on {c:?}");
    }
}

#[test]
fn sync_in_branches_and_loops_equals_serial_on_the_host_backends() {
    let rts = host();
    if std::env::var_os("GPU_CILK_REQUIRE_SIM").is_some() {
        assert!(rts.iter().any(|rt| rt.config().backend == BackendKind::CudaSim), "no cuda-sim backend");
    }
    all_equal_serial(&rts);
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn sync_in_branches_and_loops_equals_serial_on_cuda() {
    all_equal_serial(&cuda());
}

#[test]
fn the_cpu_levels_scheduler_refuses_a_state_machine_task() {
    let rt = Runtime::with_config(Config::default().backend(BackendKind::Cpu).scheduler(SchedulerKind::Levels))
        .expect("cpu levels");
    let e = rt.run(rounds::task(3, 2)).expect_err("refused");
    let msg = e.to_string();
    assert!(msg.contains("levels scheduler cannot run `rounds`"), "{msg}");
    // A straight-line task still runs there.
    assert_eq!(rt.run(leaf::task(3)).expect("leaf"), leaf(3));
}

#[test]
fn the_serial_functions_compute_what_they_say() {
    // Hand-computed values pin the fixtures themselves (the oracle must not be vacuous).
    assert_eq!(steps(1), 0);
    assert_eq!(steps(6), 8);
    assert_eq!(bsum(0, 1), leaf(0) * 3 + leaf(8));
    // 3 cells [0, 2^40, 2]: the middle one becomes (left + 2 mid + right) / 4 per round, 2^35
    // after five, and the checksum folds the cells of the buffer the last round wrote.
    assert_eq!(relax_root(3, 5), (1u64 << 35) * 31 + 2);
    assert_eq!(hash5(9, 0), [9, 9 ^ 0x5a5a, 27, 9u32.rotate_left(7), 1]);
    assert_eq!(minmax(5, 2), (2, 5));
    let all: Vec<u64> = (3u64..20).map(|i| i.wrapping_mul(2_654_435_761) % 1009).collect();
    assert_eq!(range_mm(3, 20), (*all.iter().min().unwrap(), *all.iter().max().unwrap()));
    // [1, 2, 3, 4, 5] in chunks of 2: halves scaled by 3 and 5, then summed per chunk.
    let (mut a, mut out) = (vec![1u32, 2, 3, 4, 5], vec![0u64; 3]);
    assert_eq!(chunk_sums(&mut a, &mut out, 2), 4 + 11 + 10 + 21 + 26);
    assert_eq!((a, out), (vec![4, 11, 10, 21, 26], vec![15, 31, 26]));
    // Five elements: halves [1, 2] and [3, 4, 5] are leaves (2 a[i]), then out[0] + 1 and a[4].
    let mut out = vec![0u64; 5];
    assert_eq!(slice_bsum(&[1, 2, 3, 4, 5], &mut out), 30 + 5);
    assert_eq!(out, [3, 4, 6, 8, 10]);
}

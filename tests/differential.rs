//! Differential tests: the examples' own task functions and randomized task trees give the same
//! answer on every backend as the serial oracle (the plain Rust function): serial, cpu (also with
//! capacities so small that every level spills) and cuda (also with tiny device channels). Each
//! check is one function run by a host test and by a GPU test (`#[ignore]`d: run with
//! `--include-ignored` on a GPU machine; see `gpu_cilk_test_support::gate`).

use gpu_cilk_examples::workloads::fib as fib_workload;
use gpu_cilk_examples::workloads::knapsack as knapsack_workload;
use gpu_cilk_examples::workloads::matmul as matmul_workload;
use gpu_cilk_examples::workloads::queens as queens_workload;
use gpu_cilk_examples::workloads::sort as sort_workload;
use gpu_cilk_examples::workloads::strassen as strassen_workload;
use gpu_cilk_examples::workloads::unbalanced as unbalanced_workload;
use gpu_cilk_test_support::programs::backends;
use gpu_cilk_test_support::programs::random_tree;

use fib_workload::fib;
use gpu_cilk::prelude::*;
use gpu_cilk::runtime::SchedulerKind;
use queens_workload::{queens, queens_bits, KNOWN};
use random_tree::{cnode, rnode};

fn host() -> Vec<Runtime> {
    backends::host(Config::default())
}

fn cuda() -> Vec<Runtime> {
    backends::cuda_all(Config::default())
}

/// cilksort: slices in and out of the root, sub-slices to children, three syncs, two task
/// functions. Every shape and size sorts to the serial oracle's result (the plain function on a
/// copy), which is sorted and a permutation of the input (sums and byte histograms).
fn cilksort_equals_serial(rts: &[Runtime]) {
    use sort_workload::{cilksort, fingerprint, input, is_sorted, SHAPES};
    for shape in SHAPES {
        for n in [0usize, 1, 2, 31, 33, 100, 257, 1000, 4099] {
            let orig = input(shape, n, n as u64 + 1);
            let mut want = orig.clone();
            cilksort(&mut want, &mut vec![0u32; n]);
            assert!(is_sorted(&want), "{shape:?} {n}: the serial function does not sort");
            assert_eq!(fingerprint(&want), fingerprint(&orig), "{shape:?} {n}: not a permutation");
            for rt in rts {
                let mut a = orig.clone();
                let mut tmp = vec![0u32; n];
                rt.run(cilksort::task(&mut a, &mut tmp))
                    .unwrap_or_else(|e| panic!("{shape:?} {n} on {:?}: {e}", rt.config()));
                assert_eq!(a, want, "{shape:?} {n} on {:?}", rt.config());
            }
        }
    }
    // The one generic cilksort (`T: Key`) instantiated for f32 and i64 keys: float and 64-bit
    // comparisons, each instantiation a task of its own (a template instantiation on the device);
    // 777 keys go to the warp sort, 5000 through cilksort's quarters and cilkmerge's splits.
    sort_keys_equal_serial::<f32>(rts, "f32");
    sort_keys_equal_serial::<i64>(rts, "i64");
}

fn sort_keys_equal_serial<T: sort_workload::SortKey>(rts: &[Runtime], what: &str) {
    use sort_workload::{cilksort, fingerprint, input_keys, is_sorted, SHAPES};
    for shape in SHAPES {
        for n in [777usize, 5000] {
            let orig: Vec<T> = input_keys(shape, n, 5);
            let mut want = orig.clone();
            cilksort(&mut want, &mut vec![T::default(); n]);
            assert!(is_sorted(&want) && fingerprint(&want) == fingerprint(&orig), "{shape:?} {n} {what}");
            for rt in rts {
                let mut a = orig.clone();
                let mut tmp = vec![T::default(); n];
                rt.run(cilksort::task(&mut a, &mut tmp))
                    .unwrap_or_else(|e| panic!("{shape:?} {n} {what} on {:?}: {e}", rt.config()));
                assert!(a == want, "{shape:?} {n} {what} on {:?}", rt.config());
            }
        }
    }
}

fn fib_equals_serial(rts: &[Runtime]) {
    for rt in rts {
        for n in [0u32, 1, 2, 3, 10, 17, 22] {
            assert_eq!(rt.run(fib::task(n)).unwrap(), fib(n), "fib({n}) on {:?}", rt.config());
        }
    }
}

fn queens_equal_known_counts(rts: &[Runtime]) {
    for rt in rts {
        for n in 1..=8u32 {
            let k = KNOWN[n as usize];
            assert_eq!(rt.run(queens::task(n, 0, [0; 16])).unwrap(), k, "queens({n}) on {:?}", rt.config());
            assert_eq!(rt.run(queens_bits::task(n, 0, 0, 0)).unwrap(), k, "queens_bits({n}) on {:?}", rt.config());
        }
    }
}

/// Random trees whose syncs stand in branches and loops, on every backend but the levels
/// schedulers (which refuse such tasks).
fn control_trees_equal_serial(rts: &[Runtime]) {
    let rts: Vec<&Runtime> = rts.iter().filter(|rt| rt.config().scheduler != SchedulerKind::Levels).collect();
    assert!(!rts.is_empty());
    let mut shapes = std::collections::BTreeSet::new();
    for seed in 0..80u64 {
        let depth = (seed % 5) as u32;
        let expected = cnode(seed, depth);
        shapes.insert(expected.1.min(50));
        for rt in &rts {
            assert_eq!(
                rt.run(cnode::task(seed, depth)).unwrap(),
                expected,
                "cnode({seed}, {depth}) on {:?}",
                rt.config()
            );
        }
    }
    // The seeds make trees of many sizes (the node counts differ), not one shape again and again.
    assert!(shapes.len() > 10, "{shapes:?}");
}

fn random_trees_equal_serial(rts: &[Runtime]) {
    // GPU_CILK_TEST_TREES (default 150) trims the seeds, e.g. for a run under compute-sanitizer.
    let trees = std::env::var("GPU_CILK_TEST_TREES").ok().and_then(|v| v.parse().ok()).unwrap_or(150u64);
    for seed in 0..trees {
        let depth = (seed % 6) as u32;
        let expected = rnode(seed, depth);
        for rt in rts {
            assert_eq!(
                rt.run(rnode::task(seed, depth)).unwrap(),
                expected,
                "rnode({seed}, {depth}) on {:?}",
                rt.config()
            );
        }
    }
}

/// The unbalanced (UTS-style binomial) tree: node counts equal the serial function's, on trees
/// from a single leaf to thousands of nodes of very uneven roots, and with no roots at all.
fn unbalanced_equals_serial(rts: &[Runtime]) {
    use unbalanced_workload::uts;
    // (13, 64, 4, 245_000): 4,864 nodes, 86 levels, one root holding 4,017 of them; (7, 64, 8,
    // 123_000): 12,968 nodes, 70 levels. Deeper trees (the benchmark's 1,700 levels) are the
    // suite's: an inline call over the device stack budget unwinds and runs as a task again
    // (docs/architecture.md, "Inline limits").
    let cases: [(u64, u32, u32, u32); 6] = [
        (1, 0, 8, 120_000),
        (2, 1, 8, 0),
        (3, 16, 8, 120_000),
        (4, 64, 4, 240_000),
        (13, 64, 4, 245_000),
        (7, 64, 8, 123_000),
    ];
    for (seed, roots, m, q) in cases {
        let want = uts(seed, roots, m, q);
        assert!(want >= roots as u64, "uts{:?}: {want} nodes, fewer than its roots", (seed, roots, m, q));
        for rt in rts {
            let got = rt.run(uts::task(seed, roots, m, q)).unwrap_or_else(|e| panic!("uts on {:?}: {e}", rt.config()));
            assert_eq!(got, want, "uts{:?} on {:?}", (seed, roots, m, q), rt.config());
        }
    }
    // The trees are not trivial: the largest case has many more nodes than roots.
    assert!(uts(13, 64, 4, 245_000) > 64 * 40, "the near-critical case is too small to be unbalanced");
}

#[test]
fn unbalanced_trees_equal_serial_on_the_host_backends() {
    unbalanced_equals_serial(&host());
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn unbalanced_trees_equal_serial_on_cuda() {
    unbalanced_equals_serial(&cuda());
}

#[test]
fn fib_equals_serial_on_the_host_backends() {
    fib_equals_serial(&host());
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn fib_equals_serial_on_cuda() {
    fib_equals_serial(&cuda());
}

/// Strassen: two slices in, one out, temporaries with strided views for the sums and the seven
/// products, padding for sizes that do not halve to the base case. On the serial and cpu
/// backends the product equals the serial function's bit for bit (same operations in the same
/// order); on cuda-sim and cuda the compiler may contract `a * b + c` into an FMA, so there the
/// product must be within Higham's bound of the serial one (and of the f64 reference).
fn strassen_equals_serial(rts: &[Runtime]) {
    use strassen_workload::{accuracy, matrix, padded_size, strassen_root};
    for n in [1usize, 2, 17, 64, 100, 130] {
        let (a, b) = (matrix(n, 11), matrix(n, 12));
        let m = padded_size(n);
        let mut want = vec![0f32; n * n];
        strassen_root(Mat::new(&a, n, n), Mat::new(&b, n, n), MatMut::new(&mut want, n, n), m);
        let rows: Vec<usize> = (0..n).collect();
        let acc = accuracy(&a, &b, &want, n, &rows);
        assert!(acc.ok(), "n {n}: the serial function is off: {acc:?}");
        for rt in rts {
            let mut c = vec![f32::NAN; n * n];
            rt.run(strassen_root::task(Mat::new(&a, n, n), Mat::new(&b, n, n), MatMut::new(&mut c, n, n), m))
                .unwrap_or_else(|e| panic!("{} n {n}: {e}", rt.backend()));
            if matches!(rt.backend(), BackendKind::Serial | BackendKind::Cpu) {
                assert!(c == want, "{} n {n}: differs from the serial function", rt.backend());
            } else {
                let got = accuracy(&a, &b, &c, n, &rows);
                assert!(got.ok(), "{} n {n}: {got:?}", rt.backend());
                let apart = c.iter().zip(&want).fold(0f64, |x, (p, q)| x.max(f64::from((p - q).abs())));
                assert!(apart <= 2.0 * acc.bound_max_abs, "{} n {n}: {apart} from the serial product", rt.backend());
            }
        }
    }
}

#[test]
fn strassen_equals_serial_on_the_host_backends() {
    strassen_equals_serial(&host());
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn strassen_equals_serial_on_cuda() {
    strassen_equals_serial(&cuda());
}

/// Matmul: quadrant views of the caller's matrices (`Mat`/`MatMut`), two rounds of four parallel
/// children. `C += A · B` on `m × n` (`k` inner) blocks at `(r0, c0)` of matrices `pad` columns wider
/// and `pad` rows taller than the blocks, on `rt`, checked against [`reference`] on the block and
/// against the old values outside it.
fn check_matmul(rt: &Runtime, m: usize, n: usize, k: usize, pad: usize) {
    use matmul_workload::{matmul, matrix, reference};
    let (r0, c0) = (pad / 2, pad - pad / 2);
    let (ldc, lda, ldb) = (n + pad, k + pad, n + pad);
    let a = matrix(m + pad, lda, 1);
    let b = matrix(k + pad, ldb, 2);
    let c0v = matrix(m + pad, ldc, 3);
    let mut c = c0v.clone();
    let av = Mat::strided(&a, m + pad, lda, lda).block(r0, c0, m, k);
    let bv = Mat::strided(&b, k + pad, ldb, ldb).block(r0, c0, k, n);
    let mut whole = MatMut::new(&mut c, m + pad, ldc);
    let cv = whole.block_mut(r0, c0, m, n);
    rt.run(matmul::task(cv, av, bv)).unwrap_or_else(|e| panic!("{} {m}x{n}x{k} pad {pad}: {e}", rt.backend()));
    // The expected block, by the plain loop on dense copies.
    let dense = |v: &[f32], ld: usize, rows: usize, cols: usize| -> Vec<f32> {
        (0..rows).flat_map(|i| (0..cols).map(move |j| (i, j))).map(|(i, j)| v[(r0 + i) * ld + c0 + j]).collect()
    };
    let mut want = dense(&c0v, ldc, m, n);
    reference(&mut want, &dense(&a, lda, m, k), &dense(&b, ldb, k, n), m, n, k);
    for i in 0..m + pad {
        for j in 0..ldc {
            let inside = (r0..r0 + m).contains(&i) && (c0..c0 + n).contains(&j);
            let w = if inside { want[(i - r0) * n + j - c0] } else { c0v[i * ldc + j] };
            assert_eq!(c[i * ldc + j], w, "{} {m}x{n}x{k} pad {pad}: element ({i}, {j})", rt.backend());
        }
    }
}

#[test]
fn matmul_equals_the_triple_loop_on_the_host_backends() {
    for rt in backends::host(Config::default()) {
        for (m, n, k, pad) in
            [(1, 1, 1, 0), (16, 16, 16, 0), (17, 33, 20, 0), (64, 64, 64, 0), (40, 70, 90, 3), (100, 37, 65, 5)]
        {
            check_matmul(&rt, m, n, k, pad);
        }
    }
}

#[test]
fn cilksort_equals_serial_on_the_host_backends() {
    cilksort_equals_serial(&host());
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn cilksort_equals_serial_on_cuda() {
    cilksort_equals_serial(&cuda());
}

#[test]
fn queens_equal_known_counts_on_the_host_backends() {
    queens_equal_known_counts(&host());
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn queens_equal_known_counts_on_cuda() {
    queens_equal_known_counts(&cuda());
}

#[test]
fn randomized_task_trees_equal_serial_on_the_host_backends() {
    random_trees_equal_serial(&host());
}

#[test]
fn randomized_control_flow_trees_equal_serial_on_the_host_backends() {
    control_trees_equal_serial(&host());
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn randomized_control_flow_trees_equal_serial_on_cuda() {
    control_trees_equal_serial(&cuda());
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn randomized_task_trees_equal_serial_on_cuda() {
    random_trees_equal_serial(&cuda());
}

/// A tree whose children are spawned with priorities of several key types (unsigned, signed,
/// float, bool) into array elements and combined by position after the sync: whatever order the
/// priorities make the children run in, the value is the serial function's.
#[gpu_cilk]
fn prio_tree(seed: u64, depth: u32) -> u64 {
    if depth == 0 {
        return seed % 1000;
    }
    let mut r: [u64; 4] = [0; 4];
    let k = (seed % 4) as usize + 1;
    for c in 0..k {
        let s = seed.wrapping_mul(6364136223846793005).wrapping_add(c as u64 * 2 + 1);
        if c % 2 == 0 {
            r[c] = spawn!(prio_tree(s, depth - 1), priority = (s >> 40) as i32 - 8000000);
        } else {
            r[c] = spawn!(prio_leaf(s, depth - 1), priority = (s % 977) as f64 * -0.5);
        }
    }
    let last = spawn!(prio_leaf(seed, 0), priority = seed % 2 == 0);
    let first = spawn!(prio_leaf(seed + 1, 0), priority = seed >> 3);
    sync!();
    let mut total: u64 = last * 3 + first * 5;
    for c in 0..4 {
        total = total.wrapping_mul(31).wrapping_add(r[c] * (c as u64 + 1));
    }
    total
}

#[gpu_cilk]
fn prio_leaf(seed: u64, depth: u32) -> u64 {
    if depth == 0 {
        return seed % 7919;
    }
    let a = spawn!(prio_tree(seed ^ 0x5555, depth - 1), priority = depth);
    sync!();
    a + 1
}

fn priority_trees_equal_serial(rts: &[Runtime]) {
    for seed in 0..40u64 {
        let depth = (seed % 4) as u32;
        let expected = prio_tree(seed, depth);
        for rt in rts {
            assert_eq!(
                rt.run(prio_tree::task(seed, depth)).unwrap(),
                expected,
                "prio_tree({seed}, {depth}) on {:?}",
                rt.config()
            );
        }
    }
}

#[test]
fn priority_trees_equal_serial_on_the_host_backends() {
    priority_trees_equal_serial(&host());
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn priority_trees_equal_serial_on_cuda() {
    priority_trees_equal_serial(&cuda());
}

/// Returns the value `seen` had when it ran, then raises `seen` to `p`.
#[gpu_cilk]
fn prio_probe(p: u64, seen: &Max<u64>) -> u64 {
    let s = seen.load();
    seen.fetch_max(p);
    s
}

/// Spawns probes 8, 7, .., 1 (in that order) with priority `p` (`up`) or `9 - p`, and sums what
/// each saw.
#[gpu_cilk]
fn prio_order(up: bool, seen: &Max<u64>) -> u64 {
    let mut r: [u64; 8] = [0; 8];
    let mut p: u64 = 8;
    while p >= 1 {
        let key = if up { p } else { 9 - p };
        r[(p - 1) as usize] = spawn!(prio_probe(p, seen), priority = key);
        p -= 1;
    }
    sync!();
    let mut s: u64 = 0;
    for i in 0..8 {
        s += r[i];
    }
    s
}

/// On one cpu worker the children of one segment run best-first: with priority `p`, probe 8 runs
/// first and every later one sees 8 (7 × 8 = 56); with priority `9 - p`, probe 1 runs first, then
/// 2, .. (0 + 1 + .. + 7 = 28), although both spawn 8 first (a LIFO deque would run 1 first, a
/// FIFO one 8 first, in both cases).
#[test]
fn priority_spawns_run_best_first_on_one_cpu_worker() {
    let rt = Runtime::with_config(Config::default().backend(BackendKind::Cpu).threads(1)).unwrap();
    for (up, want) in [(true, 56u64), (false, 28)] {
        let seen = Max::new(0u64);
        assert_eq!(rt.run(prio_order::task(up, &seen)).unwrap(), want, "up = {up}");
        assert_eq!(seen.get(), 8);
    }
}

/// Shared bounds: every node offers a value to a `Max`, a `Min` and a `Sum` (of two widths); the
/// final values are the serial function's on every backend, whatever the order.
#[gpu_cilk]
fn bound_tree(
    seed: u64,
    depth: u32,
    hi: &Max<u64>,
    lo: &Min<i64>,
    count: &Sum<u64>,
    small: &Max<i32>,
    total: &Sum<i32>,
) -> u64 {
    hi.fetch_max(seed % 1000003);
    lo.fetch_min(500 - (seed % 100000) as i64);
    count.fetch_add(1);
    small.fetch_max((seed % 2001) as i32 - 1000);
    total.fetch_add((seed % 7) as i32 - 3);
    if depth == 0 {
        return 1;
    }
    let a = spawn!(bound_tree(
        seed.wrapping_mul(2862933555777941757).wrapping_add(3037000493),
        depth - 1,
        hi,
        lo,
        count,
        small,
        total
    ));
    let b = spawn!(bound_tree(seed ^ 0x9e3779b97f4a7c15, depth - 1, hi, lo, count, small, total));
    sync!();
    a + b + 1
}

/// `(max, min, count, small max, i32 sum, result)` of `bound_tree` on `rt` (`None`: serially).
fn bound_tree_on(rt: Option<&Runtime>, seed: u64, depth: u32) -> (u64, i64, u64, i32, i32, u64) {
    let (hi, lo, count, small, total) =
        (Max::new(0u64), Min::new(i64::MAX), Sum::new(0u64), Max::new(i32::MIN), Sum::new(0i32));
    let r = match rt {
        None => bound_tree(seed, depth, &hi, &lo, &count, &small, &total),
        Some(rt) => rt
            .run(bound_tree::task(seed, depth, &hi, &lo, &count, &small, &total))
            .unwrap_or_else(|e| panic!("bound_tree({seed}, {depth}) on {:?}: {e}", rt.config())),
    };
    (hi.get(), lo.get(), count.get(), small.get(), total.get(), r)
}

fn shared_bounds_equal_serial(rts: &[Runtime]) {
    for seed in [1u64, 2, 77, 12345] {
        for depth in [0u32, 3, 7] {
            let want = bound_tree_on(None, seed, depth);
            assert_eq!(want.2, want.5, "every node counted once");
            for rt in rts {
                assert_eq!(
                    bound_tree_on(Some(rt), seed, depth),
                    want,
                    "bound_tree({seed}, {depth}) on {:?}",
                    rt.config()
                );
            }
        }
    }
}

#[test]
fn shared_bounds_equal_serial_on_the_host_backends() {
    shared_bounds_equal_serial(&host());
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn shared_bounds_equal_serial_on_cuda() {
    shared_bounds_equal_serial(&cuda());
}

/// Parallel children share their parent's bounds (and read-only slices): the race check
/// (`check_races`) does not flag them.
#[test]
fn shared_bounds_pass_the_race_check() {
    let rt = Runtime::with_config(Config::default().backend(BackendKind::Cpu).check_races(true)).unwrap();
    assert_eq!(bound_tree_on(Some(&rt), 5, 6), bound_tree_on(None, 5, 6));
    let inst = knapsack_workload::generate(knapsack_workload::Kind::StronglyCorrelated, 24, 300, 3);
    let (best, _, _) = knapsack_workload::solve(&rt, &inst).unwrap();
    assert_eq!(best, knapsack_workload::dp(&inst));
}

/// Best-first branch-and-bound knapsack (priority spawns, a shared incumbent, slices): on every
/// backend the optimum equals the dynamic program's, on every instance type of Martello,
/// Pisinger and Toth, small enough for the simulated device.
fn knapsack_equals_dp(rts: &[Runtime]) {
    use knapsack_workload::{best_first, dp, generate, solve, solve_serial, KINDS};
    for kind in KINDS {
        for (n, r, seed) in [(1usize, 50u64, 1u64), (12, 100, 2), (28, 1000, 3)] {
            let inst = generate(kind, n, r, seed);
            let want = dp(&inst);
            assert_eq!(best_first(&inst).0, want, "{kind:?} n {n}: the BinaryHeap solver");
            assert_eq!(solve_serial(&inst).0, want, "{kind:?} n {n}: the serial function");
            for rt in rts {
                let (got, nodes, _) =
                    solve(rt, &inst).unwrap_or_else(|e| panic!("{kind:?} n {n} on {:?}: {e}", rt.config()));
                assert_eq!(got, want, "{kind:?} n {n} on {:?}", rt.config());
                assert!(nodes >= 1, "{kind:?} n {n} on {:?}: the root was not counted", rt.config());
            }
        }
    }
}

/// The example's `--baseline-timeout-s`: the BinaryHeap solver stops at its deadline with what it
/// has (subset sum at 10% of the weight: its tie order never meets an exact fill, minutes on one
/// core), and without one it is `best_first`.
#[test]
fn knapsack_baseline_stops_at_its_deadline() {
    use knapsack_workload::{best_first, best_first_until, dp, generate, Kind};
    let mut hard = generate(Kind::SubsetSum, 1300, 14000, 1);
    hard.cap = hard.sw[hard.w.len()] / 10;
    let (best, nodes) = best_first_until(&hard, Some(std::time::Instant::now())).unwrap_err();
    assert_eq!(nodes, 65_536, "the clock is read every 65 536 nodes");
    assert!(best > 0 && best <= hard.cap, "the incumbent so far: {best}");
    let easy = generate(Kind::StronglyCorrelated, 28, 1000, 3);
    assert_eq!(best_first_until(&easy, None), Ok(best_first(&easy)));
    assert_eq!(best_first(&easy).0, dp(&easy));
}

#[test]
fn knapsack_equals_dp_on_the_host_backends() {
    knapsack_equals_dp(&host());
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn knapsack_equals_dp_on_cuda() {
    knapsack_equals_dp(&cuda());
}

#[test]
fn cpu_stats_count_every_task() {
    let levels = Config::default().backend(BackendKind::Cpu).scheduler(SchedulerKind::Levels);
    // On the stealing scheduler with every spawn a task, every call is counted the same way.
    let every = Config::default().backend(BackendKind::Cpu).spawn_queue(usize::MAX);
    for config in [levels, every] {
        let rt = Runtime::with_config(config).unwrap();
        let r = rt.run_with_stats(fib::task(15)).unwrap();
        assert_eq!(r.value, 610);
        // fib(n) makes 2 fib(n+1) - 1 calls; every one is a task.
        assert_eq!(r.stats.total_tasks(), 2 * 987 - 1, "{:?}", rt.config());
        assert_eq!(r.stats.levels, 15);
        assert!(r.stats.peak_occupancy > 0 && r.stats.peak_occupancy < r.stats.total_tasks() as usize);
    }
}

#[test]
fn stealing_stats_count_tasks_inline_calls_and_serial_calls() {
    let rt = Runtime::with_config(Config::default().backend(BackendKind::Cpu).threads(1)).unwrap();
    let r = rt.run_with_stats(fib::task(22)).unwrap();
    assert_eq!(r.value, 17711);
    let s = &r.stats;
    assert_eq!(s.scheduler, Some(SchedulerKind::Stealing));
    // Every pre-spawn sub-kernel that ran is the root, a task or an inline sub-kernel call.
    assert_eq!(s.total_tasks(), 1 + s.tasks_created + s.tasks_inlined);
    // One thread: the deque keeps its two tasks, so the rest runs inline, mostly as serial calls.
    assert!(s.tasks_created > 0 && s.calls_inlined > 0, "{s}");
    assert!(s.total_tasks() < 2 * 28657 - 1, "{s}");
    assert_eq!(s.steals, 0);
    assert!(s.peak_live_frames > 0 && s.peak_frame_bytes > 0, "{s}");
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn an_exhausted_device_spill_pool_is_an_error_not_a_hang() {
    // The levelized device scheduler with one-element channels: the root's second child must
    // spill, and the pool holds no record. (The persistent scheduler has no spill pool: when its
    // frame pool is full, spawns run inline; `backends::sim` tests that.)
    let rt = backends::cuda(
        Config::default().scheduler(SchedulerKind::Levels).device_level_capacity(1).device_spill_capacity(8),
    );
    match rt.run(fib::task(20)) {
        Err(gpu_cilk::Error::PoolExhausted { task, .. }) => assert_eq!(task, "fib"),
        other => panic!("expected PoolExhausted, got {other:?}"),
    }
    // The runtime stays usable after the failed run.
    let ok = Runtime::with_config(Config::default().backend(BackendKind::Cuda)).unwrap();
    assert_eq!(ok.run(fib::task(20)).unwrap(), 6765);
}

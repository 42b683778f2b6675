//! Issue 9's shapes for the device schedulers: a deep chain (`examples/workloads/chain.rs`, one
//! spawn per level, 10^4 and 10^6 levels by default) and an unbalanced tree
//! (`examples/workloads/unbalanced.rs`, a UTS-style binomial tree from a seeded hash), each on
//! serial Rust, rayon (with a cutoff) and gpu-cilk's columns ([`crate::common::gpu_cilk_rows`]:
//! cpu, cuda persistent and levels). Every result is checked against the serial function (the
//! chain against `n`). A scheduler that cannot run a size shows `n/a` with the runtime's error as
//! the reason, and the levels scheduler is skipped on chains
//! deeper than `--chain-levels-max` (one launch per level: minutes for 10^6), saying so;
//! the gpu-cilk rows' notes carry the peak live frames and their bytes (`Stats`).
//!
//! Owns the chain's and the tree's serial and rayon peers; shares the row and output code of
//! [`crate::common`].

use crate::common::{gpu_cilk_rows, measure, run_cilk, timed, Row};
use crate::{chain_workload, unbalanced_workload, Args};
use std::hint::black_box;

/// Stack for the serial peer of the deep chain (a 10^6-deep plain recursion).
const DEEP_STACK: usize = 1 << 30;
/// Stack of each rayon worker for the chain: 10^6 nested `join`s, each a few hundred bytes of
/// frames (address space only; pages are touched as the recursion goes).
const RAYON_STACK: usize = 4 << 30;

/// Runs `f` on a thread with [`DEEP_STACK`] bytes of stack.
fn on_big_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
    std::thread::Builder::new()
        .stack_size(DEEP_STACK)
        .spawn(f)
        .map_err(|e| format!("n/a: cannot start a thread with a 1 GiB stack: {e}"))?
        .join()
        .map_err(|_| "n/a: the peer panicked".to_string())
}

/// The chain as a plain recursion, one call per level. `black_box` on the way down and up keeps
/// the calls: without it LLVM turns the workload's own function (`below + 1`) into a closed form
/// and the "serial" time reads zero.
fn chain_serial(n: u32) -> u64 {
    if n == 0 {
        return 0;
    }
    black_box(chain_serial(black_box(n - 1))) + 1
}

/// The chain with rayon: a `join` at every level from `n` down to `cutoff`, serial below.
fn chain_rayon(n: u32, cutoff: u32) -> u64 {
    if n <= cutoff {
        return chain_serial(n);
    }
    let (below, ()) = rayon::join(|| chain_rayon(n - 1, cutoff), || ());
    below + 1
}

pub(crate) fn bench_chain(args: &Args) -> Vec<Row> {
    let mut rows = Vec::new();
    // A pool whose workers can hold a 10^6-deep join recursion.
    let pool = rayon::ThreadPoolBuilder::new().stack_size(RAYON_STACK).build();
    for &n in &args.chain {
        let want = n as u64;
        let check = move |v: &u64| if *v == want { Ok(()) } else { Err(format!("chain({n}) = {v}, expected {want}")) };
        if !args.gpu_only {
            let mut row = Row::new("chain", n, "serial Rust", n as f64, "levels/s");
            row.note = "plain recursion (black_box per level) on a 1 GiB stack".into();
            (row.times, row.verified) =
                measure(args.warmup, args.reps, || on_big_stack(move || timed(|| chain_serial(black_box(n)))), check);
            rows.push(row);
            let mut row = Row::new("chain", n, "rayon", n as f64, "levels/s");
            row.note = format!("join per level above {}, serial below; 4 GiB worker stacks", args.chain_cutoff);
            match &pool {
                Err(e) => row = row.na(format!("n/a: cannot build a pool with 4 GiB stacks: {e}")),
                Ok(pool) => {
                    (row.times, row.verified) = measure(
                        args.warmup,
                        args.reps,
                        || Ok(timed(|| pool.install(|| chain_rayon(black_box(n), args.chain_cutoff)))),
                        check,
                    )
                }
            }
            rows.push(row);
        }
        rows.extend(gpu_cilk_rows(args, |rt, backend| {
            if backend == "cuda levels" && n > args.chain_levels_max {
                // It could run (max_depth allows it), at one launch and read-back per level.
                return vec![Row::new("chain", n, &format!("gpu-cilk {backend}"), n as f64, "levels/s").na(format!(
                    "n/a: skipped: the levels scheduler launches once per level (about 0.5 ms each), minutes \
                     for {n} levels; --chain-levels-max {n} runs it"
                ))];
            }
            vec![run_cilk(
                rt,
                args,
                "chain",
                n,
                &format!("gpu-cilk {backend}"),
                chain_workload::chain::task(n),
                want,
                n as f64,
                "levels/s",
            )]
        }));
    }
    rows
}

pub(crate) fn bench_unbalanced(args: &Args) -> Vec<Row> {
    use unbalanced_workload::{uts, uts_rayon};
    let (seed, roots, m, q) = (args.uts_seed, args.uts_roots, args.uts_m, args.uts_q);
    let size = format!("{roots}r m{m} q{q}");
    // The serial function is the oracle (and gives the node count, the work unit).
    let want = uts(seed, roots, m, q);
    println!("unbalanced tree: seed {seed}, {roots} roots, {m} children with probability {q}/10^6: {want} nodes");
    let check = move |v: &u64| if *v == want { Ok(()) } else { Err(format!("uts = {v} nodes, expected {want}")) };
    let mut rows = Vec::new();
    if !args.gpu_only {
        let mut row = Row::new("unbalanced", roots, "serial Rust", want as f64, "nodes/s");
        row.note = format!("{size}: the annotated function called plainly");
        (row.times, row.verified) =
            measure(args.warmup, args.reps, || Ok(timed(|| uts(black_box(seed), roots, m, q))), check);
        rows.push(row);
        let mut row = Row::new("unbalanced", roots, "rayon", want as f64, "nodes/s");
        row.note = format!("{size}: join over roots and children above depth {}, serial below", args.uts_cutoff);
        (row.times, row.verified) = measure(
            args.warmup,
            args.reps,
            || Ok(timed(|| uts_rayon(black_box(seed), roots, m, q, args.uts_cutoff))),
            check,
        );
        rows.push(row);
    }
    rows.extend(gpu_cilk_rows(args, |rt, backend| {
        vec![run_cilk(
            rt,
            args,
            "unbalanced",
            roots,
            &format!("gpu-cilk {backend} ({size})"),
            uts::task(seed, roots, m, q),
            want,
            want as f64,
            "nodes/s",
        )]
    }));
    rows
}

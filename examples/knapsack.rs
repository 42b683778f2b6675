//! 0/1 knapsack by best-first branch and bound: one task per node of the decision tree, spawned
//! with its upper bound as the priority (`spawn!(.., priority = ub)`, larger first) and pruned
//! against a shared incumbent (`best: &Max<u64>`); nodes explored are counted in a `&Sum<u64>`.
//! Instances are Martello, Pisinger and Toth's types at the sizes of the paper's Table 4
//! (Chen et al., `shared/papers/chen-concurrent-heap.txt`), from a seeded generator.
//!
//! ```text
//! cargo run --release --example knapsack -- --kind ss --n 100 --r 18000 --cap-percent 5 --backend cuda
//! cargo run --release --example knapsack -- --kind sc --n 60 --r 1000 --backend cpu
//! cargo run --release --example knapsack -- --backend cpu                 # the paper's 12 instances
//! ```
//!
//! With the capacity at half the total weight (the default), the strongly correlated and even-odd
//! instances of Table 4 are very hard for the Dantzig bound: `ks_sc_200_7000` explores 1.1e8
//! nodes (32 s with the `BinaryHeap` solver on one core), the larger ones far more; at
//! `--cap-percent 5` it explores about 1e6.
//!
//! Every answer is verified against a dynamic program; the example also runs the serial
//! best-first solver (`std::collections::BinaryHeap`, the paper's CPU baseline) and prints times
//! and nodes explored for each, like the paper's Table 5. The exit status is nonzero when any
//! answer differs from the dynamic program's.

#[allow(dead_code)] // `run_and_report` is for calls that own their arguments
mod common;
#[allow(dead_code)] // `KINDS`, `best_first` and `solve_serial` are for the tests
#[path = "workloads/knapsack.rs"]
mod workload;

use clap::{Parser, ValueEnum};
use gpu_cilk::prelude::*;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use workload::{best_first_until, dp, generate, solve, Kind, TABLE4};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum KindArg {
    /// Strongly correlated.
    Sc,
    /// Almost strongly correlated.
    Asc,
    /// Even-odd strongly correlated.
    Esc,
    /// Subset sum.
    Ss,
}

impl KindArg {
    fn kind(self) -> Kind {
        match self {
            KindArg::Sc => Kind::StronglyCorrelated,
            KindArg::Asc => Kind::AlmostStronglyCorrelated,
            KindArg::Esc => Kind::EvenOddStronglyCorrelated,
            KindArg::Ss => Kind::SubsetSum,
        }
    }
}

/// Solves 0/1 knapsack instances by best-first branch and bound with priority spawns.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Cli {
    /// One instance type (with --n and --r); default: the paper's twelve instances of Table 4.
    #[arg(long, value_enum)]
    kind: Option<KindArg>,
    /// Items of the one instance.
    #[arg(long, default_value_t = 100)]
    n: usize,
    /// Data range R of the one instance (weights in 1..=R).
    #[arg(long, default_value_t = 1000)]
    r: u64,
    /// Capacity as a percentage of the total weight (default 50; Martello, Pisinger and Toth use
    /// h/(H+1) for instance h of a series of H; the paper does not say which it took). Made odd
    /// for the even-odd type.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u64).range(1..=100))]
    cap_percent: u64,
    /// Seed of the generator.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Skip the serial best-first solver (BinaryHeap).
    #[arg(long)]
    no_baseline: bool,
    /// Stop the serial best-first solver after this many seconds (it then prints "> S s" and the
    /// nodes it explored; at some capacities it needs minutes where the others need milliseconds).
    #[arg(long)]
    baseline_timeout_s: Option<f64>,
    #[command(flatten)]
    common: common::Common,
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// Solves one instance every way; returns whether every answer equals the dynamic program's.
fn one(rt: &Runtime, cli: &Cli, kind: Kind, n: usize, r: u64) -> Result<bool, Error> {
    let mut inst = generate(kind, n, r, cli.seed);
    let total = inst.sw.last().copied().unwrap_or(0);
    inst.cap = total * cli.cap_percent / 100;
    if kind == Kind::EvenOddStronglyCorrelated {
        inst.cap |= 1;
    }
    let name = format!("ks_{}_{}_{}", kind.short(), n, r);
    let t = Instant::now();
    let want = dp(&inst);
    let dp_ms = ms(t);
    let mut ok = true;
    if !cli.no_baseline {
        let t = Instant::now();
        let deadline = cli.baseline_timeout_s.map(|s| t + Duration::from_secs_f64(s.max(0.0)));
        match best_first_until(&inst, deadline) {
            Ok((v, nodes)) => {
                let good = v == want;
                ok &= good;
                println!("{name:<18} binaryheap {v:>10} {:>10.3} ms {nodes:>10} nodes {}", ms(t), verdict(good));
            }
            Err((v, nodes)) => println!(
                "{name:<18} binaryheap {v:>10} {:>10} ms {nodes:>10} nodes (stopped: no optimum within {:.0} s)",
                format!("> {:.0}", ms(t)),
                cli.baseline_timeout_s.unwrap_or(0.0)
            ),
        }
    }
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..cli.common.reps.max(1) {
        let t = Instant::now();
        let got = solve(rt, &inst)?;
        times.push(ms(t));
        last = Some(got);
    }
    let Some((v, nodes, stats)) = last else { return Ok(false) };
    times.sort_by(f64::total_cmp);
    let good = v == want;
    ok &= good;
    println!(
        "{name:<18} {:<10} {v:>10} {:>10.3} ms {nodes:>10} nodes {} (median of {})",
        rt.backend().to_string(),
        times[times.len() / 2],
        verdict(good),
        times.len()
    );
    println!(
        "{name:<18} dp         {want:>10} {dp_ms:>10.3} ms (capacity {}, n·c = {:.2e})",
        inst.cap,
        n as f64 * inst.cap as f64
    );
    if cli.common.stats {
        println!("{stats}");
    }
    Ok(ok)
}

fn verdict(good: bool) -> &'static str {
    if good {
        "(= dp)"
    } else {
        "(MISMATCH with dp)"
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let run = || -> Result<bool, Error> {
        let rt = common::runtime_with(&cli.common, |c| c)?;
        let mut ok = true;
        match cli.kind {
            Some(k) => ok &= one(&rt, &cli, k.kind(), cli.n, cli.r)?,
            None => {
                for (kind, n, r) in TABLE4 {
                    ok &= one(&rt, &cli, kind, n, r)?;
                }
            }
        }
        Ok(ok)
    };
    common::exit_code(run())
}

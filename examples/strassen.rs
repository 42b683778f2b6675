//! Strassen: multiply two `n × n` f32 matrices with the annotated Rust of
//! `workloads/strassen.rs` (the ten sums and the seven products into task-scoped temporaries,
//! quadrants as strided views, a dense base case at `n <= 64`; sizes that do not halve to the
//! base case are zero-padded). The matrices travel as `&[f32]` / `&mut [f32]` into the root task
//! and the product comes back in the caller's `Vec` (on cuda the runtime uploads before the run
//! and downloads after; see "slice transfers" in the stats).
//!
//! ```text
//! cargo run --release --example strassen -- 512 --backend cpu
//! cargo run --release --example strassen -- 4096 --backend cuda --reps 5 --no-verify
//! cargo run --release --example strassen -- 1000 --backend cuda-sim
//! ```
//!
//! Every run is checked against an f64 reference product (all rows up to n = 512, else 128
//! evenly spaced rows, or `--check-rows`): the max error must be within Higham's first-order
//! bound for Strassen (Theorem 23.3 of "Accuracy and Stability of Numerical Algorithms"; loose for
//! large n) and the relative Frobenius error within an empirical `2e-4` (errors measured are
//! at most about `1e-7 · sqrt(n)`, 2.4e-6 at n = 1000). Unless `--no-verify`, the serial
//! function also runs (its time is printed) and its product must be within Higham's bound of
//! the run's.

#[allow(dead_code)] // `run_and_report` reruns one call; a call that borrows matrices runs once
mod common;
#[allow(dead_code)] // `COMB_GRAIN` is for the tests
#[path = "workloads/strassen.rs"]
mod workload;

use clap::Parser;
use gpu_cilk::prelude::*;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use workload::{accuracy, higham_bound, levels, matrix, padded_size, strassen_root, Accuracy, REL_FROBENIUS_BOUND};

/// Multiplies two n × n f32 matrices with Strassen's method (seven products, temporaries from
/// `alloc!`, a dense warp-task base case), checks the product against an f64 reference and the
/// plain serial function, and prints the time.
///
/// Examples: `strassen 512`, `strassen 1000 --backend cpu --reps 3`, `strassen 2048 --no-verify`.
#[derive(Parser, Debug)]
#[command(version)]
struct Cli {
    /// Matrix size (any n >= 0; padded internally to a size that halves to the base case).
    #[arg(default_value_t = 1024)]
    n: usize,
    /// Seed of the random inputs (entries uniform in [-1, 1)).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Rows of the product checked against the f64 reference (0: all up to n = 512, else 128).
    #[arg(long, default_value_t = 0)]
    check_rows: usize,
    /// Temporary heap in MiB (default: $GPU_CILK_TEMP_HEAP_BYTES if set, else enough for every
    /// level's temporaries live at once).
    #[arg(long)]
    heap_mib: Option<usize>,
    #[command(flatten)]
    common: common::Common,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Bytes of temporaries if every task of every level held its own at once (the breadth-first
/// worst case): the three padded `m × m` matrices of the root, and at level `l` `7^l` tasks with
/// 17 `(m / 2^(l+1))²` each; 4 bytes per element (an `f32`, on the host too), a quarter more for
/// the allocator's rounding.
fn heap_bytes(m: usize) -> usize {
    let (k, _) = levels(m);
    let mut words = 3.0 * (m * m) as f64;
    for l in 0..k {
        let h = (m >> (l + 1)) as f64;
        words += 7f64.powi(l as i32) * 17.0 * h * h;
    }
    ((words * 4.0 * 1.25) as usize).max(64 << 20)
}

fn checked_rows(n: usize, asked: usize) -> Vec<usize> {
    let want = if asked > 0 {
        asked.min(n)
    } else if n <= 512 {
        n
    } else {
        128
    };
    let mut rows: Vec<usize> = (0..want).map(|i| i * n / want.max(1)).collect();
    if n > 0 && rows.last() != Some(&(n - 1)) {
        rows.push(n - 1);
    }
    rows.dedup();
    rows
}

fn runtime(cli: &Cli, m: usize) -> Result<Runtime, Error> {
    common::runtime_with(&cli.common, |config| {
        if let Some(mib) = cli.heap_mib {
            config.temp_heap_bytes(mib << 20)
        } else if std::env::var_os("GPU_CILK_TEMP_HEAP_BYTES").is_none() {
            config.temp_heap_bytes(heap_bytes(m))
        } else {
            config
        }
    })
}

fn report(label: &str, acc: &Accuracy) -> bool {
    let ok = acc.ok();
    println!(
        "{label} rel Frobenius error {:.3e} (bound {REL_FROBENIUS_BOUND:.0e}), max error {:.3e} (Higham bound {:.3e}) {}",
        acc.rel_frobenius,
        acc.max_abs,
        acc.bound_max_abs,
        if ok { "(verified)" } else { "(WRONG)" }
    );
    ok
}

fn run(cli: &Cli) -> Result<bool, Error> {
    let n = cli.n;
    let m = padded_size(n);
    let (k, m0) = levels(m);
    let rt = runtime(cli, m)?;
    let (a, b) = (matrix(n, cli.seed), matrix(n, cli.seed.wrapping_add(1)));
    let mut c = vec![0f32; n * n];
    let (median, stats) = common::timed_runs(cli.common.reps, &format!("strassen({n}) on {}", rt.backend()), |t| {
        c.fill(f32::NAN);
        *t = Instant::now();
        rt.run_with_stats(strassen_root::task(&a, &b, &mut c, n, m)).map(|r| r.stats)
    })?;
    println!("strassen({n}) padded to {m} = {m0} · 2^{k}");
    let gflops = 2.0 * (n as f64).powi(3) / median.as_secs_f64() / 1e9;
    println!(
        "time      {:.3} ms (median of {}, transfers included; {gflops:.1} GFLOP/s as 2n³)",
        ms(median),
        cli.common.reps
    );
    let rows = checked_rows(n, cli.check_rows);
    let t = Instant::now();
    let acc = common::with_spinner(format!("checking {} rows against an f64 product", rows.len()), || {
        accuracy(&a, &b, &c, n, &rows)
    });
    let mut ok = report("check    ", &acc);
    println!("          ({} of {n} rows against the f64 reference, {:.0} ms)", rows.len(), ms(t.elapsed()));
    if !cli.common.no_verify {
        let mut oracle = vec![0f32; n * n];
        let t = Instant::now();
        common::with_spinner(format!("verifying: strassen({n}) as a plain serial call"), || {
            strassen_root(&a, &b, &mut oracle, n, m)
        });
        let serial = t.elapsed();
        let apart = c.iter().zip(&oracle).fold(0f64, |x, (p, q)| x.max(f64::from((p - q).abs())));
        let bound = higham_bound(&a, &b, m);
        let equal = apart <= bound;
        ok &= equal;
        println!(
            "serial    {:.3} ms, max difference from the run's product {apart:.3e} {}",
            ms(serial),
            if apart == 0.0 {
                "(verified: equal)"
            } else if equal {
                "(verified: within the Higham bound)"
            } else {
                "(MISMATCH)"
            }
        );
    }
    common::print_stats(&cli.common, &stats);
    Ok(ok)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    common::exit_code(run(&cli))
}

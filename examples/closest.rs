//! The closest pair of `n` points, divide and conquer over `&[Point]` with the plain structs of
//! `workloads/closest.rs` (`#[derive(DeviceStruct)]`: `Point`, and `Pair`, which holds two
//! points): the points travel as a slice of structs into the root task, the result comes back as
//! a struct.
//!
//! ```text
//! cargo run --release --example closest -- 100000 --backend cpu
//! cargo run --release --example closest -- 1000000 --side 2000 --backend cuda --reps 5
//! ```
//!
//! Every run is checked against the plain serial function (and, up to 20,000 points, against
//! every pair tried).

#[allow(dead_code)] // `run_and_report` reruns one call; a call that borrows points runs once
mod common;
use gpu_cilk_examples::workloads::closest as workload;

use clap::Parser;
use gpu_cilk::prelude::*;
use std::process::ExitCode;
use workload::{closest, min_dist2, points};

/// Finds the closest pair of n random points with integer coordinates (held in f32) in a square,
/// checks it against the plain serial function and prints the time.
///
/// Examples: `closest 100000`, `closest 1000000 --side 2000 --backend cuda --reps 5`.
#[derive(Parser, Debug)]
#[command(version)]
struct Cli {
    /// The number of points (at least 2).
    #[arg(default_value_t = 100_000)]
    n: usize,
    /// The side of the square the coordinates lie in (at most 2048: every squared distance is
    /// then exact in f32).
    #[arg(long, default_value_t = 2000)]
    side: u32,
    /// Seed of the points.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[command(flatten)]
    common: common::Common,
}

fn run(cli: &Cli) -> Result<bool, Error> {
    let rt = common::runtime(&cli.common)?;
    let p = common::with_spinner(format!("generating {} points", cli.n), || points(cli.n, cli.side, cli.seed));
    let (median, report) =
        common::timed_runs(cli.common.reps, &format!("closest({}) on {}", cli.n, rt.backend()), |_| {
            rt.run_with_stats(closest::task(&p))
        })?;
    let got = report.value;
    println!("closest({}) = {:?}", cli.n, got);
    println!("time      {:.3} ms (median of {})", median.as_secs_f64() * 1e3, cli.common.reps);
    let mut ok = true;
    if !cli.common.no_verify {
        let want = common::with_spinner("verifying: closest as a plain serial call", || closest(&p));
        ok &= want == got;
        println!("serial    {}", if want == got { "(verified: equal)" } else { "(MISMATCH)" });
        if cli.n <= 20_000 {
            let d2 = min_dist2(&p);
            ok &= d2 == got.d2;
            println!("brute     {d2} {}", if d2 == got.d2 { "(matches)" } else { "(MISMATCH)" });
        }
    }
    common::print_stats(&cli.common, &report.stats);
    Ok(ok)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.n < 2 || cli.side == 0 || cli.side > 2048 {
        eprintln!("error: need at least 2 points and a side in 1..=2048");
        return ExitCode::FAILURE;
    }
    common::exit_code(run(&cli))
}

//! Matmul: `C += A · B` for f32 matrices (`m × k` times `k × n`) with the annotated Rust of
//! `workloads/matmul.rs`: a recursion on strided 2-D views (`Mat<f32>` / `MatMut<f32>`) that
//! splits all three matrices into quadrants, runs four quadrant products in parallel, syncs,
//! then the other four; a triple loop below 16 in any dimension. The matrices travel as views of
//! the caller's `Vec`s into the root task, and `C` comes back in place.
//!
//! ```text
//! cargo run --release --example matmul -- 512 --backend cpu
//! cargo run --release --example matmul -- 300 --cols 200 --inner 100 --backend cuda-sim
//! ```
//!
//! Every run is checked against the plain triple loop ([`workload::reference`]), which adds the
//! products of every element in the same order, so the two must be equal (the inputs are small
//! integers, so the sums are exact even where a device contracts `a * b + c` into an FMA).

#[allow(dead_code)] // `run_and_report` reruns one call; a call that borrows matrices runs once
mod common;
use gpu_cilk_examples::workloads::matmul as workload;

use clap::Parser;
use gpu_cilk::prelude::*;
use std::process::ExitCode;
use std::time::Instant;
use workload::{matmul, matrix, reference, LEAF};

/// Multiplies an m × k by a k × n f32 matrix into C (C += A · B) by recursion on quadrant
/// views, checks the product against the plain triple loop, and prints the time.
///
/// Examples: `matmul 512`, `matmul 1000 --backend cpu --reps 3`, `matmul 300 --cols 70`.
#[derive(Parser, Debug)]
#[command(version)]
struct Cli {
    /// Rows of A and C (and the other sizes unless given).
    #[arg(default_value_t = 512)]
    m: usize,
    /// Columns of B and C (default: m).
    #[arg(long)]
    cols: Option<usize>,
    /// Columns of A, rows of B (default: m).
    #[arg(long)]
    inner: Option<usize>,
    /// Seed of the inputs (small integers in [-8, 8]).
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[command(flatten)]
    common: common::Common,
}

fn run(cli: &Cli) -> Result<bool, Error> {
    let (m, n, k) = (cli.m, cli.cols.unwrap_or(cli.m), cli.inner.unwrap_or(cli.m));
    let rt = common::runtime(&cli.common)?;
    let (a, b) = (matrix(m, k, cli.seed), matrix(k, n, cli.seed.wrapping_add(1)));
    let mut c = vec![0f32; m * n];
    let what = format!("matmul({m}x{k} · {k}x{n}) on {}", rt.backend());
    let (median, stats) = common::timed_runs(cli.common.reps, &what, |t| {
        c.fill(0.0);
        *t = Instant::now();
        let call = matmul::task(MatMut::new(&mut c, m, n), Mat::new(&a, m, k), Mat::new(&b, k, n));
        rt.run_with_stats(call).map(|r| r.stats)
    })?;
    let gflops = 2.0 * (m * n * k) as f64 / median.as_secs_f64() / 1e9;
    println!("{what}: leaves of at most {LEAF} in some dimension");
    println!(
        "time      {:.3} ms (median of {}, transfers included; {gflops:.2} GFLOP/s as 2mnk)",
        median.as_secs_f64() * 1e3,
        cli.common.reps
    );
    let mut want = vec![0f32; m * n];
    let t = Instant::now();
    common::with_spinner("checking against the triple loop", || reference(&mut want, &a, &b, m, n, k));
    let ok = c == want;
    println!(
        "check     triple loop {:.3} ms, {}",
        t.elapsed().as_secs_f64() * 1e3,
        if ok { "equal (verified)" } else { "DIFFERENT" }
    );
    common::print_stats(&cli.common, &stats);
    Ok(ok)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    common::exit_code(run(&cli))
}

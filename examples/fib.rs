//! `fib(n)` with every call a task: tiny tasks, so this measures pure spawn/sync overhead.
//!
//! ```text
//! cargo run --release --example fib -- 30 --backend cpu
//! ```

mod common;
use gpu_cilk_examples::workloads::fib as workload;

use clap::Parser;
use gpu_cilk::prelude::*;
use std::process::ExitCode;
use workload::fib;

/// Computes fib(n) with one task per call (tiny tasks: the spawn/sync overhead), checks it against
/// the plain serial function and prints the time.
///
/// Examples: `fib 30`, `fib 35 --backend cpu --reps 5`, `fib 25 --stats`.
#[derive(Parser, Debug)]
#[command(version)]
struct Cli {
    /// n (fib(30) = 832040, fib(35) = 9227465).
    #[arg(default_value_t = 30)]
    n: u32,
    #[command(flatten)]
    common: common::Common,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.n > 93 {
        eprintln!("error: fib({}) does not fit in u64 (n <= 93)", cli.n);
        return ExitCode::FAILURE;
    }
    let run = || -> Result<bool, Error> {
        let rt = common::runtime(&cli.common)?;
        common::run_and_report(&rt, &cli.common, &format!("fib({})", cli.n), fib::task(cli.n), None)
    };
    common::exit_code(run())
}

//! A recursion of one spawn per level, `n` levels deep: no parallelism, every spawn a task, and
//! the depth held in heap frames (the cpu backend's stealing scheduler completes 1,000,000).
//!
//! ```text
//! cargo run --release --example chain -- 1000000 --backend cpu
//! ```
//! (The serial oracle recurses a million frames deep; the examples run it on a thread with a
//! 1 GiB stack. The `serial` backend runs it on the caller's thread, whose 8 MiB hold about
//! 100,000 levels.)

mod common;
use gpu_cilk_examples::workloads::chain as workload;

use clap::Parser;
use gpu_cilk::prelude::*;
use std::process::ExitCode;
use workload::chain;

/// Runs a chain of n nested single spawns (no parallelism, every spawn a task: the depth the
/// scheduler can hold), checks the result and prints the time.
///
/// Examples: `chain 100000`, `chain 1000000 --backend cpu`.
#[derive(Parser, Debug)]
#[command(version)]
struct Cli {
    /// Depth of the chain.
    #[arg(default_value_t = 100_000)]
    n: u32,
    #[command(flatten)]
    common: common::Common,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let run = || -> Result<bool, Error> {
        let rt = common::runtime(&cli.common)?;
        common::run_and_report(&rt, &cli.common, &format!("chain({})", cli.n), chain::task(cli.n), Some(cli.n as u64))
    };
    common::exit_code(run())
}

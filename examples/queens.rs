//! N-queens: count the placements of n non-attacking queens, one task per partial board.
//!
//! Two variants of the same search, both annotated Rust:
//! - `array` (MIT-Cilk style): the board is a `[u8; 16]` copied into each child, a spawn per safe
//!   column, children's counts summed after the sync;
//! - `bitmask`: occupied columns and diagonals as bit masks, the shape a CUDA programmer would
//!   write by hand, so it compares like with like against a hand-written bitmask solver.
//!
//! ```text
//! cargo run --release --example queens -- 12 --variant bitmask --backend cpu
//! ```

mod common;
use gpu_cilk_examples::workloads::queens as workload;

use clap::{Parser, ValueEnum};
use gpu_cilk::prelude::*;
use std::process::ExitCode;
use workload::{queens, queens_bits, KNOWN};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Variant {
    /// MIT-Cilk style: the board array is copied into every child.
    Array,
    /// Bit masks of attacked columns and diagonals.
    Bitmask,
}

/// Counts the solutions of the n-queens problem with one task per partial board, checks the count
/// against the known one and the plain serial function, and prints the time.
///
/// Examples: `queens 12`, `queens 14 --variant bitmask --backend cpu`, `queens 10 --stats`.
#[derive(Parser, Debug)]
#[command(version)]
struct Cli {
    /// Board size, 1..=16.
    #[arg(default_value_t = 12, value_parser = clap::value_parser!(u32).range(1..=16))]
    n: u32,
    /// Which formulation to run.
    #[arg(long, value_enum, default_value_t = Variant::Array)]
    variant: Variant,
    #[command(flatten)]
    common: common::Common,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let known = Some(KNOWN[cli.n as usize]);
    let label = format!("queens({})", cli.n);
    let run = || -> Result<bool, Error> {
        let rt = common::runtime(&cli.common)?;
        match cli.variant {
            Variant::Array => common::run_and_report(&rt, &cli.common, &label, queens::task(cli.n, 0, [0; 16]), known),
            Variant::Bitmask => {
                common::run_and_report(&rt, &cli.common, &label, queens_bits::task(cli.n, 0, 0, 0), known)
            }
        }
    };
    common::exit_code(run())
}

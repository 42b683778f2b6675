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

use clap::{Parser, ValueEnum};
use gpu_cilk::prelude::*;
use std::process::ExitCode;

/// Solutions for n = 0..=16 (OEIS A000170).
const KNOWN: [u64; 17] = [1, 1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365596, 2279184, 14772512];

/// MIT-Cilk queens: `board[r]` is the column of the queen in row `r`.
#[gpu_cilk]
pub fn queens(n: u32, row: u32, board: [u8; 16]) -> u64 {
    if row == n {
        return 1;
    }
    let mut counts: [u64; 16] = [0; 16];
    let mut col: u32 = 0;
    while col < n {
        let mut ok = true;
        let mut r: u32 = 0;
        while r < row {
            let c = board[r as usize] as u32;
            if c == col || c + (row - r) == col || col + (row - r) == c {
                ok = false;
                break;
            }
            r += 1;
        }
        if ok {
            let mut next = board;
            next[row as usize] = col as u8;
            counts[col as usize] = spawn!(queens(n, row + 1, next));
        }
        col += 1;
    }
    sync!();
    let mut total: u64 = 0;
    for i in 0..16 {
        total += counts[i];
    }
    total
}

/// Bitmask queens: `cols`, `left`, `right` mark attacked columns in the current row.
#[gpu_cilk]
pub fn queens_bits(n: u32, cols: u32, left: u32, right: u32) -> u64 {
    let full: u32 = (1u32 << n) - 1;
    if cols == full {
        return 1;
    }
    let mut counts: [u64; 32] = [0; 32];
    let mut avail: u32 = full & !(cols | left | right);
    while avail != 0 {
        let bit = avail & avail.wrapping_neg();
        let i = bit.trailing_zeros();
        counts[i as usize] = spawn!(queens_bits(n, cols | bit, ((left | bit) << 1) & full, (right | bit) >> 1));
        avail &= avail - 1;
    }
    sync!();
    let mut total: u64 = 0;
    for i in 0..32 {
        total += counts[i];
    }
    total
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Variant {
    /// MIT-Cilk style: the board array is copied into every child.
    Array,
    /// Bit masks of attacked columns and diagonals.
    Bitmask,
}

/// Counts N-queens solutions with one task per partial board.
#[derive(Parser, Debug)]
#[command(version, about)]
struct Cli {
    /// Board size, 1..=16.
    #[arg(default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=16))]
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
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

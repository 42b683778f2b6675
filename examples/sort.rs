//! cilksort: sort `n` u32, f32 or i64 keys with the one generic cilksort of `workloads/sort.rs`
//! (split in four, sort the quarters, merge pairs with a parallel binary-search merge, merge the
//! halves). The keys travel as a `&mut [T]` into the root task and come back sorted in the same `Vec` (on cuda the
//! runtime uploads them before the run and downloads them after; see "slice transfers" in the
//! stats).
//!
//! ```text
//! cargo run --release --example sort -- 1000000 --backend cpu
//! cargo run --release --example sort -- 1000000 --input reverse --backend cuda --reps 5
//! cargo run --release --example sort -- 1000000 --keys f32 --backend cpu
//! cargo run --release --example sort -- 1000000 --keys i64 --backend cpu
//! ```
//!
//! Every run is verified: the result is sorted and a permutation of the input (length, sums and
//! byte histograms); unless `--no-verify`, it also equals the serial function's result.

#[allow(dead_code)] // `run_and_report` reruns one call; a call that borrows keys runs once
mod common;
use gpu_cilk_examples::workloads::sort as workload;

use clap::{Parser, ValueEnum};
use gpu_cilk::prelude::*;
use std::process::ExitCode;
use std::time::{Duration, Instant};
use workload::{cilksort, fingerprint, input, input_f32, input_i64, is_sorted, Fingerprint, Shape};

#[derive(Clone, Copy, Debug, ValueEnum)]
enum Input {
    /// Pseudo-random keys.
    Random,
    /// Already ascending.
    Sorted,
    /// Descending.
    Reverse,
    /// Every key the same.
    Equal,
    /// 16 distinct keys.
    Few,
}

impl Input {
    fn shape(self) -> Shape {
        match self {
            Input::Random => Shape::Random,
            Input::Sorted => Shape::Sorted,
            Input::Reverse => Shape::Reverse,
            Input::Equal => Shape::Equal,
            Input::Few => Shape::Few,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Keys {
    /// 32-bit unsigned integers.
    U32,
    /// 32-bit floats (no NaNs).
    F32,
    /// 64-bit signed integers.
    I64,
}

/// Sorts n u32, f32 or i64 keys with cilksort (split in four, sort the quarters, parallel merges),
/// checks that the result is a sorted permutation of the input and equals the plain serial
/// function's, and prints the time next to `sort_unstable`'s.
///
/// Examples: `sort 1000000`, `sort 10000000 --input reverse --backend cpu`, `sort 1000000 --keys f32`.
#[derive(Parser, Debug)]
#[command(version)]
struct Cli {
    /// Number of keys (0 and 1 are fine).
    #[arg(default_value_t = 1_000_000)]
    n: usize,
    /// The input's shape.
    #[arg(long, value_enum, default_value_t = Input::Random)]
    input: Input,
    /// Key type.
    #[arg(long, value_enum, default_value_t = Keys::U32)]
    keys: Keys,
    /// Seed of the random inputs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[command(flatten)]
    common: common::Common,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Runs cilksort on the keys and the scratch, returning the run's statistics.
type RunFn<K> = fn(&Runtime, &mut [K], &mut [K]) -> Result<gpu_cilk::runtime::Stats, Error>;

/// One key type's run: the workload's functions for it.
struct Sorter<K> {
    input: fn(Shape, usize, u64) -> Vec<K>,
    fingerprint: fn(&[K]) -> Fingerprint,
    is_sorted: fn(&[K]) -> bool,
    serial: fn(&mut [K], &mut [K]),
    run: RunFn<K>,
    std_sort: fn(&mut [K]),
}

fn run_keys<K: Copy + Default + PartialEq>(cli: &Cli, rt: &Runtime, k: &Sorter<K>) -> Result<bool, Error> {
    let orig = common::with_spinner(format!("generating {} {:?} keys", cli.n, cli.input), || {
        (k.input)(cli.input.shape(), cli.n, cli.seed)
    });
    let want = (k.fingerprint)(&orig);
    let mut tmp = vec![K::default(); cli.n];
    let mut times = Vec::new();
    let mut last = None;
    let mut keys = Vec::new();
    let pb = common::bar(cli.common.reps, format!("sorting {} keys on {}", cli.n, rt.backend()));
    for _ in 0..cli.common.reps {
        keys = orig.clone();
        let t = Instant::now();
        let stats = (k.run)(rt, &mut keys, &mut tmp).inspect_err(|_| pb.finish_and_clear())?;
        times.push(t.elapsed());
        pb.inc(1);
        last = Some(stats);
    }
    pb.finish_and_clear();
    times.sort();
    let median = times[times.len() / 2];
    println!("cilksort({}, {:?}, {:?})", cli.n, cli.input, cli.keys);
    println!("time      {:.3} ms (median of {}, transfers included)", ms(median), times.len());
    let (sorted, permutation) = common::with_spinner("checking: sorted and a permutation of the input", || {
        ((k.is_sorted)(&keys), (k.fingerprint)(&keys) == want)
    });
    let mut ok = sorted && permutation;
    println!(
        "check     sorted: {sorted}, permutation of the input (sums, histograms): {permutation} {}",
        if ok { "(verified)" } else { "(WRONG)" }
    );
    let mut reference = orig.clone();
    let t = Instant::now();
    common::with_spinner("sorting with sort_unstable", || (k.std_sort)(&mut reference));
    println!("std       sort_unstable (1 thread) {:.3} ms", ms(t.elapsed()));
    if !cli.common.no_verify {
        // The serial function (its recursion is shallow: about log4 n calls deep).
        let mut oracle = orig.clone();
        let t = Instant::now();
        common::with_spinner("verifying: cilksort as a plain serial call", || (k.serial)(&mut oracle, &mut tmp));
        let serial = t.elapsed();
        let equal = oracle == keys;
        ok &= equal && oracle == reference;
        println!("serial    {:.3} ms {}", ms(serial), if equal { "(verified: equal)" } else { "(MISMATCH)" });
    }
    if let Some(stats) = last {
        common::print_stats(&cli.common, &stats);
    }
    Ok(ok)
}

fn run(cli: &Cli) -> Result<bool, Error> {
    let rt = common::runtime(&cli.common)?;
    match cli.keys {
        Keys::U32 => run_keys(
            cli,
            &rt,
            &Sorter {
                input,
                fingerprint,
                is_sorted,
                serial: cilksort,
                run: |rt, a, t| rt.run_with_stats(cilksort::task(a, t)).map(|r| r.stats),
                std_sort: |v| v.sort_unstable(),
            },
        ),
        Keys::F32 => run_keys(
            cli,
            &rt,
            &Sorter {
                input: input_f32,
                fingerprint,
                is_sorted,
                serial: cilksort,
                run: |rt, a, t| rt.run_with_stats(cilksort::task(a, t)).map(|r| r.stats),
                std_sort: |v| v.sort_unstable_by(f32::total_cmp),
            },
        ),
        Keys::I64 => run_keys(
            cli,
            &rt,
            &Sorter {
                input: input_i64,
                fingerprint,
                is_sorted,
                serial: cilksort,
                run: |rt, a, t| rt.run_with_stats(cilksort::task(a, t)).map(|r| r.stats),
                std_sort: |v| v.sort_unstable(),
            },
        ),
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    common::exit_code(run(&cli))
}

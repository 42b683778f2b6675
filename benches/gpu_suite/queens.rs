//! N-queens(n): serial Rust (bitmask DFS), rayon over the first row, the hand-written CUDA peer
//! `benches/cuda/queens_prefix.cu` (rows expanded on the host into prefixes, one thread per
//! prefix) and gpu-cilk's `cpu` and `cuda` backends on `examples/workloads/queens.rs` (bitmask and
//! array variants). Every result is checked against the known counts.
//!
//! Owns the queens kernel's parameter mirrors; shares the row and output code of [`crate::common`].

use crate::common::{gpu_cilk_rows, measure, run_cilk, timed, Device, Row};
use crate::queens_workload;
use crate::Args;
use gpu_cilk::runtime::backend::cuda::{DeviceCopy, DevicePtr, LaunchDims, ProgramSource};
use gpu_cilk::Runtime;
use std::hint::black_box;

const QUEENS_CU: &str = include_str!("../cuda/queens_prefix.cu");

/// The hand-written peer as an NVRTC program.
pub(crate) fn program() -> ProgramSource {
    ProgramSource::new("queens_prefix", QUEENS_CU)
}

/// Known N-queens solution counts, for verification.
const QUEENS_KNOWN: &[(u32, u64)] = &[
    (1, 1),
    (4, 2),
    (5, 10),
    (6, 4),
    (7, 40),
    (8, 92),
    (9, 352),
    (10, 724),
    (11, 2680),
    (12, 14200),
    (13, 73712),
    (14, 365596),
    (15, 2279184),
    (16, 14772512),
    (17, 95815104),
];

fn queens_known(n: u32) -> Option<u64> {
    let table = QUEENS_KNOWN.iter().find(|(k, _)| *k == n).map(|(_, v)| *v);
    let workload = queens_workload::KNOWN.get(n as usize).copied();
    debug_assert!(table.is_none() || workload.is_none() || table == workload);
    table.or(workload)
}

/// Completions of a board with `cols`/`ld`/`rd` attacked (bitmask DFS, recursive).
fn queens_rec(full: u32, cols: u32, ld: u32, rd: u32) -> u64 {
    if cols == full {
        return 1;
    }
    let mut avail = full & !(cols | ld | rd);
    let mut count = 0;
    while avail != 0 {
        let bit = avail & avail.wrapping_neg();
        avail ^= bit;
        count += queens_rec(full, cols | bit, ((ld | bit) << 1) & full, (rd | bit) >> 1);
    }
    count
}

fn queens_serial(n: u32) -> u64 {
    queens_rec((1u32 << n) - 1, 0, 0, 0)
}

/// Parallel over the first row's columns.
fn queens_rayon(n: u32) -> u64 {
    use rayon::prelude::*;
    let full = (1u32 << n) - 1;
    (0..n).into_par_iter().map(|c| 1u32 << c).map(|bit| queens_rec(full, bit, (bit << 1) & full, bit >> 1)).sum()
}

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Prefix {
    cols: u32,
    ld: u32,
    rd: u32,
}
// SAFETY: repr(C) POD of three u32, mirroring `struct Prefix` in cuda/queens_prefix.cu.
unsafe impl DeviceCopy for Prefix {}

#[repr(C)]
#[derive(Clone, Copy)]
struct QueensParams {
    prefixes: DevicePtr<Prefix>,
    total: DevicePtr<u64>,
    count: u32,
    n: u32,
    rows_left: u32,
    pad: u32,
}
// SAFETY: repr(C) POD mirroring `struct QueensParams` in cuda/queens_prefix.cu.
unsafe impl DeviceCopy for QueensParams {}

/// Every valid placement of the first `rows` rows, as the masks for row `rows`.
fn queens_prefixes(n: u32, rows: u32) -> Vec<Prefix> {
    fn go(full: u32, rows: u32, p: Prefix, out: &mut Vec<Prefix>) {
        if rows == 0 {
            out.push(p);
            return;
        }
        let mut avail = full & !(p.cols | p.ld | p.rd);
        while avail != 0 {
            let bit = avail & avail.wrapping_neg();
            avail ^= bit;
            let next = Prefix { cols: p.cols | bit, ld: ((p.ld | bit) << 1) & full, rd: (p.rd | bit) >> 1 };
            go(full, rows - 1, next, out);
        }
    }
    let mut out = Vec::new();
    go((1u32 << n) - 1, rows, Prefix { cols: 0, ld: 0, rd: 0 }, &mut out);
    out
}

pub(crate) fn bench_queens(args: &Args, device: Device) -> Vec<Row> {
    let n = args.queens;
    let mut rows = Vec::new();
    if !(1..=20).contains(&n) {
        rows.push(Row::new("queens", n, "all", 0.0, "solutions/s").na("queens size must be 1..=20"));
        return rows;
    }
    let known = queens_known(n);
    let work = known.unwrap_or(0) as f64;
    let check = |v: &u64| match known {
        Some(k) if *v != k => Err(format!("queens({n}) = {v}, expected {k}")),
        _ => Ok(()),
    };

    if !args.gpu_only {
        let mut row = Row::new("queens", n, "serial Rust", work, "solutions/s");
        (row.times, row.verified) =
            measure(args.warmup, args.reps, || Ok(timed(|| queens_serial(black_box(n)))), check);
        rows.push(row);
        let mut row = Row::new("queens", n, "rayon", work, "solutions/s");
        row.note = "parallel over first-row columns".into();
        (row.times, row.verified) = measure(args.warmup, args.reps, || Ok(timed(|| queens_rayon(black_box(n)))), check);
        rows.push(row);
    }

    let mut row = Row::new("queens", n, "CUDA prefix DFS", work, "solutions/s");
    match device {
        Err(e) => row = row.na(format!("n/a: {e}")),
        Ok(dev) => {
            let resident = dev.info().multiprocessors as usize * dev.info().max_threads_per_sm as usize;
            let k = args.queens_prefix_rows.unwrap_or_else(|| {
                (1..n.saturating_sub(1).max(1))
                    .find(|&k| queens_prefixes(n, k).len() >= 2 * resident)
                    .unwrap_or(n.saturating_sub(2).max(1))
            });
            let k = k.min(n);
            let result = (|| -> gpu_cilk::runtime::Result<_> {
                let program = dev.load_program(&program())?;
                // SAFETY: `queens_prefix` takes one `QueensParams`; it reads prefixes[0..count)
                // and adds to *total, both sized accordingly below.
                let kernel = unsafe { program.kernel::<QueensParams>("queens_prefix")? };
                Ok((kernel, dev.alloc_zeroed::<u64>(1)?))
            })();
            match result {
                Err(e) => row = row.na(format!("n/a: {e}")),
                Ok((kernel, mut total)) => {
                    row.note = format!("{k} rows expanded on the host (timed), one thread per prefix");
                    (row.times, row.verified) = measure(
                        args.warmup,
                        args.reps,
                        || {
                            let run = || -> gpu_cilk::runtime::Result<u64> {
                                let prefixes = queens_prefixes(n, k);
                                let buf = dev.htod(&prefixes)?;
                                dev.copy_htod(&[0u64], &mut total)?;
                                let p = QueensParams {
                                    prefixes: buf.ptr(),
                                    total: total.ptr(),
                                    count: prefixes.len() as u32,
                                    n,
                                    rows_left: n - k,
                                    pad: 0,
                                };
                                kernel.launch(LaunchDims::cover(prefixes.len(), 128), &p)?;
                                Ok(dev.dtoh(&total)?[0])
                            };
                            dev.sync().map_err(|e| e.to_string())?;
                            let (t, v) = timed(run);
                            v.map(|v| (t, v)).map_err(|e| e.to_string())
                        },
                        check,
                    );
                }
            }
        }
    }
    rows.push(row);
    rows.extend(gpu_cilk_rows(args, |rt, backend| cilk_columns(rt, backend, args)));
    rows
}

/// The gpu-cilk columns: `examples/workloads/queens.rs` on one runtime (or why it could not be built).
fn cilk_columns(rt: Result<&Runtime, String>, backend: &str, args: &Args) -> Vec<Row> {
    let n = args.queens;
    let Some(want) = queens_known(n) else { return Vec::new() };
    let mut rows = vec![run_cilk(
        rt.clone(),
        args,
        "queens",
        n,
        &format!("gpu-cilk {backend} bits"),
        queens_workload::queens_bits::task(n, 0, 0, 0),
        want,
        want as f64,
        "solutions/s",
    )];
    if n <= 16 {
        rows.push(run_cilk(
            rt,
            args,
            "queens",
            n,
            &format!("gpu-cilk {backend} array"),
            queens_workload::queens::task(n, 0, [0; 16]),
            want,
            want as f64,
            "solutions/s",
        ));
    }
    rows
}

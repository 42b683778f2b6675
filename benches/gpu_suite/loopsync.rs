//! The cost of a `sync!()` inside a loop (issue 13): `sync_rounds(n)` runs `n` iterations of
//! "spawn one child, sync, fold its result" (its body is a state machine that resumes its one
//! continuation `n` times); `wide_rounds(w, n)` spawns `w` of those at once so every device warp
//! has chains to run. Rows: serial Rust and the gpu-cilk columns; the unit is loop iterations per
//! second, so its inverse is one iteration's cost (spawn + sync + resume). The levels schedulers
//! refuse such tasks (their column reads `n/a`).

use crate::common::{gpu_cilk_rows, measure, run_cilk, Row};
use crate::Args;
use gpu_cilk::prelude::*;

/// One iteration's child.
#[gpu_cilk]
pub fn tick(i: u32) -> u64 {
    (i as u64).wrapping_mul(2_654_435_761) % 1000 + 1
}

/// `n` rounds of one spawn and a sync.
#[gpu_cilk]
pub fn sync_rounds(seed: u32, n: u32) -> u64 {
    let mut s: u64 = 0;
    for i in 0..n {
        let x = spawn!(tick(seed.wrapping_add(i)));
        sync!();
        s = s.wrapping_mul(3).wrapping_add(x);
    }
    s
}

/// One chain, its result stored in `out[c]`.
#[gpu_cilk]
pub fn chain_into(out: Temp<u64>, c: u32, n: u32) {
    let x = spawn!(sync_rounds(c, n));
    sync!();
    out[c as usize] = x;
}

/// `w` chains of [`sync_rounds`] at once; the sum of their results.
#[gpu_cilk]
pub fn wide_rounds(w: u32, n: u32) -> u64 {
    let t = alloc!(u64, w as usize);
    for c in 0..w {
        spawn!(chain_into(t, c, n));
    }
    sync!();
    let mut s: u64 = 0;
    for c in 0..w as usize {
        s = s.wrapping_add(t[c]);
    }
    s
}

pub(crate) fn bench_loopsync(args: &Args) -> Vec<Row> {
    let (w, n) = (args.loop_sync_width, args.loop_sync_rounds);
    let iterations = w as f64 * n as f64;
    let size = format!("{w}x{n}");
    let want = wide_rounds(w, n);
    let mut serial = Row::new("loop sync", &size, "serial", iterations, "iterations/s");
    (serial.times, serial.verified) = measure(
        args.warmup,
        args.reps,
        || {
            let t = std::time::Instant::now();
            let mut acc = 0u64;
            for c in 0..w {
                acc = acc.wrapping_add(std::hint::black_box(sync_rounds(c, n)));
            }
            Ok((t.elapsed(), acc))
        },
        |v| if *v == want { Ok(()) } else { Err(format!("serial loop sync = {v}, expected {want}")) },
    );
    let mut rows = vec![serial];
    rows.extend(gpu_cilk_rows(args, |rt, backend| {
        vec![run_cilk(
            rt,
            args,
            "loop sync",
            w,
            &format!("gpu-cilk {backend} ({size})"),
            wide_rounds::task(w, n),
            want,
            iterations,
            "iterations/s",
        )]
    }));
    rows
}

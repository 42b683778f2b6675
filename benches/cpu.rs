//! gpu-cilk's cpu backend against the plain serial functions and rayon `join`, on all host cores:
//! fib (every call spawned), N-queens bitmask (a spawn per safe column) and a chain of single
//! spawns (no parallelism; depth held in heap frames). Columns: `gpu-cilk cpu (stealing)`,
//! `gpu-cilk cpu (levels)`, `serial`, `rayon join` without a cutoff (every call a join, like the
//! annotated source) and `rayon join, cutoff` (serial below a hand-chosen size, the best a
//! programmer tuning by hand gets). Every time is the median of `--reps` runs after `--warmup`
//! unmeasured ones; every result is checked against the serial one.
//!
//! ```text
//! cargo bench --bench cpu -- --fib 35,40 --queens 15 --chain 1000000 --reps 5
//! ```
//! (A separate target from `gpu_suite` so the two can evolve independently; `gpu_suite`'s
//! `gpu-cilk cpu` column runs the same default scheduler.)

#[path = "../examples/workloads/chain.rs"]
mod chain_workload;
#[path = "../examples/workloads/fib.rs"]
mod fib_workload;
#[path = "../examples/workloads/queens.rs"]
mod queens_workload;

use chain_workload::chain;
use clap::Parser;
use fib_workload::fib;
use gpu_cilk::prelude::*;
use gpu_cilk::runtime::{Call, CilkTask};
use queens_workload::{queens_bits, KNOWN};
use std::hint::black_box;
use std::time::{Duration, Instant};

#[derive(Parser, Debug, Clone)]
#[command(about = "gpu-cilk cpu backend vs serial and rayon join (fib, queens bitmask, chain)")]
struct Args {
    /// fib sizes (comma-separated).
    #[arg(long, default_value = "35,40", value_delimiter = ',')]
    fib: Vec<u32>,
    /// N-queens (bitmask) board sizes (comma-separated, <= 16).
    #[arg(long, default_value = "15", value_delimiter = ',')]
    queens: Vec<u32>,
    /// Chain depths (comma-separated).
    #[arg(long, default_value = "1000000", value_delimiter = ',')]
    chain: Vec<u32>,
    /// Measured repetitions (the median is reported).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Unmeasured warm-up runs.
    #[arg(long, default_value_t = 1)]
    warmup: usize,
    /// Worker threads for gpu-cilk and rayon (0 = one per core).
    #[arg(long, default_value_t = 0)]
    threads: usize,
    /// rayon fib with cutoff: below this n, plain recursion.
    #[arg(long, default_value_t = 20)]
    fib_cutoff: u32,
    /// rayon queens with cutoff: rows below this one run serially.
    #[arg(long, default_value_t = 4)]
    queens_cutoff_rows: u32,
    /// Run the levels scheduler only where the serial time is at most this (it is 10-100x
    /// slower than serial: seconds per run beyond that).
    #[arg(long, default_value_t = 400.0)]
    levels_max_serial_ms: f64,
    /// Per-run timeout of the gpu-cilk runs, seconds.
    #[arg(long, default_value_t = 120)]
    timeout_s: u64,
    /// Report the fastest run instead of the median (robust against other load on a shared
    /// machine).
    #[arg(long)]
    min: bool,
    /// Stealing runs of the first fib size, back to back, whose phases (start, end, idle) are
    /// printed as medians at the end.
    #[arg(long, default_value_t = 21)]
    phases: usize,
    /// Passed by `cargo bench`; ignored.
    #[arg(long, hide = true)]
    bench: bool,
}

/// One measured cell: the median time, or why there is none.
type Cell = Result<Duration, String>;

fn main() {
    let args = Args::parse();
    let pool = rayon::ThreadPoolBuilder::new().num_threads(args.threads).build().expect("rayon pool");
    let threads = pool.current_num_threads();
    // From the environment, so GPU_CILK_SPAWN_QUEUE / GPU_CILK_INLINE_NESTING can be varied.
    let base = Config::from_env()
        .expect("GPU_CILK_* settings")
        .backend(BackendKind::Cpu)
        .threads(args.threads)
        .timeout(Some(Duration::from_secs(args.timeout_s)));
    let stealing = Runtime::with_config(base.clone().scheduler(SchedulerKind::Stealing)).expect("cpu backend");
    let levels = Runtime::with_config(base.scheduler(SchedulerKind::Levels)).expect("cpu backend");
    println!(
        "host: {threads} threads (gpu-cilk and rayon); {} of {} runs after {} warm-up",
        if args.min { "fastest" } else { "median" },
        args.reps,
        args.warmup
    );
    println!();
    println!("| workload | serial | rayon join | rayon join, cutoff | gpu-cilk cpu (stealing) | gpu-cilk cpu (levels) | stealing vs serial | stealing vs rayon | stealing vs rayon cutoff |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for &n in &args.fib {
        let expect = fib_serial(n);
        let serial = measure(&args, expect, || fib_serial(black_box(n)));
        let rayon = measure(&args, expect, || pool.install(|| fib_rayon(black_box(n), 0)));
        let cutoff = measure(&args, expect, || pool.install(|| fib_rayon(black_box(n), args.fib_cutoff)));
        let st = measure_cilk(&args, &stealing, fib::task(n), expect);
        let lv = levels_if(&args, &serial, || measure_cilk(&args, &levels, fib::task(n), expect));
        row(&format!("fib({n}), cutoff {}", args.fib_cutoff), &serial, &rayon, &cutoff, &st, &lv);
    }
    for &n in &args.queens {
        let expect = KNOWN.get(n as usize).copied().unwrap_or_else(|| queens_bits(n, 0, 0, 0));
        // The annotated function called plainly: the same leaf code every column runs.
        let serial = measure(&args, expect, || queens_bits(black_box(n), 0, 0, 0));
        let rayon = measure(&args, expect, || pool.install(|| queens_rayon(black_box(n), n)));
        let cutoff = measure(&args, expect, || pool.install(|| queens_rayon(black_box(n), args.queens_cutoff_rows)));
        let st = measure_cilk(&args, &stealing, queens_bits::task(n, 0, 0, 0), expect);
        let lv = levels_if(&args, &serial, || measure_cilk(&args, &levels, queens_bits::task(n, 0, 0, 0), expect));
        row(
            &format!("queens({n}) bitmask, cutoff row {}", args.queens_cutoff_rows),
            &serial,
            &rayon,
            &cutoff,
            &st,
            &lv,
        );
    }
    for &n in &args.chain {
        let expect = n as u64;
        // The serial chain recursion needs ~50 bytes of stack per level: run it on a big stack.
        let a = args.clone();
        let serial = std::thread::Builder::new()
            .stack_size(1 << 30)
            .spawn(move || measure(&a, expect, || chain_serial(black_box(n))))
            .expect("thread")
            .join()
            .expect("serial chain");
        let na: Cell = Err("n/a (no parallelism; a join chain this deep overflows rayon's stacks)".into());
        let st = measure_cilk(&args, &stealing, chain::task(n), expect);
        let lv = levels_if(&args, &serial, || measure_cilk(&args, &levels, chain::task(n), expect));
        row(&format!("chain({n})"), &serial, &na, &na, &st, &lv);
    }
    println!();
    println!("`stealing vs X` = X's time / stealing's time (above 1: gpu-cilk is faster).");
    let n = args.fib.first().copied().unwrap_or(30);
    // Back to back, as the measured runs are (the pool threads are awake, or just went to sleep).
    let mut runs = Vec::new();
    for _ in 0..args.phases.max(1) {
        if let Ok(r) = stealing.run_with_stats(fib::task(n)) {
            runs.push(r.stats);
        }
    }
    if let Some(last) = runs.last() {
        println!();
        println!("stats of one stealing run of fib({n}) (the last of {} back to back):\n{last}", runs.len());
        phases(n, &runs);
    }
}

/// Medians over `runs` of the phases of a stealing run: start (until the last worker took its
/// first task), the root's completion, the end (root done to return), idle time per worker.
fn phases(n: u32, runs: &[gpu_cilk::runtime::Stats]) {
    let med = |f: &dyn Fn(&gpu_cilk::runtime::Stats) -> f64| {
        let mut v: Vec<f64> = runs.iter().map(f).collect();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let per = |d: Duration, s: &gpu_cilk::runtime::Stats| ms(d) / s.workers.max(1) as f64;
    println!(
        "phases of fib({n}), median of {} stealing runs back to back: wall {:.3} ms; last worker's first task at \
         {:.3} ms; root done at {:.3} ms; end (root done to return) {:.3} ms; per worker: {:.3} ms idle, {:.3} ms \
         of it before joining, {:.3} ms before its first task, {:.3} ms after its last; {:.0} tasks, {:.0} steals, \
         {:.0} parks",
        runs.len(),
        med(&|s| ms(s.wall)),
        med(&|s| ms(s.spread)),
        med(&|s| ms(s.root_done)),
        med(&|s| ms(s.wall.saturating_sub(s.root_done))),
        med(&|s| per(s.idle, s)),
        med(&|s| per(s.late, s)),
        med(&|s| per(s.idle_start, s)),
        med(&|s| per(s.idle_end, s)),
        med(&|s| s.tasks_created as f64),
        med(&|s| s.steals as f64),
        med(&|s| s.parks as f64),
    );
}

/// The levels column, where the serial time is small enough (`--levels-max-serial-ms`).
fn levels_if(args: &Args, serial: &Cell, f: impl FnOnce() -> Cell) -> Cell {
    match serial {
        Ok(t) if t.as_secs_f64() * 1e3 > args.levels_max_serial_ms => {
            Err(format!("skipped (serial > {} ms)", args.levels_max_serial_ms))
        }
        _ => f(),
    }
}

fn row(label: &str, serial: &Cell, rayon: &Cell, cutoff: &Cell, st: &Cell, lv: &Cell) {
    let ratio = |a: &Cell| match (a, st) {
        (Ok(a), Ok(s)) => format!("{:.2}×", a.as_secs_f64() / s.as_secs_f64()),
        _ => "–".into(),
    };
    println!(
        "| {label} | {} | {} | {} | {} | {} | {} | {} | {} |",
        ms(serial),
        ms(rayon),
        ms(cutoff),
        ms(st),
        ms(lv),
        ratio(serial),
        ratio(rayon),
        ratio(cutoff)
    );
}

fn ms(c: &Cell) -> String {
    match c {
        // Three decimals: the fixed cost of a tiny run (fib(5)) is microseconds.
        Ok(d) if *d < Duration::from_millis(1) => format!("{:.3} ms", d.as_secs_f64() * 1e3),
        Ok(d) => format!("{:.2} ms", d.as_secs_f64() * 1e3),
        Err(e) => e.clone(),
    }
}

/// The median of `reps` timed runs of `f` after `warmup`, each checked against `expect`.
fn measure(args: &Args, expect: u64, mut f: impl FnMut() -> u64) -> Cell {
    for _ in 0..args.warmup {
        black_box(f());
    }
    let mut times = Vec::with_capacity(args.reps);
    for _ in 0..args.reps.max(1) {
        let t = Instant::now();
        let v = f();
        times.push(t.elapsed());
        if v != expect {
            return Err(format!("WRONG: {v} != {expect}"));
        }
    }
    times.sort();
    Ok(if args.min { times[0] } else { times[times.len() / 2] })
}

fn measure_cilk<T: CilkTask<Output = u64, Args: gpu_cilk::runtime::OwnedArgs>>(
    args: &Args,
    rt: &Runtime,
    call: Call<'_, T>,
    expect: u64,
) -> Cell {
    let mut err = None;
    let cell = measure(args, expect, || match rt.run(call) {
        Ok(v) => v,
        Err(e) => {
            err.get_or_insert(e.to_string());
            expect
        }
    });
    match err {
        Some(e) => Err(format!("error: {}", e.chars().take(60).collect::<String>())),
        None => cell,
    }
}

fn fib_serial(n: u32) -> u64 {
    if n < 2 {
        return n as u64;
    }
    fib_serial(n - 1) + fib_serial(n - 2)
}

/// rayon `join` at every call down to `cutoff` (0: every call), plain recursion below.
fn fib_rayon(n: u32, cutoff: u32) -> u64 {
    if n < 2 {
        return n as u64;
    }
    if n < cutoff {
        return fib_serial(n);
    }
    let (a, b) = rayon::join(|| fib_rayon(n - 1, cutoff), || fib_rayon(n - 2, cutoff));
    a + b
}

/// Bitmask queens with a rayon `join` split of the safe columns at every row above `rows`
/// (`rows = n`: every row, like the annotated source), below it the annotated function called
/// plainly (the same leaf code as the serial column and gpu-cilk's serial calls).
fn queens_rayon(n: u32, rows: u32) -> u64 {
    fn go(full: u32, row: u32, rows: u32, cols: u32, ld: u32, rd: u32) -> u64 {
        if row >= rows {
            return queens_bits(full.count_ones(), cols, ld, rd);
        }
        if cols == full {
            return 1;
        }
        split(full, row, rows, cols, ld, rd, full & !(cols | ld | rd))
    }
    /// Sums the subtrees of the columns in `avail` by halving the set with `join`.
    fn split(full: u32, row: u32, rows: u32, cols: u32, ld: u32, rd: u32, avail: u32) -> u64 {
        match avail.count_ones() {
            0 => 0,
            1 => go(full, row + 1, rows, cols | avail, ((ld | avail) << 1) & full, (rd | avail) >> 1),
            k => {
                let mut low = avail;
                for _ in 0..k / 2 {
                    low &= low - 1;
                }
                let high = avail & !low;
                let (a, b) = rayon::join(
                    || split(full, row, rows, cols, ld, rd, low),
                    || split(full, row, rows, cols, ld, rd, high),
                );
                a + b
            }
        }
    }
    go((1u32 << n) - 1, 0, rows, 0, 0, 0)
}

fn chain_serial(n: u32) -> u64 {
    if n == 0 {
        return 0;
    }
    black_box(chain_serial(n - 1)) + 1
}

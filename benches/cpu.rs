//! gpu-cilk's cpu backend against the plain serial functions and rayon, on all host cores: fib
//! (every call spawned), N-queens bitmask (a spawn per safe column), a chain of single spawns (no
//! parallelism; depth held in heap frames), the unbalanced UTS-style tree
//! (`examples/workloads/unbalanced.rs`), cilksort, Strassen and best-first knapsack. Columns:
//! `gpu-cilk cpu (stealing)`, `gpu-cilk cpu (levels)`, `serial` (the annotated function called
//! plainly), and two rayon peers written as a user would (the row's label names them):
//!
//! | workload | `rayon` column | `rayon, cutoff` column |
//! | --- | --- | --- |
//! | fib, queens | `join` at every call, like the annotated source | `join` above a hand-chosen size, serial below |
//! | unbalanced | `join` over the roots and every node's children | the same above depth `--uts-cutoff`, serial below |
//! | sort | `par_sort_unstable` | `sort_unstable` on one thread |
//! | strassen | Strassen with `join` over the seven products (same base case loops) | – |
//! | knapsack | depth-first branch-and-bound with `join` over the two children, shared incumbent | serial best-first over `BinaryHeap` |
//!
//! Every time is the median of `--reps` runs after `--warmup` unmeasured ones; every result is
//! checked (against the serial one, the sorted order, the serial product within Higham's bound,
//! the dynamic-programming optimum).
//!
//! ```text
//! cargo bench --bench cpu -- --fib 35,40 --queens 15 --chain 1000000 --reps 5
//! cargo bench --bench cpu -- --only uts,sort,strassen,knapsack --sort 1000000 --strassen 2048
//! ```
//! (A separate target from `gpu_suite` so the two can evolve independently; `gpu_suite`'s
//! `gpu-cilk cpu` column runs the same default scheduler.)

use gpu_cilk_examples::workloads::chain as chain_workload;
use gpu_cilk_examples::workloads::fib as fib_workload;
use gpu_cilk_examples::workloads::knapsack as knapsack_workload;
use gpu_cilk_examples::workloads::queens as queens_workload;
use gpu_cilk_examples::workloads::sort as sort_workload;
use gpu_cilk_examples::workloads::strassen as strassen_workload;
use gpu_cilk_examples::workloads::unbalanced as unbalanced_workload;

use chain_workload::chain;
use clap::Parser;
use fib_workload::fib;
use gpu_cilk::prelude::*;
use gpu_cilk::runtime::{Call, CilkTask};
use gpu_cilk::Temp;
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
    /// Which workloads to run (comma-separated): fib, queens, chain, uts, sort, strassen, knapsack.
    #[arg(long, default_value = "fib,queens,chain,uts,sort,strassen,knapsack", value_delimiter = ',')]
    only: Vec<String>,
    /// Unbalanced tree: the hash seed.
    #[arg(long, default_value_t = 42)]
    uts_seed: u64,
    /// Unbalanced tree: roots (spread by a binary split).
    #[arg(long, default_value_t = 1024)]
    uts_roots: u32,
    /// Unbalanced tree: children of a node that has children (at most 8).
    #[arg(long, default_value_t = 2)]
    uts_m: u32,
    /// Unbalanced tree: probabilities, in millionths, that a node has children (comma-separated;
    /// m * q just under 10^6 makes a deep, very uneven tree: 499500 gives 1,351,846 nodes, about
    /// 1,700 levels deep).
    #[arg(long, default_value = "499500", value_delimiter = ',')]
    uts_q: Vec<u32>,
    /// Unbalanced tree: the rayon cutoff peer joins above this depth, serially below.
    #[arg(long, default_value_t = 64)]
    uts_cutoff: u32,
    /// cilksort sizes (random u32 keys, comma-separated).
    #[arg(long, default_value = "1000000", value_delimiter = ',')]
    sort: Vec<usize>,
    /// Strassen sizes (comma-separated).
    #[arg(long, default_value = "1024", value_delimiter = ',')]
    strassen: Vec<usize>,
    /// Knapsack instances `type:n:R` (type sc, asc, esc or ss; comma-separated).
    #[arg(long, default_value = "sc:200:7000,asc:500:7000,esc:400:8000,ss:100:18000", value_delimiter = ',')]
    knapsack: Vec<String>,
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
    /// Print the statistics of one more stealing run of every unbalanced, sort, strassen and
    /// knapsack row (tasks, steals, idle time, peak frames).
    #[arg(long)]
    stats: bool,
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
    let levels = Runtime::with_config(base.clone().scheduler(SchedulerKind::Levels)).expect("cpu backend");
    let on = |w: &str| args.only.iter().any(|o| o == w);
    println!(
        "host: {threads} threads (gpu-cilk and rayon); {} of {} runs after {} warm-up",
        if args.min { "fastest" } else { "median" },
        args.reps,
        args.warmup
    );
    println!();
    println!("| workload | serial | rayon join | rayon join, cutoff | gpu-cilk cpu (stealing) | gpu-cilk cpu (levels) | stealing vs serial | stealing vs rayon | stealing vs rayon cutoff |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for &n in args.fib.iter().filter(|_| on("fib")) {
        let expect = fib_serial(n);
        let serial = measure(&args, expect, || fib_serial(black_box(n)));
        let rayon = measure(&args, expect, || pool.install(|| fib_rayon(black_box(n), 0)));
        let cutoff = measure(&args, expect, || pool.install(|| fib_rayon(black_box(n), args.fib_cutoff)));
        let st = measure_cilk(&args, &stealing, fib::task(n), expect);
        let lv = levels_if(&args, &serial, || measure_cilk(&args, &levels, fib::task(n), expect));
        row(&format!("fib({n}), cutoff {}", args.fib_cutoff), &serial, &rayon, &cutoff, &st, &lv);
    }
    for &n in args.queens.iter().filter(|_| on("queens")) {
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
    for &n in args.chain.iter().filter(|_| on("chain")) {
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
    for &q in args.uts_q.iter().filter(|_| on("uts")) {
        uts_row(&args, &pool, &stealing, &levels, q);
    }
    for &n in args.sort.iter().filter(|_| on("sort")) {
        sort_row(&args, &pool, &stealing, &levels, n);
    }
    for &n in args.strassen.iter().filter(|_| on("strassen")) {
        strassen_row(&args, &pool, &base, n);
    }
    for spec in args.knapsack.iter().filter(|_| on("knapsack")) {
        knapsack_row(&args, &pool, &stealing, &levels, spec);
    }
    println!();
    println!("`stealing vs X` = X's time / stealing's time (above 1: gpu-cilk is faster).");
    if !on("fib") {
        return;
    }
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
    measure_timed(args, || {
        let t = Instant::now();
        let v = f();
        let d = t.elapsed();
        if v == expect {
            Ok(d)
        } else {
            Err(format!("WRONG: {v} != {expect}"))
        }
    })
}

/// The median of `reps` runs of `f` after `warmup`; `f` times what it measures itself (its setup
/// and its check are not timed) and fails with why the result is wrong.
fn measure_timed(args: &Args, mut f: impl FnMut() -> Result<Duration, String>) -> Cell {
    for _ in 0..args.warmup {
        f()?;
    }
    let mut times = Vec::with_capacity(args.reps);
    for _ in 0..args.reps.max(1) {
        times.push(f()?);
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

/// The statistics of one stealing run (`--stats`), after the table row they belong to.
fn print_stats(label: &str, stats: Result<gpu_cilk::runtime::Stats, Error>) {
    match stats {
        Ok(s) => println!("\nstats of one stealing run of {label}:\n{s}\n"),
        Err(e) => println!("\n{label}: {e}\n"),
    }
}

/// The unbalanced tree with probability `q`: serial, rayon `join` at every node and above
/// `--uts-cutoff`, the two schedulers.
fn uts_row(args: &Args, pool: &rayon::ThreadPool, stealing: &Runtime, levels: &Runtime, q: u32) {
    use unbalanced_workload::{uts, uts_rayon};
    let (seed, roots, m) = (args.uts_seed, args.uts_roots, args.uts_m);
    let expect = uts(seed, roots, m, q);
    let serial = measure(args, expect, || uts(black_box(seed), roots, m, q));
    let rayon = measure(args, expect, || pool.install(|| uts_rayon(black_box(seed), roots, m, q, u32::MAX)));
    let cutoff = measure(args, expect, || pool.install(|| uts_rayon(black_box(seed), roots, m, q, args.uts_cutoff)));
    let st = measure_cilk(args, stealing, uts::task(seed, roots, m, q), expect);
    let lv = levels_if(args, &serial, || measure_cilk(args, levels, uts::task(seed, roots, m, q), expect));
    let label = format!("unbalanced q={q} ({expect} nodes), rayon cutoff depth {}", args.uts_cutoff);
    row(&label, &serial, &rayon, &cutoff, &st, &lv);
    if args.stats {
        print_stats(&label, stealing.run_with_stats(uts::task(seed, roots, m, q)).map(|r| r.stats));
    }
}

/// One sort of the keys (first slice) with scratch (second), failing with why.
type SortFn<'a> = dyn FnMut(&mut [u32], &mut [u32]) -> Result<(), String> + 'a;

/// cilksort of `n` random keys: the serial function, `par_sort_unstable`, one-thread
/// `sort_unstable`, the two schedulers. Each run sorts a fresh copy of the input (the copy is not
/// timed) and is checked: sorted, and a permutation of the input.
fn sort_row(args: &Args, pool: &rayon::ThreadPool, stealing: &Runtime, levels: &Runtime, n: usize) {
    use sort_workload::{cilksort, fingerprint, input, is_sorted, Shape};
    let keys = input(Shape::Random, n, 1);
    let want = fingerprint(&keys);
    let mut a = keys.clone();
    let mut tmp = vec![0u32; n];
    let check = |a: &[u32], d: Duration| {
        if is_sorted(a) && fingerprint(a) == want {
            Ok(d)
        } else {
            Err("WRONG: not a sorted permutation of the input".to_string())
        }
    };
    let mut timed = |f: &mut SortFn<'_>| {
        measure_timed(args, || {
            a.copy_from_slice(&keys);
            let t = Instant::now();
            f(&mut a, &mut tmp)?;
            let d = t.elapsed();
            check(&a, d)
        })
    };
    let serial = timed(&mut |a, t| {
        cilksort(a, t);
        Ok(())
    });
    let rayon = timed(&mut |a, _| {
        use rayon::slice::ParallelSliceMut;
        pool.install(|| a.par_sort_unstable());
        Ok(())
    });
    let one = timed(&mut |a, _| {
        a.sort_unstable();
        Ok(())
    });
    let mut on = |rt: &Runtime| timed(&mut |a, t| rt.run(cilksort::task(a, t)).map_err(|e| format!("error: {e}")));
    let st = on(stealing);
    let lv = levels_if(args, &serial, || on(levels));
    let label = format!("sort({n}) cilksort; rayon = par_sort_unstable, cutoff = sort_unstable on 1 thread");
    row(&label, &serial, &rayon, &one, &st, &lv);
    if args.stats {
        a.copy_from_slice(&keys);
        print_stats(&label, stealing.run_with_stats(cilksort::task(&mut a, &mut tmp)).map(|r| r.stats));
    }
}

/// Strassen `n × n`: the serial function, a rayon Strassen, the stealing scheduler (with a
/// temporary heap for every level's temporaries, as the example sizes it). Each product is checked
/// against the serial one within Higham's bound.
fn strassen_row(args: &Args, pool: &rayon::ThreadPool, base: &Config, n: usize) {
    use strassen_workload::{higham_bound, levels, matrix, padded_size, strassen_root};
    let m = padded_size(n);
    let (k, _) = levels(m);
    let mut words = 3.0 * (m * m) as f64;
    for l in 0..k {
        let h = (m >> (l + 1)) as f64;
        words += 7f64.powi(l as i32) * 17.0 * h * h;
    }
    let heap = ((words * 4.0 * 1.25) as usize).max(64 << 20);
    let rt = Runtime::with_config(base.clone().scheduler(SchedulerKind::Stealing).temp_heap_bytes(heap))
        .expect("cpu backend");
    let (a, b) = (matrix(n, 1), matrix(n, 2));
    let mut oracle = vec![0f32; n * n];
    strassen_root(Mat::new(&a, n, n), Mat::new(&b, n, n), MatMut::new(&mut oracle, n, n), m);
    let bound = higham_bound(&a, &b, m);
    let mut c = vec![0f32; n * n];
    let mut timed = |f: &mut dyn FnMut(&mut [f32]) -> Result<(), String>| {
        measure_timed(args, || {
            c.fill(f32::NAN);
            let t = Instant::now();
            f(&mut c)?;
            let d = t.elapsed();
            let apart = c.iter().zip(&oracle).fold(0f64, |x, (p, q)| x.max(f64::from((p - q).abs())));
            if apart <= bound {
                Ok(d)
            } else {
                Err(format!("WRONG: {apart:.3e} from the serial product"))
            }
        })
    };
    let serial = timed(&mut |c| {
        strassen_root(Mat::new(&a, n, n), Mat::new(&b, n, n), MatMut::new(c, n, n), m);
        Ok(())
    });
    let rayon = timed(&mut |c| {
        pool.install(|| strassen_rayon_same(&a, &b, c, n, m));
        Ok(())
    });
    let copies = timed(&mut |c| {
        pool.install(|| strassen_rayon(&a, &b, c, n, m));
        Ok(())
    });
    let st = timed(&mut |c| {
        rt.run(strassen_root::task(Mat::new(&a, n, n), Mat::new(&b, n, n), MatMut::new(c, n, n), m))
            .map(|_| ())
            .map_err(|e| format!("error: {e}"))
    });
    let lv: Cell = Err("not run".into());
    let label = format!(
        "strassen({n}); rayon = join over the 7 products, scope over the sums, the annotated leaves and \
         temporaries; cutoff = Strassen on Vec<f32> with quadrant copies"
    );
    row(&label, &serial, &rayon, &copies, &st, &lv);
    if args.stats {
        print_stats(
            &label,
            rt.run_with_stats(strassen_root::task(
                Mat::new(&a, n, n),
                Mat::new(&b, n, n),
                MatMut::new(&mut c, n, n),
                m,
            ))
            .map(|r| r.stats),
        );
    }
}

/// Strassen's `c = a · b` with rayon over the workload's own pieces: the same padded temporaries
/// (`Temp<f32>` from a `TempScope`), strided views and level structure as `strassen_root`, the
/// seven products under nested `join`s, the ten sums and the four output sums each a
/// `rayon::scope` of `comb` calls, and every leaf the annotated function called plainly
/// (`base_mul`, `comb`, `pad_in`, `zero_fill`, `copy_out`): the column that compares scheduling
/// alone.
fn strassen_rayon_same(a: &[f32], b: &[f32], c: &mut [f32], n: usize, m: usize) {
    use gpu_cilk::runtime::TempScope;
    use strassen_workload::{base_mul, comb, copy_out, pad_in, zero_fill};
    type V = (Temp<f32>, usize, usize);
    fn mul(n: usize, (a, a0, lda): V, (b, b0, ldb): V, (c, c0, ldc): V) {
        if n <= 64 || n % 2 == 1 {
            base_mul(n, a, a0, lda, b, b0, ldb, c, c0, ldc);
            return;
        }
        let (h, scope) = (n / 2, TempScope::new());
        let hh = h * h;
        let (a12, a21, b12, b21) = (a0 + h, a0 + h * lda, b0 + h, b0 + h * ldb);
        let (a22, b22) = (a21 + h, b21 + h);
        let s = scope.alloc::<f32>(10 * hh);
        let mm = scope.alloc::<f32>(7 * hh);
        #[rustfmt::skip]
        let sums: [(Temp<f32>, usize, usize, f32, usize, f32); 10] = [
            (a, lda, a0, 1.0, a22, 1.0), (b, ldb, b0, 1.0, b22, 1.0), (a, lda, a21, 1.0, a22, 1.0),
            (b, ldb, b12, 1.0, b22, -1.0), (b, ldb, b21, 1.0, b0, -1.0), (a, lda, a0, 1.0, a12, 1.0),
            (a, lda, a21, 1.0, a0, -1.0), (b, ldb, b0, 1.0, b12, 1.0), (a, lda, a12, 1.0, a22, -1.0),
            (b, ldb, b21, 1.0, b22, 1.0),
        ];
        rayon::scope(|sc| {
            for (k, &(x, ldx, o1, s1, o2, s2)) in sums.iter().enumerate() {
                sc.spawn(move |_| comb(h, h, x, ldx, 2, o1, s1, o2, s2, 0, 0.0, 0, 0.0, s, k * hh, h));
            }
        });
        let sv = |k: usize| (s, k * hh, h);
        let mv = |k: usize| (mm, k * hh, h);
        rayon::join(
            || {
                rayon::join(
                    || mul(h, sv(0), sv(1), mv(0)),
                    || rayon::join(|| mul(h, sv(2), (b, b0, ldb), mv(1)), || mul(h, (a, a0, lda), sv(3), mv(2))),
                )
            },
            || {
                rayon::join(
                    || rayon::join(|| mul(h, (a, a22, lda), sv(4), mv(3)), || mul(h, sv(5), (b, b22, ldb), mv(4))),
                    || rayon::join(|| mul(h, sv(6), sv(7), mv(5)), || mul(h, sv(8), sv(9), mv(6))),
                )
            },
        );
        let (c12, c21) = (c0 + h, c0 + h * ldc);
        let c22 = c21 + h;
        rayon::scope(|sc| {
            sc.spawn(move |_| comb(h, h, mm, h, 4, 0, 1.0, 3 * hh, 1.0, 4 * hh, -1.0, 6 * hh, 1.0, c, c0, ldc));
            sc.spawn(move |_| comb(h, h, mm, h, 2, 2 * hh, 1.0, 4 * hh, 1.0, 0, 0.0, 0, 0.0, c, c12, ldc));
            sc.spawn(move |_| comb(h, h, mm, h, 2, hh, 1.0, 3 * hh, 1.0, 0, 0.0, 0, 0.0, c, c21, ldc));
            sc.spawn(move |_| comb(h, h, mm, h, 4, 0, 1.0, hh, -1.0, 2 * hh, 1.0, 5 * hh, 1.0, c, c22, ldc));
        });
    }
    if n == 0 {
        return;
    }
    let scope = TempScope::new();
    let (ta, tb, tc) = (scope.alloc::<f32>(m * m), scope.alloc::<f32>(m * m), scope.alloc::<f32>(m * m));
    rayon::join(
        || {
            pad_in(Mat::new(a, n, n), 0, ta, m);
            zero_fill(ta, n * m, m * m);
        },
        || {
            pad_in(Mat::new(b, n, n), 0, tb, m);
            zero_fill(tb, n * m, m * m);
        },
    );
    mul(m, (ta, 0, m), (tb, 0, m), (tc, 0, m));
    copy_out(tc, m, MatMut::new(c, n, n), 0);
}

/// Strassen's `c = a · b` (`n × n`, row-major) with rayon, as a user would write it: zero-padded
/// `m × m` copies, quadrants copied out, the ten sums, the seven products with nested `join`s,
/// `C` assembled from them; the base case (`<= 64`) the same loops as the workload's `base_mul`.
fn strassen_rayon(a: &[f32], b: &[f32], c: &mut [f32], n: usize, m: usize) {
    fn pad(x: &[f32], n: usize, m: usize) -> Vec<f32> {
        let mut t = vec![0f32; m * m];
        for i in 0..n {
            t[i * m..i * m + n].copy_from_slice(&x[i * n..(i + 1) * n]);
        }
        t
    }
    fn quad(x: &[f32], n: usize, qi: usize, qj: usize) -> Vec<f32> {
        let h = n / 2;
        let mut q = Vec::with_capacity(h * h);
        for i in 0..h {
            let r = (qi * h + i) * n + qj * h;
            q.extend_from_slice(&x[r..r + h]);
        }
        q
    }
    fn add(x: &[f32], y: &[f32], s: f32) -> Vec<f32> {
        x.iter().zip(y).map(|(p, q)| p + s * q).collect()
    }
    fn base(n: usize, a: &[f32], b: &[f32]) -> Vec<f32> {
        let mut c = vec![0f32; n * n];
        for j in 0..n {
            let mut i = 0;
            while i + 4 <= n {
                let (mut s0, mut s1, mut s2, mut s3) = (0f32, 0f32, 0f32, 0f32);
                for k in 0..n {
                    let bk = b[k * n + j];
                    let r = i * n + k;
                    s0 += a[r] * bk;
                    s1 += a[r + n] * bk;
                    s2 += a[r + 2 * n] * bk;
                    s3 += a[r + 3 * n] * bk;
                }
                c[i * n + j] = s0;
                c[(i + 1) * n + j] = s1;
                c[(i + 2) * n + j] = s2;
                c[(i + 3) * n + j] = s3;
                i += 4;
            }
            while i < n {
                let mut s = 0f32;
                for k in 0..n {
                    s += a[i * n + k] * b[k * n + j];
                }
                c[i * n + j] = s;
                i += 1;
            }
        }
        c
    }
    fn mul(n: usize, a: &[f32], b: &[f32]) -> Vec<f32> {
        if n <= 64 || n % 2 == 1 {
            return base(n, a, b);
        }
        let h = n / 2;
        let (a11, a12, a21, a22) = (quad(a, n, 0, 0), quad(a, n, 0, 1), quad(a, n, 1, 0), quad(a, n, 1, 1));
        let (b11, b12, b21, b22) = (quad(b, n, 0, 0), quad(b, n, 0, 1), quad(b, n, 1, 0), quad(b, n, 1, 1));
        let ((m1, (m2, m3)), ((m4, m5), (m6, m7))) = rayon::join(
            || {
                rayon::join(
                    || mul(h, &add(&a11, &a22, 1.0), &add(&b11, &b22, 1.0)),
                    || rayon::join(|| mul(h, &add(&a21, &a22, 1.0), &b11), || mul(h, &a11, &add(&b12, &b22, -1.0))),
                )
            },
            || {
                rayon::join(
                    || rayon::join(|| mul(h, &a22, &add(&b21, &b11, -1.0)), || mul(h, &add(&a11, &a12, 1.0), &b22)),
                    || {
                        rayon::join(
                            || mul(h, &add(&a21, &a11, -1.0), &add(&b11, &b12, 1.0)),
                            || mul(h, &add(&a12, &a22, -1.0), &add(&b21, &b22, 1.0)),
                        )
                    },
                )
            },
        );
        let mut c = vec![0f32; n * n];
        for i in 0..h {
            for j in 0..h {
                let e = i * h + j;
                c[i * n + j] = m1[e] + m4[e] - m5[e] + m7[e];
                c[i * n + h + j] = m3[e] + m5[e];
                c[(i + h) * n + j] = m2[e] + m4[e];
                c[(i + h) * n + h + j] = m1[e] - m2[e] + m3[e] + m6[e];
            }
        }
        c
    }
    let p = mul(m, &pad(a, n, m), &pad(b, n, m));
    for i in 0..n {
        c[i * n..(i + 1) * n].copy_from_slice(&p[i * m..i * m + n]);
    }
}

/// Knapsack instance `type:n:R` (seed 1): the serial function (depth-first), a rayon
/// depth-first branch-and-bound, the serial best-first `BinaryHeap` solver, the two schedulers;
/// every optimum checked against dynamic programming.
fn knapsack_row(args: &Args, pool: &rayon::ThreadPool, stealing: &Runtime, levels: &Runtime, spec: &str) {
    use knapsack_workload::{best_first_until, dp, generate, solve, solve_serial, KINDS};
    let parts: Vec<&str> = spec.split(':').collect();
    let parsed = match parts.as_slice() {
        [k, n, r] => KINDS
            .iter()
            .find(|x| x.short() == *k)
            .and_then(|&kind| Some((kind, n.parse::<usize>().ok()?, r.parse::<u64>().ok()?))),
        _ => None,
    };
    let Some((kind, n, r)) = parsed else {
        println!("| knapsack {spec} | bad instance (want type:n:R, type one of sc, asc, esc, ss) |");
        return;
    };
    let inst = generate(kind, n, r, 1);
    let opt = dp(&inst);
    let serial = measure(args, opt, || solve_serial(black_box(&inst)).0);
    let rayon = measure(args, opt, || pool.install(|| knapsack_rayon(&inst)));
    let deadline = Duration::from_secs(args.timeout_s);
    let heap = measure_timed(args, || {
        let t = Instant::now();
        match best_first_until(&inst, Some(t + deadline)) {
            Ok((v, _)) if v == opt => Ok(t.elapsed()),
            Ok((v, _)) => Err(format!("WRONG: {v} != {opt}")),
            Err(_) => Err(format!("> {} s", args.timeout_s)),
        }
    });
    let on = |rt: &Runtime| {
        measure_timed(args, || {
            let t = Instant::now();
            let (v, _, _) = solve(rt, &inst).map_err(|e| format!("error: {e}"))?;
            let d = t.elapsed();
            if v == opt {
                Ok(d)
            } else {
                Err(format!("WRONG: {v} != {opt}"))
            }
        })
    };
    let st = on(stealing);
    let lv = levels_if(args, &serial, || on(levels));
    let label = format!("knapsack {spec}; rayon = depth-first join, cutoff = serial best-first BinaryHeap");
    row(&label, &serial, &rayon, &heap, &st, &lv);
    if args.stats {
        print_stats(&label, solve(stealing, &inst).map(|r| r.2));
    }
}

/// Depth-first branch-and-bound for knapsack with rayon: `join` over a node's two children, the
/// incumbent an `AtomicU64` every node reads and raises (the same bound and pruning as the
/// workload's task).
fn knapsack_rayon(inst: &knapsack_workload::Instance) -> u64 {
    use knapsack_workload::upper_bound;
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    fn node(inst: &knapsack_workload::Instance, i: usize, cap: u64, value: u64, best: &AtomicU64) {
        if upper_bound(&inst.sw, &inst.sp, i, cap, value) <= best.load(Relaxed) {
            return;
        }
        best.fetch_max(value, Relaxed);
        if i == inst.w.len() {
            return;
        }
        let (wi, pi) = (inst.w[i], inst.p[i]);
        rayon::join(
            || {
                if wi <= cap && upper_bound(&inst.sw, &inst.sp, i + 1, cap - wi, value + pi) > best.load(Relaxed) {
                    node(inst, i + 1, cap - wi, value + pi, best);
                }
            },
            || {
                if upper_bound(&inst.sw, &inst.sp, i + 1, cap, value) > best.load(Relaxed) {
                    node(inst, i + 1, cap, value, best);
                }
            },
        );
    }
    let best = AtomicU64::new(0);
    node(inst, 0, inst.cap, 0, &best);
    best.load(Relaxed)
}

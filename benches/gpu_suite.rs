//! gpu-cilk benchmark suite: fib and N-queens on serial Rust, rayon on all cores and hand-written
//! CUDA (the peers in `benches/cuda/`, compiled at run time with NVRTC through gpu-cilk's CUDA
//! plumbing), plus the channel-reservation microbenchmark (warp-aggregated fetch-and-add versus a
//! contended CAS loop), next to gpu-cilk's own `cpu` and `cuda` backends running the
//! `#[gpu_cilk]` workloads of `examples/workloads/` ([`gpu_cilk_columns`]).
//!
//! Runs without a GPU (CUDA columns print `n/a: <reason>`). Every time is the median of `--reps`
//! runs after `--warmup` unmeasured ones; CUDA results are verified (fib against the closed
//! count, queens against the known table), and a wrong answer makes the run exit non-zero.
//!
//! ```text
//! cargo bench --bench gpu_suite -- --fib 35 --queens 15 --reps 5 --out target/gpu-bench
//! scripts/gpu-bench.sh DIR_WITH_BINARY --fib 35 --queens 15   # on the GPU machine
//! ```

use clap::Parser;
use gpu_cilk::runtime::backend::cuda::{
    self, Arch, CudaDevice, DeviceCopy, DevicePtr, Kernel, LaunchDims, ProgramSource, PtxCache,
};
use gpu_cilk::{BackendKind, Config, Runtime};
use std::fmt::Write as _;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

const FIB_CU: &str = include_str!("cuda/fib_levels.cu");
const QUEENS_CU: &str = include_str!("cuda/queens_prefix.cu");
const CHANNEL_CU: &str = include_str!("cuda/channel_bench.cu");
/// gpu-cilk's device channel, given to NVRTC as `gpu_cilk/channel.cuh`.
const CHANNEL_CUH: &str = include_str!("../kernels/include/gpu_cilk/channel.cuh");
const ALLOC_CU: &str = include_str!("cuda/alloc_bench.cu");
/// gpu-cilk's warp-coalesced allocator, given to NVRTC as `gpu_cilk/xmalloc.cuh`.
const XMALLOC_CUH: &str = include_str!("../kernels/include/gpu_cilk/xmalloc.cuh");

fn alloc_program() -> ProgramSource {
    ProgramSource::new("alloc_bench", ALLOC_CU).header("gpu_cilk/xmalloc.cuh", XMALLOC_CUH)
}

const QUEUE_CU: &str = include_str!("cuda/queue_bench.cu");
/// gpu-cilk's fetch-and-add ticket queue, given to NVRTC as `gpu_cilk/ticket_queue.cuh`.
const TICKET_QUEUE_CUH: &str = include_str!("../kernels/include/gpu_cilk/ticket_queue.cuh");

fn queue_program() -> ProgramSource {
    ProgramSource::new("queue_bench", QUEUE_CU).header("gpu_cilk/ticket_queue.cuh", TICKET_QUEUE_CUH)
}

fn channel_program() -> ProgramSource {
    ProgramSource::new("channel_bench", CHANNEL_CU).header("gpu_cilk/channel.cuh", CHANNEL_CUH)
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

#[derive(Parser, Debug, Clone)]
#[command(about = "gpu-cilk benchmark suite: serial / rayon / hand-written CUDA (fib, queens, channel)")]
struct Args {
    /// fib(n) size.
    #[arg(long, default_value_t = 35)]
    fib: u32,
    /// N-queens board size (<= 20).
    #[arg(long, default_value_t = 15)]
    queens: u32,
    /// Measured repetitions (the median is reported).
    #[arg(long, default_value_t = 5)]
    reps: usize,
    /// Unmeasured warm-up runs before the measured ones.
    #[arg(long, default_value_t = 1)]
    warmup: usize,
    /// Output directory for results.csv and results.json.
    #[arg(long, default_value = "target/gpu-bench")]
    out: PathBuf,
    /// Workloads to run (comma-separated): fib, queens, channel, alloc.
    #[arg(long, default_value = "fib,queens,channel", value_delimiter = ',')]
    only: Vec<String>,
    /// rayon fib: below this n, recurse serially.
    #[arg(long, default_value_t = 20)]
    fib_cutoff: u32,
    /// CUDA queens: rows expanded on the host into prefixes (default: the smallest k giving at
    /// least 2 prefixes per resident GPU thread, at most n - 2).
    #[arg(long)]
    queens_prefix_rows: Option<u32>,
    /// Channel benchmark: items each thread enqueues/dequeues with the FAA channel.
    #[arg(long, default_value_t = 64)]
    channel_items: u32,
    /// Channel benchmark: items each thread enqueues/dequeues with the CAS loop.
    #[arg(long, default_value_t = 1)]
    cas_items: u32,
    /// Also run the allocator benchmark (same as adding `alloc` to --only): MilThreads and a
    /// mixed-size variant, xmalloc vs CUDA device malloc, at 1..32 active lanes per warp.
    #[arg(long)]
    alloc: bool,
    /// Allocator benchmark: allocations per run (the paper's MilThreads: 1M).
    #[arg(long, default_value_t = 1 << 20)]
    alloc_n: u64,
    /// Allocator benchmark: CUDA's device malloc heap (cudaLimitMallocHeapSize), MiB.
    #[arg(long, default_value_t = 512)]
    malloc_heap_mb: usize,
    /// Also run the queue benchmark (same as adding `queue` to --only): the ticket queue versus a
    /// contended-CAS array queue, matched and 1:3 producer/consumer, 1 warp up to full occupancy.
    #[arg(long)]
    queue: bool,
    /// Queue benchmark: operations per thread (matched: enqueue+dequeue pairs; producer/consumer:
    /// dequeues per consumer, 3x as many enqueues per producer) for the ticket queue.
    #[arg(long, default_value_t = 32)]
    queue_items: u32,
    /// Queue benchmark: the same for the contended-CAS baseline (slow: keep it small).
    #[arg(long, default_value_t = 2)]
    queue_cas_items: u32,
    /// Queue benchmark: operations per thread for the non-waiting ticket-queue interface, whose
    /// busy retries make it slow under contention (27-54 s per run at full occupancy with 32).
    #[arg(long, default_value_t = 2)]
    queue_try_items: u32,
    /// Queue benchmark: capacity of both queues (a power of two; the paper used 65,536).
    #[arg(long, default_value_t = 65_536)]
    queue_capacity: u64,
    /// Skip the serial and rayon columns.
    #[arg(long)]
    gpu_only: bool,
    /// Per-synchronization timeout in seconds for CUDA runs.
    #[arg(long, default_value_t = 120)]
    timeout_s: u64,
    /// Architecture to compile for when no GPU is present (compile-time columns only).
    #[arg(long, default_value = "sm_90")]
    arch: String,
}

/// One measured configuration.
#[derive(Clone, Debug)]
struct Row {
    workload: String,
    size: String,
    implementation: String,
    /// `Err(reason)` when it could not run.
    times: Result<Vec<Duration>, String>,
    /// Work done per run (tasks, solutions, items) for the throughput column.
    work: f64,
    unit: &'static str,
    note: String,
    verified: Option<bool>,
}

impl Row {
    fn new(workload: &str, size: impl ToString, implementation: &str, work: f64, unit: &'static str) -> Self {
        Row {
            workload: workload.into(),
            size: size.to_string(),
            implementation: implementation.into(),
            times: Err("not run".into()),
            work,
            unit,
            note: String::new(),
            verified: None,
        }
    }

    fn na(mut self, reason: impl ToString) -> Self {
        self.times = Err(reason.to_string());
        self
    }

    fn stats(&self) -> Option<(f64, f64, f64)> {
        let t = self.times.as_ref().ok()?;
        if t.is_empty() {
            return None;
        }
        let mut ms: Vec<f64> = t.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        ms.sort_by(|a, b| a.total_cmp(b));
        let median = if ms.len() % 2 == 1 { ms[ms.len() / 2] } else { (ms[ms.len() / 2 - 1] + ms[ms.len() / 2]) / 2.0 };
        Some((median, ms[0], ms[ms.len() - 1]))
    }

    fn throughput(&self) -> Option<f64> {
        self.stats().map(|(median, _, _)| self.work / (median / 1e3))
    }
}

/// NVRTC compile times of one program: cold (empty cache) and cached.
#[derive(Clone, Debug)]
struct CompileRow {
    program: String,
    arch: String,
    nvrtc: String,
    cold_ms: Result<f64, String>,
    cached_ms: Option<f64>,
    load_ms: Option<f64>,
    ptx_bytes: Option<usize>,
}

fn main() {
    let args = Args::parse();
    let mut report = Report::default();
    let wants = |w: &str| args.only.iter().any(|o| o.trim() == w);

    // The device, or why there is none.
    let config = Config::default().timeout(Some(Duration::from_secs(args.timeout_s)));
    let cache_dir = args.out.join(format!("ptx-cache-{}", std::process::id()));
    let device = CudaDevice::open(&config).map(|d| d.with_cache(PtxCache::at(&cache_dir)));
    let device_line = match &device {
        Ok(d) => d.description(),
        Err(e) => format!("no GPU: {e}"),
    };
    let threads = rayon::current_num_threads();
    println!("# gpu-cilk benchmark suite");
    println!("date:    {}", utc_now());
    println!("device:  {device_line}");
    println!("host:    {threads} rayon threads");
    println!(
        "sizes:   fib({}), queens({}), reps {} (median; {} warm-up)",
        args.fib, args.queens, args.reps, args.warmup
    );
    report.meta.push(("date".into(), utc_now()));
    report.meta.push(("device".into(), device_line.clone()));
    report.meta.push(("host_threads".into(), threads.to_string()));
    report.meta.push(("reps".into(), args.reps.to_string()));

    // Compile-time columns (NVRTC works without a GPU).
    let arch = match &device {
        Ok(d) => d.arch(),
        Err(_) => args.arch.parse::<Arch>().unwrap_or(Arch::new(9, 0)),
    };
    let programs = [
        ProgramSource::new("fib_levels", FIB_CU),
        ProgramSource::new("queens_prefix", QUEENS_CU),
        channel_program(),
        alloc_program(),
        queue_program(),
    ];
    for program in &programs {
        report.compiles.push(compile_times(&cache_dir, program, arch, device.as_ref().ok()));
    }
    print_compiles(&report.compiles);

    if wants("fib") {
        let rows = bench_fib(&args, device.as_ref());
        print_rows(&format!("fib({})", args.fib), &rows);
        report.rows.extend(rows);
    }
    if wants("queens") {
        let rows = bench_queens(&args, device.as_ref());
        print_rows(&format!("queens({})", args.queens), &rows);
        report.rows.extend(rows);
    }
    if wants("channel") {
        let rows = bench_channel(&args, device.as_ref());
        print_rows("channel reservation (enqueue/dequeue items/s)", &rows);
        report.rows.extend(rows);
    }

    if wants("alloc") || args.alloc {
        let rows = bench_alloc(&args, device.as_ref());
        print_rows("allocator (MilThreads and mixed sizes; allocations/s)", &rows);
        report.rows.extend(rows);
    }

    if wants("queue") || args.queue {
        let rows = bench_queue(&args, device.as_ref());
        print_rows("queues (Scogland & Feng patterns; successful enqueues+dequeues/s)", &rows);
        report.rows.extend(rows);
    }

    if let Err(e) = report.write(&args.out) {
        eprintln!("cannot write results under {}: {e}", args.out.display());
        std::process::exit(2);
    }
    let _ = std::fs::remove_dir_all(&cache_dir);
    println!("\nresults: {}/results.csv, {}/results.json", args.out.display(), args.out.display());
    if report.rows.iter().any(|r| r.verified == Some(false)) {
        eprintln!("WRONG RESULTS: see the rows marked WRONG above");
        std::process::exit(1);
    }
}

// ---------------------------------------------------------------------------------------------
// Measurement

/// Runs `f` `warmup` times unmeasured, then `reps` times measured. `f` returns its own time (so
/// setup can be excluded) and its result; every result must satisfy `check`.
fn measure<T>(
    warmup: usize,
    reps: usize,
    mut f: impl FnMut() -> Result<(Duration, T), String>,
    check: impl Fn(&T) -> Result<(), String>,
) -> (Result<Vec<Duration>, String>, Option<bool>) {
    let mut verified = true;
    let mut times = Vec::with_capacity(reps);
    for i in 0..warmup + reps {
        match f() {
            Ok((t, v)) => {
                if let Err(e) = check(&v) {
                    eprintln!("verification failed: {e}");
                    verified = false;
                }
                if i >= warmup {
                    times.push(t);
                }
            }
            Err(e) => return (Err(e), None),
        }
    }
    (Ok(times), Some(verified))
}

fn timed<T>(f: impl FnOnce() -> T) -> (Duration, T) {
    let start = Instant::now();
    let v = f();
    (start.elapsed(), v)
}

// ---------------------------------------------------------------------------------------------
// The gpu-cilk columns: the `#[gpu_cilk]` workloads of `examples/workloads/` on the runtime's
// `cpu` and `cuda` backends (a backend that cannot run shows `n/a: <reason>`).

#[path = "../examples/workloads/fib.rs"]
mod fib_workload;
// The workload is written in the supported subset (index loops), not in idiomatic Rust.
#[allow(clippy::needless_range_loop)]
#[path = "../examples/workloads/queens.rs"]
mod queens_workload;

/// Rows for one gpu-cilk runtime (`rt`, or why it could not be built) on `workload`.
fn gpu_cilk_columns(rt: Result<&Runtime, String>, backend: &str, workload: &str, args: &Args) -> Vec<Row> {
    match workload {
        "fib" => {
            let n = args.fib;
            let want = fib_exact(n);
            vec![run_cilk(
                rt,
                args,
                "fib",
                n,
                &format!("gpu-cilk {backend}"),
                fib_workload::fib::task(n),
                want,
                fib_calls(n) as f64,
                "calls/s",
            )]
        }
        "queens" => {
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
        _ => Vec::new(),
    }
}

/// Measures `call` on `rt` like every other column, verifying each result against `want`.
#[allow(clippy::too_many_arguments)]
fn run_cilk<T>(
    rt: Result<&Runtime, String>,
    args: &Args,
    workload: &str,
    size: u32,
    name: &str,
    call: gpu_cilk::runtime::Call<T>,
    want: T::Output,
    work: f64,
    unit: &'static str,
) -> Row
where
    T: gpu_cilk::runtime::CilkTask,
    T::Output: PartialEq + std::fmt::Debug,
{
    let mut row = Row::new(workload, size, name, work, unit);
    let rt = match rt {
        Ok(rt) => rt,
        Err(e) => return row.na(format!("n/a: {e}")),
    };
    row.note = rt.device_description();
    (row.times, row.verified) = measure(
        args.warmup,
        args.reps,
        || {
            let (t, r) = timed(|| rt.run(call));
            r.map(|v| (t, v)).map_err(|e| format!("n/a: {e}"))
        },
        |v| if *v == want { Ok(()) } else { Err(format!("{workload}({size}) = {v:?}, expected {want:?}")) },
    );
    row
}

fn gpu_cilk_rows(workload: &str, args: &Args) -> Vec<Row> {
    let mut rows = Vec::new();
    for kind in [BackendKind::Cpu, BackendKind::Cuda] {
        let config = Config::from_env().map(|c| c.backend(kind).timeout(Some(Duration::from_secs(args.timeout_s))));
        let rt = config.and_then(Runtime::with_config).map_err(|e| e.to_string());
        rows.extend(gpu_cilk_columns(rt.as_ref().map_err(|e| e.clone()), kind.name(), workload, args));
    }
    rows
}

// ---------------------------------------------------------------------------------------------
// fib

fn fib_serial(n: u32) -> u64 {
    if n < 2 {
        return n as u64;
    }
    fib_serial(n - 1) + fib_serial(n - 2)
}

fn fib_rayon(n: u32, cutoff: u32) -> u64 {
    if n < cutoff.max(2) {
        return fib_serial(n);
    }
    let (a, b) = rayon::join(|| fib_rayon(n - 1, cutoff), || fib_rayon(n - 2, cutoff));
    a + b
}

/// fib(n) iteratively (the oracle for large n).
fn fib_exact(n: u32) -> u64 {
    let (mut a, mut b) = (0u64, 1u64);
    for _ in 0..n {
        (a, b) = (b, a.wrapping_add(b));
    }
    a
}

/// Calls in fib(n)'s recursion tree: 2·fib(n+1) − 1.
fn fib_calls(n: u32) -> u64 {
    2 * fib_exact(n + 1) - 1
}

fn bench_fib(args: &Args, device: Result<&CudaDevice, &gpu_cilk::Error>) -> Vec<Row> {
    let n = args.fib;
    let calls = fib_calls(n) as f64;
    let want = fib_exact(n);
    let check = |v: &u64| if *v == want { Ok(()) } else { Err(format!("fib({n}) = {v}, expected {want}")) };
    let mut rows = Vec::new();

    if !args.gpu_only {
        let mut row = Row::new("fib", n, "serial Rust", calls, "calls/s");
        (row.times, row.verified) = measure(args.warmup, args.reps, || Ok(timed(|| fib_serial(black_box(n)))), check);
        rows.push(row);
        let mut row = Row::new("fib", n, "rayon", calls, "calls/s");
        row.note = format!("join, serial below n={}", args.fib_cutoff);
        (row.times, row.verified) =
            measure(args.warmup, args.reps, || Ok(timed(|| fib_rayon(black_box(n), args.fib_cutoff))), check);
        rows.push(row);
    }

    for tree in [false, true] {
        let name = if tree { "CUDA levels down+up" } else { "CUDA levels down" };
        let mut row = Row::new("fib", n, name, calls, "calls/s");
        row.note = if tree {
            "per level: warp-aggregated append; then per-level up-sweep of child results".into()
        } else {
            "per level: warp-aggregated append, leaf values summed per warp".into()
        };
        match device {
            Err(e) => row = row.na(format!("n/a: {e}")),
            Ok(dev) => match FibGpu::new(dev, n) {
                Err(e) => row = row.na(format!("n/a: {e}")),
                Ok(mut g) => {
                    (row.times, row.verified) = measure(
                        args.warmup,
                        args.reps,
                        || g.run(tree).map_err(|e| e.to_string()),
                        |(v, nodes): &(u64, u64)| {
                            check(v)?;
                            if *nodes != fib_calls(n) {
                                return Err(format!("fib({n}) tree had {nodes} nodes, expected {}", fib_calls(n)));
                            }
                            Ok(())
                        },
                    );
                }
            },
        }
        rows.push(row);
    }
    rows.extend(gpu_cilk_rows("fib", args));
    rows
}

#[repr(C)]
#[derive(Clone, Copy)]
struct FibParams {
    vals: DevicePtr<u32>,
    first_child: DevicePtr<u32>,
    result: DevicePtr<u64>,
    leaf_sum: DevicePtr<u64>,
    next_free: DevicePtr<u32>,
    overflow: DevicePtr<u32>,
    level_start: u32,
    level_count: u32,
    capacity: u32,
    record_tree: u32,
}
// SAFETY: repr(C) POD mirroring `struct FibParams` in cuda/fib_levels.cu field for field.
unsafe impl DeviceCopy for FibParams {}

struct FibGpu<'d> {
    dev: &'d CudaDevice,
    down: Kernel<FibParams>,
    up: Kernel<FibParams>,
    n: u32,
    vals: cuda::DeviceBuffer<u32>,
    first_child: cuda::DeviceBuffer<u32>,
    result: cuda::DeviceBuffer<u64>,
    leaf_sum: cuda::DeviceBuffer<u64>,
    /// [next_free, overflow]
    counters: cuda::DeviceBuffer<u32>,
    capacity: u32,
}

impl<'d> FibGpu<'d> {
    fn new(dev: &'d CudaDevice, n: u32) -> gpu_cilk::runtime::Result<Self> {
        let program = dev.load_program(&ProgramSource::new("fib_levels", FIB_CU))?;
        // SAFETY: both kernels take one `FibParams` (layout mirrored above); `run` passes
        // buffers of `capacity` nodes and the kernels check every append against it.
        let (down, up) = unsafe { (program.kernel("fib_down")?, program.kernel("fib_up")?) };
        let total = fib_calls(n);
        let capacity = u32::try_from(total).map_err(|_| {
            gpu_cilk::Error::Config(format!("fib({n}) has {total} calls, more than this peer's u32 arena"))
        })?;
        let cap = capacity as usize;
        Ok(FibGpu {
            dev,
            down,
            up,
            n,
            vals: dev.alloc_zeroed(cap)?,
            first_child: dev.alloc_zeroed(cap)?,
            result: dev.alloc_zeroed(cap)?,
            leaf_sum: dev.alloc_zeroed(1)?,
            counters: dev.alloc_zeroed(2)?,
            capacity,
        })
    }

    /// One run: fib(n) and the number of nodes the tree had. Timed from uploading the root to
    /// reading the result (the arena is allocated once, in `new`). One 8-byte read-back per level
    /// tells the host the next level's size.
    fn run(&mut self, tree: bool) -> gpu_cilk::runtime::Result<(Duration, (u64, u64))> {
        let dev = self.dev;
        dev.sync()?;
        let start = Instant::now();
        dev.copy_htod(&[self.n], &mut self.vals)?;
        dev.copy_htod(&[0u64], &mut self.leaf_sum)?;
        dev.copy_htod(&[1u32, 0u32], &mut self.counters)?; // next_free = 1 (the root), overflow = 0
        let counters = self.counters.ptr();
        let mut p = FibParams {
            vals: self.vals.ptr(),
            first_child: self.first_child.ptr(),
            result: self.result.ptr(),
            leaf_sum: self.leaf_sum.ptr(),
            next_free: counters,
            overflow: counters.offset(1),
            level_start: 0,
            level_count: 1,
            capacity: self.capacity,
            record_tree: tree as u32,
        };
        let mut levels = Vec::new();
        let mut host = [0u32; 2];
        while p.level_count > 0 {
            self.down.launch(LaunchDims::cover(p.level_count as usize, 256), &p)?;
            levels.push((p.level_start, p.level_count));
            dev.dtoh_into(&self.counters, &mut host)?;
            if host[1] != 0 {
                return Err(gpu_cilk::Error::Internal(format!("fib arena of {} nodes overflowed", self.capacity)));
            }
            p.level_start += p.level_count;
            p.level_count = host[0] - p.level_start;
        }
        let nodes = p.level_start as u64;
        let mut value = [0u64; 1];
        if tree {
            for &(s, c) in levels.iter().rev() {
                p.level_start = s;
                p.level_count = c;
                self.up.launch(LaunchDims::cover(c as usize, 256), &p)?;
            }
            dev.dtoh_into(&self.result, &mut value)?;
        } else {
            dev.dtoh_into(&self.leaf_sum, &mut value)?;
        }
        Ok((start.elapsed(), (value[0], nodes)))
    }
}

// ---------------------------------------------------------------------------------------------
// N-queens

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

fn bench_queens(args: &Args, device: Result<&CudaDevice, &gpu_cilk::Error>) -> Vec<Row> {
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
                let program = dev.load_program(&ProgramSource::new("queens_prefix", QUEENS_CU))?;
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
    rows.extend(gpu_cilk_rows("queens", args));
    rows
}

// ---------------------------------------------------------------------------------------------
// Channel reservation microbenchmark

#[repr(C)]
#[derive(Clone, Copy)]
struct ChanParams {
    slots: DevicePtr<u32>,
    tail: DevicePtr<u64>,
    head: DevicePtr<u64>,
    checksum: DevicePtr<u64>,
    capacity: u64,
    items_per_thread: u32,
    pad: u32,
    ch: DevicePtr<GcChannel>,
}
// SAFETY: repr(C) POD mirroring `struct ChanParams` in cuda/channel_bench.cu.
unsafe impl DeviceCopy for ChanParams {}

/// `gc_channel<unsigned>` of kernels/include/gpu_cilk/channel.cuh: eight 8-byte fields.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct GcChannel {
    data: u64,
    control: u64,
    mask: u64,
    reserved: u64,
    published: u64,
    claimed: u64,
    freed: u64,
    violation: u64,
}
// SAFETY: repr(C) POD of eight u64, mirroring `gc_channel<T>` (static_assert'ed 64 bytes there).
unsafe impl DeviceCopy for GcChannel {}

fn bench_channel(args: &Args, device: Result<&CudaDevice, &gpu_cilk::Error>) -> Vec<Row> {
    let dev = match device {
        Ok(d) => d,
        Err(e) => return vec![Row::new("channel", "-", "FAA / CAS", 0.0, "items/s").na(format!("n/a: {e}"))],
    };
    let result = (|| -> gpu_cilk::runtime::Result<Vec<Row>> {
        let program = dev.load_program(&channel_program())?;
        // SAFETY: all six take one `ChanParams`; every slot access of faa_/cas_ is checked against
        // `capacity`, the length of `slots`; the counters are one u64 each; gc_* use the channel
        // `ch`, whose data and control arrays hold `capacity` (a power of two) slots.
        let kernels: Vec<(&str, Kernel<ChanParams>)> = unsafe {
            vec![
                ("faa_enqueue", program.kernel("faa_enqueue")?),
                ("faa_dequeue", program.kernel("faa_dequeue")?),
                ("cas_enqueue", program.kernel("cas_enqueue")?),
                ("cas_dequeue", program.kernel("cas_dequeue")?),
                ("gc_enqueue", program.kernel("gc_enqueue")?),
                ("gc_dequeue", program.kernel("gc_dequeue")?),
            ]
        };
        let block = 256u32;
        let per_sm = kernels[0].1.max_active_blocks_per_sm(block, 0)?.max(1);
        let full_warps = dev.info().multiprocessors * per_sm * (block / 32);
        let mut warps: Vec<u32> = vec![1, 4, 16, 64, 256, 1024, 4096];
        warps.retain(|&w| w < full_warps);
        warps.push(full_warps);
        let max_items = (full_warps as u64 * 32 * args.channel_items.max(args.cas_items) as u64).next_power_of_two();
        let slots = dev.alloc_zeroed::<u32>(max_items as usize)?;
        let mut control = dev.alloc_zeroed::<u64>(max_items as usize)?;
        let mut channel = dev.alloc_zeroed::<GcChannel>(1)?;
        let empty_channel = GcChannel {
            data: slots.ptr().addr(),
            control: control.ptr().addr(),
            mask: max_items - 1,
            ..Default::default()
        };
        let mut counters = dev.alloc_zeroed::<u64>(3)?; // tail, head, checksum
        let mut rows = Vec::new();
        for &w in &warps {
            let dims =
                if w * 32 <= block { LaunchDims::linear(1, w * 32) } else { LaunchDims::linear(w * 32 / block, block) };
            let threads = dims.threads();
            for (kind, items) in [("FAA", args.channel_items), ("CAS", args.cas_items)] {
                let total_items = threads * items as u64;
                let (enq, deq) =
                    if kind == "FAA" { (&kernels[0].1, &kernels[1].1) } else { (&kernels[2].1, &kernels[3].1) };
                let c = counters.ptr();
                let p = ChanParams {
                    slots: slots.ptr(),
                    tail: c,
                    head: c.offset(1),
                    checksum: c.offset(2),
                    capacity: max_items,
                    items_per_thread: items,
                    pad: 0,
                    ch: channel.ptr(),
                };
                let expect_sum = total_items * (total_items + 1) / 2;
                let mut enq_t = Vec::new();
                let mut deq_t = Vec::new();
                let mut ok = true;
                for rep in 0..args.warmup + args.reps {
                    dev.copy_htod(&[0u64, 0, 0], &mut counters)?;
                    dev.zero(&mut control)?;
                    dev.copy_htod(&[empty_channel], &mut channel)?;
                    dev.sync()?;
                    let (te, r) = timed(|| -> gpu_cilk::runtime::Result<()> {
                        enq.launch(dims, &p)?;
                        dev.sync()
                    });
                    r?;
                    let (td, r) = timed(|| -> gpu_cilk::runtime::Result<()> {
                        deq.launch(dims, &p)?;
                        dev.sync()
                    });
                    r?;
                    let mut host = dev.dtoh(&counters)?;
                    if kind == "gpu-cilk channel" {
                        let ch = dev.dtoh(&channel)?[0];
                        if ch.violation != 0 || ch.reserved != ch.published || ch.claimed != ch.freed {
                            eprintln!("gpu-cilk channel with {w} warps: protocol state {ch:?}");
                            ok = false;
                        }
                        (host[0], host[1]) = (ch.published, ch.freed);
                    }
                    if host[0] != total_items || host[1] != total_items || host[2] != expect_sum {
                        eprintln!(
                            "channel {kind} with {w} warps: tail {} head {} checksum {}, expected {total_items}, {total_items}, {expect_sum}",
                            host[0], host[1], host[2]
                        );
                        ok = false;
                    }
                    if rep >= args.warmup {
                        enq_t.push(te);
                        deq_t.push(td);
                    }
                }
                for (phase, times) in [("enqueue", enq_t), ("dequeue", deq_t)] {
                    let mut row = Row::new(
                        "channel",
                        format!("{w} warps"),
                        &format!("{kind} {phase}"),
                        total_items as f64,
                        "items/s",
                    );
                    row.note = format!("{items} items/thread, {} threads", threads);
                    row.times = Ok(times);
                    row.verified = Some(ok);
                    rows.push(row);
                }
            }
        }
        Ok(rows)
    })();
    result.unwrap_or_else(|e| vec![Row::new("channel", "-", "FAA / CAS", 0.0, "items/s").na(format!("n/a: {e}"))])
}

// ---------------------------------------------------------------------------------------------
// Allocator benchmark (cuda/alloc_bench.cu): the paper's MilThreads and a mixed-size variant,
// gpu-cilk's warp-coalesced xmalloc vs CUDA's device malloc/free, 1..32 active lanes per warp.

#[repr(C)]
#[derive(Clone, Copy)]
struct AllocParams {
    heap: DevicePtr<u64>,
    region: DevicePtr<u64>,
    bytes: u64,
    counters: DevicePtr<u64>,
    n: u64,
    lanes: u32,
    mixed: u32,
}
// SAFETY: repr(C) POD mirroring `struct AllocParams` in cuda/alloc_bench.cu.
unsafe impl DeviceCopy for AllocParams {}

/// Sets CUDA's device malloc heap (`cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE)`) on the calling
/// thread's current context and returns what the driver reports afterwards. cudarc's `sys` is not
/// reachable from this crate (the runtime does not re-export it), so the symbol is looked up in the
/// already loaded libcuda.
fn set_malloc_heap(bytes: usize) -> Result<usize, String> {
    use std::ffi::{c_char, c_int, c_void};
    extern "C" {
        fn dlopen(name: *const c_char, flags: c_int) -> *mut c_void;
        fn dlsym(handle: *mut c_void, symbol: *const c_char) -> *mut c_void;
    }
    type SetLimit = unsafe extern "C" fn(c_int, usize) -> c_int;
    type GetLimit = unsafe extern "C" fn(*mut usize, c_int) -> c_int;
    const CU_LIMIT_MALLOC_HEAP_SIZE: c_int = 2;
    const RTLD_NOW: c_int = 2;
    // SAFETY: dlopen/dlsym with NUL-terminated names; the symbols, when found, are the driver
    // API's `CUresult cuCtxSetLimit(CUlimit, size_t)` / `cuCtxGetLimit(size_t*, CUlimit)`, called
    // with a valid limit and a valid out pointer.
    unsafe {
        let lib = dlopen(c"libcuda.so.1".as_ptr(), RTLD_NOW);
        if lib.is_null() {
            return Err("cannot dlopen libcuda.so.1".into());
        }
        let (set, get) = (dlsym(lib, c"cuCtxSetLimit".as_ptr()), dlsym(lib, c"cuCtxGetLimit".as_ptr()));
        if set.is_null() || get.is_null() {
            return Err("cuCtxSetLimit/cuCtxGetLimit not found in libcuda".into());
        }
        let set: SetLimit = std::mem::transmute::<*mut c_void, SetLimit>(set);
        let get: GetLimit = std::mem::transmute::<*mut c_void, GetLimit>(get);
        let rc = set(CU_LIMIT_MALLOC_HEAP_SIZE, bytes);
        let mut now = 0usize;
        let rc2 = get(&mut now, CU_LIMIT_MALLOC_HEAP_SIZE);
        if rc != 0 || rc2 != 0 {
            return Err(format!("cuCtxSetLimit(MALLOC_HEAP_SIZE) = {rc}, cuCtxGetLimit = {rc2}"));
        }
        Ok(now)
    }
}

fn bench_alloc(args: &Args, device: Result<&CudaDevice, &gpu_cilk::Error>) -> Vec<Row> {
    let na = |e: String| vec![Row::new("alloc", "-", "xmalloc / CUDA malloc", 0.0, "allocs/s").na(format!("n/a: {e}"))];
    let dev = match device {
        Ok(d) => d,
        Err(e) => return na(e.to_string()),
    };
    let result = (|| -> gpu_cilk::runtime::Result<Vec<Row>> {
        let program = dev.load_program(&alloc_program())?;
        // SAFETY: all three take one `AllocParams`; heap is a 960-byte gc_xheap buffer, region
        // `bytes` long, counters 3 u64; threads past `n` or past `lanes` in their warp return.
        let (init, xm, cm) = unsafe {
            (
                program.kernel::<AllocParams>("ab_init")?,
                program.kernel::<AllocParams>("ab_xmalloc")?,
                program.kernel::<AllocParams>("ab_malloc")?,
            )
        };
        let heap_note = match set_malloc_heap(args.malloc_heap_mb << 20) {
            Ok(b) => format!("CUDA malloc heap {} MiB", b >> 20),
            Err(e) => format!("CUDA malloc heap not set ({e}); default 8 MiB"),
        };
        println!("alloc:   {heap_note}");
        let bytes = 256u64 << 20;
        let heap = dev.alloc_zeroed::<u64>(120)?;
        let region = dev.alloc_zeroed::<u64>((bytes / 8) as usize)?;
        let mut counters = dev.alloc_zeroed::<u64>(3)?;
        let n = args.alloc_n;
        let mut rows = Vec::new();
        for (variant, mixed) in [("MilThreads 8 B", 0u32), ("mixed 8-128 B", 1)] {
            let base = AllocParams {
                heap: heap.ptr(),
                region: region.ptr(),
                bytes,
                counters: counters.ptr(),
                n,
                lanes: 32,
                mixed,
            };
            init.launch(LaunchDims::cover(4096, 256), &base)?;
            dev.sync()?;
            for lanes in [1u32, 2, 4, 8, 16, 32] {
                let p = AllocParams { lanes, ..base };
                let threads = n.div_ceil(u64::from(lanes)) * 32;
                let dims = LaunchDims::cover(threads as usize, 256);
                let mut pair = Vec::new();
                for (name, k) in [("xmalloc", &xm), ("CUDA malloc", &cm)] {
                    let mut nulls = 0;
                    let (times, verified) = measure(
                        args.warmup,
                        args.reps,
                        || {
                            dev.copy_htod(&[0u64, 0, 0], &mut counters).map_err(|e| e.to_string())?;
                            dev.sync().map_err(|e| e.to_string())?;
                            let (t, r) = timed(|| -> gpu_cilk::runtime::Result<()> {
                                k.launch(dims, &p)?;
                                dev.sync()
                            });
                            r.map_err(|e| e.to_string())?;
                            Ok((t, dev.dtoh(&counters).map_err(|e| e.to_string())?))
                        },
                        |c: &Vec<u64>| {
                            if c[2] != 0 || c[0] + c[1] != n {
                                return Err(format!("{name} {variant} {lanes} lanes: counters {c:?}, n {n}"));
                            }
                            Ok(())
                        },
                    );
                    if let Ok(c) = dev.dtoh(&counters) {
                        nulls = c[0];
                    }
                    let mut row = Row::new("alloc", format!("{variant}, {lanes} lanes"), name, n as f64, "allocs/s");
                    row.note = format!("{threads} threads launched; {nulls} nulls");
                    if name == "xmalloc" && nulls != 0 {
                        row.note.push_str(" (WRONG: the 256 MiB heap suffices)");
                    }
                    row.times = times;
                    row.verified = verified.map(|v| v && (name != "xmalloc" || nulls == 0));
                    pair.push(row);
                }
                if let (Some(x), Some(c)) = (pair[0].throughput(), pair[1].throughput()) {
                    let note = format!("; speedup over CUDA malloc {:.1}x", x / c);
                    pair[0].note.push_str(&note);
                }
                pair[1].note.push_str(&format!("; {heap_note}"));
                rows.extend(pair);
            }
        }
        Ok(rows)
    })();
    result.unwrap_or_else(|e| na(e.to_string()))
}

// ---------------------------------------------------------------------------------------------
// Queue benchmark: the ticket queue (gpu_cilk/ticket_queue.cuh) against a contended-CAS array queue

#[repr(C)]
#[derive(Clone, Copy)]
struct QueueBenchParams {
    tq: DevicePtr<GcTq>,
    cas_slots: DevicePtr<u64>,
    cas_seq: DevicePtr<u64>,
    cas_counters: DevicePtr<u64>,
    ops: DevicePtr<u64>,
    checksum: DevicePtr<u64>,
    cas_capacity: u64,
    items: u32,
    mode: u32,
}
// SAFETY: repr(C) POD mirroring `struct QueueBenchParams` in cuda/queue_bench.cu.
unsafe impl DeviceCopy for QueueBenchParams {}

/// `gc_tq<T>` of kernels/include/gpu_cilk/ticket_queue.cuh: 48 8-byte words.
#[repr(C)]
#[derive(Clone, Copy)]
struct GcTq {
    data: u64,
    turns: u64,
    mask: u64,
    closed: u64,
    pad0: [u64; 12],
    tail: u64,
    pad1: [u64; 15],
    head: u64,
    pad2: [u64; 15],
}
// SAFETY: repr(C) POD of 48 u64, mirroring `gc_tq<T>` (static_assert'ed 384 bytes there).
unsafe impl DeviceCopy for GcTq {}

/// `qb_value` of cuda/queue_bench.cu.
fn queue_value(gtid: u64, k: u64) -> u64 {
    (gtid << 20) + k + 1
}

fn bench_queue(args: &Args, device: Result<&CudaDevice, &gpu_cilk::Error>) -> Vec<Row> {
    let na =
        |e: &dyn std::fmt::Display| vec![Row::new("queue", "-", "ticket / CAS", 0.0, "ops/s").na(format!("n/a: {e}"))];
    let dev = match device {
        Ok(d) => d,
        Err(e) => return na(e),
    };
    let result = (|| -> gpu_cilk::runtime::Result<Vec<Row>> {
        let program = dev.load_program(&queue_program())?;
        // SAFETY: all four take one `QueueBenchParams`; tq_* touch the queue header, its `capacity`
        // turn words and elements; cas_* touch `cas_capacity` slots and sequence words and the two
        // counters at [0] and [32] of a 64-word buffer; both add to the two result counters.
        let (tq_matched, tq_prodcons, cas_matched, cas_prodcons): (
            Kernel<QueueBenchParams>,
            Kernel<QueueBenchParams>,
            Kernel<QueueBenchParams>,
            Kernel<QueueBenchParams>,
        ) = unsafe {
            (
                program.kernel("tq_matched")?,
                program.kernel("tq_prodcons")?,
                program.kernel("cas_matched")?,
                program.kernel("cas_prodcons")?,
            )
        };
        // Blocking queues need every thread resident: the fewest resident blocks of any kernel.
        let block = 256u32;
        let mut per_sm = u32::MAX;
        for k in [&tq_matched, &tq_prodcons, &cas_matched, &cas_prodcons] {
            per_sm = per_sm.min(k.max_active_blocks_per_sm(block, 0)?);
        }
        let full_warps = dev.info().multiprocessors * per_sm.max(1) * (block / 32);
        let mut warps: Vec<u32> =
            std::iter::successors(Some(1u32), |w| Some(w * 2)).take_while(|&w| w < full_warps).collect();
        warps.push(full_warps);

        let cap = args.queue_capacity.max(2).next_power_of_two();
        let tq_data = dev.alloc_zeroed::<u64>(cap as usize)?;
        let mut tq_turns = dev.alloc_zeroed::<u64>(cap as usize)?;
        let empty_tq = GcTq {
            data: tq_data.ptr().addr(),
            turns: tq_turns.ptr().addr(),
            mask: cap - 1,
            closed: 0,
            pad0: [0; 12],
            tail: 0,
            pad1: [0; 15],
            head: 0,
            pad2: [0; 15],
        };
        let mut tq = dev.htod(&[empty_tq])?;
        let cas_slots = dev.alloc_zeroed::<u64>(cap as usize)?;
        let seq0: Vec<u64> = (0..cap).collect();
        let mut cas_seq = dev.htod(&seq0)?;
        let mut cas_counters = dev.alloc_zeroed::<u64>(64)?;
        let mut results = dev.alloc_zeroed::<u64>(2)?; // ops, checksum

        let mut rows = Vec::new();
        for pattern in ["matched", "1 producer : 3 consumers"] {
            for &w in &warps {
                let dims = if w * 32 <= block {
                    LaunchDims::linear(1, w * 32)
                } else {
                    LaunchDims::linear(w * 32 / block, block)
                };
                let threads = dims.threads();
                let mut tq_rate = None;
                let impls: [(&str, u32, u32); 4] = [
                    ("ticket, warp-aggregated", 0, args.queue_items),
                    ("ticket, per-lane FAA", 1, args.queue_items),
                    ("ticket, non-waiting", 2, args.queue_try_items),
                    ("CAS array queue", 0, args.queue_cas_items),
                ];
                for (name, mode, items) in impls {
                    let cas = name.starts_with("CAS");
                    let kernel = match (pattern == "matched", cas) {
                        (true, false) => &tq_matched,
                        (false, false) => &tq_prodcons,
                        (true, true) => &cas_matched,
                        (false, true) => &cas_prodcons,
                    };
                    let items = items.max(1);
                    // Expected successful operations and checksum.
                    let (ops, sum) = if pattern == "matched" {
                        let sum: u64 =
                            (0..threads).map(|g| (0..items as u64).map(|k| queue_value(g, k)).sum::<u64>()).sum();
                        (2 * threads * items as u64, sum)
                    } else {
                        let producers: Vec<u64> = (0..threads).filter(|g| g % 4 == 0).collect();
                        let consumers = threads - producers.len() as u64;
                        let sum: u64 = producers
                            .iter()
                            .map(|&g| (0..3 * items as u64).map(|k| queue_value(g, k)).sum::<u64>())
                            .sum();
                        // Only a whole number of 4-thread groups balances (threads is a multiple of 32).
                        (2 * consumers * items as u64, sum)
                    };
                    let p = QueueBenchParams {
                        tq: tq.ptr(),
                        cas_slots: cas_slots.ptr(),
                        cas_seq: cas_seq.ptr(),
                        cas_counters: cas_counters.ptr(),
                        ops: results.ptr(),
                        checksum: results.ptr().offset(1),
                        cas_capacity: cap,
                        items,
                        mode,
                    };
                    let mut times = Vec::new();
                    let mut ok = true;
                    for rep in 0..args.warmup + args.reps {
                        if cas {
                            dev.copy_htod(&seq0, &mut cas_seq)?;
                            dev.zero(&mut cas_counters)?;
                        } else {
                            dev.zero(&mut tq_turns)?;
                            dev.copy_htod(&[empty_tq], &mut tq)?;
                        }
                        dev.zero(&mut results)?;
                        dev.sync()?;
                        let (t, r) = timed(|| -> gpu_cilk::runtime::Result<()> {
                            kernel.launch(dims, &p)?;
                            dev.sync()
                        });
                        r?;
                        let got = dev.dtoh(&results)?;
                        if got[0] != ops || got[1] != sum {
                            eprintln!(
                                "queue {name} {pattern} with {w} warps: ops {} checksum {}, expected {ops}, {sum}",
                                got[0], got[1]
                            );
                            ok = false;
                        }
                        if rep >= args.warmup {
                            times.push(t);
                        }
                    }
                    let mut row = Row::new("queue", format!("{w} warps"), name, ops as f64, "ops/s");
                    row.times = Ok(times);
                    row.verified = Some(ok);
                    row.note = format!("{pattern}; {items} items/thread, {threads} threads, capacity {cap}");
                    let rate = row.throughput();
                    if mode == 0 && !cas {
                        tq_rate = rate;
                    }
                    if let (true, Some(ticket), Some(c)) = (cas, tq_rate, rate) {
                        row.note.push_str(&format!("; warp-aggregated ticket queue = {:.1}x this", ticket / c));
                    }
                    rows.push(row);
                }
            }
        }
        Ok(rows)
    })();
    result.unwrap_or_else(|e| na(&e))
}

// ---------------------------------------------------------------------------------------------
// NVRTC compile times

fn compile_times(
    cache_root: &std::path::Path,
    program: &ProgramSource,
    arch: Arch,
    dev: Option<&CudaDevice>,
) -> CompileRow {
    let name = program.name.as_str();
    let mut row = CompileRow {
        program: name.into(),
        arch: arch.to_string(),
        nvrtc: cuda::nvrtc_version().map(|(a, b)| format!("{a}.{b}")).unwrap_or_else(|_| "n/a".into()),
        cold_ms: Err("not run".into()),
        cached_ms: None,
        load_ms: None,
        ptx_bytes: None,
    };
    // A fresh cache directory per program, so the first compile is cold.
    let cache = PtxCache::at(cache_root.join(format!("compile-{name}")));
    match cache.get_or_compile(program, arch) {
        Err(e) => row.cold_ms = Err(format!("n/a: {e}")),
        Ok(cold) => {
            row.cold_ms = Ok(cold.elapsed.as_secs_f64() * 1e3);
            row.ptx_bytes = Some(cold.ptx.len());
            if let Ok(hot) = cache.get_or_compile(program, arch) {
                row.cached_ms = Some(hot.elapsed.as_secs_f64() * 1e3);
            }
            if let Some(dev) = dev {
                match dev.load_ptx(name, &cold) {
                    Ok(p) => row.load_ms = Some(p.info().load_time.as_secs_f64() * 1e3),
                    Err(e) => eprintln!("loading {name}: {e}"),
                }
            }
        }
    }
    row
}

// ---------------------------------------------------------------------------------------------
// Output

fn fmt_ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

fn fmt_rate(v: f64) -> String {
    match v {
        v if v >= 1e9 => format!("{:.2} G", v / 1e9),
        v if v >= 1e6 => format!("{:.2} M", v / 1e6),
        v if v >= 1e3 => format!("{:.2} k", v / 1e3),
        v => format!("{v:.1} "),
    }
}

fn print_compiles(rows: &[CompileRow]) {
    println!("\n## NVRTC compile (cold = empty cache, cached = disk-cache hit; load = cuModuleLoadData JIT)");
    println!(
        "{:<16} {:<7} {:<6} {:>10} {:>10} {:>9} {:>10}",
        "program", "arch", "nvrtc", "cold ms", "cached ms", "load ms", "PTX bytes"
    );
    for r in rows {
        let opt = |v: Option<f64>| v.map(fmt_ms).unwrap_or_else(|| "-".into());
        match &r.cold_ms {
            Ok(c) => println!(
                "{:<16} {:<7} {:<6} {:>10} {:>10} {:>9} {:>10}",
                r.program,
                r.arch,
                r.nvrtc,
                fmt_ms(*c),
                opt(r.cached_ms),
                opt(r.load_ms),
                r.ptx_bytes.map(|b| b.to_string()).unwrap_or_default()
            ),
            Err(e) => println!("{:<16} {:<7} {:<6} {e}", r.program, r.arch, r.nvrtc),
        }
    }
}

fn print_rows(title: &str, rows: &[Row]) {
    println!("\n## {title}");
    println!(
        "{:<12} {:<22} {:>10} {:>10} {:>10} {:>16} {:>9}  note",
        "size", "implementation", "median ms", "min ms", "max ms", "throughput", "vs serial"
    );
    for r in rows {
        let serial = rows
            .iter()
            .find(|s| s.implementation == "serial Rust" && s.size == r.size)
            .and_then(|s| s.stats())
            .map(|s| s.0);
        match (r.stats(), &r.times) {
            (Some((median, min, max)), _) => {
                let speedup = serial.map(|s| format!("{:.2}x", s / median)).unwrap_or_else(|| "-".into());
                let tp = r.throughput().map(|t| format!("{}{}", fmt_rate(t), r.unit)).unwrap_or_default();
                let mark = if r.verified == Some(false) { "WRONG " } else { "" };
                println!(
                    "{:<12} {:<22} {:>10} {:>10} {:>10} {:>16} {:>9}  {mark}{}",
                    r.size,
                    r.implementation,
                    fmt_ms(median),
                    fmt_ms(min),
                    fmt_ms(max),
                    tp,
                    speedup,
                    r.note
                );
            }
            (None, Err(reason)) => println!("{:<12} {:<22} {reason}", r.size, r.implementation),
            (None, Ok(_)) => println!("{:<12} {:<22} no measurements", r.size, r.implementation),
        }
    }
}

#[derive(Default)]
struct Report {
    meta: Vec<(String, String)>,
    compiles: Vec<CompileRow>,
    rows: Vec<Row>,
}

fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_num(v: Option<f64>) -> String {
    match v {
        Some(v) if v.is_finite() => format!("{v}"),
        _ => "null".into(),
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

impl Report {
    fn write(&self, dir: &std::path::Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let mut csv = String::from(
            "workload,size,implementation,reps,median_ms,min_ms,max_ms,throughput,unit,speedup_vs_serial,verified,note\n",
        );
        for r in &self.rows {
            let serial = self
                .rows
                .iter()
                .find(|s| s.workload == r.workload && s.size == r.size && s.implementation == "serial Rust")
                .and_then(|s| s.stats());
            let (median, min, max) = match r.stats() {
                Some((a, b, c)) => (format!("{a:.4}"), format!("{b:.4}"), format!("{c:.4}")),
                None => Default::default(),
            };
            let speedup = match (serial, r.stats()) {
                (Some(s), Some(m)) => format!("{:.3}", s.0 / m.0),
                _ => String::new(),
            };
            let note = match &r.times {
                Err(reason) => reason.clone(),
                Ok(_) => r.note.clone(),
            };
            let _ = writeln!(
                csv,
                "{},{},{},{},{median},{min},{max},{},{},{speedup},{},{}",
                csv_field(&r.workload),
                csv_field(&r.size),
                csv_field(&r.implementation),
                r.times.as_ref().map(|t| t.len()).unwrap_or(0),
                r.throughput().map(|t| format!("{t:.1}")).unwrap_or_default(),
                r.unit,
                r.verified.map(|v| v.to_string()).unwrap_or_default(),
                csv_field(&note)
            );
        }
        std::fs::write(dir.join("results.csv"), csv)?;

        let mut js = String::from("{\n  \"meta\": {");
        let meta: Vec<String> = self.meta.iter().map(|(k, v)| format!("{}: {}", json_str(k), json_str(v))).collect();
        js.push_str(&meta.join(", "));
        js.push_str("},\n  \"compile\": [\n");
        let compiles: Vec<String> = self
            .compiles
            .iter()
            .map(|c| {
                format!(
                    "    {{\"program\": {}, \"arch\": {}, \"nvrtc\": {}, \"cold_ms\": {}, \"cached_ms\": {}, \"load_ms\": {}, \"ptx_bytes\": {}, \"error\": {}}}",
                    json_str(&c.program),
                    json_str(&c.arch),
                    json_str(&c.nvrtc),
                    json_num(c.cold_ms.as_ref().ok().copied()),
                    json_num(c.cached_ms),
                    json_num(c.load_ms),
                    c.ptx_bytes.map(|b| b.to_string()).unwrap_or_else(|| "null".into()),
                    c.cold_ms.as_ref().err().map(|e| json_str(e)).unwrap_or_else(|| "null".into())
                )
            })
            .collect();
        js.push_str(&compiles.join(",\n"));
        js.push_str("\n  ],\n  \"results\": [\n");
        let rows: Vec<String> = self
            .rows
            .iter()
            .map(|r| {
                let st = r.stats();
                let times: Vec<String> = r
                    .times
                    .as_ref()
                    .map(|t| t.iter().map(|d| format!("{}", d.as_secs_f64() * 1e3)).collect())
                    .unwrap_or_default();
                format!(
                    "    {{\"workload\": {}, \"size\": {}, \"implementation\": {}, \"times_ms\": [{}], \"median_ms\": {}, \"min_ms\": {}, \"max_ms\": {}, \"throughput\": {}, \"unit\": {}, \"verified\": {}, \"note\": {}, \"unavailable\": {}}}",
                    json_str(&r.workload),
                    json_str(&r.size),
                    json_str(&r.implementation),
                    times.join(", "),
                    json_num(st.map(|s| s.0)),
                    json_num(st.map(|s| s.1)),
                    json_num(st.map(|s| s.2)),
                    json_num(r.throughput()),
                    json_str(r.unit),
                    r.verified.map(|v| v.to_string()).unwrap_or_else(|| "null".into()),
                    json_str(&r.note),
                    r.times.as_ref().err().map(|e| json_str(e)).unwrap_or_else(|| "null".into())
                )
            })
            .collect();
        js.push_str(&rows.join(",\n"));
        js.push_str("\n  ]\n}\n");
        std::fs::write(dir.join("results.json"), js)
    }
}

/// The current UTC time as `YYYY-MM-DD HH:MM:SS UTC` (civil-from-days, Howard Hinnant's method).
fn utc_now() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02} UTC", rem / 3600, rem % 3600 / 60, rem % 60)
}

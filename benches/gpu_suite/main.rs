//! gpu-cilk benchmark suite: fib and N-queens on serial Rust, rayon on all cores and hand-written
//! CUDA (the peers in `benches/cuda/`, compiled at run time with NVRTC through gpu-cilk's CUDA
//! plumbing), plus the channel-reservation microbenchmark (warp-aggregated fetch-and-add versus a
//! contended CAS loop), next to gpu-cilk's own `cpu` and `cuda` backends running the
//! `#[gpu_cilk]` workloads of `examples/workloads/` ([`common::gpu_cilk_rows`]).
//!
//! Runs without a GPU (CUDA columns print `n/a: <reason>`). Every time is the median of `--reps`
//! runs after `--warmup` unmeasured ones; CUDA results are verified (fib against the closed
//! count, queens against the known table), and a wrong answer makes the run exit non-zero.
//!
//! ```text
//! cargo bench --bench gpu_suite -- --fib 35 --queens 15 --reps 5 --out target/gpu-bench
//! scripts/gpu-bench.sh DIR_WITH_BINARY --fib 35 --queens 15   # on the GPU machine
//! ```
//!
//! Layout: this file holds the command line and the driver; [`common`] the rows, measurement,
//! gpu-cilk runtime columns, NVRTC compile times and the output files; one module per benchmark
//! ([`fib`], [`queens`], [`channel`], [`loopsync`], [`alloc`], [`queue`], [`heap`], [`sort`],
//! [`strassen`], [`deep`]) holds its peers, kernels' parameter mirrors and verification;
//! [`data`] holds what sort and strassen share (options, runtimes, the time plot), [`nvcc`] builds
//! the peers that need nvcc (CUB, cuBLAS). Device headers come from the `gpu-cilk-kernels` crate; device
//! structs shared with the runtime's GPU tests are mirrored once in the dev-only crate
//! `gpu-cilk-test-support` (`mirror`).

mod alloc;
mod channel;
mod common;
mod data;
mod deep;
mod fib;
mod heap;
mod loopsync;
mod nvcc;
mod queens;
mod queue;
mod sort;
mod strassen;

// The `#[gpu_cilk]` workloads of `examples/workloads/`, measured on the runtime's backends.
use gpu_cilk_examples::workloads::chain as chain_workload;
use gpu_cilk_examples::workloads::fib as fib_workload;
use gpu_cilk_examples::workloads::queens as queens_workload;
use gpu_cilk_examples::workloads::unbalanced as unbalanced_workload;

use clap::Parser;
use common::{compile_times, print_compiles, print_rows, utc_now, Report};
use gpu_cilk::runtime::backend::cuda::{Arch, CudaDevice, PtxCache};
use gpu_cilk::Config;
use std::path::PathBuf;
use std::time::Duration;

/// The command line (`gpu_suite --help`).
#[derive(Parser, Debug, Clone)]
#[command(about = "gpu-cilk benchmark suite: serial / rayon / hand-written CUDA (fib, queens, channel)")]
pub(crate) struct Args {
    /// fib(n) size.
    #[arg(long, default_value_t = 35)]
    pub(crate) fib: u32,
    /// N-queens board size (<= 20).
    #[arg(long, default_value_t = 15)]
    pub(crate) queens: u32,
    /// Measured repetitions (the median is reported).
    #[arg(long, default_value_t = 5)]
    pub(crate) reps: usize,
    /// Unmeasured warm-up runs before the measured ones.
    #[arg(long, default_value_t = 1)]
    pub(crate) warmup: usize,
    /// Output directory for results.csv and results.json.
    #[arg(long, default_value = "target/gpu-bench")]
    pub(crate) out: PathBuf,
    /// Workloads to run (comma-separated): fib, queens, channel, loopsync, alloc, queue, heap,
    /// sort, strassen, chain, unbalanced, fib40 (fib at n = 40 whatever --fib says).
    #[arg(long, default_value = "fib,queens,channel,loopsync", value_delimiter = ',')]
    pub(crate) only: Vec<String>,
    /// Deep chain (`--only chain`): depths to run (one spawn per level).
    #[arg(long, default_value = "10000,1000000", value_delimiter = ',')]
    pub(crate) chain: Vec<u32>,
    /// Deep chain: run the levels scheduler only up to this depth (one launch per level).
    #[arg(long, default_value_t = 20_000)]
    pub(crate) chain_levels_max: u32,
    /// Deep chain: the rayon peer joins at every level above this depth, serially below.
    #[arg(long, default_value_t = 0)]
    pub(crate) chain_cutoff: u32,
    /// Unbalanced tree (`--only unbalanced`): the hash seed.
    #[arg(long, default_value_t = 42)]
    pub(crate) uts_seed: u64,
    /// Unbalanced tree: roots (spread by a binary split).
    #[arg(long, default_value_t = 1024)]
    pub(crate) uts_roots: u32,
    /// Unbalanced tree: children of a node that has children (at most 8).
    #[arg(long, default_value_t = 2)]
    pub(crate) uts_m: u32,
    /// Unbalanced tree: probability, in millionths, that a node has children (m * q just under
    /// 10^6 makes a deep, very uneven tree: the default is 1,351,846 nodes, 1,700 levels deep).
    #[arg(long, default_value_t = 499_500)]
    pub(crate) uts_q: u32,
    /// Unbalanced tree: the rayon peer joins over children above this depth, serially below.
    #[arg(long, default_value_t = 64)]
    pub(crate) uts_cutoff: u32,
    /// Loop-sync benchmark: chains run at once.
    #[arg(long, default_value_t = 1024)]
    pub(crate) loop_sync_width: u32,
    /// Loop-sync benchmark: iterations (spawn + sync) per chain.
    #[arg(long, default_value_t = 256)]
    pub(crate) loop_sync_rounds: u32,
    /// rayon fib: below this n, recurse serially.
    #[arg(long, default_value_t = 20)]
    pub(crate) fib_cutoff: u32,
    /// CUDA queens: rows expanded on the host into prefixes (default: the smallest k giving at
    /// least 2 prefixes per resident GPU thread, at most n - 2).
    #[arg(long)]
    pub(crate) queens_prefix_rows: Option<u32>,
    /// Channel benchmark: items each thread enqueues/dequeues with the FAA channel.
    #[arg(long, default_value_t = 64)]
    pub(crate) channel_items: u32,
    /// Channel benchmark: items each thread enqueues/dequeues with the CAS loop.
    #[arg(long, default_value_t = 1)]
    pub(crate) cas_items: u32,
    /// Also run the allocator benchmark (same as adding `alloc` to --only): MilThreads and a
    /// mixed-size variant, xmalloc vs CUDA device malloc, at 1..32 active lanes per warp.
    #[arg(long)]
    pub(crate) alloc: bool,
    /// Allocator benchmark: allocations per run (the paper's MilThreads: 1M).
    #[arg(long, default_value_t = 1 << 20)]
    pub(crate) alloc_n: u64,
    /// Allocator benchmark: CUDA's device malloc heap (cudaLimitMallocHeapSize), MiB.
    #[arg(long, default_value_t = 512)]
    pub(crate) malloc_heap_mb: usize,
    /// Also run the queue benchmark (same as adding `queue` to --only): the ticket queue versus a
    /// contended-CAS array queue, matched and 1:3 producer/consumer, 1 warp up to full occupancy.
    #[arg(long)]
    pub(crate) queue: bool,
    /// Queue benchmark: operations per thread (matched: enqueue+dequeue pairs; producer/consumer:
    /// dequeues per consumer, 3x as many enqueues per producer) for the ticket queue.
    #[arg(long, default_value_t = 32)]
    pub(crate) queue_items: u32,
    /// Queue benchmark: the same for the contended-CAS baseline (slow: keep it small).
    #[arg(long, default_value_t = 2)]
    pub(crate) queue_cas_items: u32,
    /// Queue benchmark: operations per thread for the non-waiting ticket-queue interface, whose
    /// busy retries make it slow under contention (27-54 s per run at full occupancy with 32).
    #[arg(long, default_value_t = 2)]
    pub(crate) queue_try_items: u32,
    /// Queue benchmark: capacity of both queues (a power of two; the paper used 65,536).
    #[arg(long, default_value_t = 65_536)]
    pub(crate) queue_capacity: u64,
    /// Heap benchmark (`--only heap`): log2 of the key counts N (insert N keys, delete them all).
    #[arg(long, default_value = "20,22,24,26,28,29", value_delimiter = ',')]
    heap_log2n: Vec<u32>,
    /// Heap benchmark: node sizes K (64, 128, 256, 512, 1024, 2048, 4096; the last two take 80 and
    /// 160 KiB of shared memory a block).
    #[arg(long, default_value = "64,256,1024", value_delimiter = ',')]
    heap_k: Vec<u32>,
    /// Heap benchmark: at N = 2^heap_sweep_log2n, also insert in batches of K / d for these d
    /// (partial batches go through the partial buffer); other sizes use full batches.
    #[arg(long, default_value = "1,2,4", value_delimiter = ',')]
    heap_batch_div: Vec<u32>,
    /// Heap benchmark: the size at which the batch-size sweep runs.
    #[arg(long, default_value_t = 22)]
    heap_sweep_log2n: u32,
    /// Heap benchmark: key distribution (random, sorted, reverse, equal).
    #[arg(long, default_value = "random")]
    heap_dist: String,
    /// Heap benchmark: measured repetitions (the median is reported; N up to 2^29 is slow).
    #[arg(long, default_value_t = 3)]
    heap_reps: usize,
    /// Heap benchmark: the BinaryHeap column only up to N = 2^this (one core, minutes beyond).
    #[arg(long, default_value_t = 26)]
    heap_cpu_max_log2n: u32,
    /// Heap benchmark: a node size whose insert+delete run takes longer than this (seconds) is
    /// not run at larger N.
    #[arg(long, default_value_t = 20.0)]
    heap_max_s: f64,
    /// Heap benchmark: threads per block, a sweep (default K / 2, clamped to 64..1024); beyond
    /// 2^heap_sweep_log2n only the first value runs.
    #[arg(long, value_delimiter = ',')]
    heap_threads: Vec<u32>,
    /// Heap benchmark: at most this many blocks (default: as many as are resident at once).
    #[arg(long)]
    heap_blocks: Option<u32>,
    /// Heap benchmark: blocks of the delete kernel, a sweep (default: as many as the insert
    /// kernel's); deletes pass the root one at a time, so fewer blocks contend less for its locks.
    /// Beyond 2^heap_sweep_log2n only the first value runs.
    #[arg(long, value_delimiter = ',')]
    heap_del_blocks: Vec<u32>,
    /// Heap benchmark: heap.cuh implementation switches (TUNING), a sweep at N <= 2^heap_sweep_log2n:
    /// each value `+`-joined words: default, legacy (before the switches), plain (unfused
    /// delete), serial (child locks one at a time), sc (SC fences), load (a load before each lock's
    /// first CAS), hot=NS, hlock=NS, node=NS
    /// (back-off caps), or a number (the raw word); T=N and D=N set this value's threads and
    /// delete blocks (instead of the --heap-threads / --heap-del-blocks sweep), e.g.
    /// `default,legacy,default+D=64,default+T=1024`.
    #[arg(long, default_value = "default", value_delimiter = ',')]
    heap_tune: Vec<String>,
    /// Heap benchmark: build the kernels with heap.cuh's GC_HEAP_LOAD_BATCH = n (loads a thread
    /// issues before it stores any of them to shared memory, 1..32; default: the header's, 1).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=32))]
    heap_load_batch: Option<u32>,
    /// Heap benchmark: more heap.cuh compile-time options for the one build, NAME=VALUE with a
    /// `GC_HEAP_` name and a decimal value, e.g. `GC_HEAP_MERGE_ODD_RUN=0` (heap.cuh, MERGE RUNS).
    #[arg(long, value_delimiter = ',', value_parser = parse_heap_define)]
    heap_define: Vec<String>,
    /// Heap benchmark: the switches run at N > 2^heap_sweep_log2n.
    #[arg(long, default_value = "default", value_delimiter = ',')]
    heap_tune_big: Vec<String>,
    /// Heap benchmark: at these log2 N, after each configuration's timed runs, one more run of a
    /// build with -DGC_HEAP_PROFILE prints where the time goes (heap.cuh PROFILE; phases per
    /// insert and delete, the root's hold time against the delete kernel's time per delete).
    #[arg(long, value_delimiter = ',')]
    heap_profile_log2n: Vec<u32>,
    /// nvcc for the CUB sort baseline (benches/cuda/cub_sort.cu, built for sm_90); without it
    /// the CUB columns say why they are missing.
    #[arg(long, default_value = "/usr/local/cuda/bin/nvcc")]
    nvcc: PathBuf,
    /// Options of the sort and strassen benchmarks (`--sort-n`, `--strassen-n`, ...).
    #[command(flatten)]
    pub(crate) data: data::DataArgs,
    /// Skip the serial and rayon columns.
    #[arg(long)]
    pub(crate) gpu_only: bool,
    /// Skip the NVRTC compile-time table (it compiles every program twice, whatever --only says).
    #[arg(long)]
    pub(crate) skip_compile_times: bool,
    /// Per-synchronization timeout in seconds for CUDA runs.
    #[arg(long, default_value_t = 120)]
    pub(crate) timeout_s: u64,
    /// Architecture to compile for when no GPU is present (compile-time columns only).
    #[arg(long, default_value = "sm_90")]
    pub(crate) arch: String,
}

/// `--heap-define`: `GC_HEAP_NAME=decimal`, returned as given.
fn parse_heap_define(s: &str) -> Result<String, String> {
    let (name, value) = s.split_once('=').ok_or_else(|| format!("`{s}`: expected NAME=VALUE"))?;
    let name_ok =
        name.starts_with("GC_HEAP_") && name.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_');
    if !name_ok {
        return Err(format!("`{name}`: a heap.cuh option is named GC_HEAP_ and upper-case letters, digits or _"));
    }
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("`{value}`: the value of {name} must be a decimal number"));
    }
    Ok(s.to_string())
}

fn main() {
    let args = Args::parse();
    let mut report = Report::default();
    let wants = |w: &str| args.only.iter().any(|o| o.trim() == w);

    // The device, or why there is none.
    let config = Config::default().timeout(Some(Duration::from_secs(args.timeout_s)));
    // Outside `--out`, so that the output folder holds only results.
    let cache_dir = std::env::temp_dir().join(format!("gpu-cilk-bench-ptx-{}", std::process::id()));
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
    let programs =
        [fib::program(), queens::program(), channel::program(), alloc::program(), queue::program(), heap::program()];
    for program in programs.iter().filter(|_| !args.skip_compile_times) {
        report.compiles.push(compile_times(&cache_dir, program, arch, device.as_ref().ok()));
    }
    print_compiles(&report.compiles);

    if wants("fib") {
        let rows = fib::bench_fib(&args, device.as_ref());
        print_rows(&format!("fib({})", args.fib), &rows);
        report.rows.extend(rows);
    }
    if wants("queens") {
        let rows = queens::bench_queens(&args, device.as_ref());
        print_rows(&format!("queens({})", args.queens), &rows);
        report.rows.extend(rows);
    }
    if wants("channel") {
        let rows = channel::bench_channel(&args, device.as_ref());
        print_rows("channel reservation (enqueue/dequeue items/s)", &rows);
        report.rows.extend(rows);
    }

    if wants("loopsync") {
        let rows = loopsync::bench_loopsync(&args);
        print_rows("sync in a loop (spawn + sync + resume per iteration; iterations/s)", &rows);
        report.rows.extend(rows);
    }

    if wants("alloc") || args.alloc {
        let rows = alloc::bench_alloc(&args, device.as_ref());
        print_rows("allocator (MilThreads and mixed sizes; allocations/s)", &rows);
        report.rows.extend(rows);
    }

    if wants("queue") || args.queue {
        let rows = queue::bench_queue(&args, device.as_ref());
        print_rows("queues (Scogland & Feng patterns; successful enqueues+dequeues/s)", &rows);
        report.rows.extend(rows);
    }

    if wants("chain") {
        let rows = deep::bench_chain(&args);
        print_rows("deep chain (one spawn per level; levels/s)", &rows);
        report.rows.extend(rows);
    }
    if wants("unbalanced") {
        let rows = deep::bench_unbalanced(&args);
        print_rows("unbalanced tree (UTS-style binomial; nodes/s)", &rows);
        report.rows.extend(rows);
    }
    if wants("fib40") {
        let rows = fib::bench_fib(&Args { fib: 40, ..args.clone() }, device.as_ref());
        print_rows("fib(40)", &rows);
        report.rows.extend(rows);
    }

    if wants("heap") {
        let rows = heap::bench_heap(&args, device.as_ref());
        print_rows("heap (insert N keys, delete them all; (inserts + deletes)/s; CUB: keys sorted/s)", &rows);
        report.rows.extend(rows);
    }

    if wants("sort") {
        let rows = sort::bench_sort(&args, device.as_ref());
        for keys in ["sort", "sort f32"] {
            let part: Vec<_> = rows.iter().filter(|r| r.workload == keys).cloned().collect();
            if !part.is_empty() {
                print_rows(&format!("{keys} (random keys; gpu-cilk cuda: resident keys, see the notes)"), &part);
            }
        }
        report.rows.extend(rows);
    }

    if wants("strassen") {
        let rows = strassen::bench_strassen(&args, device.as_ref());
        print_rows("strassen (n x n f32 product; FLOP/s as 2n^3; gpu-cilk cuda: resident matrices)", &rows);
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

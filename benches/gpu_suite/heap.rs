//! The heap benchmark (`--only heap`): insert N keys into gpu-cilk's batched heap
//! (`gpu_cilk/heap.cuh`, kernels in `benches/cuda/heap_bench.cu`), then delete them all, counted
//! as (inserts + deletes) / time, for N = 2^20 .. 2^29, node sizes K and batch sizes swept;
//! against `std::collections::BinaryHeap` on one core (push all, pop all) and the GPU sort of the
//! same keys as the floor: CUB's radix and merge sort (`benches/cuda/cub_sort.cu`, compiled here
//! with `nvcc` ([`crate::nvcc`]) into a temporary directory and run; its column says why when nvcc is
//! missing; the sort benchmark reuses [`CubSort`]).
//! Writes the rows like every module, plus `heap.svg` (throughput against N).
//!
//! Keys: priority `key_u32(i)` (murmur3's fmix32, or sorted / reverse / equal), payload `i`; the
//! same generator runs in `heap_bench.cu`, `cub_sort.cu` and here. Every heap run is verified:
//! all N keys come back (count, priority sum, payload xor), every batch sorted, at most one
//! partial batch, no failed insert, and the heap's header quiescent and empty with no fault.
//!
//! `gc_heap` and the kernels' `HbParams` are mirrored once, in `gpu_cilk_test_support::mirror::heap`,
//! shared with the heap's GPU test and `runtime/tests/sim_heap.rs` (which runs these kernels on the
//! host simulation, with and without the profile).
//!
//! Sweeps (`--heap-tune`, `--heap-threads`, `--heap-del-blocks`; see `Args`) name their rows
//! `heap K=.. B=.. [T=threads] [D=delete blocks] [tune=..]`; `--heap-profile-log2n` adds one run
//! of a `-DGC_HEAP_PROFILE` build per configuration and prints where the time goes (heap.cuh,
//! PROFILE; `mirror::heap::Profile::summary`).

use crate::common::{Device, Row};
use crate::data::{bounds, draw_series, Series};
use crate::nvcc::NvccProgram;
use crate::Args;
use gpu_cilk::runtime::backend::cuda::{CudaDevice, Kernel, LaunchDims, ProgramSource};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;
use std::time::{Duration, Instant};

use gpu_cilk_test_support::mirror::heap::{
    smem_bytes, DevKey32, GcHeap, HbParams, Profile, HEAP_BENCH_CU, PROF_WORDS, TUNE_HLOCK_SHIFT, TUNE_HOT_SHIFT,
    TUNE_LEGACY, TUNE_LOAD_FIRST, TUNE_NODE_SHIFT, TUNE_PLAIN_DELETE, TUNE_SC_FENCES, TUNE_SERIAL_PAIR,
};

const CUB_SORT_CU: &str = include_str!("../cuda/cub_sort.cu");

/// The node sizes `heap_bench.cu` instantiates.
const KS: [u32; 7] = [64, 128, 256, 512, 1024, 2048, 4096];

/// The heap benchmark with gpu-cilk's heap as `gpu_cilk/heap.cuh`.
pub(crate) fn program() -> ProgramSource {
    ProgramSource::new("heap_bench", HEAP_BENCH_CU)
        .header("gpu_cilk/portable.cuh", gpu_cilk_kernels::PORTABLE_CUH)
        .header("gpu_cilk/heap.cuh", gpu_cilk_kernels::HEAP_CUH)
}

/// heap.cuh's compile-time options this run sets (`--heap-load-batch`, `--heap-define`), as
/// `NAME=VALUE`; empty: the header's defaults.
fn defines(args: &Args) -> Vec<String> {
    let mut d: Vec<String> = args.heap_load_batch.map(|n| format!("GC_HEAP_LOAD_BATCH={n}")).into_iter().collect();
    d.extend(args.heap_define.iter().cloned());
    d
}

/// [`program`] with heap.cuh's compile-time options `defines` (NAME=VALUE) set.
fn program_with(defines: &[String]) -> ProgramSource {
    defines.iter().fold(program(), |p, d| p.option(format!("-D{d}")))
}

/// The same built with heap.cuh's PROFILE counters, for the node sizes `ks` only.
pub(crate) fn profile_program(ks: &[u32], defines: &[String]) -> ProgramSource {
    let list: String = ks.iter().map(|k| format!("HB_KERNELS({k})")).collect();
    program_with(defines).option("-DGC_HEAP_PROFILE").option(format!("-DHB_KERNEL_LIST={list}"))
}

/// A `--heap-tune` value: heap.cuh's tuning word (TUNING) and, optionally, the launch shape.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TuneSpec {
    pub(crate) word: u64,
    /// `T=n`: threads per block (overrides `--heap-threads` for this value).
    pub(crate) threads: Option<u32>,
    /// `D=n`: delete-kernel blocks (overrides `--heap-del-blocks` for this value).
    pub(crate) del_blocks: Option<u32>,
}

/// Parses `+`-joined words: default, legacy, plain, serial, sc, load, hot=NS, hlock=NS, node=NS,
/// a number (the raw word), T=threads, D=delete blocks.
pub(crate) fn parse_tune(spec: &str) -> Result<TuneSpec, String> {
    let mut t = TuneSpec::default();
    for word in spec.split('+').map(str::trim) {
        let num = |v: &str| -> Result<u64, String> { v.parse().map_err(|_| format!("`{word}`: not a number")) };
        let cap = |v: &str, shift: u32| -> Result<u64, String> {
            let ns = num(v)?;
            if !(1..=0xffff).contains(&ns) {
                return Err(format!("`{word}`: a cap is 1..65535 ns"));
            }
            Ok((t.word & !(0xffffu64 << shift)) | (ns << shift))
        };
        let count = |v: &str| -> Result<Option<u32>, String> {
            match num(v)? {
                n @ 1..=65535 => Ok(Some(n as u32)),
                _ => Err(format!("`{word}`: 1..65535")),
            }
        };
        match word.split_once('=') {
            Some(("hot", v)) => t.word = cap(v, TUNE_HOT_SHIFT)?,
            Some(("hlock", v)) => t.word = cap(v, TUNE_HLOCK_SHIFT)?,
            Some(("node", v)) => t.word = cap(v, TUNE_NODE_SHIFT)?,
            Some(("T", v)) => t.threads = count(v)?,
            Some(("D", v)) => t.del_blocks = count(v)?,
            Some(_) => return Err(format!("unknown tuning word `{word}`")),
            None => {
                t.word |= match word {
                    "default" | "" => 0,
                    "legacy" => TUNE_LEGACY,
                    "plain" => TUNE_PLAIN_DELETE,
                    "serial" => TUNE_SERIAL_PAIR,
                    "sc" => TUNE_SC_FENCES,
                    "load" => TUNE_LOAD_FIRST,
                    w => match w.strip_prefix("0x") {
                        Some(hex) => u64::from_str_radix(hex, 16),
                        None => w.parse(),
                    }
                    .map_err(|_| {
                        format!(
                            "unknown tuning word `{w}` (default, legacy, plain, serial, sc, load, hot=, hlock=, node=, T=, D=)"
                        )
                    })?,
                }
            }
        }
    }
    Ok(t)
}

/// One configuration of the heap kernels.
#[derive(Clone, Debug)]
struct HeapCfg {
    k: u32,
    batch: u32,
    /// Threads per block (None: [`threads_for`]'s default).
    threads: Option<u32>,
    /// Blocks of the delete kernel (None: the insert kernel's).
    del_blocks: Option<u32>,
    /// The tuning word and how it was asked for.
    tune: (String, u64),
}

impl HeapCfg {
    /// The row name: `heap K=.. B=..`, then what differs from the defaults.
    fn name(&self) -> String {
        let mut name = format!("heap K={} B={}", self.k, self.batch);
        if let Some(t) = self.threads {
            name.push_str(&format!(" T={t}"));
        }
        if let Some(d) = self.del_blocks {
            name.push_str(&format!(" D={d}"));
        }
        // The word's own name (T= / D= are shown above).
        let words: Vec<&str> = self
            .tune
            .0
            .split('+')
            .filter(|w| !w.starts_with("T=") && !w.starts_with("D=") && *w != "default")
            .collect();
        if self.tune.1 != 0 && !words.is_empty() {
            name.push_str(&format!(" tune={}", words.join("+")));
        }
        name
    }
}

fn dist_code(dist: &str) -> Result<u32, String> {
    match dist {
        "random" => Ok(0),
        "sorted" => Ok(1),
        "reverse" => Ok(2),
        "equal" => Ok(3),
        d => Err(format!("unknown key distribution `{d}` (random, sorted, reverse, equal)")),
    }
}

/// `gc_bench_key_u32` of heap_bench.cu and cub_sort.cu.
fn key_u32(i: u64, n: u64, seed: u32, dist: u32) -> u32 {
    match dist {
        1 => i as u32,
        2 => (n - 1 - i) as u32,
        3 => 7,
        _ => {
            let mut h = (i as u32).wrapping_add(seed.wrapping_mul(0x9E37_79B9));
            h ^= h >> 16;
            h = h.wrapping_mul(0x85EB_CA6B);
            h ^= h >> 13;
            h = h.wrapping_mul(0xC2B2_AE35);
            h ^ (h >> 16)
        }
    }
}

/// Threads per block for node size `k` (the merges have 2K outputs; more threads idle): K / 2,
/// 64 to 1024 (on an H100 1024 threads ran K = 4096 at 276 M keys/s against 216 M with 512).
fn threads_for(cfg: &HeapCfg) -> u32 {
    cfg.threads.unwrap_or((cfg.k / 2).clamp(64, 1024))
}

/// The sweep at one N: every node size, batch divisor, thread count, delete-block count and
/// tuning word asked for at that size (see `Args`: the full sweep at N <= 2^heap_sweep_log2n).
fn configs(args: &Args, l: u32) -> Result<Vec<HeapCfg>, String> {
    let small = l <= args.heap_sweep_log2n;
    let first_or_all = |v: &[u32]| -> Vec<Option<u32>> {
        match (v.is_empty(), small) {
            (true, _) => vec![None],
            (false, true) => v.iter().map(|&x| Some(x)).collect(),
            (false, false) => vec![Some(v[0])],
        }
    };
    let tunes = if small { &args.heap_tune } else { &args.heap_tune_big };
    let tunes: Vec<(String, TuneSpec)> =
        tunes.iter().map(|t| parse_tune(t).map(|w| (t.clone(), w))).collect::<Result<_, _>>()?;
    let divs: Vec<u32> = if l == args.heap_sweep_log2n { args.heap_batch_div.clone() } else { vec![1] };
    let mut out = Vec::new();
    for &k in args.heap_k.iter().filter(|k| KS.contains(k)) {
        for &div in divs.iter().filter(|&&d| d >= 1 && k % d == 0) {
            for (name, spec) in &tunes {
                // A value's own T= / D= replaces that sweep.
                let threads = spec.threads.map_or_else(|| first_or_all(&args.heap_threads), |t| vec![Some(t)]);
                let dels = spec.del_blocks.map_or_else(|| first_or_all(&args.heap_del_blocks), |d| vec![Some(d)]);
                for &threads in &threads {
                    for &del_blocks in &dels {
                        let tune = (name.clone(), spec.word);
                        out.push(HeapCfg { k, batch: k / div, threads, del_blocks, tune });
                    }
                }
            }
        }
    }
    Ok(out)
}

/// The priority sum and payload xor of the N keys (what a run must give back).
fn expected(n: u64, seed: u32, dist: u32) -> (u64, u64) {
    let (mut sum, mut xor) = (0u64, 0u64);
    for i in 0..n {
        sum = sum.wrapping_add(key_u32(i, n, seed, dist) as u64);
        xor ^= i;
    }
    (sum, xor)
}

pub(crate) fn bench_heap(args: &Args, device: Device) -> Vec<Row> {
    let mut rows = Vec::new();
    let dist = match dist_code(&args.heap_dist) {
        Ok(d) => d,
        Err(e) => return vec![Row::new("heap", "-", "all", 0.0, "keys/s").na(e)],
    };
    let seed = 1u32;
    let sizes: Vec<u32> = args.heap_log2n.iter().copied().filter(|&l| (10..=31).contains(&l)).collect();
    let cub = match device {
        Ok(_) => CubSort::build(&args.nvcc, &args.out),
        Err(e) => Err(format!("n/a: {e}")),
    };
    if let Err(e) = &cub {
        println!("heap:    CUB columns skipped: {e}");
    }
    let defines = defines(args);
    if !defines.is_empty() {
        println!("heap:    kernels built with {} (heap.cuh's compile-time options)", defines.join(" "));
    }
    let gpu = match device {
        Ok(dev) => HeapGpu::new(dev, &defines)
            .map(|g| {
                if args.heap_profile_log2n.is_empty() {
                    g
                } else {
                    let ks: Vec<u32> = args.heap_k.iter().copied().filter(|k| KS.contains(k)).collect();
                    g.with_profile(&ks, &defines)
                }
            })
            .map_err(|e| format!("n/a: {e}")),
        Err(e) => Err(format!("n/a: {e}")),
    };
    // Node sizes whose runs got too slow stop at the size that exceeded the budget.
    let mut over_budget: Vec<u32> = Vec::new();
    for &l in &sizes {
        let n = 1u64 << l;
        let size = format!("2^{l}");
        if !args.gpu_only {
            rows.push(binary_heap_row(args, l, n, seed, dist));
        }
        match (&gpu, configs(args, l)) {
            (_, Err(e)) => rows.push(Row::new("heap", &size, "gpu-cilk heap", 2.0 * n as f64, "keys/s").na(e)),
            (Err(e), _) => rows.push(Row::new("heap", &size, "gpu-cilk heap", 2.0 * n as f64, "keys/s").na(e)),
            (Ok(g), Ok(cfgs)) => {
                let want = expected(n, seed, dist);
                let profile = args.heap_profile_log2n.contains(&l);
                let mut budget_hit: Vec<u32> = Vec::new();
                for cfg in cfgs {
                    let k = cfg.k;
                    let mut row = Row::new("heap", &size, &cfg.name(), 2.0 * n as f64, "keys/s");
                    if over_budget.contains(&k) {
                        rows.push(row.na(format!("skipped: a smaller N took over {} s", args.heap_max_s)));
                        continue;
                    }
                    match g.run(args, &cfg, n, seed, dist, want, profile) {
                        Ok(r) => {
                            row.times = Ok(r.times);
                            row.verified = Some(r.verified);
                            row.note = r.note;
                            if r.slowest > Duration::from_secs_f64(args.heap_max_s) && cfg.batch == k {
                                budget_hit.push(k);
                            }
                        }
                        Err(e) => row = row.na(format!("n/a: {e}")),
                    }
                    rows.push(row);
                }
                over_budget.extend(budget_hit);
            }
        }
        match &cub {
            Err(e) => rows.push(Row::new("heap", &size, "CUB sort", n as f64, "keys/s").na(e)),
            Ok(c) => rows.extend(c.rows("heap", args.heap_reps, n, &size, &args.heap_dist).into_iter().map(|mut r| {
                r.note.push_str(" (the floor for insert-all/delete-all)");
                r
            })),
        }
        // The ratio of the best heap run to the CUB radix sort of the same keys.
        let best = rows
            .iter()
            .filter(|r| r.size == size && r.implementation.starts_with("heap K="))
            .filter_map(|r| r.stats().map(|s| (s.0, r.implementation.clone())))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        let radix =
            rows.iter().find(|r| r.size == size && r.implementation == "CUB radix sort").and_then(|r| r.stats());
        if let (Some((heap_ms, name)), Some((radix_ms, _, _))) = (best, radix) {
            if let Some(r) = rows.iter_mut().find(|r| r.size == size && r.implementation == name) {
                r.note.push_str(&format!("; best at this N: {:.1}x the CUB radix sort's time", heap_ms / radix_ms));
            }
        }
    }
    if let Err(e) = plot(&rows, &args.out.join("heap.svg")) {
        eprintln!("heap: cannot draw {}: {e}", args.out.join("heap.svg").display());
    }
    rows
}

/// `std::collections::BinaryHeap` on one core: push the N keys, pop them all (verified ascending).
fn binary_heap_row(args: &Args, l: u32, n: u64, seed: u32, dist: u32) -> Row {
    let mut row = Row::new("heap", format!("2^{l}"), "BinaryHeap 1 core", 2.0 * n as f64, "keys/s");
    if l > args.heap_cpu_max_log2n {
        return row.na(format!("skipped above 2^{} (--heap-cpu-max-log2n)", args.heap_cpu_max_log2n));
    }
    let keys: Vec<(u32, u32)> = (0..n).map(|i| (key_u32(i, n, seed, dist), i as u32)).collect();
    let mut times = Vec::new();
    let mut ok = true;
    for rep in 0..args.warmup + args.heap_reps {
        let mut heap = BinaryHeap::with_capacity(n as usize);
        let start = Instant::now();
        for &k in &keys {
            heap.push(Reverse(k));
        }
        let mut prev = (0u32, 0u32);
        let mut count = 0u64;
        while let Some(Reverse(k)) = heap.pop() {
            ok &= k >= prev;
            prev = k;
            count += 1;
        }
        let t = start.elapsed();
        ok &= count == n;
        if rep >= args.warmup {
            times.push(t);
        }
    }
    row.times = Ok(times);
    row.verified = Some(ok);
    row.note = "push all, pop all; (u32, u32) keys".into();
    row
}

// ---- the gpu-cilk heap -----------------------------------------------------------------------------

/// One node size's insert and delete kernels.
type KernelPair = (u32, Kernel<HbParams>, Kernel<HbParams>);

struct HeapGpu<'d> {
    dev: &'d CudaDevice,
    fill: Kernel<HbParams>,
    kernels: Vec<KernelPair>,
    /// The PROFILE build's insert and delete kernels per K (`--heap-profile-log2n`), or why not.
    profiled: Result<Vec<KernelPair>, String>,
}

struct HeapRun {
    times: Vec<Duration>,
    verified: bool,
    note: String,
    slowest: Duration,
}

impl<'d> HeapGpu<'d> {
    fn new(dev: &'d CudaDevice, defines: &[String]) -> gpu_cilk::runtime::Result<Self> {
        let program = dev.load_program(&program_with(defines))?;
        // SAFETY: every kernel of heap_bench.cu takes one `HbParams` (mirrored above); `run`
        // passes a heap header whose arrays hold `slots * K` keys, `slots` state words and K
        // buffer keys, a key array of max(N, blocks * K) keys and six counters, and launches at
        // most the resident number of blocks with the kernel's shared memory.
        let fill = unsafe { program.kernel::<HbParams>("hb_fill")? };
        let mut kernels = Vec::new();
        for k in KS {
            // SAFETY: as above.
            let (ins, del) = unsafe {
                (program.kernel::<HbParams>(&format!("hb_insert_k{k}"))?, program.kernel(&format!("hb_delete_k{k}"))?)
            };
            kernels.push((k, ins, del));
        }
        Ok(HeapGpu { dev, fill, kernels, profiled: Err("not built".into()) })
    }

    /// Builds the PROFILE kernels for the node sizes `ks`.
    fn with_profile(mut self, ks: &[u32], defines: &[String]) -> Self {
        let build = || -> gpu_cilk::runtime::Result<Vec<KernelPair>> {
            let program = self.dev.load_program(&profile_program(ks, defines))?;
            let mut out = Vec::new();
            for &k in ks {
                // SAFETY: as in `new` (the same kernels, built with -DGC_HEAP_PROFILE; `run` also
                // points the header's `prof` at blocks * PROF_WORDS zeroed words).
                let (ins, del) = unsafe {
                    (
                        program.kernel::<HbParams>(&format!("hb_insert_k{k}"))?,
                        program.kernel(&format!("hb_delete_k{k}"))?,
                    )
                };
                out.push((k, ins, del));
            }
            Ok(out)
        };
        self.profiled = build().map_err(|e| e.to_string());
        self
    }

    #[allow(clippy::too_many_arguments)]
    fn run(
        &self,
        args: &Args,
        cfg: &HeapCfg,
        n: u64,
        seed: u32,
        dist: u32,
        (sum, xor): (u64, u64),
        profile: bool,
    ) -> gpu_cilk::runtime::Result<HeapRun> {
        let dev = self.dev;
        let (k, batch) = (cfg.k, cfg.batch);
        let (_, ins, del) = self.kernels.iter().find(|e| e.0 == k).expect("an instantiated K");
        let threads = threads_for(cfg);
        let smem = smem_bytes(k, 8);
        // K >= 2048 takes more than the 48 KiB of shared memory a launch gets without asking.
        ins.set_max_dynamic_shared_memory(smem as usize)?;
        del.set_max_dynamic_shared_memory(smem as usize)?;
        let per_sm = ins
            .max_active_blocks_per_sm(threads, smem as usize)?
            .min(del.max_active_blocks_per_sm(threads, smem as usize)?);
        let blocks = (dev.info().multiprocessors * per_sm.max(1)).min(args.heap_blocks.unwrap_or(u32::MAX)).max(1);
        let del_blocks = cfg.del_blocks.unwrap_or(blocks).clamp(1, blocks);
        let capacity = n.div_ceil(k as u64) + blocks as u64 + 2;
        let slots = GcHeap::slots(capacity);
        let nodes = dev.alloc_zeroed::<DevKey32>((slots * k as u64) as usize)?;
        let mut states = dev.alloc_zeroed::<u64>(slots as usize)?;
        let pbuf = dev.alloc_zeroed::<DevKey32>(k as usize)?;
        let empty = GcHeap {
            tune: cfg.tune.1,
            ..GcHeap::empty(nodes.ptr().addr(), states.ptr().addr(), pbuf.ptr().addr(), k as u64, capacity)
        };
        let mut heap = dev.htod(&[empty])?;
        let keys = dev.alloc_zeroed::<DevKey32>(n.max(blocks as u64 * k as u64) as usize)?;
        let mut counters = dev.alloc_zeroed::<u64>(6)?;
        let p = HbParams { heap: heap.ptr(), keys: keys.ptr(), counters: counters.ptr(), n, batch, seed, dist, pad: 0 };
        let dims = LaunchDims::linear(blocks, threads).shared_mem(smem);
        let del_dims = LaunchDims::linear(del_blocks, threads).shared_mem(smem);
        let mut times = Vec::new();
        let (mut ins_ms, mut del_ms) = (Vec::new(), Vec::new());
        let mut verified = true;
        let mut slowest = Duration::ZERO;
        // The timed runs, then with `profile` one run of the PROFILE build.
        let prof_kernels = match (&self.profiled, profile) {
            (Ok(p), true) => p.iter().find(|e| e.0 == k),
            _ => None,
        };
        let mut prof_buf = match prof_kernels {
            Some(_) => Some(dev.alloc_zeroed::<u64>(blocks as usize * PROF_WORDS)?),
            None => None,
        };
        let mut prof_note = match (&self.profiled, profile) {
            (Err(e), true) => format!("; no profile: {e}"),
            _ => String::new(),
        };
        if let Some((_, pi, pd)) = prof_kernels {
            pi.set_max_dynamic_shared_memory(smem as usize)?;
            pd.set_max_dynamic_shared_memory(smem as usize)?;
        }
        let runs = args.warmup + args.heap_reps + usize::from(prof_kernels.is_some());
        for rep in 0..runs {
            let profiling = rep == args.warmup + args.heap_reps;
            let (ins, del) = match (profiling, prof_kernels) {
                (true, Some((_, pi, pd))) => (pi, pd),
                _ => (ins, del),
            };
            let mut header = empty;
            if let (true, Some(buf)) = (profiling, prof_buf.as_mut()) {
                dev.zero(buf)?;
                header.prof = buf.ptr().addr();
            }
            dev.zero(&mut states)?;
            dev.copy_htod(&[header], &mut heap)?;
            dev.zero(&mut counters)?;
            self.fill.launch(LaunchDims::linear(4 * dev.info().multiprocessors, 256), &p)?;
            dev.sync()?;
            let t0 = Instant::now();
            ins.launch(dims, &p)?;
            dev.sync()?;
            let t1 = Instant::now();
            del.launch(del_dims, &p)?;
            dev.sync()?;
            let t2 = Instant::now();
            let c = dev.dtoh(&counters)?;
            let h = dev.dtoh(&heap)?[0];
            let ok = c[0] == n
                && c[1] == sum
                && c[2] == xor
                && c[3] == 0
                && c[4] <= 1
                && c[5] == 0
                && h.error == 0
                && (h.count, h.pbuf_len, h.hlock, h.mode) == (0, 0, 0, 0);
            if !ok {
                eprintln!(
                    "heap K={k} B={batch} N={n}: counters {c:?} (want {n}, {sum}, {xor}, 0, <=1, 0), header {h:?}"
                );
                verified = false;
            }
            if profiling {
                if let Some(buf) = &prof_buf {
                    let prof = Profile::sum(&dev.dtoh(buf)?);
                    let text = prof.summary((t1 - t0).as_nanos() as f64, (t2 - t1).as_nanos() as f64);
                    println!("heap profile N={n} {} ({blocks} insert / {del_blocks} delete blocks):", cfg.name());
                    for line in text.lines() {
                        println!("  {line}");
                    }
                    prof_note =
                        format!("; profile ({:.1} + {:.1} ms): {}", ms(t1 - t0), ms(t2 - t1), text.replace('\n', "; "));
                }
                continue;
            }
            slowest = slowest.max(t2 - t0);
            if rep >= args.warmup {
                times.push(t2 - t0);
                ins_ms.push((t1 - t0).as_secs_f64() * 1e3);
                del_ms.push((t2 - t1).as_secs_f64() * 1e3);
            }
        }
        let med = |v: &mut Vec<f64>| {
            v.sort_by(|a, b| a.total_cmp(b));
            v.get(v.len() / 2).copied().unwrap_or(0.0)
        };
        let note = format!(
            "insert {:.1} ms + delete {:.1} ms; {blocks} blocks ({del_blocks} deleting) x {threads} threads, {} B \
             shared, tune {:#x}{prof_note}",
            med(&mut ins_ms),
            med(&mut del_ms),
            smem,
            cfg.tune.1,
        );
        Ok(HeapRun { times, verified, note, slowest })
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

// ---- CUB sort (nvcc) ---------------------------------------------------------------------------------

/// `cub_sort.cu` built with nvcc; also the CUB columns of the sort benchmark.
pub(crate) struct CubSort {
    program: NvccProgram,
}

impl CubSort {
    /// Compiles `cub_sort.cu` with `nvcc` into a temporary directory under `out`.
    pub(crate) fn build(nvcc: &Path, out: &Path) -> Result<Self, String> {
        Ok(CubSort { program: NvccProgram::build(nvcc, out, "cub_sort", CUB_SORT_CU, &[])? })
    }

    /// Radix and merge sort rows of `workload` for `n` u32 keys (the program's median, min and max
    /// become the row's three times), `reps` measured runs each.
    pub(crate) fn rows(&self, workload: &str, reps: usize, n: u64, size: &str, dist: &str) -> Vec<Row> {
        let na = |e: String| {
            vec![
                Row::new(workload, size, "CUB radix sort", n as f64, "keys/s").na(&e),
                Row::new(workload, size, "CUB merge sort", n as f64, "keys/s").na(&e),
            ]
        };
        let args: Vec<String> = ["--n", &n.to_string(), "--type", "u32", "--dist", dist, "--algo", "radix,merge"]
            .iter()
            .map(|s| s.to_string())
            .chain(["--reps".to_string(), reps.max(1).to_string(), "--seed".into(), "1".into()])
            .collect();
        let lines = match self.program.run(&args, &["radix,", "merge,"]) {
            Ok(l) => l,
            Err(e) => return na(e),
        };
        let mut rows = Vec::new();
        for line in lines {
            let f: Vec<&str> = line.split(',').collect();
            if f.len() < 10 {
                continue;
            }
            let ms = |s: &str| s.parse::<f64>().map(|v| Duration::from_secs_f64(v / 1e3)).unwrap_or_default();
            let name = if f[0] == "radix" { "CUB radix sort" } else { "CUB merge sort" };
            let mut row = Row::new(workload, size, name, n as f64, "keys/s");
            row.times = Ok(vec![ms(f[6]), ms(f[5]), ms(f[7])]); // min, median, max
            row.verified = Some(f[9].trim() == "true");
            row.note = format!("u32 keys sorted/s; median of {} runs (CUDA events, keys on the device)", f[4]);
            rows.push(row);
        }
        if rows.is_empty() {
            return na("n/a: no well-formed CSV rows from cub_sort".into());
        }
        rows
    }
}

// ---- plot ----------------------------------------------------------------------------------------------

/// Throughput against log2 N: the best heap run per N, each K's full-batch runs, BinaryHeap and
/// the two CUB sorts.
fn plot(rows: &[Row], path: &Path) -> Result<(), Box<dyn std::error::Error>> {
    use plotters::prelude::*;
    let log2n = |r: &Row| r.size.strip_prefix("2^").and_then(|s| s.parse::<u32>().ok());
    let mut series: Series = Vec::new();
    for r in rows.iter().filter(|r| r.workload == "heap") {
        let (Some(l), Some(tp)) = (log2n(r), r.throughput()) else { continue };
        if let Some((k, b)) = r.implementation.strip_prefix("heap K=").and_then(|s| s.split_once(" B=")) {
            if k != b {
                continue; // batch-size sweep points: in the table only
            }
        }
        match series.iter_mut().find(|s| s.0 == r.implementation) {
            Some(s) => s.1.push((l as f64, tp / 1e6)),
            None => series.push((r.implementation.clone(), vec![(l as f64, tp / 1e6)])),
        }
    }
    if series.is_empty() {
        return Ok(());
    }
    let ((xmin, xmax), (ymin, ymax)) = bounds(&series);
    let root = SVGBackend::new(path, (960, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("heap: insert N keys, delete them all (M keys/s; CUB: M keys sorted/s)", ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(70)
        .build_cartesian_2d((xmin - 0.5)..(xmax + 0.5), (ymin / 2.0..ymax * 2.0).log_scale())?;
    chart.configure_mesh().x_desc("log2 N").y_desc("M keys/s (log scale)").draw()?;
    draw_series(&mut chart, &series)?;
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    root.present()?;
    Ok(())
}

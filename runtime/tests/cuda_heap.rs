//! GPU-side checks of the batched heap `kernels/include/gpu_cilk/heap.cuh`, driving the kernels of
//! `kernels/tests/heap_test.cu` (compiled with NVRTC from the test source plus the header as an
//! in-memory include, `gpu_cilk_kernels::HEAP_CUH`).
//!
//! - `kernels_compile_with_the_mirrored_parameter_layout` (NVRTC only, no GPU; runs in CI): every
//!   instantiation (K = 1, 4, 64, 256, 1024; 8- and 16-byte keys) is in the PTX for compute_80 and
//!   compute_90 and takes one parameter of exactly the size of its Rust mirror.
//! - The stress tests (need a GPU): many blocks (as many as are resident at once, up to the
//!   configured number) run the scripts of `support/heap_stress.rs` (shared with the
//!   host-simulation twin `sim_heap.rs`), whose history goes through the checker of
//!   `support/heap_history.rs` (the one the Rust twin's stress test uses). Each prints its
//!   summary (`--nocapture`).
//!
//! The stress tests need a GPU, so they are `#[ignore]`d (see `support/gate.rs`); the layout test
//! needs only NVRTC. Run on a GPU machine with `LD_LIBRARY_PATH=/usr/local/cuda/lib64 cargo test -p
//! gpu-cilk-runtime --test cuda_heap -- --include-ignored --nocapture --test-threads=1`.
//!
//! WATCHDOG (issue 12: some launches never finished on an H100). Every launch waits at most
//! `GPU_CILK_HEAP_WATCHDOG_S` seconds (default 60); past that, the test copies the heap header,
//! every block's trace words (heap.cuh, DIAGNOSTICS: where its thread 0 is, what it last saw,
//! how often it backed off, which operation, how many locks it took) and the locked / INSHOLD /
//! TARGET nodes on a side stream while the kernel still runs, twice, a second apart, prints them
//! (the heap lock's holder first: `hlock` names it; how many times the lock changed hands between
//! the snapshots; each block `spinning`, `MOVED`, `STOPPED` or `CYCLING`, i.e. taking locks
//! within one operation), and aborts the process (the kernel cannot be stopped, and later tests
//! would queue behind it).

#[path = "support/heap_stress.rs"]
mod stress;

use gpu_cilk_runtime::backend::cuda::{compile, Arch, CudaDevice, DeviceBuffer, Kernel, Program, ProgramSource};
use gpu_cilk_runtime::Error;
use gpu_cilk_test_support::mirror::heap as mirror;
use gpu_cilk_test_support::target::gpu_device as device;
use gpu_cilk_test_support::{gate, ptx_params};
use std::time::Duration;
use stress::{
    hang_report, kernel_name, source, source_with, stress, Batches, Cfg, Dist, Params, Snapshot, Watch, KERNELS, MIXED,
    PHASED,
};

type Dev = CudaDevice;
type Buf<T> = DeviceBuffer<T>;
type Kern<P> = Kernel<P>;

/// The stress kernel `name` on the GPU, with how many of its blocks of `threads` threads and
/// `smem` bytes of dynamic shared memory are resident at once on the whole device.
fn open_kernel(dev: &Dev, name: &str, threads: u32, smem: u32, load_batch: u32) -> (Program, Kern<Params>, u32) {
    let program = dev.load_program(&source_with(load_batch)).unwrap_or_else(|e| panic!("compiling heap_test.cu: {e}"));
    // SAFETY: the kernel takes one `gc_heap_test_params` (mirrored by `Params`, size checked by
    // the NVRTC test); every launch of the harness passes live buffers sized for its script: `n`
    // kinds, lengths, statuses, `n * K` input and output keys, `2n` stamps, one clock, and a heap
    // header whose arrays hold `slots * K` keys, `slots` state words and `K` buffer keys.
    let kernel = unsafe { program.kernel::<Params>(name) }.unwrap();
    // K = 2048 needs 80 KiB: more than the 48 KiB a launch may take without asking.
    kernel.set_max_dynamic_shared_memory(smem as usize).unwrap();
    let per_sm = kernel.max_active_blocks_per_sm(threads, smem as usize).unwrap();
    (program, kernel, dev.info().multiprocessors * per_sm)
}

/// Seconds a launch may run before the watchdog reports it (`GPU_CILK_HEAP_WATCHDOG_S`, default 60).
fn watchdog() -> Duration {
    let s = std::env::var("GPU_CILK_HEAP_WATCHDOG_S").ok().and_then(|v| v.parse::<f64>().ok()).unwrap_or(60.0);
    Duration::from_secs_f64(s.max(0.1))
}

/// Waits for a launch; one that is still running after [`watchdog`] is reported (header, trace
/// words of its blocks, held nodes, copied twice, a second apart, while it runs: who holds the
/// heap lock, and which blocks still spin and which stopped) and the process aborts.
fn finish(dev: &Dev, what: &str, watch: &Watch) -> Result<(), Error> {
    let limit = watchdog();
    match dev.synchronize(Some(limit)) {
        Err(Error::Timeout(_)) => {
            let snap = || -> Result<Snapshot, Error> {
                Ok(Snapshot {
                    heap: dev.peek_dtoh(watch.heap)?[0],
                    trace: dev.peek_dtoh(watch.trace)?,
                    states: dev.peek_dtoh(watch.states)?,
                })
            };
            let gap = Duration::from_secs(1);
            let report = match snap().and_then(|a| {
                std::thread::sleep(gap);
                Ok((a, snap()?))
            }) {
                Ok((a, b)) => hang_report(what, &a, &b, gap, watch.blocks),
                Err(e) => format!("{what}: the launch did not finish; a snapshot failed: {e}"),
            };
            use std::io::Write as _;
            let mut err = std::io::stderr();
            let _ = writeln!(err, "WATCHDOG after {limit:?} (GPU_CILK_HEAP_WATCHDOG_S): {report}");
            let _ = err.flush();
            // The kernel cannot be stopped; every later launch would queue behind it.
            std::process::abort();
        }
        r => r,
    }
}

// ---- NVRTC (no GPU) ----------------------------------------------------------------------------

#[test]
fn kernels_compile_with_the_mirrored_parameter_layout() {
    let size = std::mem::size_of::<Params>();
    assert_eq!(size, 80);
    let kernels: Vec<(String, usize)> = KERNELS.iter().map(|&(k, wide)| (kernel_name(k, wide), size)).collect();
    for (arch, ptx) in ptx_params("kernels_compile_with_the_mirrored_parameter_layout", &source(), &kernels) {
        assert!(ptx.contains(".entry gc_heap_test_smem_sizes("), "{arch}: gc_heap_test_smem_sizes missing");
        // No static shared memory in the header's code: only the kernels' dynamic workspace.
        let static_shared: Vec<&str> =
            ptx.lines().filter(|l| l.contains(".shared") && l.contains(".b8") && !l.contains(".extern")).collect();
        assert!(static_shared.is_empty(), "{arch}: static shared memory declared: {static_shared:?}");
    }
}

/// The benchmark's kernels (`benches/cuda/heap_bench.cu`) compile with NVRTC as `gpu_suite`
/// builds them: plain, and with heap.cuh's PROFILE for chosen node sizes (`--heap-profile-log2n`),
/// whose PTX reads the clocks the plain build does not.
#[test]
fn bench_kernels_compile_plain_and_profiled() {
    let plain = ProgramSource::new("heap_bench", mirror::HEAP_BENCH_CU)
        .header("gpu_cilk/portable.cuh", gpu_cilk_kernels::PORTABLE_CUH)
        .header("gpu_cilk/heap.cuh", gpu_cilk_kernels::HEAP_CUH);
    let profiled = plain.clone().option("-DGC_HEAP_PROFILE").option("-DHB_KERNEL_LIST=HB_KERNELS(512)HB_KERNELS(1024)");
    let arch = Arch::new(9, 0);
    // `gpu_suite --heap-load-batch 8`: heap.cuh's LOAD BATCH.
    let batched = plain.clone().option("-DGC_HEAP_LOAD_BATCH=8");
    let (a, b) = match (compile(&plain, arch), compile(&profiled, arch)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e @ Error::BackendUnavailable { .. }), _) if !gate::require_nvrtc() => {
            gate::nvrtc_missing("bench_kernels_compile_plain_and_profiled", &e);
            return;
        }
        (a, b) => panic!("compiling heap_bench.cu: {:?} / {:?}", a.err(), b.err()),
    };
    for k in [64, 128, 256, 512, 1024, 2048, 4096] {
        assert!(a.contains(&format!(".entry hb_delete_k{k}(")), "plain build lacks hb_delete_k{k}");
    }
    assert!(b.contains(".entry hb_delete_k1024(") && !b.contains(".entry hb_delete_k64("), "profiled kernel list");
    assert!(b.contains("%globaltimer") && !a.contains("%globaltimer"), "only the profiled build reads the clocks");
    let c = compile(&batched, arch).unwrap_or_else(|e| panic!("heap_bench.cu with GC_HEAP_LOAD_BATCH=8: {e}"));
    // The plain build moves a node with one load per loop round; the batched one unrolls them.
    let loads = |ptx: &str| ptx.matches("ld.global.cg").count();
    assert!(loads(&c) > 2 * loads(&a), "batched loads: {} ld.global.cg against {} plain", loads(&c), loads(&a));
    assert!(a.contains("fence.acq_rel.gpu"), "the default tuning's fences");
}

/// The watchdog's report (no GPU): the heap lock's holder comes first and is marked, and each
/// block is told spinning, STOPPED, MOVED or CYCLING from its two snapshots.
#[test]
fn watchdog_report_names_the_lock_holder_and_stopped_blocks() {
    use mirror::{GcHeap, TRACE_WORDS};
    let at = |site: u64, node: u64, seen: u64, backoffs: u64, op: u64, locks: u64| {
        [site << 56 | node, seen, backoffs, op, locks]
    };
    // Block 0 spins for the heap lock, block 1 holds it and stopped while locking node 5, block 2
    // moved on to another operation, block 3 reads RUN at node 9 with no back-off both times but
    // took 500 locks in between (issue 12's livelocked delete looked like that).
    let first: Vec<u64> =
        [at(1, 0, 2, 100, 1, 10), at(2, 5, 0x5, 7, 2, 20), at(6, 3, 0, 0, 3, 30), at(6, 9, 0x3, 0, 4, 100)].concat();
    let second: Vec<u64> =
        [at(1, 0, 2, 180, 1, 10), at(2, 5, 0x5, 7, 2, 20), at(1, 0, 2, 4, 1 << 32 | 9, 31), at(6, 9, 0x3, 0, 4, 600)]
            .concat();
    assert_eq!(first.len(), 4 * TRACE_WORDS);
    let heap = GcHeap { hlock: 2, hlocks: 40, mode: 1 << 32, ..GcHeap::default() };
    let snap = |trace: &Vec<u64>, hlocks: u64| stress::Snapshot {
        heap: GcHeap { hlocks, ..heap },
        trace: trace.clone(),
        states: vec![0, 0, 0, 0, 0, 0x5 | 4],
    };
    let r = hang_report("probe", &snap(&first, 40), &snap(&second, 40), Duration::from_secs(1), 4);
    let lines: Vec<&str> = r.lines().collect();
    assert!(lines[0].contains("hlock held by block 1"), "{r}");
    assert!(lines[1].contains("0 heap-lock acquisitions"), "{r}");
    assert!(lines[2].contains("LOCK_HEAP 2 (0 stopped)") && lines[2].contains("LOCK_NODE 1 (1 stopped)"), "{r}");
    assert!(lines[2].contains("RUN 1 (0 stopped)"), "{r}");
    assert!(lines[3].starts_with("  block    1: LOCK_NODE node 5"), "{r}");
    assert!(lines[3].contains("20 locks taken; STOPPED") && lines[3].ends_with("<- holds the heap lock"), "{r}");
    assert!(lines[4].contains("block    0") && lines[4].contains("spinning (+80 back-offs)"), "{r}");
    assert!(lines[5].contains("block    2") && lines[5].contains("MOVED (another operation)"), "{r}");
    assert!(
        lines[6].contains("block    3: RUN node 9") && lines[6].ends_with("CYCLING (same operation, +500 locks taken)"),
        "{r}"
    );
    assert!(lines[7].ends_with("node 5: 0x5 AVAIL LOCKED"), "{r}");
    eprintln!("{r}");
}

// ---- GPU stress ----------------------------------------------------------------------------------

/// Issue 12's livelock as a probe on the GPU: a delete waiting for its `TARGET` last node takes
/// no lock while it waits, and the insert it waits for gets the node (`wait_last_probe`).
#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn delete_waits_for_its_target_last_node_without_locking_it() {
    stress::wait_last_probe(&device("delete_waits_for_its_target_last_node_without_locking_it"), 32);
}
#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn tiny_nodes_many_blocks_all_distributions() {
    let mut cfgs = vec![Cfg { batches: Batches::Full, ..Cfg::mixed(1, false, 256, 32, 200) }];
    for dist in [Dist::Random, Dist::Ascending, Dist::Descending, Dist::Equal] {
        cfgs.push(Cfg { dist, ..Cfg::mixed(4, true, 512, 64, 100) });
    }
    stress(&device("tiny_nodes_many_blocks_all_distributions"), &cfgs);
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn mid_nodes_full_partial_and_mixed_batches() {
    let base = Cfg::mixed(64, true, 264, 128, 60);
    stress(
        &device("mid_nodes_full_partial_and_mixed_batches"),
        &[
            base,
            Cfg { batches: Batches::Full, ..base },
            Cfg { batches: Batches::Partial, dist: Dist::Descending, ..base },
            Cfg { dist: Dist::Equal, ..base },
            Cfg { phases: &[85, 25], dist: Dist::Ascending, ..base },
            // heap.cuh's TUNING variants: the implementation before the switches, and each
            // optimization off alone (the default, 0, runs above).
            Cfg { tune: mirror::TUNE_LEGACY, ..base },
            Cfg { tune: mirror::TUNE_PLAIN_DELETE, ..base },
            Cfg { tune: mirror::TUNE_SERIAL_PAIR | mirror::TUNE_SC_FENCES, ..base },
        ],
    );
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn large_nodes_mixed_and_phased() {
    let base = Cfg::mixed(256, false, 264, 256, 30);
    stress(
        &device("large_nodes_mixed_and_phased"),
        &[base, Cfg { phases: PHASED, batches: Batches::Full, dist: Dist::Descending, ..base }],
    );
}

/// K = 2048 (80 KiB of shared memory a block, above the 48 KiB a launch gets without asking):
/// on 8 blocks and at full residency (every resident block), mixed and phased traffic.
#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn nodes_k2048_past_the_default_shared_memory() {
    let few = Cfg::mixed(2048, false, 8, 512, 8);
    let dev = device("nodes_k2048_past_the_default_shared_memory");
    let full = Cfg { blocks: 1 << 12, phases: PHASED, batches: Batches::Full, ..few };
    stress(&dev, &[few, Cfg { dist: Dist::Descending, ..few }, full, Cfg { threads: 1024, ..full }]);
}

/// heap.cuh's LOAD BATCH (GC_HEAP_LOAD_BATCH = 8, the benchmark's `--heap-load-batch 8`) under
/// the history checker: K = 1024 and 2048, 8 blocks and every resident block, mixed and phased.
#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn batched_loads_keep_every_history_correct() {
    let few = Cfg { load_batch: 8, ..Cfg::mixed(1024, false, 8, 512, 8) };
    let dev = device("batched_loads_keep_every_history_correct");
    let full = Cfg { blocks: 1 << 12, phases: PHASED, batches: Batches::Full, ..few };
    stress(&dev, &[few, Cfg { k: 2048, ..few }, full, Cfg { k: 2048, ..full }, Cfg { wide: true, k: 64, ..few }]);
}

/// K = 1024, the largest node of the ready heap's sizes, with fewer threads than keys per node (every block-wide step
/// loops), on 8 blocks and at full residency (264 blocks of 512 threads on an H100). The full
/// configurations hung on the H100 until 2026-11-26 (a delete waiting for its TARGET last node
/// re-locked it every round and starved the insert it waited for; fixed, they then passed in
/// 15 s); `GPU_CILK_HEAP_K1024_FULL=0` skips them.
#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn largest_nodes_k1024() {
    let big = Cfg { phases: PHASED, batches: Batches::Full, ..Cfg::mixed(1024, false, 264, 512, 12) };
    let few = Cfg { blocks: 8, ..big };
    let dev = device("largest_nodes_k1024");
    stress(
        &dev,
        &[
            few,
            Cfg { dist: Dist::Ascending, ..few },
            Cfg { phases: MIXED, batches: Batches::Mixed, ..few },
            Cfg { phases: MIXED, batches: Batches::Mixed, tune: mirror::TUNE_LEGACY, ..few },
        ],
    );
    if !std::env::var("GPU_CILK_HEAP_K1024_FULL").is_ok_and(|v| v == "0") {
        stress(
            &dev,
            &[
                big,
                Cfg { threads: 1024, ..big },
                Cfg { dist: Dist::Ascending, ..big },
                Cfg { phases: MIXED, batches: Batches::Mixed, ..big },
            ],
        );
    } else {
        // Written past libtest's capture, so scripts/gpu-check.sh counts it as skipped.
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), "SKIPPED largest_nodes_k1024 on 264 blocks: GPU_CILK_HEAP_K1024_FULL=0");
    }
}

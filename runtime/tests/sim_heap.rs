//! The batched heap `kernels/include/gpu_cilk/heap.cuh` under the host simulation of device code
//! (`backend::cuda::sim`): the stress harness of the GPU test `cuda_heap.rs`
//! (`support/heap_stress.rs`, the same scripts and history checks) on small grids, so CI runs the
//! device heap's code, not only compiles it.
//!
//! Every launch is **cooperative** (one host thread per simulated thread: blocks wait for each
//! other's locks, as on a GPU where they are all resident). Grids are small (a few blocks of 8 to
//! 64 threads) to keep a run to seconds on two cores; K = 1024 with 64 threads makes every
//! block-wide step loop 16 times per thread. Differences from the GPU run: one-lane warps, x86's
//! stronger memory model. Skips visibly without a C++ compiler unless `GPU_CILK_REQUIRE_SIM=1`.

#![cfg(target_os = "linux")]

#[path = "support/heap_stress.rs"]
mod stress;

use gpu_cilk_runtime::backend::cuda::sim::{SimBuffer, SimDevice, SimKernel, SimProgram};
use gpu_cilk_runtime::backend::cuda::{LaunchDims, ProgramSource};
use gpu_cilk_runtime::Error;
use gpu_cilk_test_support::mirror::heap as mirror;
use gpu_cilk_test_support::target::sim_device;
use stress::{source_with, stress, Batches, Cfg, Dist, Params, Watch, MIXED, PHASED};

type Dev = SimDevice;
type Buf<T> = SimBuffer<T>;
type Kern<P> = SimKernel<P>;

/// The stress kernel `name`, launched cooperatively; every block of the small grids is resident.
fn open_kernel(dev: &Dev, name: &str, _threads: u32, _smem: u32, load_batch: u32) -> (SimProgram, Kern<Params>, u32) {
    let program = dev.load_program(&source_with(load_batch)).unwrap_or_else(|e| panic!("compiling heap_test.cu: {e}"));
    // SAFETY: the kernel takes one `gc_heap_test_params` (mirrored by `Params`; `SimProgram::kernel`
    // checks the size); every launch of the harness passes live buffers sized for its script: `n`
    // kinds, lengths, statuses, `n * K` input and output keys, `2n` stamps, one clock, and a heap
    // header whose arrays hold `slots * K` keys, `slots` state words and `K` buffer keys.
    let kernel = unsafe { program.kernel::<Params>(name) }.unwrap().cooperative();
    (program, kernel, u32::MAX)
}

/// Waits for a launch: the simulation runs a launch to its end before returning (no watchdog).
fn finish(dev: &Dev, _what: &str, _watch: &Watch) -> Result<(), Error> {
    dev.sync()
}

fn small(k: u32, wide: bool, threads: u32) -> Cfg {
    Cfg::mixed(k, wide, 6, threads, 12)
}

#[test]
fn small_nodes_all_distributions() {
    let Some(dev) = sim_device("small_nodes_all_distributions") else { return };
    let mut cfgs = vec![Cfg { batches: Batches::Full, ..small(1, false, 8) }];
    for dist in [Dist::Random, Dist::Ascending, Dist::Descending, Dist::Equal] {
        cfgs.push(Cfg { dist, ..small(4, true, 8) });
    }
    cfgs.push(Cfg { phases: PHASED, batches: Batches::Partial, ..small(64, true, 32) });
    stress(&dev, &cfgs);
}

#[test]
fn large_nodes_fewer_threads_than_keys() {
    let Some(dev) = sim_device("large_nodes_fewer_threads_than_keys") else { return };
    let big = Cfg { ops_per_block: 6, phases: PHASED, batches: Batches::Full, ..small(1024, false, 64) };
    // K = 2048: more keys per node than a block may have threads (every step loops 32 times).
    let biggest = Cfg { blocks: 3, ops_per_block: 4, ..small(2048, false, 64) };
    stress(
        &dev,
        &[
            Cfg { blocks: 4, ..small(256, false, 64) },
            big,
            Cfg { phases: MIXED, batches: Batches::Mixed, ..big },
            biggest,
            Cfg { phases: PHASED, batches: Batches::Full, ..biggest },
        ],
    );
}

/// heap.cuh's LOAD BATCH (GC_HEAP_LOAD_BATCH: several loads in flight per thread before any
/// store to shared memory) moves the same keys: the history checker on small and large nodes,
/// with fewer threads than words (every load loops) and batches that end inside a round.
#[test]
fn batched_loads_keep_every_history_correct() {
    let Some(dev) = sim_device("batched_loads_keep_every_history_correct") else { return };
    let big = Cfg { ops_per_block: 6, phases: PHASED, batches: Batches::Full, ..small(1024, false, 64) };
    stress(
        &dev,
        &[
            Cfg { load_batch: 8, ..small(64, true, 32) },
            Cfg { load_batch: 3, dist: Dist::Equal, ..small(256, false, 64) },
            Cfg { load_batch: 8, ..big },
            Cfg { load_batch: 32, phases: MIXED, batches: Batches::Mixed, ..big },
        ],
    );
}

/// Issue 12's GPU hang was in the K = 1 configuration on 256 blocks (one key per node: deep trees,
/// many bottom-up inserts waiting on each other, every operation through the heap lock): the same
/// shape on as many host threads as two cores bear, mixed traffic (top-down inserts beside deletes)
/// and the insert-everything phase (bottom-up inserts only) then the delete-everything phase, and
/// mixed traffic again with lock holders stalling at random (`chaos`: 5 % of lock steps stall up
/// to 200 us, heap_test.cu's `GC_HEAP_CHAOS` hook).
#[test]
fn tiny_nodes_many_blocks() {
    let Some(dev) = sim_device("tiny_nodes_many_blocks") else { return };
    let base = Cfg { blocks: 64, ops_per_block: 60, batches: Batches::Full, ..small(1, false, 2) };
    stress(
        &dev,
        &[base, Cfg { phases: PHASED, dist: Dist::Descending, ..base }, Cfg { blocks: 32, chaos: 50, ..base }],
    );
}

/// Issue 12's H100 livelock, as a probe: a delete waiting for its `TARGET` last node takes no
/// lock while it waits (`support/heap_stress.rs`, `wait_last_probe`).
#[test]
fn delete_waits_for_its_target_last_node_without_locking_it() {
    let Some(dev) = sim_device("delete_waits_for_its_target_last_node_without_locking_it") else { return };
    stress::wait_last_probe(&dev, 2);
}

/// heap.cuh's TUNING variants (the implementation before the switches, and each optimization
/// off alone; the default word 0 runs in every test above) under the same history checks, the
/// fused default also with stalling lock holders.
#[test]
fn tuning_variants() {
    let Some(dev) = sim_device("tuning_variants") else { return };
    let mut cfgs = Vec::new();
    for tune in [
        mirror::TUNE_LEGACY,
        mirror::TUNE_PLAIN_DELETE,
        mirror::TUNE_SERIAL_PAIR,
        mirror::TUNE_SC_FENCES,
        mirror::TUNE_LOAD_FIRST,
        1 << mirror::TUNE_HOT_SHIFT | 1 << mirror::TUNE_HLOCK_SHIFT | 1 << mirror::TUNE_NODE_SHIFT,
    ] {
        cfgs.push(Cfg { tune, ..small(4, true, 8) });
        cfgs.push(Cfg { tune, phases: PHASED, batches: Batches::Full, ..small(4, true, 8) });
    }
    cfgs.push(Cfg { blocks: 16, ops_per_block: 24, batches: Batches::Full, chaos: 50, ..small(1, false, 2) });
    cfgs.push(Cfg { phases: PHASED, chaos: 50, ..small(4, true, 4) });
    stress(&dev, &cfgs);
}

/// The benchmark's kernels (`benches/cuda/heap_bench.cu`, `gpu_suite --only heap`) built with
/// heap.cuh's PROFILE, on a small grid, with the default tuning and the legacy one: every key
/// comes back (the bench's own counters), the header ends quiescent, and the phase counters add
/// up (one insert per batch, one delete per node plus each block's final empty one, the phases
/// of a delete within its total).
#[test]
fn bench_kernels_with_the_profile() {
    use mirror::*;
    let Some(dev) = sim_device("bench_kernels_with_the_profile") else { return };
    const K: u64 = 8;
    let (blocks, threads, nodes_in) = (4u32, 4u32, 24u64);
    let n = K * nodes_in;
    let src = ProgramSource::new("heap_bench", HEAP_BENCH_CU)
        .header("gpu_cilk/portable.cuh", gpu_cilk_kernels::PORTABLE_CUH)
        .header("gpu_cilk/heap.cuh", gpu_cilk_kernels::HEAP_CUH)
        .option("-DGC_HEAP_PROFILE")
        .option("-DHB_KERNEL_LIST=HB_KERNELS(8)");
    let program = dev.load_program(&src).unwrap_or_else(|e| panic!("compiling heap_bench.cu: {e}"));
    // SAFETY: every kernel of heap_bench.cu takes one `HbParams` (mirrored); the launches below
    // pass a header whose arrays hold `slots * K` keys, `slots` state words and K buffer keys, a
    // key array of max(n, blocks * K) keys, six counters and `blocks * PROF_WORDS` profile words.
    let (fill, ins, del) = unsafe {
        (
            program.kernel::<HbParams>("hb_fill").unwrap().cooperative(),
            program.kernel::<HbParams>("hb_insert_k8").unwrap().cooperative(),
            program.kernel::<HbParams>("hb_delete_k8").unwrap().cooperative(),
        )
    };
    for tune in [0, TUNE_LEGACY] {
        let capacity = nodes_in + blocks as u64 + 2;
        let slots = GcHeap::slots(capacity);
        let nodes = dev.alloc_zeroed::<DevKey32>((slots * K) as usize).unwrap();
        let states = dev.alloc_zeroed::<u64>(slots as usize).unwrap();
        let pbuf = dev.alloc_zeroed::<DevKey32>(K as usize).unwrap();
        let prof = dev.alloc_zeroed::<u64>(blocks as usize * PROF_WORDS).unwrap();
        let header = GcHeap {
            tune,
            prof: prof.ptr().addr(),
            ..GcHeap::empty(nodes.ptr().addr(), states.ptr().addr(), pbuf.ptr().addr(), K, capacity)
        };
        let heap = dev.htod(&[header]).unwrap();
        let keys = dev.alloc_zeroed::<DevKey32>(n.max(blocks as u64 * K) as usize).unwrap();
        let counters = dev.alloc_zeroed::<u64>(6).unwrap();
        let p = HbParams {
            heap: heap.ptr(),
            keys: keys.ptr(),
            counters: counters.ptr(),
            n,
            batch: K as u32,
            seed: 1,
            dist: 0,
            pad: 0,
        };
        fill.launch(LaunchDims::linear(2, 32), &p).unwrap();
        dev.sync().unwrap();
        let input = dev.dtoh(&keys).unwrap();
        let sum: u64 = input[..n as usize].iter().map(|k| k.prio as u64).sum();
        let smem = mirror::smem_bytes(K as u32, 8);
        ins.launch(LaunchDims::linear(blocks, threads).shared_mem(smem), &p).unwrap();
        dev.sync().unwrap();
        del.launch(LaunchDims::linear(blocks, threads).shared_mem(smem), &p).unwrap();
        dev.sync().unwrap();
        let c = dev.dtoh(&counters).unwrap();
        let xor = (0..n).fold(0u64, |x, i| x ^ i);
        assert_eq!(c, [n, sum, xor, 0, 0, 0], "tune {tune:#x}: keys, sum, xor, unsorted, partial, failed inserts");
        let h = dev.dtoh(&heap).unwrap()[0];
        assert_eq!((h.error, h.count, h.pbuf_len, h.hlock, h.mode), (0, 0, 0, 0, 0), "tune {tune:#x}: {h:?}");
        let pr = Profile::sum(&dev.dtoh(&prof).unwrap());
        assert_eq!(pr.w[P_INS_OPS], nodes_in, "tune {tune:#x}: one insert per batch");
        assert_eq!(
            pr.w[P_DEL_OPS],
            nodes_in + blocks as u64,
            "tune {tune:#x}: a delete per node, an empty one per block"
        );
        let parts: u64 =
            [P_DEL_WAIT_MODE, P_DEL_WAIT_HLOCK, P_DEL_WAIT_ROOT, P_DEL_ROOT_HLOCK, P_DEL_ROOT_REST, P_DEL_BELOW]
                .iter()
                .map(|&s| pr.w[s])
                .sum();
        assert!(parts <= pr.w[P_DEL_TOTAL], "tune {tune:#x}: delete phases {parts} > total {}", pr.w[P_DEL_TOTAL]);
        assert!(pr.w[P_DEL_ROOT_HLOCK] > 0 && pr.w[P_DEL_ROOT_REST] > 0, "tune {tune:#x}: root phases {:?}", pr.w);
        assert!(pr.w[P_DEL_LEVELS] >= nodes_in, "tune {tune:#x}: every sifting delete visits a level");
        assert!(pr.w[P_INS_SORT] > 0 && pr.w[P_INS_HOLD_HLOCK] > 0, "tune {tune:#x}: insert phases {:?}", pr.w);
        // The two-child levels' phases: counted, each timed, and inside the levels' time.
        assert!(pr.w[P_DEL_LVL_N] > 0 && pr.w[P_DEL_LVL_N] <= pr.w[P_DEL_LEVELS], "tune {tune:#x}: {:?}", pr.w);
        let lvl = [P_DEL_LVL_LOAD, P_DEL_LVL_MERGE1, P_DEL_LVL_MERGE2, P_DEL_LVL_UNLOCK];
        assert!(lvl.iter().all(|&s| pr.w[s] > 0), "tune {tune:#x}: level phases {:?}", pr.w);
        let lvl_sum: u64 = lvl.iter().map(|&s| pr.w[s]).sum();
        assert!(
            lvl_sum <= pr.w[P_DEL_ROOT_REST] + pr.w[P_DEL_BELOW],
            "tune {tune:#x}: level phases {lvl_sum} > the sift-down's time"
        );
        let text = pr.summary(1e6, 1e6);
        assert!(
            text.starts_with("delete: ") && text.contains("\ntwo-child level (") && text.contains("\ninsert: "),
            "{text}"
        );
        println!("tune {tune:#x}:\n{text}");
    }
}

//! GPU-side checks of the batched heap `kernels/include/gpu_cilk/heap.cuh`, driving the kernels of
//! `kernels/tests/heap_test.cu` (compiled with NVRTC from the test source plus the header as an
//! in-memory include, `gpu_cilk_kernels::HEAP_CUH`).
//!
//! - `kernels_compile_with_the_mirrored_parameter_layout` (NVRTC only, no GPU; runs in CI): every
//!   instantiation (K = 1, 4, 64, 256, 1024; 8- and 16-byte keys) is in the PTX for compute_80 and
//!   compute_90 and takes one parameter of exactly the size of its Rust mirror.
//! - The stress tests (need a GPU): many blocks (as many as are resident at once, up to the
//!   configured number) run host-made scripts of inserts and delete-mins: tiny and large K, full
//!   and partial batches, random, ascending, descending and equal priorities, mixed traffic and
//!   insert-then-delete phases. Every operation is stamped on the device before and after (one
//!   global counter), its keys recorded, the heap drained, and the whole history goes through
//!   the checker of `support/heap_history.rs` (the one the Rust twin's stress test uses):
//!   multiset preserved, nothing lost or duplicated, batches sorted and full unless the heap had
//!   no node, no delete returns a key larger than one in the heap during its whole execution.
//!   Then the header must be quiescent (no fault, mode and locks clear, empty) and every state
//!   word EMPTY. Each prints its summary (`--nocapture`).
//!
//! The stress tests need a GPU, so they are `#[ignore]`d (see `support/gate.rs`); the layout test
//! needs only NVRTC. Run on a GPU machine with `LD_LIBRARY_PATH=/usr/local/cuda/lib64 cargo test -p
//! gpu-cilk-runtime --test cuda_heap -- --include-ignored --nocapture`.

#[path = "support/gpu.rs"]
mod gpu;
#[path = "support/heap_history.rs"]
mod history;
#[path = "support/heap_mirror.rs"]
mod mirror;

use gpu::{device, gate};
use gpu_cilk_runtime::backend::cuda::{
    compile, Arch, CudaDevice, DeviceBuffer, DeviceCopy, DevicePtr, LaunchDims, ProgramSource,
};
use gpu_cilk_runtime::Error;
use history::{check, Op, OpKind};
use mirror::{smem_bytes, DevKey32, DevKey64, GcHeap};

const TEST_CU: &str = include_str!("../../kernels/tests/heap_test.cu");

fn source() -> ProgramSource {
    ProgramSource::new("heap_test", TEST_CU).header("gpu_cilk/heap.cuh", gpu_cilk_kernels::HEAP_CUH)
}

/// Mirrors `gc_heap_test_params`.
#[repr(C)]
#[derive(Clone, Copy)]
struct Params {
    heap: DevicePtr<GcHeap>,
    in_keys: u64,
    op_kind: DevicePtr<u32>,
    op_len: DevicePtr<u32>,
    out_keys: u64,
    out_len: DevicePtr<u32>,
    op_status: DevicePtr<u32>,
    stamps: DevicePtr<u64>,
    clock: DevicePtr<u64>,
    ops_per_block: u32,
    pad: u32,
}
// SAFETY: repr(C): nine 8-byte words then two u32 (80 bytes, no padding, every bit pattern
// valid), the layout of `gc_heap_test_params` (static_assert'ed 80 in heap_test.cu).
unsafe impl DeviceCopy for Params {}

/// The instantiations of heap_test.cu: (K, 16-byte keys).
const KERNELS: [(u32, bool); 5] = [(1, false), (4, true), (64, true), (256, false), (1024, false)];

fn kernel_name(k: u32, wide: bool) -> String {
    format!("gc_heap_test_ops_k{k}_{}", if wide { "u64" } else { "u32" })
}

/// A device key type of the tests: built from (priority, unique id), compared as a pair.
trait TestKey: DeviceCopy + Default {
    const BYTES: u32;
    fn make(prio: u32, id: u64) -> Self;
    fn pair(&self) -> (u32, u64);
}

impl TestKey for DevKey32 {
    const BYTES: u32 = 8;
    fn make(prio: u32, id: u64) -> Self {
        DevKey32 { prio, payload: u32::try_from(id).expect("test ids fit u32") }
    }
    fn pair(&self) -> (u32, u64) {
        (self.prio, self.payload as u64)
    }
}

impl TestKey for DevKey64 {
    const BYTES: u32 = 16;
    fn make(prio: u32, id: u64) -> Self {
        DevKey64 { prio, pad: 0, payload: id | (1u64 << 40) } // ids above u32: exercise the wide payload
    }
    fn pair(&self) -> (u32, u64) {
        (self.prio, self.payload)
    }
}

#[derive(Clone, Copy, Debug)]
enum Dist {
    Random,
    Ascending,
    Descending,
    Equal,
}

#[derive(Clone, Copy, Debug)]
enum Batches {
    Full,
    Partial,
    Mixed,
}

#[derive(Clone, Copy, Debug)]
struct Cfg {
    k: u32,
    wide: bool,
    blocks: u32,
    threads: u32,
    ops_per_block: u32,
    /// Percent inserts, one entry per launch (a phase).
    phases: &'static [u32],
    batches: Batches,
    dist: Dist,
}

/// splitmix64.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

// ---- NVRTC (no GPU) ----------------------------------------------------------------------------

#[test]
fn kernels_compile_with_the_mirrored_parameter_layout() {
    let size = std::mem::size_of::<Params>();
    assert_eq!(size, 80);
    for arch in [Arch::new(8, 0), Arch::new(9, 0)] {
        let ptx = match compile(&source(), arch) {
            Ok(p) => p,
            Err(e @ Error::BackendUnavailable { .. }) if !gate::require_nvrtc() => {
                gate::nvrtc_missing("kernels_compile_with_the_mirrored_parameter_layout", &e);
                return;
            }
            Err(e) => panic!("compiling heap_test.cu for {arch}: {e}"),
        };
        for (k, wide) in KERNELS {
            let kernel = kernel_name(k, wide);
            let entry = format!(".entry {kernel}(");
            let at = ptx.find(&entry).unwrap_or_else(|| panic!("{arch}: `{kernel}` missing from the PTX"));
            let params = &ptx[at + entry.len()..];
            let params = &params[..params.find(')').expect("end of the parameter list")];
            assert_eq!(params.matches(".param").count(), 1, "{arch}: `{kernel}` must take one parameter: {params}");
            assert!(
                params.contains(&format!("{kernel}_param_0[{size}]")),
                "{arch}: `{kernel}` takes {params:?}, the Rust mirror is {size} bytes"
            );
        }
        assert!(ptx.contains(".entry gc_heap_test_smem_sizes("), "{arch}: gc_heap_test_smem_sizes missing");
        // No static shared memory in the header's code: only the kernels' dynamic workspace.
        let static_shared: Vec<&str> =
            ptx.lines().filter(|l| l.contains(".shared") && l.contains(".b8") && !l.contains(".extern")).collect();
        assert!(static_shared.is_empty(), "{arch}: static shared memory declared: {static_shared:?}");
    }
}

// ---- GPU stress ----------------------------------------------------------------------------------

struct Script<Kt> {
    kind: Vec<u32>,
    len: Vec<u32>,
    keys: Vec<Kt>,
}

fn make_script<Kt: TestKey>(cfg: &Cfg, blocks: u32, insert_pct: u32, rng: &mut Rng, next_id: &mut u64) -> Script<Kt> {
    let k = cfg.k as usize;
    let ops = (blocks * cfg.ops_per_block) as usize;
    let mut s = Script { kind: vec![0; ops], len: vec![0; ops], keys: vec![Kt::default(); ops * k] };
    for i in 0..ops {
        if rng.below(100) >= insert_pct as u64 {
            s.kind[i] = 1;
            continue;
        }
        let len = match cfg.batches {
            Batches::Full => k,
            Batches::Partial => 1 + rng.below(k.max(2) as u64 - 1) as usize,
            Batches::Mixed if rng.below(2) == 0 => k,
            Batches::Mixed => 1 + rng.below(k as u64) as usize,
        }
        .min(k);
        s.len[i] = len as u32;
        for j in 0..len {
            *next_id += 1;
            let prio = match cfg.dist {
                Dist::Random => rng.next() as u32,
                Dist::Ascending => *next_id as u32,
                Dist::Descending => u32::MAX - *next_id as u32,
                Dist::Equal => 7,
            };
            s.keys[i * k + j] = Kt::make(prio, *next_id);
        }
    }
    s
}

/// One launch of `script` on `blocks` blocks; appends its operations to `ops`.
#[allow(clippy::too_many_arguments)]
fn launch<Kt: TestKey>(
    dev: &CudaDevice,
    kernel: &gpu_cilk_runtime::backend::cuda::Kernel<Params>,
    cfg: &Cfg,
    heap: &DeviceBuffer<GcHeap>,
    clock: &DeviceBuffer<u64>,
    blocks: u32,
    script: &Script<Kt>,
    ops: &mut Vec<Op<(u32, u64)>>,
) -> Result<(), Error> {
    let k = cfg.k as usize;
    let n = script.kind.len();
    let in_keys = dev.htod(&script.keys)?;
    let kind = dev.htod(&script.kind)?;
    let len = dev.htod(&script.len)?;
    let out_keys = dev.alloc_zeroed::<Kt>(n * k)?;
    let out_len = dev.alloc_zeroed::<u32>(n)?;
    let status = dev.alloc_zeroed::<u32>(n)?;
    let stamps = dev.alloc_zeroed::<u64>(2 * n)?;
    let p = Params {
        heap: heap.ptr(),
        in_keys: in_keys.ptr().addr(),
        op_kind: kind.ptr(),
        op_len: len.ptr(),
        out_keys: out_keys.ptr().addr(),
        out_len: out_len.ptr(),
        op_status: status.ptr(),
        stamps: stamps.ptr(),
        clock: clock.ptr(),
        ops_per_block: (n as u32) / blocks,
        pad: 0,
    };
    let dims = LaunchDims::linear(blocks, cfg.threads).shared_mem(smem_bytes(cfg.k, Kt::BYTES));
    kernel.launch(dims, &p)?;
    dev.sync()?;
    let (outs, out_len, status, stamps) =
        (dev.dtoh(&out_keys)?, dev.dtoh(&out_len)?, dev.dtoh(&status)?, dev.dtoh(&stamps)?);
    for i in 0..n {
        let who = i as u32 / p.ops_per_block;
        let (start, end) = (stamps[2 * i], stamps[2 * i + 1]);
        if script.kind[i] == 0 {
            assert_eq!(status[i], 0, "{cfg:?}: insert {i} returned {}", status[i]);
            let keys = script.keys[i * k..i * k + script.len[i] as usize].iter().map(|x| x.pair()).collect();
            ops.push(Op { kind: OpKind::Insert, start, end, keys, who });
        } else {
            let m = out_len[i] as usize;
            assert!(m <= k, "{cfg:?}: delete {i} reported {m} keys");
            let keys = outs[i * k..i * k + m].iter().map(|x| x.pair()).collect();
            ops.push(Op { kind: OpKind::Delete, start, end, keys, who });
        }
    }
    Ok(())
}

fn stress_typed<Kt: TestKey>(dev: &CudaDevice, cfg: Cfg, seed: u64) {
    let program = dev.load_program(&source()).unwrap_or_else(|e| panic!("compiling heap_test.cu: {e}"));
    // SAFETY: the kernel takes one `gc_heap_test_params` (mirrored by `Params`, size checked by
    // the NVRTC test); every launch below passes live buffers sized for its script: `n` kinds,
    // lengths, statuses, `n * K` input and output keys, `2n` stamps, one clock, and a heap
    // header whose arrays hold `slots * K` keys, `slots` state words and `K` buffer keys.
    let kernel = unsafe { program.kernel::<Params>(&kernel_name(cfg.k, cfg.wide)) }.unwrap();
    let smem = smem_bytes(cfg.k, Kt::BYTES);
    let per_sm = kernel.max_active_blocks_per_sm(cfg.threads, smem as usize).unwrap();
    let resident = dev.info().multiprocessors * per_sm;
    assert!(resident > 0, "{cfg:?}: no block of {} threads with {smem} B fits", cfg.threads);
    let blocks = cfg.blocks.min(resident);
    let k = cfg.k as u64;
    let max_keys = blocks as u64 * cfg.ops_per_block as u64 * k * cfg.phases.len() as u64;
    let capacity = max_keys / k + blocks as u64 + 2;
    let slots = GcHeap::slots(capacity);
    let nodes = dev.alloc_zeroed::<Kt>((slots * k) as usize).unwrap();
    let states = dev.alloc_zeroed::<u64>(slots as usize).unwrap();
    let pbuf = dev.alloc_zeroed::<Kt>(k as usize).unwrap();
    let heap =
        dev.htod(&[GcHeap::empty(nodes.ptr().addr(), states.ptr().addr(), pbuf.ptr().addr(), k, capacity)]).unwrap();
    let clock = dev.htod(&[1u64]).unwrap();
    let mut rng = Rng(seed);
    let mut next_id = 0u64;
    let mut ops = Vec::new();
    for &pct in cfg.phases {
        eprintln!("{cfg:?}: a phase of {pct}% inserts on {blocks} blocks");
        let script = make_script::<Kt>(&cfg, blocks, pct, &mut rng, &mut next_id);
        launch(dev, &kernel, &cfg, &heap, &clock, blocks, &script, &mut ops).unwrap();
    }
    // Drain with one block, recorded like every other delete, until a delete finds nothing.
    // Every delete of a non-empty heap returns at least one key, so a heap that holds at most
    // `max_keys` keys drains in at most `max_keys / 64 + 1` launches: more is a failure, not a hang.
    let drain_cfg = Cfg { ops_per_block: 64, ..cfg };
    eprintln!("{cfg:?}: {} operations on {blocks} blocks, draining", ops.len());
    for launches in 0.. {
        assert!(launches <= max_keys / 64 + 1, "{cfg:?}: the drain did not end after {launches} launches");
        let script = Script { kind: vec![1; 64], len: vec![0; 64], keys: vec![Kt::default(); 64 * cfg.k as usize] };
        let before = ops.len();
        launch(dev, &kernel, &drain_cfg, &heap, &clock, 1, &script, &mut ops).unwrap();
        if ops[before..].iter().any(|o| o.keys.is_empty()) {
            break;
        }
    }
    let h = dev.dtoh(&heap).unwrap()[0];
    assert_eq!(h.error, 0, "{cfg:?}: the heap recorded protocol fault {}", h.error);
    assert_eq!((h.count, h.pbuf_len, h.hlock, h.mode), (0, 0, 0, 0), "{cfg:?}: not quiescent and empty: {h:?}");
    let words = dev.dtoh(&states).unwrap();
    if let Some(i) = words.iter().position(|&w| w != 0) {
        panic!("{cfg:?}: node {i} has state word {:#x} after the drain", words[i]);
    }
    let summary = check(&ops, cfg.k as usize).unwrap_or_else(|e| panic!("{cfg:?} (seed {seed:#x}): {e}"));
    println!("{cfg:?} on {blocks} blocks: {summary}");
    eprintln!("{cfg:?} on {blocks} blocks: {summary}");
}

fn stress(test: &str, cfgs: &[Cfg]) {
    let dev = device(test);
    for (i, cfg) in cfgs.iter().enumerate() {
        let seed = 0x6865_6170 ^ (i as u64) << 32 ^ cfg.k as u64;
        if cfg.wide {
            stress_typed::<DevKey64>(&dev, *cfg, seed);
        } else {
            stress_typed::<DevKey32>(&dev, *cfg, seed);
        }
    }
}

const MIXED: &[u32] = &[55];
const PHASED: &[u32] = &[100, 0];

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn tiny_nodes_many_blocks_all_distributions() {
    let mut cfgs = vec![Cfg {
        k: 1,
        wide: false,
        blocks: 256,
        threads: 32,
        ops_per_block: 200,
        phases: MIXED,
        batches: Batches::Full,
        dist: Dist::Random,
    }];
    for dist in [Dist::Random, Dist::Ascending, Dist::Descending, Dist::Equal] {
        cfgs.push(Cfg {
            k: 4,
            wide: true,
            blocks: 512,
            threads: 64,
            ops_per_block: 100,
            phases: MIXED,
            batches: Batches::Mixed,
            dist,
        });
    }
    stress("tiny_nodes_many_blocks_all_distributions", &cfgs);
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn mid_nodes_full_partial_and_mixed_batches() {
    let base = Cfg {
        k: 64,
        wide: true,
        blocks: 264,
        threads: 128,
        ops_per_block: 60,
        phases: MIXED,
        batches: Batches::Mixed,
        dist: Dist::Random,
    };
    stress(
        "mid_nodes_full_partial_and_mixed_batches",
        &[
            base,
            Cfg { batches: Batches::Full, ..base },
            Cfg { batches: Batches::Partial, dist: Dist::Descending, ..base },
            Cfg { dist: Dist::Equal, ..base },
            Cfg { phases: &[85, 25], dist: Dist::Ascending, ..base },
        ],
    );
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn large_nodes_mixed_and_phased() {
    let base = Cfg {
        k: 256,
        wide: false,
        blocks: 264,
        threads: 256,
        ops_per_block: 30,
        phases: MIXED,
        batches: Batches::Mixed,
        dist: Dist::Random,
    };
    let big = Cfg {
        k: 1024,
        wide: false,
        blocks: 264,
        threads: 512,
        ops_per_block: 12,
        phases: PHASED,
        batches: Batches::Full,
        dist: Dist::Random,
    };
    stress(
        "large_nodes_mixed_and_phased",
        &[
            base,
            Cfg { phases: PHASED, batches: Batches::Full, dist: Dist::Descending, ..base },
            big,
            Cfg { dist: Dist::Ascending, ..big },
            Cfg { phases: MIXED, batches: Batches::Mixed, ..big },
        ],
    );
}

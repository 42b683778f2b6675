//! The stress harness of the batched heap `kernels/include/gpu_cilk/heap.cuh`, shared by the GPU
//! test (`cuda_heap.rs`) and its host-simulation twin (`sim_heap.rs`): host-made scripts of
//! inserts and delete-mins over many blocks (tiny and large K, full and partial batches, random,
//! ascending, descending and equal priorities, mixed traffic and insert-then-delete phases), every
//! operation stamped on the device before and after, the heap drained, the whole history checked
//! by `heap_history.rs` (multiset preserved, nothing lost or duplicated, batches sorted and full
//! unless the heap had no node, no delete returns a key larger than one in the heap during its
//! whole execution), then the header quiescent and every state word EMPTY.
//!
//! The including test file names its device at its crate root: `Dev` (with `alloc_zeroed`,
//! `htod`, `dtoh`, `sync`), `Buf<T>` (its buffers), `Kern<P>` (a kernel with `launch(dims, &p)`),
//! `open_kernel(dev, name, threads, smem, load_batch) -> (program, kernel, resident blocks)` and
//! `finish(dev, what, &Watch) -> Result<(), Error>`, which waits for a launch (the GPU test with a
//! watchdog that dumps the heap's per-block trace words, `Watch`, when it does not finish).

#![allow(dead_code)]

use super::{open_kernel, Buf, Dev, Kern};
use gpu_cilk_runtime::backend::cuda::{DeviceCopy, DevicePtr, LaunchDims, ProgramSource};
use gpu_cilk_runtime::Error;
use gpu_cilk_test_support::heap_history::{check, Op, OpKind};
use gpu_cilk_test_support::mirror::heap::{
    describe_hlock, describe_state, describe_trace, smem_bytes, DevKey32, DevKey64, GcHeap, TRACE_WORDS,
};
use gpu_cilk_test_support::splitmix::Rng;

pub const TEST_CU: &str = include_str!("../../../kernels/tests/heap_test.cu");

pub fn source() -> ProgramSource {
    ProgramSource::new("heap_test", TEST_CU)
        .header("gpu_cilk/portable.cuh", gpu_cilk_kernels::PORTABLE_CUH)
        .header("gpu_cilk/heap.cuh", gpu_cilk_kernels::HEAP_CUH)
}

/// [`source`] built with heap.cuh's GC_HEAP_LOAD_BATCH = `load_batch` (0: the header's default).
pub fn source_with(load_batch: u32) -> ProgramSource {
    match load_batch {
        0 => source(),
        n => source().option(format!("-DGC_HEAP_LOAD_BATCH={n}")),
    }
}

/// Mirrors `gc_heap_test_params`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct Params {
    pub heap: DevicePtr<GcHeap>,
    pub in_keys: u64,
    pub op_kind: DevicePtr<u32>,
    pub op_len: DevicePtr<u32>,
    pub out_keys: u64,
    pub out_len: DevicePtr<u32>,
    pub op_status: DevicePtr<u32>,
    pub stamps: DevicePtr<u64>,
    pub clock: DevicePtr<u64>,
    pub ops_per_block: u32,
    /// The host simulation's `GC_HEAP_CHAOS` permille (heap_test.cu); ignored on a GPU.
    pub chaos: u32,
}
// SAFETY: repr(C): nine 8-byte words then two u32 (80 bytes, no padding, every bit pattern
// valid), the layout of `gc_heap_test_params` (static_assert'ed 80 in heap_test.cu).
unsafe impl DeviceCopy for Params {}

/// The instantiations of heap_test.cu: (K, 16-byte keys).
pub const KERNELS: [(u32, bool); 6] = [(1, false), (4, true), (64, true), (256, false), (1024, false), (2048, false)];

pub fn kernel_name(k: u32, wide: bool) -> String {
    format!("gc_heap_test_ops_k{k}_{}", if wide { "u64" } else { "u32" })
}

/// A device key type of the tests: built from (priority, unique id), compared as a pair.
pub trait TestKey: DeviceCopy + Default {
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
pub enum Dist {
    Random,
    Ascending,
    Descending,
    Equal,
}

#[derive(Clone, Copy, Debug)]
pub enum Batches {
    Full,
    Partial,
    Mixed,
}

#[derive(Clone, Copy, Debug)]
pub struct Cfg {
    pub k: u32,
    pub wide: bool,
    pub blocks: u32,
    pub threads: u32,
    pub ops_per_block: u32,
    /// Percent inserts, one entry per launch (a phase).
    pub phases: &'static [u32],
    pub batches: Batches,
    pub dist: Dist,
    /// Host simulation only: the permille of lock steps at which the holder stalls for up to
    /// 200 us (heap_test.cu's `GC_HEAP_CHAOS` hook); the GPU kernel ignores it (use 0 there).
    pub chaos: u32,
    /// heap.cuh's tuning word (TUNING; `mirror::TUNE_*`), 0: the defaults.
    pub tune: u64,
    /// heap.cuh's GC_HEAP_LOAD_BATCH (a compile-time option: the kernels are built with it),
    /// 0: the header's default.
    pub load_batch: u32,
}

impl Cfg {
    /// Mixed traffic (`MIXED` phases, full and partial batches, random keys), `ops_per_block`
    /// operations on each of `blocks` blocks of `threads` threads, the default switches.
    pub fn mixed(k: u32, wide: bool, blocks: u32, threads: u32, ops_per_block: u32) -> Cfg {
        Cfg {
            k,
            wide,
            blocks,
            threads,
            ops_per_block,
            phases: MIXED,
            batches: Batches::Mixed,
            dist: Dist::Random,
            chaos: 0,
            tune: 0,
            load_batch: 0,
        }
    }
}

pub struct Script<Kt> {
    pub kind: Vec<u32>,
    pub len: Vec<u32>,
    pub keys: Vec<Kt>,
}

pub fn make_script<Kt: TestKey>(
    cfg: &Cfg,
    blocks: u32,
    insert_pct: u32,
    rng: &mut Rng,
    next_id: &mut u64,
) -> Script<Kt> {
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

/// What a watchdog reads of a launch that does not finish: the heap header, its per-block trace
/// words (heap.cuh, DIAGNOSTICS; `TRACE_WORDS` per block) and its node state words.
#[derive(Clone, Copy)]
pub struct Watch<'a> {
    pub heap: &'a Buf<GcHeap>,
    pub trace: &'a Buf<u64>,
    pub states: &'a Buf<u64>,
    pub blocks: u32,
}

/// One snapshot of a running launch: its heap header, trace words and node state words.
pub struct Snapshot {
    pub heap: GcHeap,
    pub trace: Vec<u64>,
    pub states: Vec<u64>,
}

/// What one block did between two snapshots of its trace words `a` then `b`. A block still in
/// the same operation that took locks in between is CYCLING whatever its site (a wait that takes
/// and releases a lock every round reads RUN, 0 back-offs, in both snapshots when they happen to
/// fall between its lock and its unlock, like a block stopped there; word [4] counts its locks).
pub fn trace_motion(a: &[u64], b: &[u64]) -> String {
    let locks = b[4].wrapping_sub(a[4]);
    if a[3] != b[3] {
        "MOVED (another operation)".to_string()
    } else if locks != 0 {
        format!("CYCLING (same operation, +{locks} locks taken)")
    } else if a[0] != b[0] || b[2] < a[2] {
        "MOVED (another site)".to_string()
    } else if b[2] == a[2] {
        "STOPPED (same site, no back-off)".to_string()
    } else {
        format!("spinning (+{} back-offs)", b[2] - a[2])
    }
}

/// The watchdog's report from two snapshots of a running launch, `gap` apart (`blocks` blocks):
/// the header and who holds the heap lock, whether it changed hands between them, how many blocks
/// are at each site and how many of those stopped, then every block (the heap lock's holder
/// first) with what it did between the snapshots, and the locked / INSHOLD / TARGET nodes.
/// A block that STOPPED at a spin site is not spinning there: its thread 0 is elsewhere (a
/// barrier, or a path that writes no trace); one CYCLING keeps taking locks within one operation
/// (a livelock, or a very slow operation).
pub fn hang_report(what: &str, first: &Snapshot, second: &Snapshot, gap: std::time::Duration, blocks: u32) -> String {
    use std::fmt::Write as _;
    let h = &second.heap;
    let mut r = format!(
        "{what}: the launch did not finish. Header: count {}, pbuf_len {}, {}, mode {} deletes / {} bottom-up \
         inserts, next_owner {}, error {}\n",
        h.count,
        h.pbuf_len,
        describe_hlock(h.hlock),
        h.mode >> 32,
        h.mode & 0xffff_ffff,
        h.next_owner,
        h.error
    );
    let _ = writeln!(
        r,
        "  in the {gap:?} between two snapshots: {} heap-lock acquisitions (hlock {} -> {}), count {} -> {}, mode {:#x} -> {:#x}",
        h.hlocks.wrapping_sub(first.heap.hlocks),
        first.heap.hlock,
        h.hlock,
        first.heap.count,
        h.count,
        first.heap.mode,
        h.mode
    );
    let words = |t: &[u64], b: usize| t[b * TRACE_WORDS..(b + 1) * TRACE_WORDS].to_vec();
    let mut sites: std::collections::BTreeMap<String, (u32, u32)> = std::collections::BTreeMap::new();
    for b in 0..blocks as usize {
        let (a, w) = (words(&first.trace, b), words(&second.trace, b));
        let line = describe_trace(b, &w);
        let site = line.split_whitespace().nth(2).unwrap_or("?").to_string();
        let e = sites.entry(site).or_default();
        e.0 += 1;
        if a == w {
            e.1 += 1;
        }
    }
    let by_site: Vec<String> = sites.iter().map(|(s, (n, stopped))| format!("{s} {n} ({stopped} stopped)")).collect();
    let _ = writeln!(r, "  blocks by site: {}", by_site.join(", "));
    let holder = (h.hlock as usize).checked_sub(1).filter(|&b| b < blocks as usize);
    let order = holder.into_iter().chain((0..blocks as usize).filter(|&b| Some(b) != holder));
    for b in order {
        let (a, w) = (words(&first.trace, b), words(&second.trace, b));
        let mark = if Some(b) == holder { " <- holds the heap lock" } else { "" };
        let _ = writeln!(r, "  {}; {}{mark}", describe_trace(b, &w), trace_motion(&a, &w));
    }
    let locked: Vec<String> = second
        .states
        .iter()
        .enumerate()
        .filter(|(_, &s)| s & 4 != 0 || s & 3 == 2 || s & 3 == 3)
        .take(64)
        .map(|(i, &s)| {
            let same = if first.states.get(i) == Some(&s) { "" } else { " (changed)" };
            format!("node {i}: {}{same}", describe_state(s))
        })
        .collect();
    let _ = writeln!(r, "  locked, INSHOLD or TARGET nodes (first 64): {}", locked.join("; "));
    r
}

/// One launch of `script` on `blocks` blocks; appends its operations to `ops`.
#[allow(clippy::too_many_arguments)]
pub fn launch<Kt: TestKey>(
    dev: &Dev,
    kernel: &Kern<Params>,
    cfg: &Cfg,
    heap: &Buf<GcHeap>,
    watch: &Watch,
    clock: &Buf<u64>,
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
        chaos: cfg.chaos,
    };
    let dims = LaunchDims::linear(blocks, cfg.threads).shared_mem(smem_bytes(cfg.k, Kt::BYTES));
    kernel.launch(dims, &p)?;
    super::finish(
        dev,
        &format!("{cfg:?}: a launch of {n} operations on {blocks} blocks"),
        &Watch { blocks, ..*watch },
    )?;
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

pub fn stress_typed<Kt: TestKey>(dev: &Dev, cfg: Cfg, seed: u64) {
    let smem = smem_bytes(cfg.k, Kt::BYTES);
    let (_program, kernel, resident) =
        open_kernel(dev, &kernel_name(cfg.k, cfg.wide), cfg.threads, smem, cfg.load_batch);
    assert!(resident > 0, "{cfg:?}: no block of {} threads with {smem} B fits", cfg.threads);
    let blocks = cfg.blocks.min(resident);
    let k = cfg.k as u64;
    let max_keys = blocks as u64 * cfg.ops_per_block as u64 * k * cfg.phases.len() as u64;
    let capacity = max_keys / k + blocks as u64 + 2;
    let slots = GcHeap::slots(capacity);
    let nodes = dev.alloc_zeroed::<Kt>((slots * k) as usize).unwrap();
    let states = dev.alloc_zeroed::<u64>(slots as usize).unwrap();
    let pbuf = dev.alloc_zeroed::<Kt>(k as usize).unwrap();
    let trace = dev.alloc_zeroed::<u64>(TRACE_WORDS * blocks as usize).unwrap();
    let heap = dev
        .htod(&[GcHeap {
            trace: trace.ptr().addr(),
            tune: cfg.tune,
            ..GcHeap::empty(nodes.ptr().addr(), states.ptr().addr(), pbuf.ptr().addr(), k, capacity)
        }])
        .unwrap();
    let watch = Watch { heap: &heap, trace: &trace, states: &states, blocks };
    let clock = dev.htod(&[1u64]).unwrap();
    let mut rng = Rng(seed);
    let mut next_id = 0u64;
    let mut ops = Vec::new();
    for &pct in cfg.phases {
        eprintln!("{cfg:?}: a phase of {pct}% inserts on {blocks} blocks");
        let script = make_script::<Kt>(&cfg, blocks, pct, &mut rng, &mut next_id);
        let t = std::time::Instant::now();
        launch(dev, &kernel, &cfg, &heap, &watch, &clock, blocks, &script, &mut ops).unwrap();
        eprintln!("{cfg:?}: the phase took {:?} (launch, wait and read-back)", t.elapsed());
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
        launch(dev, &kernel, &drain_cfg, &heap, &watch, &clock, 1, &script, &mut ops).unwrap();
        if ops[before..].iter().any(|o| o.keys.is_empty()) {
            break;
        }
    }
    let h = dev.dtoh(&heap).unwrap()[0];
    assert_eq!(h.error, 0, "{cfg:?}: the heap recorded protocol fault {}", h.error);
    assert_eq!((h.count, h.pbuf_len, h.hlock, h.mode), (0, 0, 0, 0), "{cfg:?}: not quiescent and empty: {h:?}");
    // The trace words (the watchdog's source) were kept: every block ended outside the heap,
    // having recorded an operation.
    let tr = dev.dtoh(&trace).unwrap();
    for b in 0..blocks as usize {
        let w = &tr[b * TRACE_WORDS..(b + 1) * TRACE_WORDS];
        assert!(w[0] >> 56 == 0 && w[3] != 0, "{cfg:?}: trace of a finished launch: {}", describe_trace(b, w));
    }
    let words = dev.dtoh(&states).unwrap();
    if let Some(i) = words.iter().position(|&w| w != 0) {
        panic!("{cfg:?}: node {i} has state word {:#x} after the drain", words[i]);
    }
    let t = std::time::Instant::now();
    let summary = check(&ops, cfg.k as usize).unwrap_or_else(|e| panic!("{cfg:?} (seed {seed:#x}): {e}"));
    println!("{cfg:?} on {blocks} blocks: {summary}");
    eprintln!("{cfg:?} on {blocks} blocks: {summary} (history checked in {:?})", t.elapsed());
}

/// Runs every configuration on `dev` (seeded by its position and K), panicking on the first
/// failure with the configuration and seed.
pub fn stress(dev: &Dev, cfgs: &[Cfg]) {
    for (i, cfg) in cfgs.iter().enumerate() {
        let seed = 0x6865_6170 ^ (i as u64) << 32 ^ cfg.k as u64;
        if cfg.wide {
            stress_typed::<DevKey64>(dev, *cfg, seed);
        } else {
            stress_typed::<DevKey32>(dev, *cfg, seed);
        }
    }
}

/// Issue 12's H100 livelock as a probe (heap_test.cu, `gc_heap_test_wait_last`, 2 blocks of
/// `threads` threads): a delete whose last node is a top-down insert's `TARGET` must wait for it
/// without taking that node's lock (the hang: the delete took and released it every round and the
/// insert's CAS lost every race). Block 1 plays the insert, watches the waiting delete's trace
/// words, then writes the node; the delete must have taken no lock while it waited, the node must
/// never have looked locked, and the heap ends in order (root 20, node 2 30, node 3 EMPTY).
pub fn wait_last_probe(dev: &Dev, threads: u32) {
    let smem = smem_bytes(1, DevKey32::BYTES);
    let (_program, kernel, resident) = open_kernel(dev, "gc_heap_test_wait_last", threads, smem, 0);
    assert!(resident >= 2, "two blocks of {threads} threads must be resident at once");
    let key = |prio: u32, payload: u32| DevKey32 { prio, payload };
    let capacity = 8u64;
    let slots = GcHeap::slots(capacity) as usize;
    let mut keys = vec![DevKey32::default(); slots];
    (keys[1], keys[2]) = (key(10, 1), key(20, 2));
    let mut words = vec![0u64; slots];
    (words[1], words[2], words[3]) = (1, 1, 3); // AVAIL, AVAIL, TARGET
    let nodes = dev.htod(&keys).unwrap();
    let states = dev.htod(&words).unwrap();
    let pbuf = dev.alloc_zeroed::<DevKey32>(1).unwrap();
    let trace = dev.alloc_zeroed::<u64>(2 * TRACE_WORDS).unwrap();
    let heap = dev
        .htod(&[GcHeap {
            trace: trace.ptr().addr(),
            count: 3,
            ..GcHeap::empty(nodes.ptr().addr(), states.ptr().addr(), pbuf.ptr().addr(), 1, capacity)
        }])
        .unwrap();
    let in_keys = dev.htod(&[key(30, 3)]).unwrap();
    let (op_kind, op_len) = (dev.alloc_zeroed::<u32>(1).unwrap(), dev.alloc_zeroed::<u32>(1).unwrap());
    let out_keys = dev.alloc_zeroed::<DevKey32>(1).unwrap();
    let out_len = dev.alloc_zeroed::<u32>(1).unwrap();
    let status = dev.alloc_zeroed::<u32>(4).unwrap();
    let stamps = dev.alloc_zeroed::<u64>(2).unwrap();
    let clock = dev.htod(&[1u64]).unwrap();
    let p = Params {
        heap: heap.ptr(),
        in_keys: in_keys.ptr().addr(),
        op_kind: op_kind.ptr(),
        op_len: op_len.ptr(),
        out_keys: out_keys.ptr().addr(),
        out_len: out_len.ptr(),
        op_status: status.ptr(),
        stamps: stamps.ptr(),
        clock: clock.ptr(),
        ops_per_block: 100_000, // rounds block 1 watches at most
        chaos: 0,
    };
    kernel.launch(LaunchDims::linear(2, threads).shared_mem(smem), &p).unwrap();
    super::finish(dev, "the wait-last probe", &Watch { heap: &heap, trace: &trace, states: &states, blocks: 2 })
        .unwrap();
    let st = dev.dtoh(&status).unwrap();
    let tr = dev.dtoh(&trace).unwrap();
    let why = format!("status {st:?}, delete's trace: {}", describe_trace(0, &tr[..TRACE_WORDS]));
    assert_eq!(st[0], 0, "the waiting delete took {} locks (it must only look): {why}", st[0]);
    assert_eq!(st[2], 1, "the delete was never seen waiting at WAIT_LAST: {why}");
    assert_eq!(st[1], 0, "node 3 looked locked in {} rounds while the delete waited: {why}", st[1]);
    assert_eq!(st[3], 3, "the insert's lock of node 3 found {:#x}, not TARGET: {why}", st[3]);
    assert_eq!((dev.dtoh(&out_len).unwrap()[0], dev.dtoh(&out_keys).unwrap()[0]), (1, key(10, 1)), "{why}");
    let h = dev.dtoh(&heap).unwrap()[0];
    assert_eq!((h.count, h.pbuf_len, h.hlock, h.mode, h.error), (2, 0, 0, 0, 0), "{h:?}");
    let words = dev.dtoh(&states).unwrap();
    assert_eq!(&words[..5], &[0, 1, 1, 0, 0], "state words after the probe");
    let keys = dev.dtoh(&nodes).unwrap();
    assert_eq!((keys[1], keys[2]), (key(20, 2), key(30, 3)), "nodes 1 and 2 after the probe");
}

pub const MIXED: &[u32] = &[55];
pub const PHASED: &[u32] = &[100, 0];

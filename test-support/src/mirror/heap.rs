//! Host mirrors of `kernels/include/gpu_cilk/heap.cuh`'s structs, shared by the heap's tests
//! (`runtime/tests/cuda_heap.rs`, `sim_heap.rs`) and the benchmark suite
//! (`benches/gpu_suite/heap.rs`), so the layout is written down once: the two key layouts and the benchmark's
//! structs; the 256-byte `gc_heap<Key>` header is the runtime's own mirror (`GcHeap`, with its
//! host-side setup rules).

use gpu_cilk_runtime::backend::cuda::{DeviceCopy, DevicePtr};

/// `gc_heap<Key>`'s header: the runtime's own layout-checked mirror (the ready heap uses it too).
pub use gpu_cilk_runtime::backend::cuda::GcHeap;
const _: () = assert!(std::mem::size_of::<GcHeap>() == 256);

/// `benches/cuda/heap_bench.cu`: the heap benchmark's kernels (`gpu_suite --only heap`; run on the
/// host simulation by `sim_heap.rs`).
pub const HEAP_BENCH_CU: &str = include_str!("../../../benches/cuda/heap_bench.cu");

/// Mirrors `struct HbParams` of heap_bench.cu.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct HbParams {
    pub heap: DevicePtr<GcHeap>,
    pub keys: DevicePtr<DevKey32>,
    pub counters: DevicePtr<u64>,
    pub n: u64,
    pub batch: u32,
    pub seed: u32,
    pub dist: u32,
    pub pad: u32,
}
// SAFETY: repr(C): three 8-byte pointers, a u64, four u32 (48 bytes, no padding, every bit
// pattern valid), the layout of `HbParams` (static_assert'ed 48 in heap_bench.cu).
unsafe impl DeviceCopy for HbParams {}

/// heap.cuh's `GC_HEAP_TUNE_*`: bit 0 the plain (unfused) delete, bit 1 serial child locks,
/// bit 2 sequentially consistent fences, bit 3 a load before every lock's first CAS; back-off caps in ns at bits 8 (root wait under the heap
/// lock), 24 (heap lock), 40 (other waits), 0 = the default.
pub const TUNE_PLAIN_DELETE: u64 = 1;
pub const TUNE_SERIAL_PAIR: u64 = 2;
pub const TUNE_SC_FENCES: u64 = 4;
pub const TUNE_LOAD_FIRST: u64 = 8;
pub const TUNE_HOT_SHIFT: u32 = 8;
pub const TUNE_HLOCK_SHIFT: u32 = 24;
pub const TUNE_NODE_SHIFT: u32 = 40;
/// `GC_HEAP_TUNE_LEGACY`: the implementation before the switches.
pub const TUNE_LEGACY: u64 = 15 | (1024 << TUNE_HOT_SHIFT);

/// Words per block of the heap's profile counters (`GC_HEAP_PROF_WORDS`).
pub const PROF_WORDS: usize = 32;

/// Words per block of the heap's trace buffer (`GC_HEAP_TRACE_WORDS`).
pub const TRACE_WORDS: usize = 5;

/// One block's trace words (heap.cuh, DIAGNOSTICS) in words, e.g. `block 3: LOCK_NODE node 17
/// (last seen: 0x2e INSHOLD LOCKED owner 5) after 1234 back-offs; op 7 (delete); 90 locks taken`.
pub fn describe_trace(block: usize, w: &[u64]) -> String {
    let site = match w[0] >> 56 {
        0 => "OUTSIDE",
        1 => "LOCK_HEAP",
        2 => "LOCK_NODE",
        3 => "WAIT_MODE",
        4 => "WAIT_LAST",
        5 => "WAIT_PARENT",
        6 => "RUN",
        _ => "?",
    };
    let node = w[0] & ((1 << 56) - 1);
    let seen = match w[0] >> 56 {
        1 => describe_hlock(w[1]),
        3 => format!("mode {} deletes, {} bottom-up inserts", w[1] >> 32, w[1] & 0xffff_ffff),
        _ => describe_state(w[1]),
    };
    let (kind, op) = (w[3] >> 32, w[3] & 0xffff_ffff);
    let op = if op == 0 {
        "no operation started".to_string()
    } else {
        format!("op {} ({})", op - 1, if kind == 0 { "insert" } else { "delete" })
    };
    format!(
        "block {block:4}: {site} node {node} (last seen: {seen}) after {} back-offs; {op}; {} locks taken",
        w[2], w[4]
    )
}

/// The heap lock word in words: free, or which block holds it (`hlock` is the holder's
/// `blockIdx.x + 1`).
pub fn describe_hlock(w: u64) -> String {
    match w {
        0 => "hlock free".to_string(),
        b => format!("hlock held by block {}", b - 1),
    }
}

/// A node state word in words: kind, LOCKED, owner.
pub fn describe_state(s: u64) -> String {
    let kind = ["EMPTY", "AVAIL", "INSHOLD", "TARGET"][(s & 3) as usize];
    let locked = if s & 4 != 0 { " LOCKED" } else { "" };
    let owner = s >> 3;
    if owner != 0 {
        format!("{s:#x} {kind}{locked} owner {owner}")
    } else {
        format!("{s:#x} {kind}{locked}")
    }
}

/// `gc_heap_key<unsigned, unsigned>`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DevKey32 {
    pub prio: u32,
    pub payload: u32,
}
// SAFETY: repr(C) { u32, u32 }: 8 bytes, no padding, every bit pattern valid.
unsafe impl DeviceCopy for DevKey32 {}

/// `gc_heap_key<unsigned, unsigned long long>`: the device struct has 4 bytes of padding after
/// `prio`; here they are an explicit field (always 0 from the host; the device leaves them
/// unspecified, so comparisons ignore them).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DevKey64 {
    pub prio: u32,
    pub pad: u32,
    pub payload: u64,
}
// SAFETY: repr(C) { u32, u32, u64 }: 16 bytes, no padding, every bit pattern valid.
unsafe impl DeviceCopy for DevKey64 {}
const _: () = assert!(std::mem::size_of::<DevKey32>() == 8 && std::mem::size_of::<DevKey64>() == 16);

/// Dynamic shared memory of one block: `gc_heap_smem_bytes<K, Key>()` (a 64-byte control block
/// and 5K keys).
pub fn smem_bytes(k: u32, key_bytes: u32) -> u32 {
    64 + 5 * k * key_bytes
}

/// heap.cuh's PROFILE counters (`GC_HEAP_P_*`: the word index of each phase in a block's
/// `PROF_WORDS`), summed over the blocks of a run, with the clock's ns per cycle.
#[derive(Clone, Debug, Default)]
pub struct Profile {
    pub w: Vec<u64>,
    /// Nanoseconds per clock64() cycle, from the blocks' first and last clock/globaltimer pairs.
    pub ns_per_cycle: f64,
}

pub const P_DEL_OPS: usize = 0;
pub const P_DEL_TOTAL: usize = 1;
pub const P_DEL_WAIT_MODE: usize = 2;
pub const P_DEL_WAIT_HLOCK: usize = 3;
pub const P_DEL_WAIT_ROOT: usize = 4;
pub const P_DEL_ROOT_HLOCK: usize = 5;
pub const P_DEL_ROOT_REST: usize = 6;
pub const P_DEL_BELOW: usize = 7;
pub const P_DEL_LEVELS: usize = 8;
pub const P_DEL_LOCK_WAIT: usize = 9;
pub const P_DEL_WAIT_KIDS: usize = 10;
pub const P_DEL_LVL_LOAD: usize = 11;
pub const P_INS_OPS: usize = 12;
pub const P_INS_TOTAL: usize = 13;
pub const P_INS_SORT: usize = 14;
pub const P_INS_WAIT_HLOCK: usize = 15;
pub const P_INS_HOLD_HLOCK: usize = 16;
pub const P_INS_LEVELS: usize = 18;
pub const P_INS_TOP_DOWN: usize = 19;
pub const P_INS_WAIT_PARENT: usize = 20;
pub const P_DEL_LVL_MERGE1: usize = 21;
pub const P_DEL_LVL_MERGE2: usize = 22;
pub const P_DEL_LVL_UNLOCK: usize = 23;
pub const P_DEL_LVL_N: usize = 24;
const P_CLK0: usize = 28;
const P_GT0: usize = 29;
const P_CLK1: usize = 30;
const P_GT1: usize = 31;

impl Profile {
    /// Sums the per-block counters `words` (`blocks * PROF_WORDS`, as the device left them).
    pub fn sum(words: &[u64]) -> Profile {
        let mut w = vec![0u64; PROF_WORDS];
        let (mut cycles, mut ns) = (0u64, 0u64);
        for b in words.chunks_exact(PROF_WORDS) {
            for (acc, v) in w.iter_mut().zip(b).take(P_CLK0) {
                *acc = acc.wrapping_add(*v);
            }
            if b[P_CLK0] != 0 && b[P_CLK1] > b[P_CLK0] && b[P_GT1] > b[P_GT0] {
                cycles += b[P_CLK1] - b[P_CLK0];
                ns += b[P_GT1] - b[P_GT0];
            }
        }
        let ns_per_cycle = if cycles > 0 { ns as f64 / cycles as f64 } else { 1.0 };
        Profile { w, ns_per_cycle }
    }

    /// Microseconds per operation of counter `slot` over `ops` operations.
    fn us(&self, slot: usize, ops: u64) -> f64 {
        self.w[slot] as f64 * self.ns_per_cycle / 1e3 / ops.max(1) as f64
    }

    /// Where the time goes, given the insert and delete kernels' wall times in ns: per
    /// operation means of every phase, and the serialized resource's hold time (the root for
    /// deletes, the heap lock for inserts) against the kernel's time per operation.
    pub fn summary(&self, insert_ns: f64, delete_ns: f64) -> String {
        let (d, i) = (self.w[P_DEL_OPS], self.w[P_INS_OPS]);
        let mut s = String::new();
        if d > 0 {
            let cycle = delete_ns / d as f64 / 1e3;
            let hold = self.us(P_DEL_ROOT_HLOCK, d) + self.us(P_DEL_ROOT_REST, d);
            s.push_str(&format!(
                "delete: {d} ops, {cycle:.2} us of kernel time each (the root's cycle); per delete, us: total {:.2}, \
                 wait mode {:.2}, wait hlock {:.2}, wait root (holding hlock) {:.2}, root held {hold:.2} (to hlock \
                 release {:.2}, then first level {:.2}; of the hold, locking the root's children {:.2}: the \
                 previous delete's second level), below the root {:.2} ({:.1} levels, child-lock waits {:.2}); \
                 root held {:.0}% of the cycle, hand-off and idle {:.2} us",
                self.us(P_DEL_TOTAL, d),
                self.us(P_DEL_WAIT_MODE, d),
                self.us(P_DEL_WAIT_HLOCK, d),
                self.us(P_DEL_WAIT_ROOT, d),
                self.us(P_DEL_ROOT_HLOCK, d),
                self.us(P_DEL_ROOT_REST, d),
                self.us(P_DEL_WAIT_KIDS, d),
                self.us(P_DEL_BELOW, d),
                self.w[P_DEL_LEVELS] as f64 / d as f64,
                self.us(P_DEL_LOCK_WAIT, d),
                100.0 * hold / cycle.max(1e-9),
                (cycle - hold).max(0.0),
            ));
            let lv = self.w[P_DEL_LVL_N];
            if lv > 0 {
                s.push_str(&format!(
                    "\ntwo-child level ({lv} of them, {:.1} per delete), us each: load the children {:.2}, merge \
                     them and store one {:.2}, merge with the carried batch and store the parent {:.2}, release \
                     fence and unlocks {:.2}",
                    lv as f64 / d as f64,
                    self.us(P_DEL_LVL_LOAD, lv),
                    self.us(P_DEL_LVL_MERGE1, lv),
                    self.us(P_DEL_LVL_MERGE2, lv),
                    self.us(P_DEL_LVL_UNLOCK, lv),
                ));
            }
        }
        if i > 0 {
            let cycle = insert_ns / i as f64 / 1e3;
            let hold = self.us(P_INS_HOLD_HLOCK, i);
            let rest = self.us(P_INS_TOTAL, i)
                - self.us(P_INS_SORT, i)
                - self.us(P_INS_WAIT_HLOCK, i)
                - self.us(P_INS_HOLD_HLOCK, i);
            if !s.is_empty() {
                s.push('\n');
            }
            s.push_str(&format!(
                "insert: {i} ops ({} top-down or through the buffer), {cycle:.2} us of kernel time each; per insert, \
                 us: total {:.2}, sort {:.2}, wait hlock {:.2}, hlock held {hold:.2}, after hlock {rest:.2} ({:.1} \
                 levels climbed, parent waits {:.2}); hlock held {:.0}% of the cycle",
                self.w[P_INS_TOP_DOWN],
                self.us(P_INS_TOTAL, i),
                self.us(P_INS_SORT, i),
                self.us(P_INS_WAIT_HLOCK, i),
                self.w[P_INS_LEVELS] as f64 / i as f64,
                self.us(P_INS_WAIT_PARENT, i),
                100.0 * hold / cycle.max(1e-9),
            ));
        }
        s
    }
}

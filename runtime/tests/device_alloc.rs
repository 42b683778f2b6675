//! The warp-coalesced allocator `kernels/include/gpu_cilk/xmalloc.cuh`, with the kernels of
//! `kernels/tests/xmalloc_test.cu`. One suite, run on both targets (`device_suite!`): `sim::*` on
//! the host simulation of device code (every run, CI included) and `gpu::*` on a GPU.
//!
//! Every test: init a heap in a region of device memory; threads allocate random sizes (small,
//! medium, large page runs) and write a thread-unique pattern; a second launch verifies every
//! pattern (overlapping live pieces would break one); a third frees; then the heap's counters are
//! back to their initial values and, after trim, one allocation of the whole heap succeeds. The
//! heap's current pointer (`gc_xheap_current`, a `__device__` global set by `xm_init`) carries
//! over between launches on both targets.
//!
//! The simulation runs one-lane warps (so `simd_widths` coalesces nothing: every lane is its own
//! warp) on x86's stronger memory model; it skips visibly without a C++ compiler unless
//! `GPU_CILK_REQUIRE_SIM=1`. The GPU tests are `#[ignore]`d (see `gpu_cilk_test_support::gate`):
//! `cargo test -p gpu-cilk-runtime --test device_alloc -- --include-ignored` on a GPU machine.

use gpu_cilk_runtime::backend::cuda::{DeviceCopy, DevicePtr, LaunchDims, ProgramSource};
use gpu_cilk_test_support::{device_suite, DeviceMem, Launch, Target};

const TEST_CU: &str = include_str!("../../kernels/tests/xmalloc_test.cu");
/// The header with `gpu_cilk/portable.cuh` in front (the file on disk includes it).
const XMALLOC_CUH: &str = gpu_cilk_kernels::XMALLOC_CUH;
/// u64 words of `gc_xheap` (static_assert'ed 960 bytes in xmalloc.cuh).
const HEAP_WORDS: usize = 120;
const BYTES_IN_USE: usize = 8;
const HIGH_WATER: usize = 9;
const FAILED: usize = 10;
const BAD_FREES: usize = 11;
const LIVE_BLOCKS: usize = 12;
const NPAGES: usize = 1;
const QCAP: usize = 3;
const CARVES: usize = 14;
const GATE_WAITS: usize = 15;
const SB_COUNT: usize = 16;

/// Mirrors `struct XmParams` of xmalloc_test.cu.
#[repr(C)]
#[derive(Clone, Copy)]
struct XmParams {
    heap: DevicePtr<u64>,
    region: DevicePtr<u64>,
    bytes: u64,
    ptrs: DevicePtr<u64>,
    counters: DevicePtr<u64>,
    seed: u64,
    n: u32,
    lanes: u32,
    sb_shift: u32,
    qcap_log2: u32,
    max_size: u32,
    rounds: u32,
}
// SAFETY: repr(C) POD (pointers and integers), mirrored field for field by `XmParams` in the .cu.
unsafe impl DeviceCopy for XmParams {}

struct Setup<D: Target> {
    dev: D,
    program: D::Program,
    heap: D::Buffer<u64>,
    _region: D::Buffer<u64>,
    ptrs: D::Buffer<u64>,
    counters: D::Buffer<u64>,
    p: XmParams,
}

impl<D: Target> Setup<D> {
    fn new(dev: D, bytes: usize, sb_shift: u32, threads: u32, max_size: u32) -> Self {
        let program = dev
            .load_program(&ProgramSource::new("xmalloc_test", TEST_CU).header("gpu_cilk/xmalloc.cuh", XMALLOC_CUH))
            .expect("xmalloc_test.cu compiles and loads");
        let heap = dev.alloc_zeroed::<u64>(HEAP_WORDS).unwrap();
        let region = dev.alloc_zeroed::<u64>(bytes / 8).unwrap();
        let ptrs = dev.alloc_zeroed::<u64>(threads as usize).unwrap();
        let counters = dev.alloc_zeroed::<u64>(8).unwrap();
        let p = XmParams {
            heap: heap.ptr(),
            region: region.ptr(),
            bytes: bytes as u64,
            ptrs: ptrs.ptr(),
            counters: counters.ptr(),
            seed: 0x5eed,
            n: threads,
            lanes: 32,
            sb_shift,
            qcap_log2: 0,
            max_size,
            rounds: 1,
        };
        let s = Setup { dev, program, heap, _region: region, ptrs, counters, p };
        s.launch("xm_init", 1024);
        s
    }

    fn launch(&self, name: &str, threads: u32) {
        // SAFETY: every xm_* kernel takes one `XmParams`; ptrs holds `n` words (threads <= n or the
        // kernel checks gid < n), counters 8, heap and region are what gc_xheap_init expects.
        let k = unsafe { D::kernel::<XmParams>(&self.program, name) }.unwrap();
        k.launch(LaunchDims::cover(threads as usize, 256), &self.p).unwrap();
        self.dev.sync().unwrap_or_else(|e| panic!("{name}: {e}"));
    }

    fn heap_words(&self) -> Vec<u64> {
        self.dev.dtoh(&self.heap).unwrap()
    }

    fn counters(&self) -> Vec<u64> {
        self.dev.dtoh(&self.counters).unwrap()
    }

    /// One alloc / verify / free round; returns (successes, nulls).
    fn round(&mut self, seed: u64, lanes: u32) -> (u64, u64) {
        self.p.seed = seed;
        self.p.lanes = lanes;
        self.dev.zero(&mut self.counters).unwrap();
        self.dev.zero(&mut self.ptrs).unwrap();
        self.launch("xm_alloc", self.p.n);
        let c = self.counters();
        let h = self.heap_words();
        eprintln!(
            "lanes {lanes} seed {seed}: {} pieces, {} nulls, {} bytes asked; heap: {} pages of {} B, qcap {}, \
             {} bytes in use, {} live blocks, high water {}, failed {}, carves {}, gate waits {}, superblocks per class {:?}",
            c[2],
            c[0],
            c[3],
            h[NPAGES],
            1u64 << self.p.sb_shift,
            h[QCAP],
            h[BYTES_IN_USE],
            h[LIVE_BLOCKS],
            h[HIGH_WATER],
            h[FAILED],
            h[CARVES],
            h[GATE_WAITS],
            &h[SB_COUNT..SB_COUNT + 8]
        );
        assert!(h[BYTES_IN_USE] > 0 || c[2] == 0);
        assert!(h[BYTES_IN_USE] <= self.p.bytes && h[HIGH_WATER] >= h[BYTES_IN_USE]);
        self.launch("xm_verify", self.p.n);
        let c = self.counters();
        assert_eq!(c[1], 0, "corrupt words: live pieces overlap (seed {seed}, lanes {lanes})");
        self.launch("xm_free", self.p.n);
        self.assert_all_returned();
        (c[2], c[0])
    }

    fn assert_all_returned(&self) {
        let h = self.heap_words();
        assert_eq!(
            (h[BYTES_IN_USE], h[LIVE_BLOCKS], h[BAD_FREES]),
            (0, 0, 0),
            "heap counters after all frees (bytes in use, live blocks, bad frees)"
        );
    }

    /// Trim, then the whole heap as one allocation, then one byte more must fail.
    fn assert_whole_heap(&mut self) {
        self.dev.zero(&mut self.counters).unwrap();
        self.launch("xm_whole", 1);
        let c = self.counters();
        let ptr0 = self.dev.dtoh(&self.ptrs).unwrap()[0];
        assert_ne!(ptr0, 0, "whole-heap allocation of {} bytes failed after trim", c[4]);
        assert!(c[4] + (64 << 10) > self.p.bytes / 2, "whole heap {} of a {}-byte region", c[4], self.p.bytes);
        assert_eq!(c[5], c[4] + 16, "bytes in use while the whole heap is held");
        assert_eq!(c[6], 0, "one byte more than the heap must be refused");
        self.assert_all_returned();
    }
}

device_suite!(
    random_sizes_no_overlap_all_returned,
    simd_widths,
    small_pages_and_exhaustion,
    concurrent_alloc_free_cycles
);

fn random_sizes_no_overlap_all_returned<D: Target>(dev: D) {
    let mut s = Setup::new(dev, 512 << 20, 16, 100_000, 64 << 10);
    for seed in 1..=3 {
        let (ok, nulls) = s.round(seed, 32);
        eprintln!("seed {seed}: {ok} pieces, {nulls} nulls, high water {} bytes", s.heap_words()[HIGH_WATER]);
        assert_eq!(nulls, 0, "a 512 MiB heap holds 100k random pieces");
        assert_eq!(ok, 100_000);
    }
    s.assert_whole_heap();
    // The heap still works after a whole-heap round trip.
    let (ok, _) = s.round(9, 32);
    assert_eq!(ok, 100_000);
}

fn simd_widths<D: Target>(dev: D) {
    // 64 MiB (~959 pages of 64 KiB after 4 MiB of queues), 2048 warps: one lane a warp needs
    // ~2048 blocks of <= 512 B, a full warp ~10 KiB (segments of 4 KiB class blocks).
    let mut s = Setup::new(dev, 64 << 20, 16, 65_536, 8 << 10);
    let mut results = Vec::new();
    for lanes in [1, 2, 5, 16, 31, 32] {
        let (ok, nulls) = s.round(100 + u64::from(lanes), lanes);
        results.push((lanes, ok, nulls, (65_536 / 32) * u64::from(lanes)));
    }
    for &(lanes, ok, nulls, expect) in &results {
        eprintln!("simd_widths: {lanes:2} lanes: {ok} pieces of {expect}, {nulls} nulls");
    }
    for &(lanes, ok, nulls, expect) in &results {
        assert_eq!((ok, nulls), (expect, 0), "{lanes} active lanes per warp (all widths: {results:?})");
    }
    s.assert_whole_heap();
}

fn small_pages_and_exhaustion<D: Target>(dev: D) {
    // 2 MiB of 4 KiB pages for 100k threads: many nulls, never a fault or a corrupt word.
    let mut s = Setup::new(dev, 2 << 20, 12, 100_000, 32 << 10);
    let (ok, nulls) = s.round(7, 32);
    eprintln!("tiny heap: {ok} pieces, {nulls} nulls");
    assert!(ok > 0 && nulls > 0, "ok {ok} nulls {nulls}");
    assert_eq!(s.heap_words()[FAILED], nulls);
    s.assert_whole_heap();
}

fn concurrent_alloc_free_cycles<D: Target>(dev: D) {
    let mut s = Setup::new(dev, 16 << 20, 14, 200_000, 16 << 10);
    s.p.rounds = 8;
    s.dev.zero(&mut s.counters).unwrap();
    s.launch("xm_cycle", s.p.n);
    let c = s.counters();
    eprintln!("cycles: {} pieces, {} nulls", c[2], c[0]);
    assert_eq!(c[1], 0, "corrupt words during concurrent alloc/free");
    assert!(c[2] > 0);
    s.assert_all_returned();
    s.assert_whole_heap();
}

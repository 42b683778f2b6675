//! The device ticket queue `kernels/include/gpu_cilk/ticket_queue.cuh`, driving the kernels of
//! `kernels/tests/ticket_queue_test.cu` (whose header documents every parameter), compiled from
//! the test source plus the header as an in-memory include (`gpu_cilk_kernels::TICKET_QUEUE_CUH`).
//! One suite, run on both targets (`device_suite!`): `sim::*` on the host simulation of device
//! code (every run, CI included) and `gpu::*` on a GPU.
//!
//! - `kernels_compile_with_the_mirrored_parameter_layouts` (NVRTC only, no GPU): every kernel is
//!   in the PTX for compute_80 and compute_90 and takes one parameter of the Rust mirror's size.
//! - `kernels_take_the_mirrored_parameter_layouts`: the program loads and every kernel is found
//!   (the simulation also checks each parameter's size against the kernel's).
//! - `matched_exactly_once_and_ticket_fifo`: the paper's matched pattern (every thread enqueues,
//!   then dequeues) on capacities 1, 32 and 4096, in all four modes (warp-aggregated blocking,
//!   per-lane blocking, non-waiting, mixed), starting at ticket 0 and just below `2^64`.
//! - `producer_consumer_exactly_once_and_ticket_fifo`: one producer per three consumers.
//!   Both check: no CLOSED, no foreign value, every item dequeued exactly once (bitmap), and the
//!   logs of tickets: the element of dequeue ticket `t` is the element of enqueue ticket `t` (strict
//!   FIFO), and each producer's sequence numbers increase along the tickets (per-producer FIFO, so
//!   every consumer sees each producer's items in order).
//! - `status_and_non_waiting_answers`: one thread walks the non-waiting answers and the status
//!   interface through fill / drain rounds, across the wrap, then close.
//! - `close_wakes_blocked_threads`: consumers blocked on an empty queue and producers blocked on a
//!   full one all return CLOSED once a thread that saw them all waiting closes the queue.
//!
//! Blocking calls wait for each other, so every grid must be resident: on a GPU every launch is
//! small enough (≤ 16 × 128 threads) to be; the simulation launches cooperatively (one host thread
//! per simulated thread) and on smaller grids ([`grid`]), runs one-lane warps on x86's stronger
//! memory model, and skips visibly without a C++ compiler unless `GPU_CILK_REQUIRE_SIM=1`. The
//! GPU tests are `#[ignore]`d (see `gpu_cilk_test_support::gate`): on a GPU machine
//! `LD_LIBRARY_PATH=/usr/local/cuda/lib64 cargo test -p gpu-cilk-runtime --test
//! device_ticket_queue -- --include-ignored`.

use gpu_cilk_runtime::backend::cuda::{DeviceCopy, DevicePtr, LaunchDims, ProgramSource};
use gpu_cilk_test_support::mirror::ticket_queue::GcTq;
use gpu_cilk_test_support::{device_suite, ptx_params, DeviceMem, Launch, Target};

const TEST_CU: &str = include_str!("../../kernels/tests/ticket_queue_test.cu");
const MODES: [(u32, &str); 4] = [(0, "warp-aggregated"), (1, "per-lane"), (2, "non-waiting"), (3, "mixed")];

fn source() -> ProgramSource {
    ProgramSource::new("ticket_queue_test", TEST_CU)
        .header("gpu_cilk/ticket_queue.cuh", gpu_cilk_kernels::TICKET_QUEUE_CUH)
}

/// The grid of the exactly-once tests, and its threads: 16 × 128 on a GPU. With capacity 1 every
/// hand-off waits for one particular thread, and the simulation's host must cycle through all the
/// simulated threads to run it: 4 × 32 there keeps a run to seconds on two cores.
fn grid<D: Target>() -> (LaunchDims, u64) {
    let (blocks, threads) = if D::SIMULATED { (4, 32) } else { (16, 128) };
    (LaunchDims::linear(blocks, threads), u64::from(blocks * threads))
}

/// Mirrors `struct TqTestParams`.
#[repr(C)]
#[derive(Clone, Copy)]
struct TqTestParams {
    q: DevicePtr<GcTq>,
    enq_log: DevicePtr<u64>,
    deq_log: DevicePtr<u64>,
    bitmap: DevicePtr<u32>,
    counts: DevicePtr<u64>,
    start: u64,
    log_len: u64,
    items: u32,
    mode: u32,
}
// SAFETY: repr(C): five pointers, two u64, two u32 (64 bytes), the layout of `TqTestParams`.
unsafe impl DeviceCopy for TqTestParams {}

/// Turn words of an empty queue whose counters start at `start` (ticket_queue.cuh, LAYOUT).
fn initial_turns(capacity: u64, start: u64) -> Vec<u64> {
    let mask = capacity - 1;
    (0..capacity).map(|i| (start.wrapping_add(i.wrapping_sub(start) & mask) & !mask).wrapping_mul(2)).collect()
}

struct Fx<D: Target> {
    dev: D,
    _program: D::Program,
    matched: D::Kernel<TqTestParams>,
    prodcons: D::Kernel<TqTestParams>,
    status: D::Kernel<TqTestParams>,
    fill: D::Kernel<TqTestParams>,
    close: D::Kernel<TqTestParams>,
}

fn fixture<D: Target>(dev: D) -> Fx<D> {
    let program = dev.load_program(&source()).expect("ticket_queue_test.cu compiles and loads");
    // SAFETY: every kernel takes one `TqTestParams` (sizes checked against the PTX by
    // `kernels_compile_with_the_mirrored_parameter_layouts`) and touches only the queue (384-byte
    // header, `capacity` turn words and elements), the logs (bounds-checked against `log_len`), the
    // bitmap (sized for every item id the launch produces) and the 8 counters passed in it.
    // Resident: blocking calls wait for each other.
    let (matched, prodcons, status, fill, close) = unsafe {
        (
            D::resident_kernel(&program, "gc_tq_test_matched").unwrap(),
            D::resident_kernel(&program, "gc_tq_test_prodcons").unwrap(),
            D::resident_kernel(&program, "gc_tq_test_status").unwrap(),
            D::resident_kernel(&program, "gc_tq_test_fill").unwrap(),
            D::resident_kernel(&program, "gc_tq_test_close").unwrap(),
        )
    };
    Fx { dev, _program: program, matched, prodcons, status, fill, close }
}

/// A device queue of u64 plus the test buffers.
struct Setup<D: Target> {
    _data: D::Buffer<u64>,
    _turns: D::Buffer<u64>,
    q: D::Buffer<GcTq>,
    enq_log: D::Buffer<u64>,
    deq_log: D::Buffer<u64>,
    bitmap: D::Buffer<u32>,
    counts: D::Buffer<u64>,
    params: TqTestParams,
}

impl<D: Target> Setup<D> {
    fn new(dev: &D, capacity: u64, start: u64, log_len: u64, items_total: u64, items: u32, mode: u32) -> Self {
        let data = dev.alloc_zeroed::<u64>(capacity as usize).unwrap();
        let turns = dev.htod(&initial_turns(capacity, start)).unwrap();
        let header = GcTq {
            data: data.ptr().addr(),
            turns: turns.ptr().addr(),
            mask: capacity - 1,
            closed: 0,
            pad0: [0; 12],
            tail: start,
            pad1: [0; 15],
            head: start,
            pad2: [0; 15],
        };
        let q = dev.htod(&[header]).unwrap();
        let enq_log = dev.htod(&vec![u64::MAX; log_len.max(1) as usize]).unwrap();
        let deq_log = dev.htod(&vec![u64::MAX; log_len.max(1) as usize]).unwrap();
        let bitmap = dev.alloc_zeroed::<u32>(items_total.div_ceil(32).max(1) as usize).unwrap();
        let counts = dev.alloc_zeroed::<u64>(8).unwrap();
        let params = TqTestParams {
            q: q.ptr(),
            enq_log: enq_log.ptr(),
            deq_log: deq_log.ptr(),
            bitmap: bitmap.ptr(),
            counts: counts.ptr(),
            start,
            log_len,
            items,
            mode,
        };
        Setup { _data: data, _turns: turns, q, enq_log, deq_log, bitmap, counts, params }
    }
}

/// The host checks of a run that moved `total` items from `producers` producers of `per` each.
fn check_run<D: Target>(dev: &D, s: &Setup<D>, what: &str, producers: u64, per: u64) {
    let total = producers * per;
    let counts = dev.dtoh(&s.counts).unwrap();
    assert_eq!(counts[0], 0, "{what}: duplicates");
    assert_eq!(counts[1], 0, "{what}: values never enqueued");
    assert_eq!(counts[2], 0, "{what}: CLOSED returns on an open queue");
    assert_eq!(counts[3], total, "{what}: successful dequeues");
    assert_eq!(counts[6], 0, "{what}: tickets outside the log");
    let bitmap = dev.dtoh(&s.bitmap).unwrap();
    let set: u64 = bitmap.iter().map(|w| w.count_ones() as u64).sum();
    assert_eq!(set, total, "{what}: items dequeued exactly once");
    let enq = dev.dtoh(&s.enq_log).unwrap();
    let deq = dev.dtoh(&s.deq_log).unwrap();
    let mut last = vec![None::<u64>; producers as usize];
    for t in 0..total as usize {
        assert_eq!(deq[t], enq[t], "{what}: dequeue ticket {t} got another ticket's element (strict FIFO)");
        let (p, seq) = ((deq[t] >> 32) as usize, deq[t] & 0xffff_ffff);
        if let Some(prev) = last[p] {
            assert!(seq > prev, "{what}: producer {p} seq {seq} after {prev} along the tickets");
        }
        last[p] = Some(seq);
    }
    let q = dev.dtoh(&s.q).unwrap()[0];
    assert_eq!(q.tail.wrapping_sub(s.params.start), total, "{what}: tail");
    assert_eq!(q.head, q.tail, "{what}: head");
    eprintln!("{what}: ok ({} non-waiting retries)", counts[4]);
}

#[test]
fn kernels_compile_with_the_mirrored_parameter_layouts() {
    assert_eq!(std::mem::size_of::<GcTq>(), 384);
    assert_eq!(std::mem::size_of::<TqTestParams>(), 64);
    let kernels =
        ["gc_tq_test_matched", "gc_tq_test_prodcons", "gc_tq_test_status", "gc_tq_test_fill", "gc_tq_test_close"];
    let size = std::mem::size_of::<TqTestParams>();
    ptx_params("kernels_compile_with_the_mirrored_parameter_layouts", &source(), &kernels.map(|k| (k, size)));
}

fn kernels_take_the_mirrored_parameter_layouts<D: Target>(dev: D) {
    let fx = fixture(dev);
    let names = [fx.matched.name(), fx.prodcons.name(), fx.status.name(), fx.fill.name(), fx.close.name()];
    assert_eq!(
        names,
        ["gc_tq_test_matched", "gc_tq_test_prodcons", "gc_tq_test_status", "gc_tq_test_fill", "gc_tq_test_close"]
    );
}

device_suite!(
    kernels_take_the_mirrored_parameter_layouts,
    matched_exactly_once_and_ticket_fifo,
    producer_consumer_exactly_once_and_ticket_fifo,
    status_and_non_waiting_answers,
    close_wakes_blocked_threads,
);

fn matched_exactly_once_and_ticket_fifo<D: Target>(dev: D) {
    let fx = fixture(dev);
    let (dims, grid_threads) = grid::<D>();
    let items = 16u32;
    let total = grid_threads * items as u64;
    for capacity in [1u64, 32, 4096] {
        for start in [0u64, u64::MAX - total / 2] {
            for (mode, name) in MODES {
                let s = Setup::new(&fx.dev, capacity, start, total, total, items, mode);
                fx.matched.launch(dims, &s.params).unwrap();
                fx.dev.sync().unwrap();
                let what = format!("matched cap {capacity} start {start:#x} {name}");
                check_run(&fx.dev, &s, &what, grid_threads, items as u64);
            }
        }
    }
}

fn producer_consumer_exactly_once_and_ticket_fifo<D: Target>(dev: D) {
    let fx = fixture(dev);
    let (dims, grid_threads) = grid::<D>();
    let items = 16u32;
    let producers = grid_threads / 4;
    let per = 3 * items as u64;
    let total = producers * per;
    for capacity in [1u64, 32, 4096] {
        for start in [0u64, u64::MAX - 100] {
            for (mode, name) in MODES {
                let s = Setup::new(&fx.dev, capacity, start, total, total, items, mode);
                fx.prodcons.launch(dims, &s.params).unwrap();
                fx.dev.sync().unwrap();
                let what = format!("producer/consumer cap {capacity} start {start:#x} {name}");
                check_run(&fx.dev, &s, &what, producers, per);
            }
        }
    }
}

fn status_and_non_waiting_answers<D: Target>(dev: D) {
    let fx = fixture(dev);
    for capacity in [1u64, 2, 8, 64] {
        for start in [0u64, u64::MAX - 5, u64::MAX - capacity] {
            let s = Setup::new(&fx.dev, capacity, start, 0, 0, 0, 0);
            fx.status.launch(LaunchDims::linear(1, 32), &s.params).unwrap();
            let counts = fx.dev.dtoh(&s.counts).unwrap();
            assert_eq!(
                counts[5], 0,
                "cap {capacity} start {start:#x}: check at ticket_queue_test.cu:{} failed",
                counts[5]
            );
            assert!(counts[3] > 0, "no checks ran");
            let q = fx.dev.dtoh(&s.q).unwrap()[0];
            assert_eq!(q.closed, 1);
        }
    }
}

fn close_wakes_blocked_threads<D: Target>(dev: D) {
    let fx = fixture(dev);
    let (blocks, threads) = if D::SIMULATED { (4, 64) } else { (8, 128) };
    let dims = LaunchDims::linear(blocks, threads);
    let others = u64::from(blocks * threads) - 1;
    for capacity in [1u64, 32] {
        for mode in [0u32, 1] {
            let mut s = Setup::new(&fx.dev, capacity, u64::MAX - 3, 0, 0, 0, mode);
            if mode == 1 {
                fx.fill.launch(LaunchDims::linear(1, 32), &s.params).unwrap();
                assert_eq!(fx.dev.dtoh(&s.counts).unwrap()[3], capacity, "fill: try_enqueue until FULL");
                fx.dev.zero(&mut s.counts).unwrap();
            }
            run_close(&fx, &s, dims, others, capacity, mode);
        }
    }
}

fn run_close<D: Target>(fx: &Fx<D>, s: &Setup<D>, dims: LaunchDims, others: u64, capacity: u64, mode: u32) {
    fx.close.launch(dims, &s.params).unwrap();
    let counts = fx.dev.dtoh(&s.counts).unwrap();
    let what = format!("close cap {capacity} {}", if mode == 0 { "consumers on empty" } else { "producers on full" });
    assert_eq!(counts[7], 1, "{what}: the closer never saw all {others} threads waiting");
    assert_eq!(counts[2], others, "{what}: CLOSED returns");
    assert_eq!(counts[3], 0, "{what}: successes on a queue nobody served");
}

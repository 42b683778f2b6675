//! The device ticket queue `kernels/include/gpu_cilk/ticket_queue.cuh` under the host simulation
//! of device code (`backend::cuda::sim`): the kernels of `kernels/tests/ticket_queue_test.cu` with
//! the checks of the GPU test `cuda_ticket_queue.rs` (this file is that test with the simulated
//! device in place of the GPU; keep the two in step):
//!
//! - `matched_exactly_once_and_ticket_fifo`, `producer_consumer_exactly_once_and_ticket_fifo`:
//!   capacities 1, 32 and 4096, all four modes, starting at ticket 0 and just below `2^64`; no
//!   CLOSED, no foreign value, every item dequeued exactly once, strict FIFO along the tickets
//!   and per-producer FIFO.
//! - `status_and_non_waiting_answers`, `close_wakes_blocked_threads`: as on the GPU.
//!
//! Blocking calls wait for each other, so every kernel is launched **cooperatively** (one host
//! thread per simulated thread, as a GPU keeps every thread of these small grids resident).
//! Differences from the GPU run: one-lane warps and x86's stronger memory model. Skips visibly
//! without a C++ compiler unless `GPU_CILK_REQUIRE_SIM=1`.

#![cfg(target_os = "linux")]

// The simulated device under the GPU test's names, so the body below stays the GPU test's.
use gpu_cilk_runtime::backend::cuda::sim::{
    SimBuffer as DeviceBuffer, SimDevice as CudaDevice, SimKernel as Kernel, SimProgram as Program,
};
use gpu_cilk_runtime::backend::cuda::{DeviceCopy, DevicePtr, LaunchDims, ProgramSource};

#[path = "support/sim.rs"]
mod sim;
use sim::sim_device as open_device;

const TEST_CU: &str = include_str!("../../kernels/tests/ticket_queue_test.cu");
// The GPU test runs 16 × 128 threads. With capacity 1 every hand-off waits for one particular
// thread, and a host must cycle through all the simulated threads to run it: 4 × 32 keeps a run
// to seconds on two cores.
const GRID: LaunchDims = LaunchDims::linear(4, 32);
const GRID_THREADS: u64 = 4 * 32;
const MODES: [(u32, &str); 4] = [(0, "warp-aggregated"), (1, "per-lane"), (2, "non-waiting"), (3, "mixed")];

fn source() -> ProgramSource {
    ProgramSource::new("ticket_queue_test", TEST_CU)
        .header("gpu_cilk/ticket_queue.cuh", gpu_cilk_kernels::TICKET_QUEUE_CUH)
}

/// Mirrors `gc_tq<T>` (ticket_queue.cuh: 48 8-byte words).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
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
// SAFETY: repr(C) POD of 48 u64, the layout of `gc_tq<T>` (static_assert'ed 384 bytes there).
unsafe impl DeviceCopy for GcTq {}

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

struct Fx {
    dev: CudaDevice,
    _program: Program,
    matched: Kernel<TqTestParams>,
    prodcons: Kernel<TqTestParams>,
    status: Kernel<TqTestParams>,
    fill: Kernel<TqTestParams>,
    close: Kernel<TqTestParams>,
}

fn fixture(test: &str) -> Option<Fx> {
    let dev = open_device(test)?;
    let program = dev.load_program(&source()).expect("ticket_queue_test.cu compiles and loads");
    // SAFETY: every kernel takes one `TqTestParams` (sizes checked against the kernel's by
    // `SimProgram::kernel`) and touches only the queue (384-byte header, `capacity` turn words and
    // elements), the logs (bounds-checked against `log_len`), the bitmap (sized for every item id
    // the launch produces) and the 8 counters passed in it. Cooperative: blocking calls wait for
    // each other.
    let (matched, prodcons, status, fill, close) = unsafe {
        (
            program.kernel("gc_tq_test_matched").unwrap().cooperative(),
            program.kernel("gc_tq_test_prodcons").unwrap().cooperative(),
            program.kernel("gc_tq_test_status").unwrap().cooperative(),
            program.kernel("gc_tq_test_fill").unwrap().cooperative(),
            program.kernel("gc_tq_test_close").unwrap().cooperative(),
        )
    };
    Some(Fx { dev, _program: program, matched, prodcons, status, fill, close })
}

/// A device queue of u64 plus the test buffers.
struct Setup {
    _data: DeviceBuffer<u64>,
    _turns: DeviceBuffer<u64>,
    q: DeviceBuffer<GcTq>,
    enq_log: DeviceBuffer<u64>,
    deq_log: DeviceBuffer<u64>,
    bitmap: DeviceBuffer<u32>,
    counts: DeviceBuffer<u64>,
    params: TqTestParams,
}

impl Setup {
    fn new(dev: &CudaDevice, capacity: u64, start: u64, log_len: u64, items_total: u64, items: u32, mode: u32) -> Self {
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
fn check_run(dev: &CudaDevice, s: &Setup, what: &str, producers: u64, per: u64) {
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
fn kernels_take_the_mirrored_parameter_layouts() {
    // `SimProgram::kernel` refuses a parameter type whose size differs from the kernel's.
    let Some(_fx) = fixture("kernels_take_the_mirrored_parameter_layouts") else { return };
    assert_eq!(std::mem::size_of::<GcTq>(), 384);
    assert_eq!(std::mem::size_of::<TqTestParams>(), 64);
}

#[test]
fn matched_exactly_once_and_ticket_fifo() {
    let Some(fx) = fixture("matched_exactly_once_and_ticket_fifo") else { return };
    let items = 16u32;
    let total = GRID_THREADS * items as u64;
    for capacity in [1u64, 32, 4096] {
        for start in [0u64, u64::MAX - total / 2] {
            for (mode, name) in MODES {
                let s = Setup::new(&fx.dev, capacity, start, total, total, items, mode);
                fx.matched.launch(GRID, &s.params).unwrap();
                fx.dev.sync().unwrap();
                let what = format!("matched cap {capacity} start {start:#x} {name}");
                check_run(&fx.dev, &s, &what, GRID_THREADS, items as u64);
            }
        }
    }
}

#[test]
fn producer_consumer_exactly_once_and_ticket_fifo() {
    let Some(fx) = fixture("producer_consumer_exactly_once_and_ticket_fifo") else { return };
    let items = 16u32;
    let producers = GRID_THREADS / 4;
    let per = 3 * items as u64;
    let total = producers * per;
    for capacity in [1u64, 32, 4096] {
        for start in [0u64, u64::MAX - 100] {
            for (mode, name) in MODES {
                let s = Setup::new(&fx.dev, capacity, start, total, total, items, mode);
                fx.prodcons.launch(GRID, &s.params).unwrap();
                fx.dev.sync().unwrap();
                let what = format!("producer/consumer cap {capacity} start {start:#x} {name}");
                check_run(&fx.dev, &s, &what, producers, per);
            }
        }
    }
}

#[test]
fn status_and_non_waiting_answers() {
    let Some(fx) = fixture("status_and_non_waiting_answers") else { return };
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

#[test]
fn close_wakes_blocked_threads() {
    let Some(fx) = fixture("close_wakes_blocked_threads") else { return };
    let dims = LaunchDims::linear(4, 64); // 8 × 128 on the GPU
    let others = 4 * 64 - 1;
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

fn run_close(fx: &Fx, s: &Setup, dims: LaunchDims, others: u64, capacity: u64, mode: u32) {
    fx.close.launch(dims, &s.params).unwrap();
    let counts = fx.dev.dtoh(&s.counts).unwrap();
    let what = format!("close cap {capacity} {}", if mode == 0 { "consumers on empty" } else { "producers on full" });
    assert_eq!(counts[7], 1, "{what}: the closer never saw all {others} threads waiting");
    assert_eq!(counts[2], others, "{what}: CLOSED returns");
    assert_eq!(counts[3], 0, "{what}: successes on a queue nobody served");
}

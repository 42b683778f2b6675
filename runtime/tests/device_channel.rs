//! The device channel `kernels/include/gpu_cilk/channel.cuh`, driving the kernels of
//! `kernels/tests/channel_test.cu` (whose header comment documents each kernel and the host checks
//! made here), compiled from the test source plus the header as an in-memory include
//! (`gpu_cilk_kernels::CHANNEL_CUH`). One suite, run on both targets (`device_suite!`): `sim::*`
//! on the host simulation of device code (every run, CI included) and `gpu::*` on a GPU.
//!
//! - `kernels_compile_with_the_mirrored_parameter_layouts` (NVRTC only, no GPU): every kernel is
//!   in the PTX for compute_80 and compute_90 and takes one parameter of exactly the size of its
//!   Rust mirror.
//! - `kernels_take_the_mirrored_parameter_layouts`: the program loads and every kernel is found
//!   (the simulation also checks each parameter's size against the kernel's).
//! - `produce_consume_rounds_on_tiny_capacities`: 256 rounds of produce / consume on channels of
//!   capacity 1, 2, 4 and 64 with a full grid (64 × 256 threads), so the ring wraps many times and
//!   most reservations are refused. After every launch: the kernel's counters match a host model
//!   (granted = min(free slots, asked), refused = asked - granted, taken = min(len, threads ×
//!   quota), no failed enq / take, no duplicate or corrupt element), the channel's four counters
//!   and `violation` match the model, every control word holds the lap-tagged state the protocol
//!   predicts (READY for published unclaimed tickets, EMPTY of the right lap otherwise), every
//!   published element carries its ticket and checksum, and `gc_len` / `gc_occupancy` agree. At
//!   the end the channel is drained and the consumed-id bitmap equals the accepted-id bitmap:
//!   every accepted element was consumed exactly once.
//! - `frames_in_place_publish_and_drain`: the second element type, written in place through
//!   `gc_slot_ptr` and published without a copy, then drained with `gc_deq`.
//! - `two_channels_at_one_call_site`: even lanes into one channel, odd lanes into another, at the
//!   same call site (the warp aggregation groups lanes by channel); both drained, exactly once.
//! - `status_at_quiescent_points`: `gc_len`, `gc_occupancy`, capacity through a sequence of phases.
//!
//! The simulation runs one-lane warps (the warp aggregation is exercised with groups of one) on
//! x86's stronger memory model (about 4 s on two cores); it skips visibly without a C++ compiler
//! unless `GPU_CILK_REQUIRE_SIM=1`. The GPU tests are `#[ignore]`d (see
//! `gpu_cilk_test_support::gate`): on a GPU machine `LD_LIBRARY_PATH=/usr/local/cuda/lib64 cargo
//! test -p gpu-cilk-runtime --test device_channel -- --include-ignored` (a few seconds).

use gpu_cilk_runtime::backend::cuda::{DeviceCopy, DevicePtr, LaunchDims, ProgramSource};
use gpu_cilk_test_support::mirror::channel::GcChannel;
use gpu_cilk_test_support::splitmix::Rng;
use gpu_cilk_test_support::{device_suite, ptx_params, DeviceMem, Launch, Target};

const TEST_CU: &str = include_str!("../../kernels/tests/channel_test.cu");

/// 64 blocks × 256 threads: the full grid of the stress rounds.
const FULL: LaunchDims = LaunchDims::linear(64, 256);
const FULL_THREADS: u64 = 64 * 256;
/// `quota` that drains the channel.
const DRAIN: u32 = u32::MAX;

const GC_CH_EMPTY: u64 = 0;
const GC_CH_READY: u64 = 3;
const GC_CH_STATE_BITS: u32 = 3;

fn source() -> ProgramSource {
    ProgramSource::new("channel_test", TEST_CU).header("gpu_cilk/channel.cuh", gpu_cilk_kernels::CHANNEL_CUH)
}

// ---- mirrors of the CUDA structs ----------------------------------------------------------------

/// Mirrors `gc_test_elem`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct TestElem {
    id: u64,
    check: u64,
    ticket: u64,
}
// SAFETY: repr(C), three u64 (24 bytes, no padding, every bit pattern valid), static_assert'ed in
// channel_test.cu.
unsafe impl DeviceCopy for TestElem {}

/// Mirrors `gc_test_frame`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct TestFrame {
    acc: f64,
    children: i32,
    pad: i32,
}
// SAFETY: repr(C) { f64, i32, i32 }: 16 bytes, no padding, every bit pattern valid (f64 NaNs
// included), static_assert'ed in channel_test.cu.
unsafe impl DeviceCopy for TestFrame {}

/// Mirrors `gc_test_produce_params`.
#[repr(C)]
#[derive(Clone, Copy)]
struct ProduceParams {
    ch: DevicePtr<GcChannel>,
    id_base: u64,
    accepted_bits: DevicePtr<u64>,
    counters: DevicePtr<u64>,
    offers: u32,
    pad: u32,
}
// SAFETY: repr(C) of 8-byte pointers / u64 then two u32: 40 bytes, no implicit padding, every bit
// pattern valid; the field-for-field layout of `gc_test_produce_params` (static_assert'ed 40).
unsafe impl DeviceCopy for ProduceParams {}

/// Mirrors `gc_test_consume_params`.
#[repr(C)]
#[derive(Clone, Copy)]
struct ConsumeParams {
    ch: DevicePtr<GcChannel>,
    consumed_bits: DevicePtr<u64>,
    counters: DevicePtr<u64>,
    quota: u32,
    pad: u32,
}
// SAFETY: repr(C), three 8-byte pointers then two u32: 32 bytes, no implicit padding, every bit
// pattern valid; the layout of `gc_test_consume_params` (static_assert'ed 32).
unsafe impl DeviceCopy for ConsumeParams {}

/// Mirrors `gc_test_frames_params` (both frame kernels).
#[repr(C)]
#[derive(Clone, Copy)]
struct FramesParams {
    ch: DevicePtr<GcChannel>,
    counters: DevicePtr<u64>,
}
// SAFETY: repr(C), two 8-byte pointers (16 bytes), the layout of `gc_test_frames_params`.
unsafe impl DeviceCopy for FramesParams {}

/// Mirrors `gc_test_status_params`.
#[repr(C)]
#[derive(Clone, Copy)]
struct StatusParams {
    ch: DevicePtr<GcChannel>,
    out: DevicePtr<u64>,
}
// SAFETY: repr(C), two 8-byte pointers (16 bytes), the layout of `gc_test_status_params`.
unsafe impl DeviceCopy for StatusParams {}

/// Mirrors `gc_test_two_channels_params`.
#[repr(C)]
#[derive(Clone, Copy)]
struct TwoChannelsParams {
    a: DevicePtr<GcChannel>,
    b: DevicePtr<GcChannel>,
    accepted_bits: DevicePtr<u64>,
    counters: DevicePtr<u64>,
}
// SAFETY: repr(C), four 8-byte pointers (32 bytes), the layout of `gc_test_two_channels_params`.
unsafe impl DeviceCopy for TwoChannelsParams {}

/// `gc_test_hash`.
fn elem_hash(id: u64, ticket: u64) -> u64 {
    (id ^ 0xA5A5_5A5A_DEAD_BEEF).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ ticket.rotate_left(17)
}

// ---- fixture --------------------------------------------------------------------------------------

struct Fx<D: Target> {
    dev: D,
    _program: D::Program,
    produce: D::Kernel<ProduceParams>,
    consume: D::Kernel<ConsumeParams>,
    frames: D::Kernel<FramesParams>,
    frames_drain: D::Kernel<FramesParams>,
    status: D::Kernel<StatusParams>,
    two: D::Kernel<TwoChannelsParams>,
}

fn fixture<D: Target>(dev: D) -> Fx<D> {
    let program = dev.load_program(&source()).unwrap_or_else(|e| panic!("compiling channel_test.cu: {e}"));
    // SAFETY: (all six) each kernel takes exactly one parameter struct by value, mirrored above
    // (sizes checked against the PTX by `kernels_compile_with_the_mirrored_parameter_layouts`),
    // and touches only the channel (64-byte header, `capacity` control words and elements) and
    // the bitmap / counter buffers passed in it; every launch below passes live buffers of the
    // sizes the kernel indexes (bitmaps cover every id the launch can produce).
    let (produce, consume, frames, frames_drain, status, two) = unsafe {
        (
            D::kernel::<ProduceParams>(&program, "gc_test_produce").unwrap(),
            D::kernel::<ConsumeParams>(&program, "gc_test_consume").unwrap(),
            D::kernel::<FramesParams>(&program, "gc_test_frames").unwrap(),
            D::kernel::<FramesParams>(&program, "gc_test_frames_drain").unwrap(),
            D::kernel::<StatusParams>(&program, "gc_test_status").unwrap(),
            D::kernel::<TwoChannelsParams>(&program, "gc_test_two_channels").unwrap(),
        )
    };
    Fx { dev, _program: program, produce, consume, frames, frames_drain, status, two }
}

/// A channel in device memory: the 64-byte header, `capacity` zeroed control words, `capacity`
/// elements (the host-side setup channel.cuh documents).
struct Chan<T: DeviceCopy, D: Target> {
    header: D::Buffer<GcChannel>,
    control: D::Buffer<u64>,
    data: D::Buffer<T>,
    capacity: u64,
}

impl<T: DeviceCopy, D: Target> Chan<T, D> {
    fn new(dev: &D, capacity: u64) -> Self {
        assert!(capacity.is_power_of_two());
        let data = dev.alloc_zeroed::<T>(capacity as usize).unwrap();
        let control = dev.alloc_zeroed::<u64>(capacity as usize).unwrap();
        let h = GcChannel {
            data: data.ptr().addr(),
            control: control.ptr().addr(),
            mask: capacity - 1,
            ..Default::default()
        };
        let header = dev.htod(&[h]).unwrap();
        Chan { header, control, data, capacity }
    }

    fn ptr(&self) -> DevicePtr<GcChannel> {
        self.header.ptr()
    }

    fn read(&self, dev: &D) -> GcChannel {
        dev.dtoh(&self.header).unwrap()[0]
    }

    /// At a quiescent point (between phases): `violation` is 0, reserved == published, claimed ==
    /// freed, and every control word holds what the protocol predicts: for each ticket t in
    /// [freed, freed + capacity), slot t & mask is READY of t's lap when t < published (published,
    /// not yet taken) and EMPTY of t's lap otherwise. Returns the header and the published
    /// tickets [freed, published) with their elements.
    fn check_quiescent(&self, dev: &D, what: &str) -> (GcChannel, Vec<(u64, T)>) {
        let h = self.read(dev);
        assert_eq!(h.violation, 0, "{what}: violation recorded at ticket {}", h.violation.wrapping_sub(1));
        assert_eq!(h.mask, self.capacity - 1, "{what}: mask changed");
        assert_eq!(h.reserved, h.published, "{what}: reserved tickets left unpublished: {h:?}");
        assert_eq!(h.claimed, h.freed, "{what}: claimed tickets left untaken: {h:?}");
        assert!(
            h.freed <= h.published && h.published - h.freed <= self.capacity,
            "{what}: counters out of range: {h:?}"
        );
        let control = dev.dtoh(&self.control).unwrap();
        let data = dev.dtoh(&self.data).unwrap();
        let shift = self.capacity.trailing_zeros();
        let mut live = Vec::new();
        for t in h.freed..h.freed + self.capacity {
            let slot = (t & h.mask) as usize;
            let ready = t < h.published;
            let want = ((t >> shift) << GC_CH_STATE_BITS) | if ready { GC_CH_READY } else { GC_CH_EMPTY };
            assert_eq!(
                control[slot],
                want,
                "{what}: control word of slot {slot} (ticket {t}, {}) is {:#x}, expected {want:#x}; {h:?}",
                if ready { "published" } else { "free" },
                control[slot]
            );
            if ready {
                live.push((t, data[slot]));
            }
        }
        (h, live)
    }
}

fn zeroed<D: Target>(dev: &D, n: usize) -> D::Buffer<u64> {
    dev.alloc_zeroed::<u64>(n).unwrap()
}

fn reset<D: Target>(dev: &D, buf: &mut D::Buffer<u64>) {
    dev.zero(buf).unwrap();
}

fn popcount(bits: &[u64]) -> u64 {
    bits.iter().map(|w| w.count_ones() as u64).sum()
}

/// `gc_test_status` at a quiescent point: (len, occupancy, capacity).
fn status<D: Target>(fx: &Fx<D>, ch: &Chan<TestElem, D>, out: &D::Buffer<u64>) -> [u64; 3] {
    fx.status.launch(LaunchDims::linear(1, 1), &StatusParams { ch: ch.ptr(), out: out.ptr() }).unwrap();
    let v = fx.dev.dtoh(out).unwrap();
    [v[0], v[1], v[2]]
}

/// Elements asked by `threads` threads of gc_test_produce: thread gid offers
/// min(1 + (gid + id_base) % 3, offers).
fn asked(threads: u64, id_base: u64, offers: u32) -> u64 {
    (0..threads).map(|gid| (1 + (gid + id_base) % 3).min(offers as u64)).sum()
}

/// Checks the published elements of a TestElem channel: each holds its ticket and checksum.
fn check_elems(live: &[(u64, TestElem)], what: &str) {
    for &(t, e) in live {
        assert_eq!(e.ticket, t, "{what}: slot of ticket {t} holds ticket {}", e.ticket);
        assert_eq!(e.check, elem_hash(e.id, t), "{what}: corrupt element {e:?} at ticket {t}");
    }
}

// ---- tests ----------------------------------------------------------------------------------------

device_suite!(
    kernels_take_the_mirrored_parameter_layouts,
    produce_consume_rounds_on_tiny_capacities,
    frames_in_place_publish_and_drain,
    two_channels_at_one_call_site,
    status_at_quiescent_points,
);

#[test]
fn kernels_compile_with_the_mirrored_parameter_layouts() {
    let expected = [
        ("gc_test_produce", std::mem::size_of::<ProduceParams>()),
        ("gc_test_consume", std::mem::size_of::<ConsumeParams>()),
        ("gc_test_frames", std::mem::size_of::<FramesParams>()),
        ("gc_test_frames_drain", std::mem::size_of::<FramesParams>()),
        ("gc_test_status", std::mem::size_of::<StatusParams>()),
        ("gc_test_two_channels", std::mem::size_of::<TwoChannelsParams>()),
    ];
    assert_eq!(std::mem::size_of::<GcChannel>(), 64);
    assert_eq!(std::mem::size_of::<TestElem>(), 24);
    assert_eq!(std::mem::size_of::<TestFrame>(), 16);
    ptx_params("kernels_compile_with_the_mirrored_parameter_layouts", &source(), &expected);
}

fn kernels_take_the_mirrored_parameter_layouts<D: Target>(dev: D) {
    let fx = fixture(dev);
    let names = [fx.produce.name(), fx.consume.name(), fx.frames.name(), fx.frames_drain.name(), fx.status.name()];
    assert_eq!(
        names,
        ["gc_test_produce", "gc_test_consume", "gc_test_frames", "gc_test_frames_drain", "gc_test_status"]
    );
    assert_eq!(fx.two.name(), "gc_test_two_channels");
}

fn produce_consume_rounds_on_tiny_capacities<D: Target>(dev: D) {
    let fx = fixture(dev);
    let dev = &fx.dev;
    const ROUNDS: u64 = 256;
    let bitmap_words = (ROUNDS * FULL_THREADS * 3).div_ceil(64) as usize;
    let mut rng = Rng(0x6770_755f_6369_6c6b);
    let mut total_refused_all = 0u64;
    for capacity in [1u64, 2, 4, 64] {
        let ch = Chan::<TestElem, D>::new(dev, capacity);
        let accepted = zeroed(dev, bitmap_words);
        let consumed = zeroed(dev, bitmap_words);
        let mut pc = zeroed(dev, 3);
        let mut cc = zeroed(dev, 4);
        let out = zeroed(dev, 3);
        // The host model of the four counters.
        let mut m = GcChannel { mask: capacity - 1, ..Default::default() };
        let (mut total_granted, mut total_taken, mut total_refused) = (0u64, 0u64, 0u64);
        let mut consume_round = |m: &mut GcChannel, threads: u64, dims: LaunchDims, quota: u32, what: &str| {
            reset(dev, &mut cc);
            fx.consume
                .launch(
                    dims,
                    &ConsumeParams { ch: ch.ptr(), consumed_bits: consumed.ptr(), counters: cc.ptr(), quota, pad: 0 },
                )
                .unwrap();
            let c = dev.dtoh(&cc).unwrap();
            let len = m.published - m.claimed;
            let taken = len.min(threads.saturating_mul(quota as u64));
            assert_eq!(
                c,
                [taken, 0, 0, 0],
                "{what}: [taken, duplicates, corrupt, failed take], len {len}, quota {quota}"
            );
            m.claimed += taken;
            m.freed += taken;
            let (h, live) = ch.check_quiescent(dev, what);
            assert_eq!(h, GcChannel { data: h.data, control: h.control, ..*m }, "{what}: channel counters");
            check_elems(&live, what);
            taken
        };
        for round in 0..ROUNDS {
            let what = format!("capacity {capacity}, round {round}");
            // Producer phase: mostly the full grid (most reservations refused), sometimes one
            // small block so the channel fills only partly.
            let (dims, threads) = if rng.below(8) == 0 {
                let n = 1 + rng.below(96);
                (LaunchDims::linear(1, n as u32), n)
            } else {
                (FULL, FULL_THREADS)
            };
            let offers = [1u32, 2, 3, 3][rng.below(4) as usize];
            let id_base = round * FULL_THREADS * 3;
            let ask = asked(threads, id_base, offers);
            let free = capacity - (m.reserved - m.freed);
            let granted = free.min(ask);
            reset(dev, &mut pc);
            fx.produce
                .launch(
                    dims,
                    &ProduceParams {
                        ch: ch.ptr(),
                        id_base,
                        accepted_bits: accepted.ptr(),
                        counters: pc.ptr(),
                        offers,
                        pad: 0,
                    },
                )
                .unwrap();
            let c = dev.dtoh(&pc).unwrap();
            assert_eq!(
                c,
                [ask - granted, granted, 0],
                "{what}: produce [refused, granted, failed enq] with {threads} threads, offers {offers}, {free} free"
            );
            m.reserved += granted;
            m.published += granted;
            total_granted += granted;
            total_refused += ask - granted;
            let (h, live) = ch.check_quiescent(dev, &format!("{what}, after produce"));
            assert_eq!(
                h,
                GcChannel { data: h.data, control: h.control, ..m },
                "{what}: channel counters after produce"
            );
            check_elems(&live, &what);
            for &(_, e) in &live {
                assert!(e.id < id_base + FULL_THREADS * 3, "{what}: element id {} from the future", e.id);
            }
            let len = m.published - m.claimed;
            assert_eq!(status(&fx, &ch, &out), [len, len, capacity], "{what}: [gc_len, gc_occupancy, capacity]");

            // Consumer phase: skip (the next producer finds the channel full or partly full),
            // drain with the full grid, one claim per thread of the full grid, or a few threads.
            let (dims, threads, quota) = match rng.below(6) {
                0 => continue,
                1 | 2 => (FULL, FULL_THREADS, DRAIN),
                3 => (FULL, FULL_THREADS, 1),
                _ => {
                    let n = 1 + rng.below(3);
                    (LaunchDims::linear(1, n as u32), n, 1 + rng.below(2) as u32)
                }
            };
            total_taken += consume_round(&mut m, threads, dims, quota, &format!("{what}, consume"));
            let len = m.published - m.claimed;
            assert_eq!(status(&fx, &ch, &out), [len, len, capacity], "{what}: status after consume");
        }
        total_taken += consume_round(&mut m, FULL_THREADS, FULL, DRAIN, &format!("capacity {capacity}, final drain"));
        assert_eq!(m.published, m.freed, "capacity {capacity}: final drain left elements");
        assert_eq!(total_taken, total_granted, "capacity {capacity}: taken vs granted");
        assert_eq!(status(&fx, &ch, &out), [0, 0, capacity]);
        assert!(
            m.published > 2 * capacity * 16,
            "capacity {capacity}: ring wrapped only {} laps",
            m.published / capacity
        );
        let acc = dev.dtoh(&accepted).unwrap();
        let con = dev.dtoh(&consumed).unwrap();
        assert_eq!(popcount(&acc), total_granted, "capacity {capacity}: accepted ids vs granted");
        if let Some(i) = acc.iter().zip(&con).position(|(a, c)| a != c) {
            panic!(
                "capacity {capacity}: consumed ids differ from accepted ids at word {i}: accepted {:#x}, consumed {:#x}",
                acc[i], con[i]
            );
        }
        eprintln!(
            "capacity {capacity}: {ROUNDS} rounds, {total_granted} elements through the ring ({} laps), {total_refused} refused",
            m.published / capacity
        );
        assert!(total_refused > total_granted, "capacity {capacity}: most reservations should be refused");
        total_refused_all += total_refused;
    }
    assert!(total_refused_all > 0);
}

fn frames_in_place_publish_and_drain<D: Target>(dev: D) {
    let fx = fixture(dev);
    let dev = &fx.dev;
    let mut counters = zeroed(dev, 7);
    let shapes = [
        (1u64, FULL),
        (64, FULL),
        (1024, FULL),
        (32768, FULL),
        (128, LaunchDims::linear(3, 100)),
        (256, LaunchDims::linear(1, 7)),
    ];
    for (capacity, dims) in shapes {
        let threads = dims.threads();
        let ch = Chan::<TestFrame, D>::new(dev, capacity);
        let mut total = 0u64;
        for round in 0..3 {
            let what = format!("frames: capacity {capacity}, {threads} threads, round {round}");
            reset(dev, &mut counters);
            let p = FramesParams { ch: ch.ptr(), counters: counters.ptr() };
            fx.frames.launch(dims, &p).unwrap();
            let c = dev.dtoh(&counters).unwrap();
            let n = capacity.min(threads);
            assert_eq!(&c[..3], &[threads - n, n, 0], "{what}: [refused, published, failed publish]");
            let (h, live) = ch.check_quiescent(dev, &what);
            assert_eq!((h.published - h.freed, h.published), (n, total + n), "{what}: {h:?}");
            for (t, f) in live {
                assert_eq!(f, TestFrame { acc: 0.0, children: 2, pad: 0 }, "{what}: frame of ticket {t}");
            }
            fx.frames_drain.launch(FULL, &p).unwrap();
            let c = dev.dtoh(&counters).unwrap();
            assert_eq!(&c[4..], &[n, 0, 0], "{what}: drain [taken, bad frames, failed deq]");
            let (h, _) = ch.check_quiescent(dev, &format!("{what}, drained"));
            assert_eq!((h.claimed, h.freed, h.published), (total + n, total + n, total + n), "{what}: {h:?}");
            total += n;
        }
    }
}

fn two_channels_at_one_call_site<D: Target>(dev: D) {
    let fx = fixture(dev);
    let dev = &fx.dev;
    let shapes = [
        (4u64, 64u64, FULL),
        (64, 4, FULL),
        (1, 1, FULL),
        (4096, 8192, FULL),
        (16384, 16384, LaunchDims::linear(4, 250)),
        (2, 32768, LaunchDims::linear(7, 33)),
    ];
    for (cap_a, cap_b, dims) in shapes {
        let threads = dims.threads();
        let what = format!("two channels: capacities {cap_a} / {cap_b}, {threads} threads");
        let a = Chan::<TestElem, D>::new(dev, cap_a);
        let b = Chan::<TestElem, D>::new(dev, cap_b);
        let words = threads.div_ceil(64) as usize;
        let accepted = zeroed(dev, words);
        let consumed = zeroed(dev, words);
        let counters = zeroed(dev, 4);
        fx.two
            .launch(
                dims,
                &TwoChannelsParams { a: a.ptr(), b: b.ptr(), accepted_bits: accepted.ptr(), counters: counters.ptr() },
            )
            .unwrap();
        let c = dev.dtoh(&counters).unwrap();
        let (even, odd) = (threads.div_ceil(2), threads / 2);
        let (na, nb) = (cap_a.min(even), cap_b.min(odd));
        assert_eq!(c, [na, nb, threads - na - nb, 0], "{what}: [granted a, granted b, refused, failed enq]");
        for (ch, n, parity, name) in [(&a, na, 0, "a"), (&b, nb, 1, "b")] {
            let (h, live) = ch.check_quiescent(dev, &format!("{what}, channel {name}"));
            assert_eq!(h.published, n, "{what}, channel {name}: {h:?}");
            check_elems(&live, &format!("{what}, channel {name}"));
            assert!(live.iter().all(|(_, e)| e.id % 2 == parity), "{what}: an element in the wrong channel {name}");
        }
        let cc = zeroed(dev, 4);
        for ch in [&a, &b] {
            fx.consume
                .launch(
                    FULL,
                    &ConsumeParams {
                        ch: ch.ptr(),
                        consumed_bits: consumed.ptr(),
                        counters: cc.ptr(),
                        quota: DRAIN,
                        pad: 0,
                    },
                )
                .unwrap();
        }
        assert_eq!(
            dev.dtoh(&cc).unwrap(),
            [na + nb, 0, 0, 0],
            "{what}: drain [taken, duplicates, corrupt, failed take]"
        );
        for (ch, n, name) in [(&a, na, "a"), (&b, nb, "b")] {
            let (h, _) = ch.check_quiescent(dev, &format!("{what}, channel {name} drained"));
            assert_eq!((h.claimed, h.freed), (n, n), "{what}, channel {name}: {h:?}");
        }
        let acc = dev.dtoh(&accepted).unwrap();
        assert_eq!(popcount(&acc), na + nb, "{what}: accepted ids");
        assert_eq!(dev.dtoh(&consumed).unwrap(), acc, "{what}: consumed ids differ from accepted ids");
    }
}

fn status_at_quiescent_points<D: Target>(dev: D) {
    let fx = fixture(dev);
    let dev = &fx.dev;
    let out = zeroed(dev, 3);
    let bits = zeroed(dev, (FULL_THREADS * 3 * 4).div_ceil(64) as usize);
    let consumed = zeroed(dev, bits.len());
    let pc = zeroed(dev, 3);
    let cc = zeroed(dev, 4);
    let ch = Chan::<TestElem, D>::new(dev, 64);
    let produce = |dims: LaunchDims, round: u64, offers: u32| {
        let p = ProduceParams {
            ch: ch.ptr(),
            id_base: round * FULL_THREADS * 3,
            accepted_bits: bits.ptr(),
            counters: pc.ptr(),
            offers,
            pad: 0,
        };
        fx.produce.launch(dims, &p).unwrap();
    };
    let consume = |dims: LaunchDims, quota: u32| {
        let p = ConsumeParams { ch: ch.ptr(), consumed_bits: consumed.ptr(), counters: cc.ptr(), quota, pad: 0 };
        fx.consume.launch(dims, &p).unwrap();
    };
    assert_eq!(status(&fx, &ch, &out), [0, 0, 64], "empty");
    produce(LaunchDims::linear(1, 10), 0, 1);
    assert_eq!(status(&fx, &ch, &out), [10, 10, 64], "10 singles produced");
    consume(LaunchDims::linear(1, 3), 1);
    assert_eq!(status(&fx, &ch, &out), [7, 7, 64], "3 consumed");
    produce(FULL, 1, 3);
    assert_eq!(status(&fx, &ch, &out), [64, 64, 64], "filled by the full grid");
    produce(FULL, 2, 3);
    assert_eq!(status(&fx, &ch, &out), [64, 64, 64], "full stays full");
    consume(LaunchDims::linear(1, 1), 2);
    assert_eq!(status(&fx, &ch, &out), [62, 62, 64], "2 consumed");
    consume(FULL, DRAIN);
    assert_eq!(status(&fx, &ch, &out), [0, 0, 64], "drained");
    let (h, _) = ch.check_quiescent(dev, "status");
    assert_eq!((h.published, h.freed), (10 + 57, 10 + 57), "{h:?}");
    let acc = dev.dtoh(&bits).unwrap();
    assert_eq!(dev.dtoh(&consumed).unwrap(), acc, "consumed ids differ from accepted ids");
    assert_eq!(popcount(&acc), 67);

    let one = Chan::<TestElem, D>::new(dev, 1);
    assert_eq!(status(&fx, &one, &out), [0, 0, 1], "capacity 1, empty");
}

//! Block tasks (`#[gpu_cilk(block)]`, `for i in threads(lo, hi)`, `shared!`, `block_sync!()`):
//! the same results as the serial function on every host backend (serial, cpu stealing and
//! levels, and the persistent scheduler on cuda-sim, which runs the block entry with every thread
//! of a simulated block: 4 one-lane warps, a real `__syncthreads`) and, on request, on the GPU.
//! Shapes: a block task as the root, block tasks spawned into frame destinations by a recursive
//! splitter (many at once, from lanes of different warps and blocks), a scan in phases over two
//! `shared!` arrays, block and warp items in one program (joins between warp phases), tiny and
//! odd lengths.

use gpu_cilk_test_support::programs::backends;
use gpu_cilk_test_support::programs::block;

use block::{block_scan, scan_parts};
use gpu_cilk::prelude::*;

fn input(len: usize) -> Vec<u64> {
    (0..len as u64).map(|i| (i * 2_654_435_761) % 1000 + (i << 40)).collect()
}

/// `serial(a, leaf)` against `run(rt, a, leaf)` on each runtime, for each `(len, leaf)`: the same
/// result and the same slice.
fn equal_serial(
    rts: &[Runtime],
    cases: &[(usize, usize)],
    serial: fn(&mut [u64], usize) -> u64,
    run: fn(&Runtime, &mut [u64], usize) -> Result<u64, Error>,
) {
    for &(len, leaf) in cases {
        let mut want = input(len);
        let wv = serial(&mut want, leaf);
        for rt in rts {
            let mut a = input(len);
            let v = run(rt, &mut a, leaf).unwrap_or_else(|e| panic!("{len} {leaf} on {:?}: {e}", rt.config()));
            assert_eq!((v, &a), (wv, &want), "{len} {leaf} on {:?}", rt.config());
        }
    }
}

fn scans_equal_serial(rts: &[Runtime]) {
    let cases = [(0, 1), (1, 1), (31, 8), (33, 33), (257, 16), (257, 1000), (5000, 300)];
    equal_serial(rts, &cases, scan_parts, |rt, a, leaf| rt.run(scan_parts::task(a, leaf)));
}

/// The serial meaning is the plain scan.
#[test]
fn block_scan_is_a_prefix_sum() {
    let mut a = input(300);
    let mut want = a.clone();
    for i in 1..want.len() {
        want[i] = want[i].wrapping_add(want[i - 1]);
    }
    let total = block_scan(&mut a);
    assert_eq!((total, &a), (want[299], &want));
}

#[test]
fn block_tasks_equal_serial_on_the_host_backends() {
    scans_equal_serial(&backends::host(Config::default()));
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn block_tasks_equal_serial_on_cuda() {
    scans_equal_serial(&backends::cuda_all(Config::default()));
}

/// A block task as the root: the block whose lane takes the root item runs it.
#[test]
fn a_block_task_can_be_the_root() {
    for len in [0usize, 1, 31, 33, 257, 1000] {
        let mut want = input(len);
        let wv = block_scan(&mut want);
        for rt in backends::host(Config::default()) {
            let mut a = input(len);
            let v = rt.run(block_scan::task(&mut a)).expect("runs");
            assert_eq!((v, &a), (wv, &want), "{len} on {:?}", rt.config());
        }
    }
}

/// Doubles `a` on a whole warp; returns its new sum.
#[gpu_cilk(warp)]
pub fn warp_double(a: &mut [u64]) -> u64 {
    for i in lanes(0, a.len()) {
        a[i] = a[i].wrapping_mul(2);
    }
    let mut s: u64 = 0;
    for i in 0..a.len() {
        s = s.wrapping_add(a[i]);
    }
    s
}

/// Like `scan_parts`, but each leaf spawns a block task on its first half and a warp task on its
/// second: block joins and warp phases interleave in the same warps.
#[gpu_cilk]
#[allow(unused_assignments)] // `x`, `y` start at 0 only because frame locals are initialized where declared
pub fn mixed_parts(a: &mut [u64], leaf: usize) -> u64 {
    let mut x: u64 = 0;
    let mut y: u64 = 0;
    let n: usize = a.len();
    let (lo, hi) = a.split_at_mut(n / 2);
    if n <= leaf {
        x = spawn!(block_scan(lo));
        y = spawn!(warp_double(hi));
    } else {
        x = spawn!(mixed_parts(lo, leaf));
        y = spawn!(mixed_parts(hi, leaf));
    }
    sync!();
    x.wrapping_mul(1_000_003).wrapping_add(y)
}

fn mixed_equal_serial(rts: &[Runtime]) {
    let cases = [(0, 1), (33, 4), (1000, 64), (100_000, 2048)];
    equal_serial(rts, &cases, mixed_parts, |rt, a, leaf| rt.run(mixed_parts::task(a, leaf)));
}

#[test]
fn block_and_warp_items_mix_on_the_host_backends() {
    mixed_equal_serial(&backends::host(Config::default()));
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn block_and_warp_items_mix_on_cuda() {
    mixed_equal_serial(&backends::cuda_all(Config::default()));
}

/// The block program compiles with NVRTC for both device schedulers (what `tests/device_compile.rs`
/// does for every fixture, here alone and quick); the persistent one has the block barrier (the
/// levels one runs the serial meaning, so NVVM drops the never-called block entry).
#[test]
fn the_block_program_compiles_with_nvrtc() {
    use gpu_cilk::runtime::backend::cuda::program::assemble_for;
    use gpu_cilk::runtime::backend::cuda::{compile_ptx, nvrtc_version, Arch, DeviceScheduler};
    if let Err(e) = nvrtc_version() {
        backends::gate::nvrtc_missing("the_block_program_compiles_with_nvrtc", &e);
        return;
    }
    let reg = gpu_cilk::runtime::Registry::of::<scan_parts::Task>();
    for sched in [DeviceScheduler::Persistent, DeviceScheduler::Levels] {
        let src = assemble_for(&reg, sched).expect("assembles").source;
        let ptx = compile_ptx(&src, "scan_parts", Arch::new(8, 0)).unwrap_or_else(|e| panic!("{sched:?}: {e}"));
        if sched == DeviceScheduler::Persistent {
            assert!(ptx.contains("bar.sync"), "no block barrier in the persistent PTX");
        }
    }
}

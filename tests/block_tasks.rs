//! Block tasks (`#[gpu_cilk(block)]`, `for i in threads(lo, hi)`, `shared!`, `block_sync!()`):
//! the same results as the serial function on every host backend (serial, cpu stealing and
//! levels, and the persistent scheduler on cuda-sim, which runs the block entry with every thread
//! of a simulated block: 4 one-lane warps, a real `__syncthreads`) and, on request, on the GPU.
//! Shapes: a block task as the root, block tasks spawned into frame destinations by a recursive
//! splitter (many at once, from lanes of different warps and blocks), a scan in phases over two
//! `shared!` arrays, tiny and odd lengths.

#[path = "support/backends.rs"]
mod backends;
#[path = "support/block.rs"]
mod block;

use block::{block_scan, scan_parts};
use gpu_cilk::prelude::*;

fn input(len: usize) -> Vec<u64> {
    (0..len as u64).map(|i| (i * 2_654_435_761) % 1000 + (i << 40)).collect()
}

fn scans_equal_serial(rts: &[Runtime]) {
    for (len, leaf) in [(0usize, 1usize), (1, 1), (31, 8), (33, 33), (257, 16), (257, 1000), (5000, 300)] {
        let mut want = input(len);
        let wv = scan_parts(&mut want, leaf);
        for rt in rts {
            let mut a = input(len);
            let v = rt
                .run(scan_parts::task(&mut a, leaf))
                .unwrap_or_else(|e| panic!("{len} {leaf} on {:?}: {e}", rt.config()));
            assert_eq!((v, &a), (wv, &want), "{len} {leaf} on {:?}", rt.config());
        }
    }
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

/// The block program compiles with NVRTC for both device schedulers (what `tests/nvrtc_compile.rs`
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

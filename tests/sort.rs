//! cilksort (`examples/workloads/sort.rs`) beyond the differential test
//! (`tests/differential.rs`, every shape and size on every backend): the serial function is plain
//! Rust, a merge's result lands in the caller's slice, and a bad range is an `Error` (a panic
//! message on the host, a device fault with the Rust location on cuda-sim), never a crash.

use gpu_cilk_examples::workloads::sort as sort_workload;
use gpu_cilk_test_support::programs::backends;

use gpu_cilk::prelude::*;
use sort_workload::{cilkmerge, cilksort, fingerprint, input, is_sorted};

#[test]
fn the_serial_function_is_plain_rust() {
    let mut a = input(sort_workload::Shape::Random, 500, 3);
    let orig = a.clone();
    let mut tmp = vec![0u32; 500];
    cilksort(&mut a, &mut tmp);
    assert!(is_sorted(&a));
    assert_eq!(fingerprint(&a), fingerprint(&orig));
}

#[test]
fn a_merge_result_lands_in_the_callers_slice() {
    let rt = Runtime::with_backend(BackendKind::Cpu).unwrap();
    let (x, y): (Vec<u32>, Vec<u32>) = ((0..300).map(|i| 2 * i).collect(), (0..200).map(|i| 3 * i).collect());
    let mut out = vec![0u32; 500];
    rt.run(cilkmerge::task(&x, &y, &mut out)).unwrap();
    let mut want = [x, y].concat();
    want.sort_unstable();
    assert_eq!(out, want);
}

#[test]
fn a_scratch_slice_too_short_is_an_error_not_a_crash() {
    for kind in [BackendKind::Serial, BackendKind::Cpu] {
        let rt = Runtime::with_backend(kind).unwrap();
        let mut a = input(sort_workload::Shape::Reverse, 100, 0);
        let mut tmp = vec![0u32; 50];
        let e = rt.run(cilksort::task(&mut a, &mut tmp)).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("out of range") && msg.contains("cilksort"), "{kind:?}: {msg}");
    }
}

/// On the device a bad range is a fault at the Rust location of the range (`&mut tmp[..q]` of
/// `cilksort`), and the caller's slice is left as it was (nothing is downloaded after a failure).
#[test]
fn a_scratch_slice_too_short_is_a_device_fault_with_the_rust_location() {
    for rt in backends::sim(Config::default()).iter().take(1) {
        let orig = input(sort_workload::Shape::Reverse, 100, 0);
        let mut a = orig.clone();
        let mut tmp = vec![0u32; 50];
        let e = rt.run(cilksort::task(&mut a, &mut tmp)).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("index out of bounds") && msg.contains("workloads/sort.rs:"), "{msg}");
        assert_eq!(a, orig);
    }
}

//! cilksort (`examples/workloads/sort.rs`) on every backend: slices in and out of a root task,
//! sub-slices passed to spawned children, three syncs and two task functions. Each input is
//! verified sorted and a permutation of the input (length, sums and byte histograms) and equal to
//! `sort_unstable`'s result; the cuda test is `#[ignore]`d (GPU machine, `--include-ignored`).

#[path = "support/backends.rs"]
mod backends;
#[path = "../examples/workloads/sort.rs"]
mod sort_workload;

use gpu_cilk::prelude::*;
use gpu_cilk::runtime::SchedulerKind;
use sort_workload::{cilkmerge, cilksort, fingerprint, input, is_sorted, SHAPES};

const SIZES: [usize; 9] = [0, 1, 2, 31, 33, 100, 257, 1000, 4099];

fn sorts_every_shape(rts: &[Runtime]) {
    for rt in rts {
        for shape in SHAPES {
            for n in SIZES {
                let orig = input(shape, n, n as u64 + 1);
                let mut a = orig.clone();
                let mut tmp = vec![0u32; n];
                rt.run(cilksort::task(&mut a, &mut tmp))
                    .unwrap_or_else(|e| panic!("{shape:?} {n} on {:?}: {e}", rt.config()));
                assert!(is_sorted(&a), "{shape:?} {n} not sorted on {:?}", rt.config());
                assert_eq!(
                    fingerprint(&a),
                    fingerprint(&orig),
                    "{shape:?} {n}: not a permutation on {:?}",
                    rt.config()
                );
                let mut want = orig.clone();
                want.sort_unstable();
                assert_eq!(a, want, "{shape:?} {n} on {:?}", rt.config());
            }
        }
    }
}

#[test]
fn cilksort_sorts_on_serial_and_cpu() {
    let mut rts = vec![Runtime::with_backend(BackendKind::Serial).unwrap()];
    rts.extend(backends::cpu(Config::default()));
    assert!(rts.iter().any(|rt| rt.config().scheduler == SchedulerKind::Levels));
    sorts_every_shape(&rts);
}

/// The device program on the host simulation (`cuda-sim`): uploads, device sub-slices, downloads.
#[test]
fn cilksort_sorts_on_sim() {
    sorts_every_shape(&backends::sim(Config::default()));
}

#[test]
#[ignore = "needs a GPU: cargo test --test sort -- --include-ignored"]
fn cilksort_sorts_on_cuda() {
    sorts_every_shape(&backends::cuda_all(Config::default()));
}

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

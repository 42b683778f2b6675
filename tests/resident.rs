//! Resident buffers (`Runtime::upload`, `ResidentBuffer`): uploaded once, passed to many root runs
//! as slices, read back once. On every backend the runs see each other's writes and the
//! result equals the same runs on host slices; on cuda-sim (and cuda) a resident slice is
//! neither uploaded nor downloaded (`Stats::transfer` stays zero, the host placeholder stays
//! zeroed); a buffer of one runtime given to another's run is an error. GPU tests are
//! `#[ignore]`d (see `gpu_cilk_test_support::gate`).

use gpu_cilk_examples::workloads::sort as sort_workload;
use gpu_cilk_test_support::programs::backends;

use gpu_cilk::prelude::*;
use sort_workload::{cilksort, fingerprint, input, is_sorted, Shape};

/// Adds `k` to every element, split in halves while long.
#[gpu_cilk]
fn add_all(a: &mut [u32], k: u32) {
    if a.len() <= 16 {
        for i in 0..a.len() {
            a[i] += k;
        }
        return;
    }
    let h: usize = a.len() / 2;
    spawn!(add_all(&mut a[..h], k));
    spawn!(add_all(&mut a[h..], k));
    sync!();
}

/// The sum of `a` (read-only).
#[gpu_cilk]
fn sum_all(a: &[u32]) -> u64 {
    if a.len() <= 16 {
        let mut s: u64 = 0;
        for i in 0..a.len() {
            s += a[i] as u64;
        }
        return s;
    }
    let h: usize = a.len() / 2;
    let x = spawn!(sum_all(&a[..h]));
    let y = spawn!(sum_all(&a[h..]));
    sync!();
    x + y
}

/// Three runs on one resident buffer (two writing, one reading a sub-slice), then one download:
/// each run sees the previous one's writes, and nothing is transferred per run.
fn runs_share_the_buffer(rt: &Runtime) {
    let data: Vec<u32> = (0..1000).collect();
    let mut buf = rt.upload(&data).expect("upload");
    assert_eq!(buf.len(), 1000);
    for k in [1u32, 2] {
        let rep = rt.run_with_stats(add_all::task(buf.arg_mut(), k)).expect("add_all");
        if buf.on_device() {
            assert!(rep.stats.transfer.is_zero(), "{:?}: a resident slice was copied", rt.backend());
        }
    }
    let want: u64 = (100..200u64).map(|i| i + 3).sum();
    assert_eq!(rt.run(sum_all::task(&buf.arg()[100..200])).expect("sum_all"), want, "{:?}", rt.backend());
    let got = buf.to_vec().expect("download");
    assert_eq!(got, data.iter().map(|x| x + 3).collect::<Vec<_>>(), "{:?}", rt.backend());
    if buf.on_device() {
        // The placeholder is not the data: nothing was downloaded into it.
        assert!(buf.arg().iter().all(|&x| x == 0), "{:?}: the placeholder changed", rt.backend());
    } else {
        assert_eq!(buf.arg(), &got[..]);
    }
    // upload overwrites; download fills a caller's slice.
    buf.upload(&data).expect("re-upload");
    let mut out = vec![0u32; 1000];
    buf.download(&mut out).expect("download into");
    assert_eq!(out, data);
    assert!(buf.upload(&data[..10]).is_err(), "a length mismatch is an error");
}

/// cilksort with resident keys and a host scratch slice in one call: the keys stay on the device,
/// the scratch travels as usual; the result equals the host-slice run's.
fn sort_resident_keys(rt: &Runtime) {
    let orig = input(Shape::Random, 5000, 11);
    let mut keys = rt.upload(&orig).expect("upload");
    let mut tmp = vec![0u32; orig.len()];
    rt.run(cilksort::task(keys.arg_mut(), &mut tmp)).expect("cilksort");
    let sorted = keys.to_vec().expect("download");
    assert!(is_sorted(&sorted), "{:?}", rt.backend());
    assert_eq!(fingerprint(&sorted), fingerprint(&orig), "{:?}", rt.backend());
    let mut host = orig.clone();
    rt.run(cilksort::task(&mut host, &mut tmp)).expect("cilksort on host slices");
    assert_eq!(sorted, host);
}

#[test]
fn runs_share_a_resident_buffer_on_every_host_backend() {
    for rt in backends::host(Config::default()) {
        runs_share_the_buffer(&rt);
        sort_resident_keys(&rt);
    }
}

#[test]
fn host_buffers_are_the_data_and_device_ones_are_not() {
    let serial = Runtime::with_backend(BackendKind::Serial).unwrap();
    let buf = serial.upload_vec(vec![5u32, 6]).unwrap();
    assert!(!buf.on_device());
    assert_eq!(buf.into_host_vec().unwrap(), [5, 6]);
    for rt in backends::sim(Config::default()).iter().take(1) {
        let buf = rt.upload(&[1.5f32, 2.5]).unwrap();
        assert!(buf.on_device());
        assert_eq!(buf.to_vec().unwrap(), [1.5, 2.5]);
        assert!(buf.into_host_vec().is_err());
    }
}

#[test]
fn a_buffer_of_another_runtime_is_an_error() {
    let sims = backends::sim(Config::default());
    if sims.len() < 2 {
        return; // no compiler (reported by `backends::sim`)
    }
    let mut buf = sims[0].upload(&[1u32, 2, 3]).unwrap();
    let e = sims[1].run(add_all::task(buf.arg_mut(), 1)).unwrap_err();
    assert!(e.to_string().contains("resident buffer of another runtime"), "{e}");
    assert_eq!(buf.to_vec().unwrap(), [1, 2, 3], "the failed run did not touch it");
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn runs_share_a_resident_buffer_on_cuda() {
    for rt in backends::cuda_all(Config::default()) {
        runs_share_the_buffer(&rt);
        sort_resident_keys(&rt);
    }
}

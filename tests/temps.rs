//! Task-scoped temporaries (`alloc!`): the same answers on every backend as the serial oracle,
//! a tree of temporaries, and an exhausted temporary heap reported as an error naming the task
//! and the size. Each check runs on the host backends and, in an `#[ignore]`d GPU test (run with
//! `--include-ignored` on a GPU machine), on cuda.

use gpu_cilk_test_support::programs::backends;
use gpu_cilk_test_support::programs::temps;

use gpu_cilk::prelude::*;
use temps::{rec_sum, scatter_sum, tree_root, two_rounds, waves};

fn base() -> Config {
    Config::default().temp_heap_bytes(1 << 22)
}

fn children_write_into_the_parents_temporary(rts: &[Runtime]) {
    for rt in rts {
        for (k, seed) in [(0u32, 1u64), (1, 2), (7, 3), (64, 4), (300, 5)] {
            let expected = scatter_sum(k, seed);
            assert_eq!(rt.run(scatter_sum::task(k, seed)).unwrap(), expected, "k={k} on {:?}", rt.config());
        }
    }
}

#[test]
fn children_write_into_the_parents_temporary_on_the_host_backends() {
    children_write_into_the_parents_temporary(&backends::host(base()));
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn children_write_into_the_parents_temporary_on_cuda() {
    children_write_into_the_parents_temporary(&backends::cuda_all(base()));
}

/// [`rec_sum`] in plain Rust: the fold of the elements its children and it write.
fn rec_sum_by_hand(k: u32, seed: u64) -> u64 {
    let mut s: u64 = 0;
    for i in 0..k as usize {
        let e = seed.wrapping_mul(2654435761).wrapping_add(i as u64);
        let (x, n, w, kk) =
            (i as f32 * 0.5, (e % 251) as u8, [i as u16, 7 + i as u16, (e % 65521) as u16], -(e as i64));
        s = s.wrapping_mul(31).wrapping_add((x * 4.0) as u64);
        s = s.wrapping_mul(31).wrapping_add(n as u64 + w.iter().map(|&v| v as u64).sum::<u64>());
        s = s.wrapping_mul(31).wrapping_add(kk as u64);
    }
    s
}

fn struct_elements_equal_plain_rust(rts: &[Runtime]) {
    assert_eq!(std::mem::size_of::<temps::Rec>(), 24);
    for rt in rts {
        for (k, seed) in [(0u32, 1u64), (1, 2), (5, 3), (200, 4)] {
            let expected = rec_sum_by_hand(k, seed);
            assert_eq!(rec_sum(k, seed), expected, "serial function, k={k}");
            assert_eq!(rt.run(rec_sum::task(k, seed)).unwrap(), expected, "k={k} on {:?}", rt.config());
        }
    }
}

#[test]
fn struct_elements_equal_plain_rust_on_the_host_backends() {
    struct_elements_equal_plain_rust(&backends::host(base()));
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn struct_elements_equal_plain_rust_on_cuda() {
    struct_elements_equal_plain_rust(&backends::cuda_all(base()));
}

fn a_tree_of_temporaries_equals_serial(rts: &[Runtime]) {
    for rt in rts {
        for (d, w) in [(0u32, 3u32), (1, 4), (3, 3), (5, 2), (2, 9)] {
            let expected = tree_root(d, w);
            assert_eq!(rt.run(tree_root::task(d, w)).unwrap(), expected, "tree({d}, {w}) on {:?}", rt.config());
        }
    }
}

#[test]
fn a_tree_of_temporaries_equals_serial_on_the_host_backends() {
    a_tree_of_temporaries_equals_serial(&backends::host(base()));
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn a_tree_of_temporaries_equals_serial_on_cuda() {
    a_tree_of_temporaries_equals_serial(&backends::cuda_all(base()));
}

fn temporaries_live_across_two_syncs(rts: &[Runtime]) {
    for rt in rts {
        let expected = two_rounds(100);
        assert_eq!(expected, (0..100).map(|i| (i as f32 + 0.5) * 0.5).sum::<f32>());
        assert_eq!(rt.run(two_rounds::task(100)).unwrap().to_bits(), expected.to_bits(), "on {:?}", rt.config());
    }
}

#[test]
fn temporaries_live_across_two_syncs_on_the_host_backends() {
    temporaries_live_across_two_syncs(&backends::host(base()));
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn temporaries_live_across_two_syncs_on_cuda() {
    temporaries_live_across_two_syncs(&backends::cuda_all(base()));
}

#[test]
fn temporaries_are_freed_when_their_task_ends() {
    // Each `big(5000, _)` takes 40 KB: three in a row fit a 64 KiB heap only if each is freed.
    let rt = Runtime::with_config(Config::default().backend(BackendKind::Cpu).temp_heap_bytes(1 << 16)).unwrap();
    for _ in 0..3 {
        assert_eq!(rt.run(waves::task(5000)).unwrap(), waves(5000));
    }
    // The same on the host simulation of the cuda backend's device code, with the 64 KiB heap.
    for rt in backends::sim(Config::default().temp_heap_bytes(1 << 16)) {
        for _ in 0..3 {
            assert_eq!(rt.run(waves::task(5000)).unwrap(), waves(5000), "on {:?}", rt.config());
        }
    }
    // The same with every host backend's own heap size.
    for rt in backends::host(base()) {
        assert_eq!(rt.run(waves::task(5000)).unwrap(), waves(5000), "on {:?}", rt.config());
    }
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn temporaries_are_freed_when_their_task_ends_on_cuda() {
    // 64 KiB is the device heap's floor; three 40 KB temporaries in a row fit only if each is freed.
    for rt in backends::cuda_all(Config::default().temp_heap_bytes(1 << 16)) {
        for _ in 0..3 {
            assert_eq!(rt.run(waves::task(5000)).unwrap(), waves(5000), "on {:?}", rt.config());
        }
    }
}

#[test]
fn an_exhausted_temporary_heap_names_the_task_and_the_size() {
    let rt = Runtime::with_config(Config::default().backend(BackendKind::Cpu).temp_heap_bytes(1 << 12)).unwrap();
    match rt.run(scatter_sum::task(100_000, 1)) {
        Err(e @ gpu_cilk::Error::TempHeapExhausted { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("`scatter_sum`") && msg.contains("100000 elements"), "{msg}");
            assert!(msg.contains("temp_heap_bytes"), "{msg}");
        }
        other => panic!("expected TempHeapExhausted, got {other:?}"),
    }
}

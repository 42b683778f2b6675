//! Plain structs (`#[derive(DeviceStruct)]`, "Plain structs" in `docs/dsl.md`) on every host
//! backend: the closest pair of points (`examples/workloads/closest.rs`: `&[Point]` slices,
//! `Pair` results in the parent's frame, struct parameters of helpers, struct literals and field
//! access) against the plain serial function and a brute-force check, on serial, the cpu
//! schedulers and the persistent device scheduler on the host simulation (which compiles the C++
//! structs the derive writes and checks their layout); on cuda in an `#[ignore]`d GPU test.

use gpu_cilk::prelude::*;

use gpu_cilk_examples::workloads::closest as closest_workload;
use gpu_cilk_test_support::programs::backends;

use closest_workload::{closest, min_dist2, points, Pair, Point};

fn closest_equals_serial(rts: &[Runtime]) {
    for (n, side, seed) in [(2usize, 10u32, 1u64), (9, 50, 2), (100, 1000, 3), (3000, 2000, 4), (777, 40, 5)] {
        let p = points(n, side, seed);
        let want = closest(&p);
        assert_eq!(want.d2, min_dist2(&p), "the serial function finds the closest pair ({n} points)");
        for rt in rts {
            let got = rt.run(closest::task(&p)).unwrap_or_else(|e| panic!("{n} points on {:?}: {e}", rt.config()));
            assert_eq!(got, want, "{n} points on {:?}", rt.config());
        }
    }
}

#[test]
fn closest_pair_equals_serial_on_the_host_backends() {
    closest_equals_serial(&backends::host(Config::default()));
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn closest_pair_equals_serial_on_cuda() {
    closest_equals_serial(&backends::cuda_all(Config::default()));
}

/// A struct as a task's parameter and result, and as a local across a sync.
#[gpu_cilk]
fn shift(p: Point, k: u32) -> Point {
    if k == 0 {
        return p;
    }
    let q = spawn!(shift(Point { x: p.x + 1.0, y: p.y }, k - 1));
    sync!();
    let mut out: Point = q;
    out.y += 2.0;
    out
}

#[test]
fn a_struct_parameter_and_result_equal_serial_on_the_host_backends() {
    let p = Point { x: 1.0, y: -3.0 };
    assert_eq!(shift(p, 5), Point { x: 6.0, y: 7.0 });
    for rt in backends::host(Config::default()) {
        assert_eq!(rt.run(shift::task(p, 5)).expect("runs"), shift(p, 5), "{:?}", rt.config());
    }
    let _ = Pair::default();
}

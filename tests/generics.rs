//! Generic tasks (`T: Key`, "Generic tasks" in `docs/dsl.md`) on every host backend (serial, the
//! cpu schedulers, and the persistent device scheduler on the host simulation, which compiles
//! the C++ templates the compiler writes and instantiates them per Rust instantiation), each
//! against the plain serial function; on cuda in `#[ignore]`d GPU tests. cilksort itself, the
//! generic workload, is checked for u32, f32 and i64 keys by `tests/differential.rs`.

use gpu_cilk::prelude::*;

use gpu_cilk_test_support::programs::backends;
use gpu_cilk_test_support::programs::generics;

use generics::{gfirst, gmax, gmax_both, grounds, gstage, gtwice};

fn keys_i64(n: usize) -> Vec<i64> {
    (0..n as i64).map(|i| (i * 7919) % 10007 - 5003).collect()
}

fn keys_f32(n: usize) -> Vec<f32> {
    keys_i64(n).into_iter().map(|k| k as f32 * 0.25).collect()
}

fn generic_tasks_equal_serial(rts: &[Runtime]) {
    let (u, i, f) =
        (keys_i64(1000).into_iter().map(|k| (k + 6000) as u32).collect::<Vec<u32>>(), keys_i64(777), keys_f32(300));
    for rt in rts {
        let on = format!("{:?}", rt.config());
        assert_eq!(rt.run(gmax::task(&u)).expect("runs"), gmax(&u), "u32 on {on}");
        assert_eq!(rt.run(gmax::task(&i)).expect("runs"), gmax(&i), "i64 on {on}");
        assert_eq!(rt.run(gmax::task(&f)).expect("runs"), gmax(&f), "f32 on {on}");
        assert_eq!(gmax(&i), *i.iter().max().expect("not empty"));
        assert_eq!(rt.run(gmax_both::task(&u, &i)).expect("runs"), gmax_both(&u, &i), "both on {on}");
        assert_eq!(rt.run(gtwice::task(&f)).expect("runs"), gtwice(&f), "twice on {on}");
        // The total order: NaN last, -0.0 before 0.0 (the IEEE `<` would keep either zero).
        let z = [f32::NAN, 0.0, 3.5, -0.0, f32::INFINITY, 0.0];
        let first = rt.run(gfirst::task(&z)).expect("runs");
        assert_eq!(first.to_bits(), (-0.0f32).to_bits(), "total order on {on}");
        assert_eq!(first.to_bits(), gfirst(&z).to_bits());
        assert_eq!(rt.run(gfirst::task(&i)).expect("runs"), *i.iter().min().expect("not empty"), "i64 on {on}");
        if rt.config().scheduler != SchedulerKind::Levels {
            // A sync inside a loop: the levels schedulers refuse state machines.
            assert_eq!(rt.run(grounds::task(&f, 37, 11)).expect("runs"), grounds(&f, 37, 11), "rounds on {on}");
        }
    }
}

#[test]
fn generic_tasks_equal_serial_on_the_host_backends() {
    generic_tasks_equal_serial(&backends::host(Config::default()));
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn generic_tasks_equal_serial_on_cuda() {
    generic_tasks_equal_serial(&backends::cuda_all(Config::default()));
}

/// A generic `Temp<T>` parameter, allocated by a non-generic root.
#[gpu_cilk]
fn stage_root(a: &[i64]) -> i64 {
    let t = alloc!(i64, a.len() + 1);
    spawn!(gstage::<i64>(a, t, 0));
    sync!();
    let mut s: i64 = 0;
    for k in 0..t.len() {
        s += t[k];
    }
    s
}

#[test]
fn a_generic_temp_parameter_equals_serial_on_the_host_backends() {
    let a = keys_i64(200);
    for rt in backends::host(Config::default()) {
        assert_eq!(rt.run(stage_root::task(&a)).expect("runs"), stage_root(&a), "{:?}", rt.config());
    }
}

//! Faults in task bodies come back as errors naming the function and the source location, on
//! every backend, and a task that never finishes is stopped by `Config::timeout` on the GPU —
//! never a crash or a hang. GPU cases are `#[ignore]`d: run them with `--include-ignored` on a GPU
//! machine (see `gpu_cilk_test_support::gate`).

use gpu_cilk::prelude::*;
use std::time::Duration;

use backends::cuda;
use gpu_cilk_test_support::programs::backends;

/// Reads `a[i]` of a four-element array: out of bounds for `i >= 4`.
#[gpu_cilk]
pub fn pick(i: u32) -> u32 {
    let a: [u32; 4] = [10, 20, 30, 40];
    a[i as usize]
}

/// Spawns `pick` and divides by `d` after the sync.
#[gpu_cilk]
pub fn ratio(i: u32, d: u32) -> u32 {
    let x = spawn!(pick(i));
    sync!();
    x / d
}

/// A chain of `n` single spawns.
#[gpu_cilk]
pub fn deep(n: u32) -> u32 {
    if n == 0 {
        return 0;
    }
    let r = spawn!(deep(n - 1));
    sync!();
    r + 1
}

/// Never returns: it keeps writing memory (a task temporary), so no compiler may remove the loop.
/// (A loop with no effect at all is removed by the device's PTX assembler even though the PTX
/// keeps it — see docs/dsl.md — so it cannot stand for "a kernel that never finishes".)
#[gpu_cilk]
pub fn spin(n: u32) -> u32 {
    let t = alloc!(u32, 1);
    t[0] = n;
    loop {
        t[0] = t[0].wrapping_mul(3).wrapping_add(1);
        if t[0] == 0 && n == 12345 {
            break;
        }
    }
    t[0]
}

#[test]
fn index_out_of_bounds_is_an_error_on_host_backends() {
    for kind in [BackendKind::Serial, BackendKind::Cpu] {
        let rt = Runtime::with_config(Config::default().backend(kind)).unwrap();
        assert_eq!(rt.run(ratio::task(2, 3)).unwrap(), 10);
        match rt.run(ratio::task(9, 1)) {
            Err(Error::TaskPanicked { message, .. }) => assert!(message.contains("index out of bounds"), "{message}"),
            other => panic!("{kind}: expected TaskPanicked, got {other:?}"),
        }
        match rt.run(ratio::task(1, 0)) {
            Err(Error::TaskPanicked { message, .. }) => assert!(message.contains("divide by zero"), "{message}"),
            other => panic!("{kind}: expected TaskPanicked, got {other:?}"),
        }
    }
}

/// A fault in a task body is a `DeviceFault` naming the function, the Rust location and the
/// level, and the runtime stays usable, whichever device scheduler ran it.
fn device_faults_name_the_function_and_location(rt: &Runtime) {
    assert_eq!(rt.run(ratio::task(2, 3)).unwrap(), 10);
    match rt.run(ratio::task(9, 1)) {
        Err(Error::DeviceFault { task, location, message, level }) => {
            assert_eq!(task, "pick", "on {:?}", rt.config());
            assert_eq!(level, 1);
            assert!(location.contains("device_faults.rs:"), "{location}");
            assert!(message.contains("index out of bounds"), "{message}");
        }
        other => panic!("expected DeviceFault on {:?}, got {other:?}", rt.config()),
    }
    match rt.run(ratio::task(1, 0)) {
        Err(Error::DeviceFault { task, message, .. }) => {
            assert_eq!(task, "ratio");
            assert!(message.contains("divide by zero"), "{message}");
        }
        other => panic!("expected DeviceFault on {:?}, got {other:?}", rt.config()),
    }
    // The runtime is still usable after a fault.
    assert_eq!(rt.run(ratio::task(3, 4)).unwrap(), 10);
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn device_faults_name_the_function_and_location_on_cuda() {
    for rt in backends::cuda_all(Config::default()) {
        device_faults_name_the_function_and_location(&rt);
    }
}

#[test]
fn device_faults_name_the_function_and_location_on_the_simulation() {
    for rt in backends::sim(Config::default()) {
        device_faults_name_the_function_and_location(&rt);
    }
}

/// A recursion deeper than `Config::max_depth` stops the run with `DepthExceeded`, on the
/// persistent device scheduler too (which has no per-level storage: the limit is the config's).
#[test]
fn max_depth_is_enforced_on_the_simulation() {
    for rt in backends::sim(Config::default().max_depth(50)) {
        match rt.run(deep::task(100)) {
            Err(Error::DepthExceeded { task, limit }) => {
                assert_eq!((task, limit), ("deep", 50), "on {:?}", rt.config());
            }
            other => panic!("expected DepthExceeded on {:?}, got {other:?}", rt.config()),
        }
        assert_eq!(rt.run(deep::task(30)).unwrap(), 30);
    }
}

/// A leaf: the second child of every `spine` node.
#[gpu_cilk]
pub fn leaf(n: u32) -> u64 {
    n as u64
}

/// A spine of depth `n` with a leaf beside every node (spawned first: the leaf is the oldest
/// pending entry of the spine's lane, the one handed to an idle lane): a path `n` frames deep on
/// the lane's task stack. `1 + 1 + 2 + .. + n`.
#[gpu_cilk]
pub fn spine(n: u32) -> u64 {
    if n == 0 {
        return 1;
    }
    let b = spawn!(leaf(n));
    let a = spawn!(spine(n - 1));
    sync!();
    a + b
}

/// `spine` with a continuation that does more than add its children's results (`wrapping_add`),
/// so it is no sum group (docs/dsl.md, "Tasks that only add up their children"): a spilled path
/// needs one pool frame per level.
#[gpu_cilk]
pub fn framed_spine(n: u32) -> u64 {
    if n == 0 {
        return 1;
    }
    let b = spawn!(leaf(n));
    let a = spawn!(framed_spine(n - 1));
    sync!();
    a.wrapping_add(b)
}

/// `k` spines of depth `n` side by side, spawned as a balanced tree (one spine and two halves per
/// node, depth log2 k): deep paths on many lanes at once.
#[gpu_cilk]
pub fn forest(k: u32, n: u32) -> u64 {
    if k == 0 {
        return 0;
    }
    // One spine here, the other k - 1 in two halves.
    let a = spawn!(spine(n));
    let b = spawn!(forest((k - 1) / 2, n));
    let c = spawn!(forest(k - 1 - (k - 1) / 2, n));
    sync!();
    a + b + c
}

/// `spine` that counts its nodes in a `&Sum`: spilled and handed-over frames count once each.
#[gpu_cilk]
pub fn counted_spine(n: u32, nodes: &Sum<u64>) -> u64 {
    nodes.fetch_add(1);
    if n == 0 {
        return 1;
    }
    let b = spawn!(leaf(n));
    let a = spawn!(counted_spine(n - 1, nodes));
    sync!();
    a + b
}

/// `forest` of counted spines.
#[gpu_cilk]
pub fn counted_forest(k: u32, n: u32, nodes: &Sum<u64>) -> u64 {
    if k == 0 {
        return 0;
    }
    let a = spawn!(counted_spine(n, nodes));
    let b = spawn!(counted_forest((k - 1) / 2, n, nodes));
    let c = spawn!(counted_forest(k - 1 - (k - 1) / 2, n, nodes));
    sync!();
    a + b + c
}

/// A recursion of plain calls (serial forms, on the thread's stack) `n` deep that writes through
/// a `&mut` slice on the way. Returns `n`.
#[gpu_cilk]
pub fn scribble(out: &mut [u64], n: u32) -> u64 {
    if n == 0 {
        return 0;
    }
    out[0] += 1;
    scribble(out, n - 1) + 1
}

/// Deep paths and deep plain calls on the persistent scheduler: `k` spines of `n` spawns each run
/// from the lanes' task stacks at any depth — with 2-entry lane stacks every path spills into the
/// frame pool (counted in `Stats::spills`), with the right result and a `&Sum` node count that is
/// exact; a recursion of plain calls (serial forms on the thread's stack, through a `&mut` slice)
/// past the stack budget fails the run with a `DeviceFault` naming the function, and a frame pool
/// too small for a spilled path fails it with a `DeviceFault` naming the pool. Never a crash, and
/// the runtime stays usable.
fn deep_paths(base: Config, k: u32) {
    let n = 200u32;
    let expect = u64::from(k) * (1 + u64::from(n) * u64::from(n + 1) / 2);
    for lanes in [0, 2] {
        let rt = Runtime::with_config(base.clone().device_lane_stack(lanes)).unwrap_or_else(|e| panic!("{e}"));
        let r = rt.run_with_stats(forest::task(k, n)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.value, expect);
        if lanes == 2 {
            assert!(r.stats.spills > 0 && r.stats.promoted > 0, "2-entry lane stacks spill: {}", r.stats);
        }
        let nodes = Sum::new(0u64);
        let r = rt.run_with_stats(counted_forest::task(k, n, &nodes)).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(r.value, expect);
        assert_eq!(nodes.get(), u64::from(k) * u64::from(n + 1), "every spine node counted once");
    }

    let rt = Runtime::with_config(base.clone()).unwrap_or_else(|e| panic!("{e}"));
    let mut out = [0u64; 1];
    match rt.run(scribble::task(&mut out, 100_000)) {
        Err(Error::DeviceFault { task, message, .. }) => {
            assert_eq!(task, "scribble");
            assert!(message.contains("bytes of device stack"), "{message}");
            assert!(message.contains("spawn!"), "the hint: {message}");
        }
        other => panic!("expected a DeviceFault naming `scribble`, got {other:?}"),
    }
    let mut out = [0u64; 1];
    assert_eq!(rt.run(scribble::task(&mut out, 3)).unwrap(), 3, "the runtime stays usable");
    assert_eq!(out[0], 3);

    // The smallest frame pool (1024 frames) cannot hold a spilled path 20,000 deep of tasks with
    // frames; a spine of sum tasks needs none (its members are a work list, its root one frame).
    let small =
        Runtime::with_config(base.device_lane_stack(2).device_frame_pool_bytes(1)).unwrap_or_else(|e| panic!("{e}"));
    match small.run(framed_spine::task(20_000)) {
        Err(Error::DeviceFault { message, .. }) => assert!(message.contains("frame pool"), "{message}"),
        other => panic!("expected a DeviceFault naming the frame pool, got {other:?}"),
    }
    assert_eq!(small.run(framed_spine::task(100)).unwrap(), 1 + 100 * 101 / 2, "the runtime stays usable");
    assert_eq!(small.run(spine::task(20_000)).unwrap(), 1 + 20_000 * 20_001 / 2, "a sum group needs no frames");
}

#[test]
fn deep_paths_on_the_simulation() {
    let sim = Config::default().backend(BackendKind::CudaSim).scheduler(gpu_cilk::runtime::SchedulerKind::Persistent);
    if let Err(e) = Runtime::with_config(sim.clone()) {
        backends::gate::sim_missing("the deep paths test", &e);
        return;
    }
    deep_paths(sim, 32);
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn deep_paths_on_cuda() {
    let base = Config::default().backend(BackendKind::Cuda).scheduler(gpu_cilk::runtime::SchedulerKind::Persistent);
    if let Err(e) = Runtime::with_config(base.clone()) {
        backends::gate::no_gpu("the deep paths test", &e);
    }
    deep_paths(base, 4096);
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn a_kernel_that_never_finishes_times_out() {
    // The stuck kernel keeps the device busy, so it runs in a child process of this test binary.
    if std::env::var_os("GPU_CILK_TIMEOUT_CHILD").is_some() {
        let rt = cuda(Config::default().timeout(Some(Duration::from_millis(1500))));
        match rt.run(spin::task(7)) {
            Err(Error::Timeout(t)) => println!("TIMED OUT after {t:?}"),
            other => panic!("expected Timeout, got {other:?}"),
        }
        std::process::exit(0); // do not wait for the stuck kernel at teardown
    }
    let _ = cuda(Config::default());
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--include-ignored", "--exact", "a_kernel_that_never_finishes_times_out", "--nocapture"])
        .env("GPU_CILK_TIMEOUT_CHILD", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("TIMED OUT"), "child said: {text}\n{}", String::from_utf8_lossy(&out.stderr));
}

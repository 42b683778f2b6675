//! Device tests of the CUDA plumbing (`backend::cuda`). Each needs a GPU, so each is `#[ignore]`d
//! (see `gpu_cilk_test_support::gate`); run them on a GPU machine with `LD_LIBRARY_PATH=/usr/local/cuda/lib64
//! cargo test -p gpu-cilk-runtime --test cuda_device -- --include-ignored`.

use gpu_cilk_runtime::backend::cuda::{CudaDevice, DeviceCopy, DevicePtr, LaunchDims, ProgramSource, PtxCache};
use gpu_cilk_runtime::{BackendKind, Error, Runtime};
use std::time::{Duration, Instant};

use gpu_cilk_test_support::{gate, target::gpu_device};

/// The device, with a PTX cache of its own in a temporary directory.
fn device(test: &str) -> (CudaDevice, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("temp dir");
    (gpu_device(test).with_cache(PtxCache::at(dir.path())), dir)
}

#[repr(C)]
#[derive(Clone, Copy)]
struct Iota {
    out: DevicePtr<u64>,
    n: u32,
}
// SAFETY: repr(C) POD mirrored by the CUDA struct below.
unsafe impl DeviceCopy for Iota {}

const SRC: &str = r#"
struct Iota { unsigned long long* out; unsigned n; };
extern "C" __global__ void iota(Iota p) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) p.out[i] = (unsigned long long)i * 3u;
}
extern "C" __global__ void fault(Iota p) {
    // Write far outside any allocation.
    p.out[(1ull << 40) + threadIdx.x] = 1;
}
extern "C" __global__ void spin(Iota p) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < 300000000ull);
    if (threadIdx.x == 0 && p.n > 0) p.out[0] = 7;
}
"#;

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn opens_and_describes_the_device() {
    let (dev, _dir) = device("opens_and_describes_the_device");
    let info = dev.info();
    assert!(!info.name.is_empty());
    assert!(info.arch.major >= 5, "{:?}", info.arch);
    assert!(info.total_memory > 0 && info.multiprocessors > 0);
    let d = dev.description();
    assert!(d.contains(&info.name) && d.contains("sm_") && d.contains("GiB"), "{d}");
    eprintln!("device: {d}");
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn launches_copies_and_caches() {
    let (dev, _dir) = device("launches_copies_and_caches");
    let src = ProgramSource::new("iota_test", SRC);
    let program = dev.load_program(&src).unwrap();
    assert!(!program.info().cache_hit);
    // SAFETY: `iota` takes one `Iota` and writes out[0..n).
    let iota = unsafe { program.kernel::<Iota>("iota") }.unwrap();
    let n = 100_003usize;
    let out = dev.alloc_zeroed::<u64>(n).unwrap();
    iota.launch(LaunchDims::cover(n, 256), &Iota { out: out.ptr(), n: n as u32 }).unwrap();
    let host = dev.dtoh(&out).unwrap();
    assert!(host.iter().enumerate().all(|(i, &v)| v == 3 * i as u64));

    let input: Vec<u64> = (0..1000).collect();
    let mut buf = dev.htod(&input).unwrap();
    assert_eq!(dev.dtoh(&buf).unwrap(), input);
    dev.copy_htod(&[9, 9], &mut buf).unwrap();
    let mut first = [0u64; 3];
    dev.dtoh_into(&buf, &mut first).unwrap();
    assert_eq!(first, [9, 9, 2]);
    dev.zero(&mut buf).unwrap();
    assert!(dev.dtoh(&buf).unwrap().iter().all(|&v| v == 0));

    let again = dev.load_program(&src).unwrap();
    assert!(again.info().cache_hit, "second load of the same program should hit the PTX cache");
    assert!(again.info().cold_compile.is_some());
    dev.sync().unwrap();
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn missing_kernel_and_compile_errors_are_errors() {
    let (dev, _dir) = device("missing_kernel_and_compile_errors_are_errors");
    let program = dev.load_program(&ProgramSource::new("iota_test", SRC)).unwrap();
    // SAFETY: the lookup fails, nothing is launched.
    let err = unsafe { program.kernel::<Iota>("no_such_kernel") }.unwrap_err();
    assert!(err.to_string().contains("no_such_kernel"), "{err}");
    let err = dev.load_program(&ProgramSource::new("bad", "extern \"C\" __global__ void k() { nope(); }")).unwrap_err();
    assert!(
        matches!(&err, Error::Compile { task_or_program, log, .. } if task_or_program == "bad" && log.contains("nope"))
    );
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn timeout_is_reported_and_work_continues() {
    let (dev, _dir) = device("timeout_is_reported_and_work_continues");
    let program = dev.load_program(&ProgramSource::new("iota_test", SRC)).unwrap();
    // SAFETY: `spin` takes one `Iota` and writes out[0] when n > 0; `out` holds one element.
    let spin = unsafe { program.kernel::<Iota>("spin") }.unwrap();
    let out = dev.alloc_zeroed::<u64>(1).unwrap();
    dev.sync().unwrap();
    let start = Instant::now();
    spin.launch(LaunchDims::linear(1, 32), &Iota { out: out.ptr(), n: 1 }).unwrap();
    let err = dev.synchronize(Some(Duration::from_millis(20))).unwrap_err();
    assert!(matches!(err, Error::Timeout(t) if t == Duration::from_millis(20)), "{err}");
    assert!(start.elapsed() < Duration::from_millis(250), "timed out late: {:?}", start.elapsed());
    dev.synchronize(Some(Duration::from_secs(10))).unwrap();
    assert_eq!(dev.dtoh(&out).unwrap(), [7]);
}

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn runtime_opens_cuda() {
    let _ = device("runtime_opens_cuda");
    let rt = Runtime::with_backend(BackendKind::Cuda).unwrap();
    assert_eq!(rt.backend(), BackendKind::Cuda);
    assert!(rt.device_description().contains("sm_"));
}

/// A kernel that faults breaks CUDA for its process: the failure names the kernel, a later call on
/// the same handle says that a kernel broke the context (not that the call itself failed), opening
/// a new handle fails at once quoting the failure, and a fresh process works. The fault happens
/// in a child process (see `gate::in_child_process`), so the other tests of this binary are safe.
#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn kernel_fault_names_the_kernel_and_ends_cuda_for_the_process() {
    const TEST: &str = "kernel_fault_names_the_kernel_and_ends_cuda_for_the_process";
    if gate::child_role().is_none() {
        let text = gate::in_child_process(TEST, "fault");
        assert!(text.contains("fault child: all checks passed"), "{text}");
        // This process never faulted: it opens a device and runs a kernel.
        let (fresh, _dir) = device(TEST);
        let program = fresh.load_program(&ProgramSource::new("iota_test", SRC)).unwrap();
        // SAFETY: `iota` takes one `Iota` and writes out[0..n); `out` holds n elements.
        let iota = unsafe { program.kernel::<Iota>("iota") }.unwrap();
        let out = fresh.alloc_zeroed::<u64>(64).unwrap();
        iota.launch(LaunchDims::cover(64, 32), &Iota { out: out.ptr(), n: 64 }).unwrap();
        assert_eq!(fresh.dtoh(&out).unwrap()[63], 189);
        return;
    }
    let (dev, _dir) = device(TEST);
    let program = dev.load_program(&ProgramSource::new("iota_test", SRC)).unwrap();
    // SAFETY: deliberately violated to test error reporting: `fault` writes out of bounds. The
    // device catches it (CUDA_ERROR_ILLEGAL_ADDRESS); host memory is never touched.
    let fault = unsafe { program.kernel::<Iota>("fault") }.unwrap();
    let out = dev.alloc_zeroed::<u64>(1).unwrap();
    fault.launch(LaunchDims::linear(1, 32), &Iota { out: out.ptr(), n: 1 }).unwrap();
    let err = dev.synchronize(Some(Duration::from_secs(10))).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::KernelFailed { .. }), "{msg}");
    assert!(msg.contains("`fault`"), "{msg}");
    // A later, unrelated call reports the broken context, not an allocation problem.
    let later = dev.alloc_zeroed::<u64>(4).map(|_| ()).unwrap_err();
    assert!(matches!(later, Error::KernelFailed { .. }), "{later}");
    assert!(later.to_string().contains("noticed while allocating"), "{later}");
    drop((out, fault, program, dev));
    // A new handle fails at once, quoting the first failure.
    match CudaDevice::open(&gpu_cilk_runtime::Config::default()) {
        Err(e @ Error::BackendUnavailable { .. }) => assert!(e.to_string().contains("`fault`"), "{e}"),
        other => panic!("expected BackendUnavailable, got {:?}", other.map(|d| d.description())),
    }
    println!("fault child: all checks passed");
}

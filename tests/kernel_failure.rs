//! A kernel that breaks the CUDA context (an illegal address: what the parameterless-task bug of
//! issue 8 caused) comes back as `Error::KernelFailed` naming the kernel and its tasks, with
//! either device scheduler. CUDA cannot recover from that inside the process, so every later cuda
//! run in it fails at once with a clear `BackendUnavailable` (no hang, no unrelated error), an
//! `auto` runtime falls back to the cpu backend, and a fresh process uses the GPU again. The crash
//! runs in a child process (this test binary run again for one test) so that it cannot poison the
//! other GPU tests. GPU tests, `#[ignore]`d (see `gpu_cilk_test_support::gate`).
//!
//! No `#[gpu_cilk]` function can write outside its memory (indexing and division are checked), so
//! the failing task is written by hand: the CilkTask contract, with a CUDA fragment whose segment
//! writes through a bad pointer.

use gpu_cilk_examples::workloads::fib as fib_workload;
use gpu_cilk_test_support::programs::backends;

use fib_workload::fib;
use gpu_cilk::prelude::*;
use gpu_cilk::runtime::SchedulerKind;

/// A task whose device code writes to address 8 (its host code returns `n`).
mod crash {
    use gpu_cilk::runtime::{ArgsLayout, CilkTask, CudaFragment, FieldLayout, Place, Registrar, Spawn, Step};

    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct Args {
        pub n: u32,
    }

    pub struct Frame;
    pub struct Task;

    pub fn task(n: u32) -> gpu_cilk::runtime::Call<'static, Task> {
        gpu_cilk::runtime::Call::new(Args { n })
    }

    const CUDA_TYPES: &str = r#"
struct crash_frame { gc_u8 unused; };
struct crash_task {
  typedef crash_args Args;
  typedef crash_frame Frame;
  typedef crash_ret Ret;
  static const gc_u32 QBASE = GC_QBASE_crash;
  static const gc_u32 ID = GC_ID_crash;
  static const gc_u32 SYNCS = 0;
  static __device__ bool seg0(gc_cx& cx, Args a, Frame* out, Ret* ret);
  static __device__ bool resume(gc_cx& cx, gc_u32 k, Frame f, Frame* out, Ret* ret);
  static __device__ Ret dev(const gc_cx& cx, Args a);
};
"#;

    const CUDA_DEFS: &str = r#"
__device__ bool crash_task::seg0(gc_cx& cx, Args a, Frame* out, Ret* ret) {
  *(volatile gc_u64*)(8ull + (gc_u64)a.n) = 1ull;  // an illegal address: breaks the context
  *ret = (gc_u64)a.n;
  return false;
}
__device__ bool crash_task::resume(gc_cx& cx, gc_u32 k, Frame f, Frame* out, Ret* ret) { return false; }
__device__ __noinline__ crash_ret crash_task::dev(const gc_cx& cx, Args a) { return (gc_u64)a.n; }
"#;

    impl CilkTask for Task {
        type Args = Args;
        type Frame = Frame;
        type Output = u64;
        const NAME: &'static str = "crash";
        const SYNCS: usize = 0;
        const FANOUT: Option<usize> = Some(0);
        const CUDA: Option<&'static CudaFragment> = Some(&CudaFragment {
            name: "crash",
            decls: "typedef gc_u64 crash_ret;\nstruct crash_args { gc_u32 n; };\n",
            types: CUDA_TYPES,
            defs: CUDA_DEFS,
            sites: &[],
            helpers: &[],
            uses_temps: false,
            sum_of: None,
            structs: &[],
        });
        const ARGS_LAYOUT: ArgsLayout = ArgsLayout {
            size: std::mem::size_of::<Args>(),
            fields: &[FieldLayout { name: "n", offset: std::mem::offset_of!(Args, n), size: 4 }],
        };

        fn serial(args: Args) -> u64 {
            args.n as u64
        }

        fn prespawn<S: Spawn<Self>>(args: Args, _: &mut S) -> Step<Self> {
            Step::Return(args.n as u64)
        }

        fn resume<S: Spawn<Self>>(_: usize, _: Frame, _: &mut S) -> Step<Self> {
            unreachable!("`crash` has no continuation")
        }

        fn register<R: Registrar>(reg: &mut R) {
            reg.add::<Self>();
        }
    }

    /// Keeps `Place` in the contract's vocabulary (a task without children never builds one).
    #[allow(dead_code)]
    fn unused(_: Place<Frame, u64>) {}
}

/// Printed by the child when every check of a broken process passed.
const CHILD_OK: &str = "crash child: all checks passed";

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn a_kernel_that_breaks_the_context_is_reported_and_the_process_fails_fast_afterwards() {
    // The parent is a fresh process: it can use the GPU.
    let rt = backends::cuda(Config::default());
    assert_eq!(rt.run(fib::task(15)).unwrap(), fib(15));
    drop(rt);
    for sched in ["persistent", "levels"] {
        let text = backends::gate::in_child_process("crash_in_this_process", sched);
        assert!(text.contains(CHILD_OK), "{sched}: the child did not finish its checks");
    }
    // And after the children, a new process (this one) still runs on the GPU.
    let rt = backends::cuda(Config::default());
    assert_eq!(rt.run(fib::task(20)).unwrap(), fib(20));
}

/// The child's part of the test above: does nothing unless started by it (with `CHILD_ENV`).
#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn crash_in_this_process() {
    let Some(sched) = backends::gate::child_role() else { return };
    let sched: SchedulerKind = sched.parse().unwrap();
    let rt = backends::cuda(Config::default().scheduler(sched));
    let other = backends::cuda(Config::default().scheduler(sched));
    assert_eq!(rt.run(fib::task(15)).unwrap(), fib(15));
    match rt.run(crash::task(0)) {
        Err(e @ Error::KernelFailed { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("`crash`"), "{sched}: the message names the task: {msg}");
            assert!(msg.contains("ILLEGAL_ADDRESS") || msg.contains("illegal"), "{sched}: {msg}");
            assert!(msg.contains("restart the process"), "{sched}: {msg}");
            println!("{sched}: {msg}");
        }
        other => panic!("{sched}: expected KernelFailed, got {other:?}"),
    }
    // Every later use of CUDA in this process fails at once, quoting the failure: the same
    // runtime, another runtime opened before the crash, and a new one.
    let started = std::time::Instant::now();
    for (what, result) in [("the same runtime", rt.run(fib::task(20))), ("another runtime", other.run(fib::task(20)))] {
        match result {
            Err(e @ Error::BackendUnavailable { .. }) => {
                let msg = e.to_string();
                assert!(msg.contains("`crash`") && msg.contains("restarting the process"), "{sched}, {what}: {msg}");
                println!("{sched}, {what}: {msg}");
            }
            r => panic!("{sched}, {what}: expected BackendUnavailable, got {r:?}"),
        }
    }
    let new = Runtime::with_config(Config::default().backend(BackendKind::Cuda));
    assert!(matches!(new, Err(Error::BackendUnavailable { .. })), "{sched}: a new cuda runtime: {new:?}");
    assert!(started.elapsed().as_secs() < 5, "{sched}: failing took {:?}", started.elapsed());
    // `auto` falls back to the cpu backend and says why.
    let auto = Runtime::with_config(Config::default().backend(BackendKind::Auto)).unwrap();
    assert_eq!(auto.backend(), BackendKind::Cpu);
    assert!(auto.fallback_reason().is_some_and(|r| r.contains("`crash`")), "{:?}", auto.fallback_reason());
    assert_eq!(auto.run(fib::task(20)).unwrap(), fib(20));
    println!("{CHILD_OK}");
}

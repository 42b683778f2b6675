//! What `#[gpu_cilk]` expands to, written out by hand for two shapes (straight-line spawns into
//! locals; spawns in a loop into array elements). It pins the contract between the compiler and
//! the runtime independently of the compiler, and runs it on every host backend.

#![allow(clippy::all, unused_mut, unused_variables, non_snake_case)]

use gpu_cilk::runtime::{BackendKind, Config, Runtime};

// ---- #[gpu_cilk] fn fib(n: u32) -> u64 { if n < 2 { return n as u64; } let x = spawn!(fib(n - 1));
//      let y = spawn!(fib(n - 2)); sync!(); x + y }
pub fn fib(n: u32) -> u64 {
    if n < 2 {
        return n as u64;
    }
    let x = fib(n - 1);
    let y = fib(n - 2);
    x + y
}

pub mod fib {
    use super::*;

    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct Args {
        pub n: u32,
    }

    #[repr(C)]
    pub struct Frame {
        pub x: <fib::Task as ::gpu_cilk::runtime::CilkTask>::Output,
        pub y: <fib::Task as ::gpu_cilk::runtime::CilkTask>::Output,
    }

    pub struct Task;

    pub fn args(n: u32) -> Args {
        Args { n }
    }

    pub fn task(n: u32) -> ::gpu_cilk::runtime::Call<'static, Task> {
        ::gpu_cilk::runtime::Call::new(args(n))
    }

    impl ::gpu_cilk::runtime::CilkTask for Task {
        type Args = Args;
        type Frame = Frame;
        type Output = u64;
        const NAME: &'static str = "fib";
        const SYNCS: usize = 1;
        const FANOUT: Option<usize> = Some(2);
        // The CUDA twin, written by hand in the emitter's form.
        const CUDA: Option<&'static ::gpu_cilk::runtime::CudaFragment> = Some(&::gpu_cilk::runtime::CudaFragment {
            name: "fib",
            decls: concat!(
                include_str!("../macros/src/write/prelude.cuh"),
                include_str!("../kernels/tests/fib_hand_decls.cu")
            ),
            types: include_str!("../kernels/tests/fib_hand_types.cu"),
            defs: include_str!("../kernels/tests/fib_hand.cu"),
            sites: &[
                "tests/hand_expanded.rs:fib spawn 1",
                "tests/hand_expanded.rs:fib spawn 2",
                "tests/hand_expanded.rs:fib_dev",
            ],
            helpers: &[],
            uses_temps: false,
            sum_of: None,
            structs: &[],
        });

        fn serial(__args: Args) -> u64 {
            let Args { n } = __args;
            super::fib(n)
        }

        fn prespawn<S: ::gpu_cilk::runtime::Spawn<Self>>(
            __args: Args,
            __cx: &mut S,
        ) -> ::gpu_cilk::runtime::Step<Self> {
            let Args { n } = __args;
            if n < 2 {
                return ::gpu_cilk::runtime::Step::Return(n as u64);
            }
            let x: <fib::Task as ::gpu_cilk::runtime::CilkTask>::Output = ::core::default::Default::default();
            __cx.spawn::<fib::Task>(
                fib::args(n - 1),
                ::gpu_cilk::runtime::Place::field(::core::mem::offset_of!(Frame, x), |__f: &Frame| &__f.x),
            );
            let y: <fib::Task as ::gpu_cilk::runtime::CilkTask>::Output = ::core::default::Default::default();
            __cx.spawn::<fib::Task>(
                fib::args(n - 2),
                ::gpu_cilk::runtime::Place::field(::core::mem::offset_of!(Frame, y), |__f: &Frame| &__f.y),
            );
            ::gpu_cilk::runtime::Step::Sync(Frame { x, y })
        }

        fn resume<S: ::gpu_cilk::runtime::Spawn<Self>>(
            __segment: usize,
            __frame: Frame,
            __cx: &mut S,
        ) -> ::gpu_cilk::runtime::Step<Self> {
            match __segment {
                1 => {
                    let Frame { x, y } = __frame;
                    ::gpu_cilk::runtime::Step::Return(x + y)
                }
                _ => ::core::unreachable!("`fib` has 1 continuation"),
            }
        }

        fn register<R: ::gpu_cilk::runtime::Registrar>(__reg: &mut R) {
            if __reg.add::<Self>() {
                <fib::Task as ::gpu_cilk::runtime::CilkTask>::register(__reg);
            }
        }
    }
}

// ---- #[gpu_cilk] fn wide(d: u32, k: u32) -> u64 {
//          if d == 0 { return 1; }
//          let mut parts: [u64; 8] = [0; 8];
//          let mut i = 0;
//          while i < k { parts[i as usize] = spawn!(wide(d - 1, k)); i += 1; }
//          spawn!(fib(3));
//          sync!();
//          let mut s: u64 = 1;
//          for j in 0..k as usize { s += parts[j]; }
//          let extra = spawn!(fib(d));
//          sync!();
//          s + extra }
pub fn wide(d: u32, k: u32) -> u64 {
    if d == 0 {
        return 1;
    }
    let mut parts: [u64; 8] = [0; 8];
    let mut i = 0;
    while i < k {
        parts[i as usize] = wide(d - 1, k);
        i += 1;
    }
    fib(3);
    let mut s: u64 = 1;
    for j in 0..k as usize {
        s += parts[j];
    }
    let extra = fib(d);
    s + extra
}

pub mod wide {
    use super::*;

    #[repr(C)]
    #[derive(Clone, Copy, Debug)]
    pub struct Args {
        pub d: u32,
        pub k: u32,
    }

    #[repr(C)]
    pub struct Frame {
        pub d: u32,
        pub k: u32,
        pub parts: [u64; 8],
        pub s: u64,
        pub extra: <fib::Task as ::gpu_cilk::runtime::CilkTask>::Output,
    }

    pub struct Task;

    pub fn args(d: u32, k: u32) -> Args {
        Args { d, k }
    }

    pub fn task(d: u32, k: u32) -> ::gpu_cilk::runtime::Call<'static, Task> {
        ::gpu_cilk::runtime::Call::new(args(d, k))
    }

    impl ::gpu_cilk::runtime::CilkTask for Task {
        type Args = Args;
        type Frame = Frame;
        type Output = u64;
        const NAME: &'static str = "wide";
        const SYNCS: usize = 2;
        const FANOUT: Option<usize> = None;

        fn serial(__args: Args) -> u64 {
            let Args { d, k } = __args;
            super::wide(d, k)
        }

        fn prespawn<S: ::gpu_cilk::runtime::Spawn<Self>>(
            __args: Args,
            __cx: &mut S,
        ) -> ::gpu_cilk::runtime::Step<Self> {
            let Args { d, k } = __args;
            if d == 0 {
                return ::gpu_cilk::runtime::Step::Return(1);
            }
            let mut parts: [u64; 8] = [0; 8];
            let mut i = 0;
            while i < k {
                __cx.spawn::<wide::Task>(
                    wide::args(d - 1, k),
                    ::gpu_cilk::runtime::Place::element(
                        ::core::mem::offset_of!(Frame, parts),
                        i as usize,
                        |__f: &Frame| &__f.parts,
                    ),
                );
                i += 1;
            }
            __cx.spawn::<fib::Task>(fib::args(3), ::gpu_cilk::runtime::Place::discard());
            ::gpu_cilk::runtime::Step::Sync(Frame {
                d,
                k,
                parts,
                s: ::core::default::Default::default(),
                extra: ::core::default::Default::default(),
            })
        }

        fn resume<S: ::gpu_cilk::runtime::Spawn<Self>>(
            __segment: usize,
            __frame: Frame,
            __cx: &mut S,
        ) -> ::gpu_cilk::runtime::Step<Self> {
            match __segment {
                1 => {
                    let Frame { d, k, parts, s: _, extra: _ } = __frame;
                    let mut s: u64 = 1;
                    for j in 0..k as usize {
                        s += parts[j];
                    }
                    let extra: <fib::Task as ::gpu_cilk::runtime::CilkTask>::Output =
                        ::core::default::Default::default();
                    __cx.spawn::<fib::Task>(
                        fib::args(d),
                        ::gpu_cilk::runtime::Place::field(::core::mem::offset_of!(Frame, extra), |__f: &Frame| {
                            &__f.extra
                        }),
                    );
                    ::gpu_cilk::runtime::Step::Sync(Frame { d, k, parts, s, extra })
                }
                2 => {
                    let Frame { d, k, parts, s, extra } = __frame;
                    ::gpu_cilk::runtime::Step::Return(s + extra)
                }
                _ => ::core::unreachable!("`wide` has 2 continuations"),
            }
        }

        fn register<R: ::gpu_cilk::runtime::Registrar>(__reg: &mut R) {
            if __reg.add::<Self>() {
                <wide::Task as ::gpu_cilk::runtime::CilkTask>::register(__reg);
                <fib::Task as ::gpu_cilk::runtime::CilkTask>::register(__reg);
            }
        }
    }
}

fn runtimes() -> Vec<Runtime> {
    vec![
        Runtime::with_config(Config::default().backend(BackendKind::Serial)).unwrap(),
        Runtime::with_config(Config::default().backend(BackendKind::Cpu)).unwrap(),
        // Tiny capacities: every level overflows its segments and spills.
        Runtime::with_config(
            Config::default().backend(BackendKind::Cpu).level_capacity(3).segment_capacity(2).threads(4),
        )
        .unwrap(),
    ]
}

#[test]
fn hand_expanded_fib_matches_serial_on_every_host_backend() {
    for rt in runtimes() {
        for n in [0u32, 1, 2, 5, 10, 18] {
            assert_eq!(rt.run(fib::task(n)).unwrap(), fib(n), "fib({n}) on {:?}", rt.config());
        }
    }
}

#[test]
fn hand_expanded_wide_matches_serial_on_every_host_backend() {
    for rt in runtimes() {
        for (d, k) in [(0, 3), (1, 1), (3, 3), (4, 5), (2, 8)] {
            assert_eq!(rt.run(wide::task(d, k)).unwrap(), wide(d, k), "wide({d},{k}) on {:?}", rt.config());
        }
    }
}

use gpu_cilk_test_support::programs::backends;

#[test]
#[ignore = "needs a CUDA GPU: run with --include-ignored (scripts/gpu-check.sh does)"]
fn hand_written_cuda_fib_matches_serial_on_the_gpu() {
    let rt = backends::cuda(Config::default());
    for n in [0u32, 1, 2, 5, 10, 20, 25] {
        let r = rt.run_with_stats(fib::task(n)).unwrap();
        assert_eq!(r.value, fib(n), "fib({n}) on cuda");
        if n == 25 {
            // Every call is a task (run from a lane's task stack).
            assert_eq!(r.stats.total_tasks(), 242785, "{}", r.stats);
            println!("{}", r.stats);
        }
    }
}

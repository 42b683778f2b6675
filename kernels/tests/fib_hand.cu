// fib, written by hand in the form the CUDA emitter produces (the CUDA twin of
// tests/hand_expanded.rs): three sections per task — decls, types, defs — that the runtime
// concatenates for all tasks of a program after `#define GC_QBASE_<task>` lines and
// gpu_cilk/runtime.cuh.
//
// #[gpu_cilk] fn fib(n: u32) -> u64 { if n < 2 { return n as u64; }
//     let x = spawn!(fib(n - 1)); let y = spawn!(fib(n - 2)); sync!(); x + y }

// ---- decls: fib
typedef gc_u64 fib_ret;
struct fib_args { gc_u32 n; };

// ---- types: fib
struct fib_frame { fib_ret x; fib_ret y; };
struct fib_task {
  typedef fib_args Args;
  typedef fib_frame Frame;
  typedef fib_ret Ret;
  struct Pre { Args args; void* dest; };
  struct Cont { Frame frame; Ret deferred; gc_u32 has_deferred; void* dest; };
  static const gc_u32 QBASE = GC_QBASE_fib;
  static const gc_u32 SYNCS = 1;
  static __device__ bool seg0(gc_cx& cx, Args a, Frame* out, Ret* ret);
  static __device__ bool resume(gc_cx& cx, gc_u32 k, Frame f, Frame* out, Ret* ret);
};

// ---- defs: fib
__device__ bool fib_task::seg0(gc_cx& cx, Args a, Frame* out, Ret* ret) {
  gc_u32 n = a.n;
  if (n < (gc_u32)2) { *ret = (gc_u64)n; return false; }
  fib_ret x = fib_ret();
  gc_spawn<fib_task, fib_task>(cx, fib_task::Args{gc_sub(n, (gc_u32)1)}, GC_OFFSETOF(fib_frame, x), 0u);
  fib_ret y = fib_ret();
  gc_spawn<fib_task, fib_task>(cx, fib_task::Args{gc_sub(n, (gc_u32)2)}, GC_OFFSETOF(fib_frame, y), 1u);
  *out = fib_frame{x, y};
  return true;
}

__device__ bool fib_task::resume(gc_cx& cx, gc_u32 k, Frame f, Frame* out, Ret* ret) {
  switch (k) {
    case 1: {
      fib_ret x = f.x;
      fib_ret y = f.y;
      *ret = gc_add(x, y);
      return false;
    }
  }
  return false;
}

extern "C" __global__ void gc_fib_q0(gc_launch L) { gc_run<fib_task>(L, 0); }
extern "C" __global__ void gc_fib_q1(gc_launch L) { gc_run<fib_task>(L, 1); }
extern "C" __global__ void gc_fib_q2(gc_launch L) { gc_run<fib_task>(L, 2); }

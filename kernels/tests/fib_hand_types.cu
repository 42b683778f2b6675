// fib by hand, section 2 of 3: types (see fib_hand_decls.cu).

// ---- types: fib
struct fib_frame { fib_ret x; fib_ret y; };
struct fib_task {
  typedef fib_args Args;
  typedef fib_frame Frame;
  typedef fib_ret Ret;
  static const gc_u32 QBASE = GC_QBASE_fib;
  static const gc_u32 ID = GC_ID_fib;
  static const gc_u32 SYNCS = 1;
  static __device__ bool seg0(gc_cx& cx, Args a, Frame* out, Ret* ret);
  static __device__ bool resume(gc_cx& cx, gc_u32 k, Frame f, Frame* out, Ret* ret);
  static __device__ Ret dev(const gc_cx& cx, Args a);
};

// The serial device form (a device function: what a plain call, or an inline spawn, runs).
__device__ gc_u64 fib_dev(const gc_cx& cx, gc_u32 n) {
  gc_dev_guard gc_guard(cx, 2u);
  if (n < (gc_u32)2) return (gc_u64)n;
  gc_u64 x = fib_dev(cx, gc_sub(n, (gc_u32)1));
  gc_u64 y = fib_dev(cx, gc_sub(n, (gc_u32)2));
  return gc_add(x, y);
}

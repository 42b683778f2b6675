// fib by hand, section 3 of 3: defs (see fib_hand_decls.cu).

// ---- defs: fib
__device__ bool fib_task::seg0(gc_cx& cx, Args a, Frame* out, Ret* ret) {
  gc_u32 n = a.n;
  if (n < (gc_u32)2) { *ret = (gc_u64)n; return false; }
  // A spawn returns the child's value when the scheduler ran it at once (inline), else a
  // placeholder the child's result replaces in the frame; either way the destination takes it.
  fib_ret x = fib_ret();
  x = gc_spawn<fib_task, fib_task>(cx, fib_task::Args{gc_sub(n, (gc_u32)1)}, GC_OFFSETOF(fib_frame, x), 0u);
  fib_ret y = fib_ret();
  y = gc_spawn<fib_task, fib_task>(cx, fib_task::Args{gc_sub(n, (gc_u32)2)}, GC_OFFSETOF(fib_frame, y), 1u);
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

__device__ __noinline__ fib_ret fib_task::dev(const gc_cx& cx, Args a) { return fib_dev(cx, a.n); }

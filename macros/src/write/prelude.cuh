#ifndef GC_WRITE_PRELUDE_V1
#define GC_WRITE_PRELUDE_V1
// Helpers of the CUDA emitter (macros/src/write/prelude.cuh), shared by every fragment.
// Rust tuples (`(A, B)` → `gc_tuple2<A, B>`, `t.0` → `t.f0`): fields in declaration order; the
// runtime checks a task result's offsets against Rust's.
template <typename A, typename B> struct gc_tuple2 { A f0; B f1; };
template <typename A, typename B, typename C> struct gc_tuple3 { A f0; B f1; C f2; };
template <typename A, typename B, typename C, typename D> struct gc_tuple4 { A f0; B f1; C f2; D f3; };
template <typename T> struct gc_noref { typedef T t; };
template <typename T> struct gc_noref<T&> { typedef T t; };
template <typename T> struct gc_noref<const T&> { typedef T t; };
template <typename T> using gc_noref_t = typename gc_noref<T>::t;
template <typename T> __device__ inline T gc_and(T a, T b) { return (T)(a & b); }
template <typename T> __device__ inline T gc_or(T a, T b) { return (T)(a | b); }
template <typename T> __device__ inline T gc_xor(T a, T b) { return (T)(a ^ b); }
template <typename T> __device__ inline T gc_not(T a) { return (T)~a; }
__device__ inline bool gc_not(bool a) { return !a; }
template <typename T> __device__ inline T gc_min(T a, T b) { return b < a ? b : a; }
template <typename T> __device__ inline T gc_max(T a, T b) { return a < b ? b : a; }
__device__ inline gc_f32 gc_min(gc_f32 a, gc_f32 b) { return fminf(a, b); }
__device__ inline gc_f64 gc_min(gc_f64 a, gc_f64 b) { return fmin(a, b); }
__device__ inline gc_f32 gc_max(gc_f32 a, gc_f32 b) { return fmaxf(a, b); }
__device__ inline gc_f64 gc_max(gc_f64 a, gc_f64 b) { return fmax(a, b); }
template <typename T> __device__ inline T gc_clamp(T a, T lo, T hi) { return gc_min(gc_max(a, lo), hi); }
template <typename T> __device__ inline T gc_abs(T a) { return a < (T)0 ? gc_neg(a) : a; }
__device__ inline gc_f32 gc_abs(gc_f32 a) { return fabsf(a); }
__device__ inline gc_f64 gc_abs(gc_f64 a) { return fabs(a); }
template <typename T> __device__ inline T gc_pow(T a, gc_u32 e) {
  T r = (T)1;
  for (; e != 0u; e >>= 1) {
    if (e & 1u) r = gc_mul(r, a);
    a = gc_mul(a, a);
  }
  return r;
}
template <typename T> __device__ inline gc_u64 gc_bits(T a) { return (gc_u64)(typename gc_uns<T>::t)a & (~0ull >> (64 - sizeof(T) * 8)); }
template <typename T> __device__ inline gc_u32 gc_count_ones(T a) { return (gc_u32)__popcll(gc_bits(a)); }
template <typename T> __device__ inline gc_u32 gc_count_zeros(T a) { return (gc_u32)(sizeof(T) * 8) - gc_count_ones(a); }
template <typename T> __device__ inline gc_u32 gc_leading_zeros(T a) { return (gc_u32)__clzll(gc_bits(a)) - (gc_u32)(64 - sizeof(T) * 8); }
template <typename T> __device__ inline gc_u32 gc_trailing_zeros(T a) { gc_u64 b = gc_bits(a); return b == 0ull ? (gc_u32)(sizeof(T) * 8) : (gc_u32)(__ffsll((long long)b) - 1); }
template <typename T> __device__ inline bool gc_is_power_of_two(T a) { return gc_count_ones(a) == 1u; }
template <typename T, typename S> __device__ inline T gc_rotl(T a, S s) {
  const gc_u32 w = sizeof(T) * 8;
  gc_u32 n = (gc_u32)s % w;
  gc_u64 b = gc_bits(a);
  return n == 0u ? a : (T)((b << n) | (b >> (w - n)));
}
template <typename T, typename S> __device__ inline T gc_rotr(T a, S s) {
  const gc_u32 w = sizeof(T) * 8;
  return gc_rotl(a, w - (gc_u32)s % w);
}
template <typename T> __device__ inline T gc_max_of() { return (T)-1 < (T)0 ? (T)(~0ull >> (65 - sizeof(T) * 8)) : (T)~0ull; }
template <typename T> __device__ inline T gc_min_of() { return (T)-1 < (T)0 ? (T)(-gc_max_of<T>() - 1) : (T)0; }
// `f as int` saturates in Rust (NaN -> 0).
template <typename T, typename F> __device__ inline T gc_cast_sat(F x) {
  if (x != x) return (T)0;
  if (x <= (F)gc_min_of<T>()) return gc_min_of<T>();
  if (x >= (F)gc_max_of<T>()) return gc_max_of<T>();
  return (T)x;
}
// Byte offset of element `i` of frame array `arr` (at `base`), checked like `arr[i] = ..`;
// ~0 (result discarded) after recording the fault.
template <typename T, int N>
__device__ inline gc_u64 gc_elem_offset(const gc_cx& cx, const gc_array<T, N>&, gc_u64 base, gc_u64 i, gc_u32 site) {
  if (i >= (gc_u64)N) { gc_raise_cx(cx, GC_FAULT_INDEX, site, i); return ~0ull; }
  return base + i * (gc_u64)sizeof(T);
}
// Rust slices `&[T]` / `&mut [T]`: the Rust `RawSlice<T>` (`#[repr(C)] { ptr, len: u64 }`, 16
// bytes). Indexing and sub-slicing are checked as in Rust: a failure records a fault at the Rust
// location (the run then fails with it) and the access goes to a sink instead of out of bounds.
__device__ gc_u64 gc_slice_sink[2];
// Shared monotone bounds `&Max<T>` / `&Min<T>` / `&Sum<T>` (the runtime's `bound` module): the
// Rust one-element `RawSlice<Max<T>>` (`{ ptr, len: u64 }`, 16 bytes), pointing at the word that
// the cuda backend uploaded before the run and downloads after it. Every task updates it with an
// atomic that moves it one way only, so its final value does not depend on the order of tasks.
// `load` is a volatile read (some value the word has had). T: gc_u32, gc_i32, gc_u64, gc_i64.
// An update is skipped while serial forms unwind (gc_unwinding): its value may be a placeholder.
template <typename T> struct gc_bound_max {
  T* ptr;
  gc_u64 n;
  __device__ T load() const { return *(volatile T*)ptr; }
  __device__ T fetch_max(const gc_cx& cx, T v) const { return gc_unwinding(cx) ? load() : (T)atomicMax(ptr, v); }
};
template <typename T> struct gc_bound_min {
  T* ptr;
  gc_u64 n;
  __device__ T load() const { return *(volatile T*)ptr; }
  __device__ T fetch_min(const gc_cx& cx, T v) const { return gc_unwinding(cx) ? load() : (T)atomicMin(ptr, v); }
};
template <typename T> struct gc_bound_sum {
  T* ptr;
  gc_u64 n;
  __device__ T load() const { return *(volatile T*)ptr; }
  // Wrapping, as Rust's `fetch_add` (two's complement: the unsigned add of the same width).
  // The scheduler's gc_sum_add: an atomic add, except inside an inline call the persistent
  // scheduler may re-run as a task, which holds its adds back until the call completes.
  __device__ T fetch_add(const gc_cx& cx, T v) const {
    typedef typename gc_uns<T>::t U;
    if (gc_unwinding(cx)) return load();
    return (T)gc_sum_add<U>(cx, (U*)ptr, (U)v);
  }
};
template <typename T> struct gc_slice {
  T* ptr;
  gc_u64 n;
  __device__ gc_u64 len() const { return n; }
  __device__ T& at(const gc_cx& cx, gc_u64 i, gc_u32 site) const {
    if (i >= n) { gc_raise_cx(cx, GC_FAULT_INDEX, site, i); return *reinterpret_cast<T*>(gc_slice_sink); }
    return ptr[i];
  }
  __device__ gc_slice sub(const gc_cx& cx, gc_u64 lo, gc_u64 hi, gc_u32 site) const {
    if (lo > hi || hi > n) {
      gc_raise_cx(cx, GC_FAULT_INDEX, site, hi > n ? hi : lo);
      return gc_slice{ptr, 0};
    }
    return gc_slice{ptr + lo, hi - lo};
  }
  __device__ gc_tuple2<gc_slice, gc_slice> split_at(const gc_cx& cx, gc_u64 m, gc_u32 site) const {
    if (m > n) {
      gc_raise_cx(cx, GC_FAULT_INDEX, site, m);
      return gc_tuple2<gc_slice, gc_slice>{gc_slice{ptr, 0}, gc_slice{ptr, 0}};
    }
    return gc_tuple2<gc_slice, gc_slice>{gc_slice{ptr, m}, gc_slice{ptr + m, n - m}};
  }
};
// Strided 2-D views `Mat<T>` / `MatMut<T>`: the Rust `RawMat<T>` (`#[repr(C)] { ptr, extent: u64,
// rows: u64, cols: u64, stride: u64 }`, 40 bytes; `extent` is the element count from the first
// element to the last row's end). Indexing and narrowing are checked as on the host (the runtime's
// `view` module): a failure records a fault at the Rust location, the access goes to the sink, and
// a failed narrowing gives an empty view.
template <typename T> struct gc_mat {
  T* ptr;
  gc_u64 n;
  gc_u64 nr, nc, ld;
  __device__ gc_u64 rows() const { return nr; }
  __device__ gc_u64 cols() const { return nc; }
  __device__ gc_u64 stride() const { return ld; }
  __device__ T& at(const gc_cx& cx, gc_u64 i, gc_u64 j, gc_u32 site) const {
    if (i >= nr || j >= nc) {
      gc_raise_cx(cx, GC_FAULT_INDEX, site, i >= nr ? i : j);
      return *reinterpret_cast<T*>(gc_slice_sink);
    }
    return ptr[i * ld + j];
  }
  __device__ static gc_mat shape(T* p, gc_u64 r, gc_u64 c, gc_u64 ld) {
    return gc_mat{p, (r == 0 || c == 0) ? 0 : (r - 1) * ld + c, r, c, ld};
  }
  __device__ gc_mat block(const gc_cx& cx, gc_u64 r0, gc_u64 c0, gc_u64 r, gc_u64 c, gc_u32 site) const {
    if (r0 > nr || r > nr - r0 || c0 > nc || c > nc - c0) {
      gc_raise_cx(cx, GC_FAULT_INDEX, site, (r0 > nr || r > nr - r0) ? r0 + r : c0 + c);
      return shape(ptr, 0, 0, ld);
    }
    if (r == 0 || c == 0) return shape(ptr, r, c, ld);
    return shape(ptr + r0 * ld + c0, r, c, ld);
  }
  __device__ gc_tuple2<gc_mat, gc_mat> split_rows(const gc_cx& cx, gc_u64 m, gc_u32 site) const {
    if (m > nr) { gc_raise_cx(cx, GC_FAULT_INDEX, site, m); return gc_tuple2<gc_mat, gc_mat>{shape(ptr, 0, 0, ld), shape(ptr, 0, 0, ld)}; }
    return gc_tuple2<gc_mat, gc_mat>{block(cx, 0, 0, m, nc, site), block(cx, m, 0, nr - m, nc, site)};
  }
  __device__ gc_tuple2<gc_mat, gc_mat> split_cols(const gc_cx& cx, gc_u64 m, gc_u32 site) const {
    if (m > nc) { gc_raise_cx(cx, GC_FAULT_INDEX, site, m); return gc_tuple2<gc_mat, gc_mat>{shape(ptr, 0, 0, ld), shape(ptr, 0, 0, ld)}; }
    return gc_tuple2<gc_mat, gc_mat>{block(cx, 0, 0, nr, m, site), block(cx, 0, m, nr, nc - m, site)};
  }
  __device__ gc_tuple4<gc_mat, gc_mat, gc_mat, gc_mat> quadrants(const gc_cx& cx, gc_u64 mr, gc_u64 mc, gc_u32 site) const {
    gc_tuple2<gc_mat, gc_mat> tb = split_rows(cx, mr, site);
    gc_tuple2<gc_mat, gc_mat> t = tb.f0.split_cols(cx, mc, site);
    gc_tuple2<gc_mat, gc_mat> b = tb.f1.split_cols(cx, mc, site);
    return gc_tuple4<gc_mat, gc_mat, gc_mat, gc_mat>{t.f0, t.f1, b.f0, b.f1};
  }
};
#endif

// gpu_cilk/runtime.cuh — what every gpu-cilk program needs, whichever scheduler runs it: the scalar
// types and Rust-semantics helpers generated code uses (wrapping arithmetic, checked division and
// indexing, fixed-size arrays) and the device-fault codes and record.
//
// Owns: those types and helpers. Must not own: scheduling. Each scheduler's header, assembled right
// after this one, defines `gc_cx` (what a running segment sees), `gc_raise_cx` (record a fault for
// the running task), `gc_temps_of` (the `alloc!` heap), `gc_dev_guard` (entered by serial device
// forms) and `gc_spawn`: levels.cuh (the host-driven levelized scheduler) or persistent.cuh (the
// device-resident one).

#pragma once
#ifndef GPU_CILK_PORTABLE_CUH
#include "gpu_cilk/portable.cuh"  // gc_lane(): the lane on a GPU and in the host simulation
#endif

typedef signed char gc_i8;
typedef short gc_i16;
typedef int gc_i32;
typedef long long gc_i64;
typedef unsigned char gc_u8;
typedef unsigned short gc_u16;
typedef unsigned int gc_u32;
typedef unsigned long long gc_u64;
typedef float gc_f32;
typedef double gc_f64;
typedef bool gc_bool;
typedef gc_i64 gc_isize;
typedef gc_u64 gc_usize;
struct gc_unit {};

// The largest of the sizes of some types, as a constant (for the assembler's size tables).
template <typename... T> __host__ __device__ constexpr gc_u64 gc_cmax_bytes() {
  gc_u64 m = 1;
  ((m = sizeof(T) > m ? sizeof(T) : m), ...);
  return m;
}
// The same in 8-byte words.
template <typename... T> __host__ __device__ constexpr gc_u64 gc_cmax_words() { return (gc_cmax_bytes<T...>() + 7) / 8; }

// offsetof without <cstddef> (NVRTC ships no standard headers).
#define GC_OFFSETOF(T, m) ((gc_u64) & reinterpret_cast<const volatile char&>((((T*)0)->m)))

// ---------------------------------------------------------------------------------------------
// Device faults: the first fault of a run wins; the host turns it into an Error naming the task,
// the Rust source location (site) and the level. A faulting thread goes on with a safe value (0,
// element 0) so no memory is touched out of bounds; the run is failed by the host.
enum gc_fault_code : gc_u32 {
  GC_OK = 0,
  GC_FAULT_INDEX = 1,        // index out of bounds
  GC_FAULT_DIV_ZERO = 2,     // division or remainder by zero
  GC_FAULT_DIV_OVERFLOW = 3, // MIN / -1
  GC_FAULT_CHANNEL_FULL = 4, // a spawn or frame found no room (the scheduler under-estimated)
  GC_FAULT_SHIFT = 5,        // shift amount >= bit width (debug-build Rust panics; release masks)
  GC_FAULT_SPILL_POOL = 6,   // the spill pool is exhausted (detail: its bytes)
  GC_FAULT_TEMP_POOL = 7,    // alloc! found no room in the temporary heap (detail: size << 56 | n)
  GC_FAULT_DEPTH = 8,        // a spawn deeper than Config::max_depth (detail: the limit)
  GC_FAULT_DEV_DEPTH = 9,    // (no longer raised: inline recursion is bounded in bytes, below)
  GC_FAULT_DEV_STACK = 10,   // inline serial recursion used more stack than its budget and could not
                             // be restarted as a task (detail: the budget in bytes)
  GC_FAULT_PRIO_HEAP = 11,   // the ready heap of priority spawns broke (ready_heap.cuh; detail: the
                             // heap's error word, or 1 << 32 | the insert's result)
};

struct gc_fault {
  gc_u32 code;
  gc_u32 site;  // index into the program's table of source locations
  gc_u32 task;  // task index in the program
  gc_u32 level;
  gc_u64 detail; // the offending index / capacity
};

// The order-preserving u64 image of a spawn's priority (`Priority::key` in runtime/src/
// priority.rs, larger first): unsigned as is, signed with the sign bit flipped, floats in the
// total order of f64::total_cmp (f32 widened first), bool 0/1.
__device__ __forceinline__ gc_u64 gc_priority(gc_u8 x) { return (gc_u64)x; }
__device__ __forceinline__ gc_u64 gc_priority(gc_u16 x) { return (gc_u64)x; }
__device__ __forceinline__ gc_u64 gc_priority(gc_u32 x) { return (gc_u64)x; }
__device__ __forceinline__ gc_u64 gc_priority(gc_u64 x) { return x; }
__device__ __forceinline__ gc_u64 gc_priority(gc_i8 x) { return (gc_u64)(gc_i64)x ^ (1ull << 63); }
__device__ __forceinline__ gc_u64 gc_priority(gc_i16 x) { return (gc_u64)(gc_i64)x ^ (1ull << 63); }
__device__ __forceinline__ gc_u64 gc_priority(gc_i32 x) { return (gc_u64)(gc_i64)x ^ (1ull << 63); }
__device__ __forceinline__ gc_u64 gc_priority(gc_i64 x) { return (gc_u64)x ^ (1ull << 63); }
__device__ __forceinline__ gc_u64 gc_priority(gc_bool x) { return x ? 1ull : 0ull; }
__device__ __forceinline__ gc_u64 gc_priority(gc_f64 x) {
  const gc_u64 b = (gc_u64)__double_as_longlong(x);
  return (b >> 63) != 0ull ? ~b : b ^ (1ull << 63);
}
__device__ __forceinline__ gc_u64 gc_priority(gc_f32 x) { return gc_priority((gc_f64)x); }

struct gc_cx;               // the scheduler header's: what a running segment sees
struct gc_xheap;            // xmalloc.cuh: the device temporary heap (alloc!)
// Records fault `code` at `site` for the task `cx` runs (first fault wins; ignored while serial
// forms unwind after a guard trip, whose values are then placeholders). The scheduler's.
__device__ inline void gc_raise_cx(const gc_cx& cx, gc_u32 code, gc_u32 site, gc_u64 detail);
// The temporary heap of the run `cx` belongs to (null when no task uses alloc!). The scheduler's.
__device__ inline gc_xheap* gc_temps_of(const gc_cx& cx);
// Whether a serial device form's guard tripped and serial forms are returning at once (their
// values are placeholders: nothing with a side effect may use them). The scheduler's.
__device__ inline bool gc_unwinding(const gc_cx& cx);

// ---------------------------------------------------------------------------------------------
// Rust semantics.

// In every `while` and `loop` body: C++ lets a compiler assume that a loop without side effects
// terminates (and delete it); Rust does not (`loop {}` runs forever). A volatile asm with a memory
// clobber is a side effect the optimizer must keep; it emits no instruction.
__device__ __forceinline__ void gc_progress() { asm volatile("" ::: "memory"); }

// A block task's cooperative entry (`<task>_task::block`, `#[gpu_cilk(block)]`): this thread in
// the block, the block's threads, and the block's barrier (around every `threads(..)` loop, after
// every `shared!` fill and at each `block_sync!()`; the scheduler that calls the entry has every
// thread of the block in it, and `macros/src/check.rs` keeps every value outside `threads` loops
// the same on every thread, so every thread reaches each barrier).
__device__ __forceinline__ gc_u64 gc_block_thread() { return (gc_u64)threadIdx.x; }
__device__ __forceinline__ gc_u64 gc_block_threads() { return (gc_u64)blockDim.x; }
__device__ __forceinline__ void gc_block_sync() { __syncthreads(); }

// Integer arithmetic wraps as in a Rust release build: computed in the unsigned
// type of the same width, so C++'s signed-overflow UB and integer promotion never apply.
template <typename T> struct gc_uns { typedef T t; };
template <> struct gc_uns<gc_i8> { typedef gc_u8 t; };
template <> struct gc_uns<gc_i16> { typedef gc_u16 t; };
template <> struct gc_uns<gc_i32> { typedef gc_u32 t; };
template <> struct gc_uns<gc_i64> { typedef gc_u64 t; };
template <> struct gc_uns<gc_u8> { typedef gc_u32 t; };   // promote narrow unsigned so that
template <> struct gc_uns<gc_u16> { typedef gc_u32 t; };  // u16 * u16 cannot overflow int

template <typename T> __device__ inline T gc_add(T a, T b) {
  typedef typename gc_uns<T>::t U;
  return (T)((U)a + (U)b);
}
template <typename T> __device__ inline T gc_sub(T a, T b) {
  typedef typename gc_uns<T>::t U;
  return (T)((U)a - (U)b);
}
template <typename T> __device__ inline T gc_mul(T a, T b) {
  typedef typename gc_uns<T>::t U;
  return (T)((U)a * (U)b);
}
template <typename T> __device__ inline T gc_neg(T a) {
  typedef typename gc_uns<T>::t U;
  return (T)((U)0 - (U)a);
}
__device__ inline gc_f32 gc_add(gc_f32 a, gc_f32 b) { return a + b; }
__device__ inline gc_f64 gc_add(gc_f64 a, gc_f64 b) { return a + b; }
__device__ inline gc_f32 gc_sub(gc_f32 a, gc_f32 b) { return a - b; }
__device__ inline gc_f64 gc_sub(gc_f64 a, gc_f64 b) { return a - b; }
__device__ inline gc_f32 gc_mul(gc_f32 a, gc_f32 b) { return a * b; }
__device__ inline gc_f64 gc_mul(gc_f64 a, gc_f64 b) { return a * b; }
__device__ inline gc_f32 gc_neg(gc_f32 a) { return -a; }
__device__ inline gc_f64 gc_neg(gc_f64 a) { return -a; }

template <typename T> __device__ inline bool gc_is_min(T a) {
  return (T)(a - 1) > a && (T)-1 < (T)0;  // signed and a == MIN
}
template <typename T> __device__ inline T gc_div(const gc_cx& cx, T a, T b, gc_u32 site) {
  if (b == (T)0) { gc_raise_cx(cx, GC_FAULT_DIV_ZERO, site, 0); return (T)0; }
  if ((T)-1 < (T)0 && b == (T)-1 && gc_is_min(a)) { gc_raise_cx(cx, GC_FAULT_DIV_OVERFLOW, site, 0); return a; }
  return a / b;
}
template <typename T> __device__ inline T gc_rem(const gc_cx& cx, T a, T b, gc_u32 site) {
  if (b == (T)0) { gc_raise_cx(cx, GC_FAULT_DIV_ZERO, site, 0); return (T)0; }
  if ((T)-1 < (T)0 && b == (T)-1) { if (gc_is_min(a)) gc_raise_cx(cx, GC_FAULT_DIV_OVERFLOW, site, 0); return (T)0; }
  return a % b;
}
__device__ inline gc_f32 gc_div(const gc_cx&, gc_f32 a, gc_f32 b, gc_u32) { return a / b; }
__device__ inline gc_f64 gc_div(const gc_cx&, gc_f64 a, gc_f64 b, gc_u32) { return a / b; }
__device__ inline gc_f32 gc_rem(const gc_cx&, gc_f32 a, gc_f32 b, gc_u32) { return fmodf(a, b); }
__device__ inline gc_f64 gc_rem(const gc_cx&, gc_f64 a, gc_f64 b, gc_u32) { return fmod(a, b); }

// Shifts: Rust release masks the amount to the bit width (`wrapping_shl`).
template <typename T, typename S> __device__ inline T gc_shl(T a, S s) {
  typedef typename gc_uns<T>::t U;
  return (T)((U)a << ((gc_u32)s & (sizeof(T) * 8 - 1)));
}
template <typename T, typename S> __device__ inline T gc_shr(T a, S s) {
  return (T)(a >> ((gc_u32)s & (sizeof(T) * 8 - 1)));  // arithmetic for signed, as in Rust
}

// Fixed-size arrays with value semantics and checked indexing.
template <typename T, int N> struct gc_array {
  T v[N];
  __device__ gc_usize len() const { return (gc_usize)N; }
  // An array literal whose elements the writer cannot type (`f([1, 2])`: Rust takes the type from
  // `f`'s parameter, which another macro invocation declares) is written as `gc_array<gc_i32, N>`
  // (or `gc_i64`/`gc_u64` when a literal needs it) and converts here, element by element.
  template <typename U> __device__ operator gc_array<U, N>() const {
    gc_array<U, N> a;
    for (int i = 0; i < N; ++i) a.v[i] = (U)v[i];
    return a;
  }
  __device__ T& at(const gc_cx& cx, gc_u64 i, gc_u32 site) {
    if (i >= (gc_u64)N) { gc_raise_cx(cx, GC_FAULT_INDEX, site, i); return v[0]; }
    return v[i];
  }
  __device__ const T& at(const gc_cx& cx, gc_u64 i, gc_u32 site) const {
    if (i >= (gc_u64)N) { gc_raise_cx(cx, GC_FAULT_INDEX, site, i); return v[0]; }
    return v[i];
  }
};
template <typename T, int N> __device__ inline gc_array<T, N> gc_array_splat(T x) {
  gc_array<T, N> a;
  for (int i = 0; i < N; ++i) a.v[i] = x;
  return a;
}


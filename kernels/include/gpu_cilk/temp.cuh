// gpu_cilk/temp.cuh — task-scoped temporaries (`let t = alloc!(f32, n);` in a #[gpu_cilk] task).
// Needs runtime.cuh, a scheduler header (gc_cx, gc_raise_cx, gc_temps_of) and xmalloc.cuh
// (gc_xmalloc/gc_xfree) before it; the cuda backend assembles them in that order.
//
// gc_temp<T> is the device form of the Rust handle `gpu_cilk::runtime::Temp<T>` (#[repr(C)]
// { ptr, len }, 16 bytes): `n` elements of T, zeroed by gc_alloc_temp, from the runtime's device
// temporary heap (gc_temps_of(cx): one gc_xheap per program state, Config::temp_heap_bytes). The task
// that allocates frees it before each of its returns (the compiler rejects returns that could leave
// children running while a temporary is live). An index past the end raises GC_FAULT_INDEX; an
// exhausted heap raises GC_FAULT_TEMP_POOL (detail: element size << 56 | count) and the segment
// returns.

__device__ gc_u64 gc_temp_sink[2];  // what a faulting access reads/writes instead (the run fails)

template <typename T> struct gc_temp {
  T* ptr;
  gc_u64 n;
  __device__ T& at(const gc_cx& cx, gc_u64 i, gc_u32 site) const {
    if (i >= n) { gc_raise_cx(cx, GC_FAULT_INDEX, site, i); return *reinterpret_cast<T*>(gc_temp_sink); }
    return ptr[i];
  }
  __device__ gc_usize len() const { return n; }
};

// Zeroes `bytes` bytes at `p` (one thread): 8-byte stores, four to an iteration, where `p` is
// 8-aligned (the allocator's blocks are), single bytes elsewhere. A large temporary still costs
// its size in store bandwidth of one thread (see docs/dsl.md, Task-scoped temporaries).
__device__ inline void gc_zero_bytes(void* p, gc_u64 bytes) {
  unsigned char* b = reinterpret_cast<unsigned char*>(p);
  gc_u64 i = 0;
  if ((reinterpret_cast<gc_u64>(b) & 7ull) == 0ull) {
    gc_u64* w = reinterpret_cast<gc_u64*>(b);
    const gc_u64 words = bytes / 8ull;
    gc_u64 k = 0;
    for (; k + 4ull <= words; k += 4ull) {
      w[k] = 0ull;
      w[k + 1ull] = 0ull;
      w[k + 2ull] = 0ull;
      w[k + 3ull] = 0ull;
    }
    for (; k < words; ++k) w[k] = 0ull;
    i = words * 8ull;
  }
  for (; i < bytes; ++i) b[i] = 0;
}

// `zero`: false for `alloc!(T, n, uninit)` (the task writes every element before reading it).
// Out of line: one copy per element type, not one per `alloc!` site (code size, JIT time).
template <typename T>
__device__ __noinline__ gc_temp<T> gc_alloc_temp(const gc_cx& cx, gc_u64 n, gc_u32 site, bool zero = true) {
  gc_temp<T> t;
  t.ptr = nullptr;
  t.n = 0;
  const bool fits = n <= (~0ull >> 4) / (gc_u64)sizeof(T);
  gc_xheap* heap = gc_temps_of(cx);
  void* p = (heap != nullptr && fits) ? gc_xmalloc(heap, n * (gc_u64)sizeof(T)) : nullptr;
  if (p == nullptr) {
    // detail: the element size in the top byte, the element count below it.
    gc_raise_cx(cx, GC_FAULT_TEMP_POOL, site, ((gc_u64)sizeof(T) << 56) | (n & ((1ull << 56) - 1)));
    return t;
  }
  t.ptr = reinterpret_cast<T*>(p);
  t.n = n;
  if (zero) gc_zero_bytes(p, n * (gc_u64)sizeof(T));
  return t;
}

template <typename T> __device__ inline void gc_free_temp(const gc_cx& cx, gc_temp<T> t) {
  if (t.ptr != nullptr) gc_xfree(gc_temps_of(cx), t.ptr);
}

// Run once per device heap (any grid shape), before the first launch that allocates.
struct gc_temp_heap_params {
  gc_xheap* heap;          // a 960-byte buffer (sizeof(gc_xheap))
  void* region;            // `bytes` bytes of device memory
  gc_u64 bytes;
};
// Pages of 64 KiB, smaller (down to 4 KiB) while that leaves fewer than 64 pages, so that a small
// heap (the 64 KiB floor holds 13 pages of 4 KiB after the metadata) still serves large requests.
extern "C" __global__ void gc_temp_heap_init(gc_temp_heap_params p) {
  gc_u32 sb_shift = 16u;
  while (sb_shift > 12u && (p.bytes >> sb_shift) < 64ull) --sb_shift;
  gc_xheap_init(p.heap, p.region, p.bytes, sb_shift, 0u);
}

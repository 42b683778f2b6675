// Device test kernels for gpu_cilk/xmalloc.cuh (NVRTC: -I kernels/include, compute_80 / compute_90).
// Driven by runtime/tests/device_alloc.rs. Every kernel takes one XmParams (mirror: 12 u64-sized
// fields in this order):
//
//   heap      gc_xheap* (a 1024-byte device buffer, see xmalloc.cuh)
//   region    the heap's memory, `bytes` long
//   ptrs      n u64: the piece each thread got (0 = null)
//   counters  [0] null results, [1] corrupt words (pattern mismatch), [2] successful allocations,
//             [3] bytes asked by the successful ones
//   seed      per-run seed of the sizes and patterns
//   n         threads that take part (gid < n), u32; lanes: active lanes per warp (1..32), u32
//   sb_shift, qcap_log2 (gc_xheap_init), u32 each; max_size: cap of the random sizes, u32; rounds u32
//
// Sizes: hash(seed, gid): 15/16 small (1..256), 1/16 medium (257..4096), and 1/256 large (up to
// max_size, above 4 KiB when max_size allows). Pattern: word k of thread gid's piece is
// (gid << 32 | k) ^ seed; the trailing bytes of a size that is not a multiple of 8 get the low
// bytes of the next word. Overlapping live pieces would break some thread's pattern.

#include "gpu_cilk/xmalloc.cuh"

struct XmParams {
    gc_xheap* heap;
    char* region;
    unsigned long long bytes;
    unsigned long long* ptrs;
    unsigned long long* counters;
    unsigned long long seed;
    unsigned n;
    unsigned lanes;
    unsigned sb_shift;
    unsigned qcap_log2;
    unsigned max_size;
    unsigned rounds;
};

__device__ __forceinline__ unsigned long long xm_hash(unsigned long long x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

__device__ __forceinline__ unsigned long long xm_size(const XmParams& p, unsigned long long gid, unsigned round) {
    const unsigned long long h = xm_hash(p.seed * 0x9e3779b97f4a7c15ull + gid * 1315423911ull + round);
    unsigned long long s;
    if ((h & 255ull) == 0ull) {
        s = 4097ull + (h >> 16) % (p.max_size > 4097u ? p.max_size - 4096ull : 1ull);
    } else if ((h & 15ull) == 0ull) {
        s = 257ull + (h >> 16) % 3840ull;
    } else {
        s = 1ull + (h >> 16) % 256ull;
    }
    return s < p.max_size ? s : p.max_size;
}

__device__ __forceinline__ unsigned long long xm_word(const XmParams& p, unsigned long long gid, unsigned long long k) {
    return ((gid << 32) | k) ^ p.seed;
}

__device__ void xm_write(const XmParams& p, unsigned long long gid, char* q, unsigned long long size) {
    unsigned long long* w = (unsigned long long*)q;
    const unsigned long long words = size / 8ull;
    for (unsigned long long k = 0; k < words; ++k) w[k] = xm_word(p, gid, k);
    const unsigned long long last = xm_word(p, gid, words);
    for (unsigned long long b = words * 8ull; b < size; ++b) q[b] = (char)(last >> (8ull * (b - words * 8ull)));
}

__device__ unsigned long long xm_check(const XmParams& p, unsigned long long gid, const char* q, unsigned long long size) {
    const unsigned long long* w = (const unsigned long long*)q;
    const unsigned long long words = size / 8ull;
    unsigned long long bad = 0;
    for (unsigned long long k = 0; k < words; ++k) bad += w[k] != xm_word(p, gid, k);
    const unsigned long long last = xm_word(p, gid, words);
    for (unsigned long long b = words * 8ull; b < size; ++b) bad += q[b] != (char)(last >> (8ull * (b - words * 8ull)));
    return bad;
}

__device__ __forceinline__ bool xm_active(const XmParams& p, unsigned long long* gid_out) {
    const unsigned long long gid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    *gid_out = gid;
    return gid < p.n && (threadIdx.x & 31u) < p.lanes;
}

extern "C" __global__ void xm_init(XmParams p) {
    gc_xheap_init(p.heap, p.region, p.bytes, p.sb_shift, p.qcap_log2);
}

// Allocate and write the pattern.
extern "C" __global__ void xm_alloc(XmParams p) {
    unsigned long long gid;
    if (!xm_active(p, &gid)) return;
    const unsigned long long size = xm_size(p, gid, 0u);
    char* q = (char*)gc_xmalloc(p.heap, size);
    p.ptrs[gid] = (unsigned long long)q;
    if (q == 0) {
        atomicAdd(&p.counters[0], 1ull);
        return;
    }
    atomicAdd(&p.counters[2], 1ull);
    atomicAdd(&p.counters[3], size);
    xm_write(p, gid, q, size);
}

// Verify every live piece's pattern (a second launch: all writes are done).
extern "C" __global__ void xm_verify(XmParams p) {
    unsigned long long gid;
    if (!xm_active(p, &gid)) return;
    const char* q = (const char*)p.ptrs[gid];
    if (q == 0) return;
    const unsigned long long bad = xm_check(p, gid, q, xm_size(p, gid, 0u));
    if (bad) atomicAdd(&p.counters[1], bad);
}

// Free every piece (through the module's current heap: gc_free).
extern "C" __global__ void xm_free(XmParams p) {
    unsigned long long gid;
    if (!xm_active(p, &gid)) return;
    gc_free((void*)p.ptrs[gid]);
    p.ptrs[gid] = 0ull;
}

// Alloc / write / check / free `rounds` times inside one launch: frees and allocations of
// different warps interleave, blocks are recycled while others are live.
extern "C" __global__ void xm_cycle(XmParams p) {
    unsigned long long gid;
    if (!xm_active(p, &gid)) return;
    for (unsigned r = 1; r <= p.rounds; ++r) {
        const unsigned long long size = xm_size(p, gid, r);
        char* q = (char*)gc_xmalloc(p.heap, size);
        if (q == 0) {
            atomicAdd(&p.counters[0], 1ull);
            continue;
        }
        atomicAdd(&p.counters[2], 1ull);
        xm_write(p, gid, q, size);
        __nanosleep((unsigned)(xm_hash(gid + r) & 1023ull));
        const unsigned long long bad = xm_check(p, gid, q, size);
        if (bad) atomicAdd(&p.counters[1], bad);
        gc_xfree(p.heap, q);
    }
}

// One thread: trim, then allocate the whole heap (ptrs[0]), touch both ends, free it, trim again.
extern "C" __global__ void xm_whole(XmParams p) {
    if (blockIdx.x != 0u || threadIdx.x != 0u) return;
    gc_xheap_trim(p.heap);
    const unsigned long long size = gc_xheap_max_alloc(p.heap);
    char* q = (char*)gc_xmalloc(p.heap, size);
    p.ptrs[0] = (unsigned long long)q;
    p.counters[4] = size;
    if (q == 0) return;
    q[0] = 1;
    q[size - 1ull] = 2;
    p.counters[5] = gc_xm_ld(&p.heap->bytes_in_use);
    // One byte more than the whole heap must fail cleanly.
    p.counters[6] = (unsigned long long)gc_xmalloc(p.heap, size + 1ull);
    gc_xfree(p.heap, q);
    gc_xheap_trim(p.heap);
}

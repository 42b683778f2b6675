// Allocator microbenchmark: the paper's MilThreads (Huang 2010, §3.1: every thread allocates
// 8 bytes, writes them, frees them) and a mixed-size variant (8..128 bytes), with gpu-cilk's
// warp-coalesced allocator (gpu_cilk/xmalloc.cuh) versus CUDA's device malloc/free. `lanes`
// active lanes per warp (1..32) simulate the SIMD width (§2.1.2, Fig. 2.3): the host launches
// n * 32 / lanes threads so that n allocations are made at every width.
//   counters[0]: null results, [1]: successful allocations, [2]: corrupt reads.

#include "gpu_cilk/xmalloc.cuh"

struct AllocParams {
    gc_xheap* heap;
    char* region;
    unsigned long long bytes;
    unsigned long long* counters;
    unsigned long long n;      // allocations wanted
    unsigned lanes;            // active lanes per warp
    unsigned mixed;            // 0: 8 bytes each; 1: 8..128 bytes
};

__device__ __forceinline__ unsigned long long ab_size(const AllocParams& p, unsigned long long gid) {
    if (!p.mixed) return 8ull;
    unsigned long long x = gid * 0x9e3779b97f4a7c15ull;
    x ^= x >> 29;
    return 8ull + ((x >> 7) % 121ull);
}

// Returns the allocation index of this thread, or ~0 when it sits out.
__device__ __forceinline__ unsigned long long ab_index(const AllocParams& p) {
    const unsigned long long warp = ((unsigned long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    const unsigned lane = threadIdx.x & 31u;
    if (lane >= p.lanes) return ~0ull;
    const unsigned long long i = warp * p.lanes + lane;
    return i < p.n ? i : ~0ull;
}

__device__ __forceinline__ void ab_use(const AllocParams& p, unsigned long long i, char* q, unsigned long long size) {
    unsigned long long* w = (unsigned long long*)q;
    w[0] = i;
    if (size >= 16ull) w[size / 8ull - 1ull] = ~i;
    unsigned long long bad = *(volatile unsigned long long*)w != i;
    if (bad) atomicAdd(&p.counters[2], 1ull);
}

__device__ __forceinline__ void ab_count(const AllocParams& p, bool ok) {
    // Warp-aggregated counters so that they do not dominate the measurement.
    const unsigned mask = __activemask();
    const unsigned okm = __ballot_sync(mask, ok);
    if ((threadIdx.x & 31u) == (unsigned)(__ffs(mask) - 1)) {
        if (okm) atomicAdd(&p.counters[1], (unsigned long long)__popc(okm));
        if (okm != mask) atomicAdd(&p.counters[0], (unsigned long long)__popc(mask & ~okm));
    }
}

extern "C" __global__ void ab_init(AllocParams p) {
    gc_xheap_init(p.heap, p.region, p.bytes, 0u, 0u);
}

extern "C" __global__ void ab_xmalloc(AllocParams p) {
    const unsigned long long i = ab_index(p);
    if (i == ~0ull) return;
    const unsigned long long size = ab_size(p, i);
    char* q = (char*)gc_xmalloc(p.heap, size);
    if (q) {
        ab_use(p, i, q, size);
        gc_xfree(p.heap, q);
    }
    ab_count(p, q != 0);
}

extern "C" __global__ void ab_malloc(AllocParams p) {
    const unsigned long long i = ab_index(p);
    if (i == ~0ull) return;
    const unsigned long long size = ab_size(p, i);
    char* q = (char*)malloc((size_t)size);
    if (q) {
        ab_use(p, i, q, size);
        free(q);
    }
    ab_count(p, q != 0);
}

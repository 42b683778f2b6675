// heap_bench.cu — kernels of the heap benchmark (benches/gpu_suite/heap.rs): insert N keys into
// gpu_cilk/heap.cuh's batched heap, then delete them all, timed as two kernels.
//
// Keys are gc_heap_key<unsigned, unsigned>: priority gc_bench_key_u32(i) (the generator CUB's
// baseline benches/cuda/cub_sort.cu and the host peers use), payload i. hb_fill writes them to
// `keys` (untimed). hb_insert_k<K>: every block takes batches of `batch` consecutive keys
// (batch <= K; batch < K are partial inserts) in a grid-stride loop and inserts them.
// hb_delete_k<K>: every block deletes until the heap is empty and folds what it got into
// counters: [0] keys, [1] sum of priorities, [2] xor of payloads, [3] unsorted batches,
// [4] partial batches, [5] failed inserts. Deleted batches are written over the input array
// (block b uses keys[b * K, (b + 1) * K)). Launch both with
// gc_heap_smem_bytes<K, Key>() bytes of dynamic shared memory and at most the resident number of
// blocks.

// Built as is for the timed runs; `--heap-profile` builds it again with -DGC_HEAP_PROFILE (heap.cuh's
// PROFILE: per-block phase counters through gc_heap::prof) and -DHB_KERNEL_LIST="HB_KERNELS(512) ..."
// (only the node sizes asked for). runtime/tests/sim_heap.rs runs these kernels under the host
// simulation, both ways.

#include "gpu_cilk/portable.cuh"  // gc_dynamic_smem()
#include "gpu_cilk/heap.cuh"

typedef gc_heap_key<unsigned, unsigned> hb_key;

__host__ __device__ inline unsigned gc_bench_key_u32(unsigned long long i, unsigned long long n, unsigned seed,
                                                     unsigned dist) {
    switch (dist) {
        case 1: return (unsigned)i;                    // sorted
        case 2: return (unsigned)(n - 1ull - i);       // reverse
        case 3: return 7u;                             // equal
        default: {                                     // random: murmur3 fmix32
            unsigned h = (unsigned)i + seed * 0x9E3779B9u;
            h ^= h >> 16;
            h *= 0x85EBCA6Bu;
            h ^= h >> 13;
            h *= 0xC2B2AE35u;
            h ^= h >> 16;
            return h;
        }
    }
}

struct HbParams {
    gc_heap<hb_key>* heap;
    hb_key* keys;
    unsigned long long* counters;
    unsigned long long n;
    unsigned batch;
    unsigned seed;
    unsigned dist;
    unsigned pad;
};
static_assert(sizeof(HbParams) == 48, "HbParams layout");

extern "C" __global__ void hb_fill(HbParams p) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < p.n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        hb_key k;
        k.prio = gc_bench_key_u32(i, p.n, p.seed, p.dist);
        k.payload = (unsigned)i;
        p.keys[i] = k;
    }
}

template <int K>
__device__ void hb_insert(const HbParams& p) {
    void* const hb_smem = gc_dynamic_smem();
    const unsigned long long batches = (p.n + p.batch - 1) / p.batch;
    for (unsigned long long b = blockIdx.x; b < batches; b += gridDim.x) {
        const unsigned long long first = b * p.batch;
        const unsigned len = (unsigned)(p.n - first < p.batch ? p.n - first : p.batch);
        const int r = gc_heap_insert<K>(p.heap, p.keys + first, len, hb_smem);
        if (threadIdx.x == 0 && r != GC_HEAP_OK) atomicAdd(&p.counters[5], 1ull);
    }
}

template <int K>
__device__ void hb_delete(const HbParams& p) {
    void* const hb_smem = gc_dynamic_smem();
    // Each block's output batch: K keys of the (already inserted) input array, in global memory
    // (the workspace already takes 40 KiB of shared memory at K = 1024; the host sizes `keys` to
    // at least blocks * K).
    hb_key* out = p.keys + (unsigned long long)blockIdx.x * K;
    unsigned long long keys = 0, sum = 0, x = 0, unsorted = 0, partial = 0;
    for (;;) {
        const unsigned n = gc_heap_delete_min<K>(p.heap, out, hb_smem);
        if (n == 0u) break;
        for (unsigned i = threadIdx.x; i < n; i += blockDim.x) {
            sum += out[i].prio;
            x ^= out[i].payload;
            if (i > 0 && gc_heap_less(out[i], out[i - 1])) ++unsorted;
        }
        keys += n;
        if (n < (unsigned)K) ++partial;
        __syncthreads();  // `out` is rewritten by the next delete
    }
    atomicAdd(&p.counters[1], sum);
    atomicXor(&p.counters[2], x);
    atomicAdd(&p.counters[3], unsorted);
    if (threadIdx.x == 0) {
        atomicAdd(&p.counters[0], keys);
        atomicAdd(&p.counters[4], partial);
    }
}

#define HB_KERNELS(K)                                                          \
    extern "C" __global__ void hb_insert_k##K(HbParams p) { hb_insert<K>(p); } \
    extern "C" __global__ void hb_delete_k##K(HbParams p) { hb_delete<K>(p); }

#ifdef HB_KERNEL_LIST
HB_KERNEL_LIST
#else
HB_KERNELS(64)
HB_KERNELS(128)
HB_KERNELS(256)
HB_KERNELS(512)
HB_KERNELS(1024)
HB_KERNELS(2048)
HB_KERNELS(4096)
#endif

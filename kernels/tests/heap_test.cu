// Device stress kernels for gpu_cilk/heap.cuh, driven by runtime/tests/cuda_heap.rs (which builds
// the scripts, checks the recorded history with test-support/src/heap_history.rs and the
// heap's quiescent state).
//
// gc_heap_test_ops_k<K>_<key>: block b runs operations [b * ops_per_block, (b + 1) *
// ops_per_block) of a host-made script: op_kind[i] 0 = insert op_len[i] keys from
// in_keys[i * K ...], 1 = delete-min into out_keys[i * K ...] (count in out_len[i]). Insert return
// codes go to op_status[i]. Every operation is stamped from one global counter just before it
// starts and just after it returns (thread 0: fence, atomicAdd, fence), into stamps[2i], [2i + 1].
// With a trace buffer in the heap header (gc_heap::trace), thread 0 also writes trace word [3] =
// kind << 32 | (operation index + 1) as it starts each operation.
// Launch with gc_heap_smem_bytes<K, Key>() bytes of dynamic shared memory (gc_dynamic_smem()) and at most as many
// blocks as are resident at once (the heap's waits need every block resident).

#include "gpu_cilk/portable.cuh"  // gc_dynamic_smem()

#ifdef GC_HOST_SIM
// Host simulation only (runtime/tests/sim_heap.rs): heap.cuh's GC_HEAP_CHAOS hook. A launch's
// `chaos` (gc_heap_test_params) is the permille of lock steps where the holder stalls for 1 to
// 200 us (a per-thread xorshift; otherwise a yield now and then), so lock holders are slow at
// every step, as a GPU block may be, and interleavings a two-core host rarely produces come up.
#include <time.h>
static thread_local unsigned gc_heap_test_chaos_permille = 0u;
static thread_local unsigned long long gc_heap_test_chaos_x = 0ull;
static inline void gc_heap_test_chaos() {
    if (gc_heap_test_chaos_permille == 0u) return;
    unsigned long long x = gc_heap_test_chaos_x;
    if (x == 0ull) x = 0x9E3779B97F4A7C15ull ^ ((unsigned long long)blockIdx.x << 20) ^ threadIdx.x;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    gc_heap_test_chaos_x = x;
    if (x % 1000u < gc_heap_test_chaos_permille) {
        struct timespec ts = {0, (long)(1000u * (1u + (unsigned)(x >> 40) % 200u))};
        nanosleep(&ts, nullptr);
    } else if (x % 4u == 0u) {
        sched_yield();
    }
}
#define GC_HEAP_CHAOS() gc_heap_test_chaos()
#endif

#include "gpu_cilk/heap.cuh"

typedef gc_heap_key<unsigned, unsigned> gc_test_k32;            // 8 bytes
typedef gc_heap_key<unsigned, unsigned long long> gc_test_k64;  // 16 bytes (4 bytes of padding)

static_assert(sizeof(gc_heap<gc_test_k32>) == 256, "gc_heap header layout");
static_assert(sizeof(gc_test_k32) == 8 && sizeof(gc_test_k64) == 16, "key layouts");

struct gc_heap_test_params {
    void* heap;
    const void* in_keys;
    const unsigned* op_kind;
    const unsigned* op_len;
    void* out_keys;
    unsigned* out_len;
    unsigned* op_status;
    unsigned long long* stamps;
    unsigned long long* clock;
    unsigned ops_per_block;
    unsigned chaos;  // the host simulation's GC_HEAP_CHAOS permille (above); ignored on a GPU
};
static_assert(sizeof(gc_heap_test_params) == 80, "gc_heap_test_params layout");

__device__ __forceinline__ unsigned long long gc_heap_test_stamp(unsigned long long* clock) {
    __threadfence();
    const unsigned long long s = atomicAdd(clock, 1ull);
    __threadfence();
    return s;
}

template <int K, typename Key>
__device__ void gc_heap_test_run(const gc_heap_test_params& p) {
    void* const gc_heap_test_smem = gc_dynamic_smem();
    gc_heap<Key>* h = (gc_heap<Key>*)p.heap;
    const Key* in = (const Key*)p.in_keys;
    Key* out = (Key*)p.out_keys;
#ifdef GC_HOST_SIM
    gc_heap_test_chaos_permille = p.chaos;
#endif
    const unsigned first = blockIdx.x * p.ops_per_block;
    for (unsigned i = first; i < first + p.ops_per_block; ++i) {
        const unsigned kind = p.op_kind[i];
        if (threadIdx.x == 0) {
            // Trace word [3]: which operation this block is in (the watchdog's dump names it).
            volatile unsigned long long* tr = gc_heap_tr(h);
            if (tr) tr[3] = ((unsigned long long)kind << 32) | (unsigned long long)(i + 1u);
            p.stamps[2 * i] = gc_heap_test_stamp(p.clock);
        }
        __syncthreads();
        if (kind == 0u) {
            const int r = gc_heap_insert<K>(h, in + (unsigned long long)i * K, p.op_len[i], gc_heap_test_smem);
            if (threadIdx.x == 0) p.op_status[i] = (unsigned)r;
        } else {
            const unsigned n = gc_heap_delete_min<K>(h, out + (unsigned long long)i * K, gc_heap_test_smem);
            if (threadIdx.x == 0) p.out_len[i] = n;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            gc_heap_trace_at(gc_heap_tr(h), GC_HEAP_AT_OUTSIDE, 0ull);
            p.stamps[2 * i + 1] = gc_heap_test_stamp(p.clock);
        }
        __syncthreads();
    }
}

#define GC_HEAP_TEST_KERNEL(K, KEY, SUFFIX)                                                  \
    extern "C" __global__ void gc_heap_test_ops_k##K##_##SUFFIX(gc_heap_test_params p) {  \
        gc_heap_test_run<K, KEY>(p);                                                         \
    }

GC_HEAP_TEST_KERNEL(1, gc_test_k32, u32)
GC_HEAP_TEST_KERNEL(4, gc_test_k64, u64)
GC_HEAP_TEST_KERNEL(64, gc_test_k64, u64)
GC_HEAP_TEST_KERNEL(256, gc_test_k32, u32)
GC_HEAP_TEST_KERNEL(1024, gc_test_k32, u32)
GC_HEAP_TEST_KERNEL(2048, gc_test_k32, u32)

// gc_heap_test_wait_last: issue 12's H100 livelock as a probe (K = 1, 8-byte keys, 2 blocks,
// gc_heap_smem_bytes<1, gc_test_k32>() bytes of dynamic shared memory, a trace buffer for 2
// blocks). The host builds a heap of three nodes whose last, node 3, is TARGET (a top-down insert
// already past the root). Block 0 deletes into out_keys[0] (out_len[0] keys). Block 1's thread 0
// plays that insert: once the delete has lowered count to 2 (node 3 is its last node) it watches,
// for at most ops_per_block rounds, until the delete's trace shows it at WAIT_LAST after 16
// back-offs, then arrives (locks node 3, writes in_keys[0], unlocks it AVAIL). op_status[0] = locks
// the delete took while watched (trace word [4]; the wait must take none), [1] = rounds it saw
// node 3 locked (none: only the insert may lock it), [2] = 1 if the delete was seen waiting,
// [3] = the word the insert's lock of node 3 returned (TARGET).
extern "C" __global__ void gc_heap_test_wait_last(gc_heap_test_params p) {
    gc_heap<gc_test_k32>* h = (gc_heap<gc_test_k32>*)p.heap;
    if (blockIdx.x == 0) {
        const unsigned n = gc_heap_delete_min<1>(h, (gc_test_k32*)p.out_keys, gc_dynamic_smem());
        if (threadIdx.x == 0) p.out_len[0] = n;
        return;
    }
    if (threadIdx.x != 0) return;
    volatile unsigned long long* del = (volatile unsigned long long*)h->trace;  // block 0's words
    while (gc_heap_ld(&h->count) != 2ull) __nanosleep(64);
    const unsigned long long locks = del[4];
    unsigned seen_locked = 0u, waited = 0u;
    for (unsigned i = 0; i < p.ops_per_block && !waited; ++i) {
        if (gc_heap_ld(&h->states[3]) & GC_HEAP_LOCKED) ++seen_locked;
        waited = (del[0] >> 56) == GC_HEAP_AT_WAIT_LAST && del[2] >= 16ull;
        __nanosleep(256);
    }
    p.op_status[0] = (unsigned)(del[4] - locks);
    p.op_status[1] = seen_locked;
    p.op_status[2] = waited;
    const unsigned long long w = gc_heap_lock_node(h, 3);
    p.op_status[3] = (unsigned)w;
    gc_heap_node<1>(h, 3)[0] = ((const gc_test_k32*)p.in_keys)[0];
    gc_heap_unlock(h, 3, GC_HEAP_AVAIL);
}

// Shared-memory bytes each instantiation needs (the host checks its own formula against these).
extern "C" __global__ void gc_heap_test_smem_sizes(unsigned* out) {
    out[0] = gc_heap_smem_bytes<1, gc_test_k32>();
    out[1] = gc_heap_smem_bytes<4, gc_test_k64>();
    out[2] = gc_heap_smem_bytes<64, gc_test_k64>();
    out[3] = gc_heap_smem_bytes<256, gc_test_k32>();
    out[4] = gc_heap_smem_bytes<1024, gc_test_k32>();
    out[5] = gc_heap_smem_bytes<2048, gc_test_k32>();
}

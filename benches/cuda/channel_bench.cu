// Channel reservation microbenchmark.
//
// Each thread enqueues `items_per_thread` values into an array queue, then (a second launch)
// dequeues as many and checksums them. Three ways:
//  - faa_*: the bare warp-aggregated fetch-and-add reservation (the heart of the channel's
//    `talloc`): the active lanes' ballot and popc give each lane its rank, ONE atomicAdd per warp
//    reserves them all, and the base is broadcast with shfl. No control words.
//  - gc_*: gpu-cilk's real channel, kernels/include/gpu_cilk/channel.cuh (passed to NVRTC as an
//    in-memory header): gc_talloc + gc_enq, then gc_deq, i.e. the same warp-aggregated
//    reservation plus the per-slot control-word CASes, fences and done counts.
//  - cas_*: the naive contended queue: every thread loops on atomicCAS(tail, old, old + 1) until
//    it wins.
// Enqueue and dequeue are separate launches (the host-driven scheduler's phase contract).

#include "gpu_cilk/channel.cuh"

struct ChanParams {
    unsigned* slots;
    unsigned long long* tail;      // enqueue counter
    unsigned long long* head;      // dequeue counter
    unsigned long long* checksum;  // sum of dequeued values
    unsigned long long capacity;   // slots
    unsigned items_per_thread;
    unsigned pad;
    gc_channel<unsigned>* ch;      // gc_* kernels: the channel (capacity >= all items)
};

__device__ __forceinline__ unsigned lanemask_lt() {
    unsigned m;
    asm("mov.u32 %0, %%lanemask_lt;" : "=r"(m));
    return m;
}

// One warp-aggregated fetch-and-add on *counter for the active lanes; returns this lane's ticket.
__device__ __forceinline__ unsigned long long warp_reserve(unsigned long long* counter) {
    const unsigned mask = __activemask();
    const unsigned leader = __ffs(mask) - 1u;
    const unsigned lane = threadIdx.x & 31u;
    unsigned long long base = 0;
    if (lane == leader) base = atomicAdd(counter, (unsigned long long)__popc(mask));
    base = __shfl_sync(mask, base, leader);
    return base + __popc(mask & lanemask_lt());
}

// Contended per-thread CAS loop on *counter; returns this thread's ticket.
__device__ __forceinline__ unsigned long long cas_reserve(unsigned long long* counter) {
    unsigned long long old = *(volatile unsigned long long*)counter;
    for (;;) {
        const unsigned long long prev = atomicCAS(counter, old, old + 1ull);
        if (prev == old) return old;
        old = prev;
    }
}

__device__ __forceinline__ unsigned value_of(unsigned gtid, unsigned it, unsigned items) {
    return gtid * items + it + 1u;
}

__device__ __forceinline__ void add_checksum(unsigned long long* checksum, unsigned long long sum) {
    for (int off = 16; off > 0; off >>= 1) sum += __shfl_down_sync(0xffffffffu, sum, off);
    if ((threadIdx.x & 31u) == 0u && sum != 0ull) atomicAdd(checksum, sum);
}

extern "C" __global__ void faa_enqueue(ChanParams p) {
    const unsigned gtid = blockIdx.x * blockDim.x + threadIdx.x;
    for (unsigned it = 0; it < p.items_per_thread; ++it) {
        const unsigned long long slot = warp_reserve(p.tail);
        if (slot < p.capacity) p.slots[slot] = value_of(gtid, it, p.items_per_thread);
    }
}

extern "C" __global__ void faa_dequeue(ChanParams p) {
    unsigned long long sum = 0;
    for (unsigned it = 0; it < p.items_per_thread; ++it) {
        const unsigned long long slot = warp_reserve(p.head);
        if (slot < p.capacity) sum += p.slots[slot];
    }
    add_checksum(p.checksum, sum);
}

extern "C" __global__ void cas_enqueue(ChanParams p) {
    const unsigned gtid = blockIdx.x * blockDim.x + threadIdx.x;
    for (unsigned it = 0; it < p.items_per_thread; ++it) {
        const unsigned long long slot = cas_reserve(p.tail);
        if (slot < p.capacity) p.slots[slot] = value_of(gtid, it, p.items_per_thread);
    }
}

extern "C" __global__ void cas_dequeue(ChanParams p) {
    unsigned long long sum = 0;
    for (unsigned it = 0; it < p.items_per_thread; ++it) {
        const unsigned long long slot = cas_reserve(p.head);
        if (slot < p.capacity) sum += p.slots[slot];
    }
    add_checksum(p.checksum, sum);
}

extern "C" __global__ void gc_enqueue(ChanParams p) {
    const unsigned gtid = blockIdx.x * blockDim.x + threadIdx.x;
    for (unsigned it = 0; it < p.items_per_thread; ++it) {
        unsigned long long t;
        if (gc_talloc(p.ch, &t)) gc_enq(p.ch, t, value_of(gtid, it, p.items_per_thread));
    }
}

extern "C" __global__ void gc_dequeue(ChanParams p) {
    unsigned long long sum = 0;
    for (unsigned it = 0; it < p.items_per_thread; ++it) {
        unsigned v;
        if (gc_deq(p.ch, &v) == 1) sum += v;
    }
    add_checksum(p.checksum, sum);
}

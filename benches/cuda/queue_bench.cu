// Queue throughput microbenchmark (Scogland & Feng, ICPE 2015, §7.2), the `--queue` section of
// benches/gpu_suite.rs.
//
// Two patterns, each thread doing a fixed number of operations in ONE launch (every block
// resident: the host launches at most the occupancy limit, as blocking queues require):
//  - *_matched:  every thread loops { enqueue; dequeue } `items` times.
//  - *_prodcons: one thread in four is a producer (enqueues 3 * items), the other three are
//    consumers (dequeue items each).
// Queues:
//  - tq_*:  gpu-cilk's ticket queue, kernels/include/gpu_cilk/ticket_queue.cuh (passed to NVRTC as
//           an in-memory header). `mode`: 0 blocking with warp-aggregated tickets (one atomicAdd
//           per warp and queue), 1 blocking with one atomicAdd per lane (the paper's form),
//           2 non-waiting (try_* retried with back-off).
//  - cas_*: the contended-CAS baseline: a bounded array queue in the style of Tsigas–Zhang /
//           Vyukov: per-slot sequence numbers, and every thread takes its position with an
//           atomicCAS loop on head / tail (no fetch-and-add, no aggregation).
// Every dequeued value is summed into `checksum` and every successful operation counted in
// `ops` (one atomicAdd per thread at the end), so the host verifies sum and count.

#include "gpu_cilk/ticket_queue.cuh"

typedef unsigned long long u64;

struct QueueBenchParams {
    gc_tq<u64>* tq;       // tq_*: the ticket queue (capacity = cas_capacity)
    u64* cas_slots;       // cas_*: capacity values
    u64* cas_seq;         // cas_*: capacity sequence words (host: seq[i] = i)
    u64* cas_counters;    // cas_*: [0] tail, [32] head (separate 256-byte lines)
    u64* ops;             // successful enqueues + dequeues
    u64* checksum;        // sum of dequeued values
    u64 cas_capacity;     // power of two >= 2
    unsigned items;
    unsigned mode;
};

__device__ __forceinline__ unsigned qb_gtid() { return blockIdx.x * blockDim.x + threadIdx.x; }

__device__ __forceinline__ u64 qb_value(unsigned gtid, unsigned k) { return ((u64)gtid << 20) + k + 1ull; }

// ---- ticket queue --------------------------------------------------------------------------------

__device__ __forceinline__ void tq_put(const QueueBenchParams& p, u64 v) {
    if (p.mode == 0u) {
        gc_tq_enqueue(p.tq, v);
    } else if (p.mode == 1u) {
        gc_tq_enqueue_lane(p.tq, v);
    } else {
        unsigned ns = 32u;
        while (gc_tq_try_enqueue(p.tq, v) != GC_TQ_SUCCESS) gc_tq_backoff(&ns);
    }
}

__device__ __forceinline__ u64 tq_take(const QueueBenchParams& p) {
    u64 v = 0;
    if (p.mode == 0u) {
        gc_tq_dequeue(p.tq, &v);
    } else if (p.mode == 1u) {
        gc_tq_dequeue_lane(p.tq, &v);
    } else {
        unsigned ns = 32u;
        while (gc_tq_try_dequeue(p.tq, &v) != GC_TQ_SUCCESS) gc_tq_backoff(&ns);
    }
    return v;
}

extern "C" __global__ void tq_matched(QueueBenchParams p) {
    const unsigned me = qb_gtid();
    u64 sum = 0;
    for (unsigned k = 0; k < p.items; ++k) {
        tq_put(p, qb_value(me, k));
        sum += tq_take(p);
    }
    atomicAdd(p.checksum, sum);
    atomicAdd(p.ops, 2ull * p.items);
}

extern "C" __global__ void tq_prodcons(QueueBenchParams p) {
    const unsigned me = qb_gtid();
    u64 sum = 0, ops = 0;
    if (me % 4u == 0u) {
        for (unsigned k = 0; k < 3u * p.items; ++k) tq_put(p, qb_value(me, k));
        ops = 3ull * p.items;
    } else {
        for (unsigned k = 0; k < p.items; ++k) sum += tq_take(p);
        ops = p.items;
    }
    atomicAdd(p.checksum, sum);
    atomicAdd(p.ops, ops);
}

// ---- contended-CAS baseline ----------------------------------------------------------------------

__device__ __forceinline__ u64 qb_ld(const u64* a) { return *(const volatile u64*)a; }

__device__ void cas_put(const QueueBenchParams& p, u64 v) {
    u64* tail = &p.cas_counters[0];
    const u64 mask = p.cas_capacity - 1ull;
    unsigned ns = 32u;
    for (;;) {
        const u64 t = qb_ld(tail);
        const u64 seq = qb_ld(&p.cas_seq[t & mask]);
        if (seq == t) {
            if (atomicCAS(tail, t, t + 1ull) == t) {
                __threadfence();
                p.cas_slots[t & mask] = v;
                __threadfence();
                *(volatile u64*)&p.cas_seq[t & mask] = t + 1ull;
                return;
            }
        } else {
            __nanosleep(ns); // full, or a stale tail
            if (ns < 1024u) ns <<= 1;
        }
    }
}

__device__ u64 cas_take(const QueueBenchParams& p) {
    u64* head = &p.cas_counters[32];
    const u64 mask = p.cas_capacity - 1ull;
    unsigned ns = 32u;
    for (;;) {
        const u64 h = qb_ld(head);
        const u64 seq = qb_ld(&p.cas_seq[h & mask]);
        if (seq == h + 1ull) {
            if (atomicCAS(head, h, h + 1ull) == h) {
                __threadfence();
                const u64 v = p.cas_slots[h & mask];
                __threadfence();
                *(volatile u64*)&p.cas_seq[h & mask] = h + p.cas_capacity;
                return v;
            }
        } else {
            __nanosleep(ns); // empty, or a stale head
            if (ns < 1024u) ns <<= 1;
        }
    }
}

extern "C" __global__ void cas_matched(QueueBenchParams p) {
    const unsigned me = qb_gtid();
    u64 sum = 0;
    for (unsigned k = 0; k < p.items; ++k) {
        cas_put(p, qb_value(me, k));
        sum += cas_take(p);
    }
    atomicAdd(p.checksum, sum);
    atomicAdd(p.ops, 2ull * p.items);
}

extern "C" __global__ void cas_prodcons(QueueBenchParams p) {
    const unsigned me = qb_gtid();
    u64 sum = 0, ops = 0;
    if (me % 4u == 0u) {
        for (unsigned k = 0; k < 3u * p.items; ++k) cas_put(p, qb_value(me, k));
        ops = 3ull * p.items;
    } else {
        for (unsigned k = 0; k < p.items; ++k) sum += cas_take(p);
        ops = p.items;
    }
    atomicAdd(p.checksum, sum);
    atomicAdd(p.ops, ops);
}

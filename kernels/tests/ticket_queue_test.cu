// Device test kernels of gpu_cilk/ticket_queue.cuh, driven by runtime/tests/device_ticket_queue.rs
// and compiled without a GPU by its NVRTC-only test kernels_compile_with_the_mirrored_parameter_layouts.
//
// PARAMETERS (struct TqTestParams, mirrored field for field by the Rust test):
//   q        the queue of unsigned long long (host: zeroed turns, or turns set for `start`)
//   enq_log  [log_len] value enqueued with ticket start + i (host fills it with ~0 first)
//   deq_log  [log_len] value dequeued with ticket start + i
//   bitmap   exactly-once bits over item ids, (items_total + 31) / 32 words, zeroed
//   counts   [8] zeroed: 0 duplicates, 1 values never enqueued, 2 CLOSED returns, 3 successes,
//            4 non-waiting retries (FULL/EMPTY/BUSY), 5 status errors, 6 tickets outside the log,
//            7 the closer saw all waiters (1) or timed out (2)
//   start    the queue's initial ticket (wrap tests start near 2^64)
//   log_len  entries in each log
//   items    items per thread (matched: enqueued and dequeued by each thread; producer/consumer:
//            dequeued by each consumer, 3 * items enqueued by each producer)
//   mode     0 blocking warp-aggregated, 1 blocking one atomicAdd per lane, 2 non-waiting (retry
//            with back-off), 3 mixed (odd lanes non-waiting, even lanes warp-aggregated blocking)
//
// Item values: (producer << 32) | seq; item id = producer * per_producer + seq. Every kernel is
// launched with all its blocks resident (blocking calls wait on each other).

#include "gpu_cilk/ticket_queue.cuh"

typedef unsigned long long u64;

struct TqTestParams {
    gc_tq<u64>* q;
    u64* enq_log;
    u64* deq_log;
    unsigned* bitmap;
    u64* counts;
    u64 start;
    u64 log_len;
    unsigned items;
    unsigned mode;
};

__device__ __forceinline__ unsigned tq_gtid() { return blockIdx.x * blockDim.x + threadIdx.x; }

__device__ __forceinline__ bool tq_nonwaiting(unsigned mode) {
    return mode == 2u || (mode == 3u && (threadIdx.x & 1u));
}

__device__ void tq_log(const TqTestParams& p, u64* log, u64 ticket, u64 v) {
    const u64 i = ticket - p.start;
    if (i < p.log_len) log[i] = v;
    else atomicAdd(&p.counts[6], 1ull);
}

__device__ void tq_put(const TqTestParams& p, u64 v) {
    u64 t = 0;
    int r;
    if (tq_nonwaiting(p.mode)) {
        unsigned ns = 32u;
        while ((r = gc_tq_try_enqueue(p.q, v, &t)) == GC_TQ_FULL || r == GC_TQ_BUSY) {
            atomicAdd(&p.counts[4], 1ull);
            gc_tq_backoff(&ns);
        }
    } else if (p.mode == 1u) {
        r = gc_tq_enqueue_lane(p.q, v, &t);
    } else {
        r = gc_tq_enqueue(p.q, v, &t);
    }
    if (r == GC_TQ_SUCCESS) tq_log(p, p.enq_log, t, v);
    else atomicAdd(&p.counts[2], 1ull);
}

// Dequeues one item and marks it in the bitmap (`per` items per producer, `producers` producers).
__device__ void tq_take(const TqTestParams& p, unsigned producers, unsigned per) {
    u64 t = 0, v = 0;
    int r;
    if (tq_nonwaiting(p.mode)) {
        unsigned ns = 32u;
        while ((r = gc_tq_try_dequeue(p.q, &v, &t)) == GC_TQ_EMPTY || r == GC_TQ_BUSY) {
            atomicAdd(&p.counts[4], 1ull);
            gc_tq_backoff(&ns);
        }
    } else if (p.mode == 1u) {
        r = gc_tq_dequeue_lane(p.q, &v, &t);
    } else {
        r = gc_tq_dequeue(p.q, &v, &t);
    }
    if (r != GC_TQ_SUCCESS) {
        atomicAdd(&p.counts[2], 1ull);
        return;
    }
    atomicAdd(&p.counts[3], 1ull);
    tq_log(p, p.deq_log, t, v);
    const unsigned prod = (unsigned)(v >> 32), seq = (unsigned)v;
    if (prod >= producers || seq >= per) {
        atomicAdd(&p.counts[1], 1ull);
        return;
    }
    const u64 id = (u64)prod * per + seq;
    const unsigned bit = 1u << (id & 31u);
    if (atomicOr(&p.bitmap[id >> 5], bit) & bit) atomicAdd(&p.counts[0], 1ull);
}

// The paper's matched pattern: every thread enqueues one of its items, then dequeues one.
extern "C" __global__ void gc_tq_test_matched(TqTestParams p) {
    const unsigned me = tq_gtid();
    const unsigned threads = gridDim.x * blockDim.x;
    for (unsigned k = 0; k < p.items; ++k) {
        tq_put(p, ((u64)me << 32) | k);
        tq_take(p, threads, p.items);
    }
}

// One producer per four threads (lane % 4 == 0, 3 * items each), three consumers (items each).
extern "C" __global__ void gc_tq_test_prodcons(TqTestParams p) {
    const unsigned me = tq_gtid();
    const unsigned producers = gridDim.x * blockDim.x / 4u;
    const unsigned per = 3u * p.items;
    if (me % 4u == 0u) {
        for (unsigned k = 0; k < per; ++k) tq_put(p, ((u64)(me / 4u) << 32) | k);
    } else {
        for (unsigned k = 0; k < p.items; ++k) tq_take(p, producers, per);
    }
}

// Single thread: the non-waiting answers and the status interface, step by step on an empty
// queue (any capacity, any start). counts[5] = first failed check's line, counts[3] = checks run.
extern "C" __global__ void gc_tq_test_status(TqTestParams p) {
    if (tq_gtid() != 0u) return;
    gc_tq<u64>* q = p.q;
    const u64 cap = gc_tq_capacity(q);
#define TQ_CHECK(c)                                                  \
    do {                                                             \
        atomicAdd(&p.counts[3], 1ull);                               \
        if (!(c) && p.counts[5] == 0ull) p.counts[5] = __LINE__;     \
    } while (0)
    u64 v = 0;
    TQ_CHECK(gc_tq_is_empty(q) && gc_tq_len(q) == 0ull && !gc_tq_is_full(q));
    TQ_CHECK(gc_tq_try_dequeue(q, &v) == GC_TQ_EMPTY);
    for (int round = 0; round < 3; ++round) {
        for (u64 k = 0; k < cap; ++k) {
            TQ_CHECK(gc_tq_len(q) == k);
            TQ_CHECK(gc_tq_try_enqueue(q, 100ull * round + k) == GC_TQ_SUCCESS);
        }
        TQ_CHECK(gc_tq_is_full(q) && gc_tq_len(q) == cap && gc_tq_waiting_producers(q) == 0ull);
        TQ_CHECK(gc_tq_try_enqueue(q, 7ull) == GC_TQ_FULL);
        for (u64 k = 0; k < cap; ++k) {
            TQ_CHECK((k % 2 ? gc_tq_try_dequeue(q, &v) : gc_tq_dequeue(q, &v)) == GC_TQ_SUCCESS);
            TQ_CHECK(v == 100ull * round + k);
        }
        TQ_CHECK(gc_tq_try_dequeue(q, &v) == GC_TQ_EMPTY && gc_tq_waiting_consumers(q) == 0ull);
        TQ_CHECK(gc_tq_enqueue(q, 5ull) == GC_TQ_SUCCESS && gc_tq_len(q) == 1ull);
        TQ_CHECK(gc_tq_dequeue_lane(q, &v) == GC_TQ_SUCCESS && v == 5ull && gc_tq_is_empty(q));
    }
    const gc_tq_status s = gc_tq_snapshot(q);
    TQ_CHECK(s.head == s.tail && s.head == p.start + 3ull * (cap + 1ull)); // failed try_* took no ticket
    TQ_CHECK(gc_tq_close(q) && !gc_tq_close(q) && gc_tq_is_closed(q));
    TQ_CHECK(gc_tq_try_enqueue(q, 1ull) == GC_TQ_CLOSED && gc_tq_try_dequeue(q, &v) == GC_TQ_CLOSED);
    TQ_CHECK(gc_tq_enqueue(q, 1ull) == GC_TQ_CLOSED && gc_tq_dequeue(q, &v) == GC_TQ_CLOSED);
#undef TQ_CHECK
}

// Single thread: fills the queue with try_enqueue until FULL (before gc_tq_test_close, mode 1).
extern "C" __global__ void gc_tq_test_fill(TqTestParams p) {
    if (tq_gtid() != 0u) return;
    u64 k = 0;
    while (gc_tq_try_enqueue(p.q, k) == GC_TQ_SUCCESS) ++k;
    p.counts[3] = k;
}

// Thread 0 waits (up to ~2 s of globaltimer) until every other thread is blocked (waiting
// consumers on an empty queue for mode 0, waiting producers on a full one for mode 1), then
// closes; the others must all return CLOSED (counts[2]).
extern "C" __global__ void gc_tq_test_close(TqTestParams p) {
    const unsigned me = tq_gtid();
    const u64 others = (u64)gridDim.x * blockDim.x - 1ull;
    if (me == 0u) {
        const u64 start = gc_globaltimer();
        for (;;) {
            const u64 waiting = p.mode == 0u ? gc_tq_waiting_consumers(p.q) : gc_tq_waiting_producers(p.q);
            if (waiting == others) {
                p.counts[7] = 1ull;
                break;
            }
            if (gc_globaltimer() - start > 2000000000ull) {
                p.counts[7] = 2ull;
                break;
            }
            __nanosleep(1000u);
        }
        gc_tq_close(p.q);
        return;
    }
    u64 v = 0;
    const int r = p.mode == 0u ? gc_tq_dequeue(p.q, &v) : gc_tq_enqueue(p.q, (u64)me);
    atomicAdd(&p.counts[r == GC_TQ_CLOSED ? 2 : 3], 1ull);
}

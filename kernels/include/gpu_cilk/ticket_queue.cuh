// gpu_cilk/ticket_queue.cuh — the fetch-and-add ticket queue of Scogland & Feng, "Design and
// Evaluation of Scalable Concurrent Queues for Many-Core Architectures" (ICPE 2015), §5–6: the
// device twin of `runtime/src/ticket_queue.rs` (same tickets, same turn words, same answers; the
// Rust module docs carry the full argument). Header-only, NVRTC-compilable (no system headers),
// compute_70 or newer (__match_any_sync, __nanosleep, independent thread scheduling).
//
// LAYOUT. A queue is a ring of `capacity` slots (a power of two): a data array of T, an array of
// one 64-bit turn word per slot, and two monotone 64-bit ticket counters, `tail` (producers) and
// `head` (consumers), each on its own 128-byte line, plus a `closed` word. Ticket t lives in slot
// t & mask. `gc_tq<T>` is 384 bytes, 48 8-byte words (mirror it on the host with a #[repr(C)]
// struct: data, turns, mask, closed, 12 pad, tail, 15 pad, head, 15 pad).
//
// TURN WORDS (the paper's per-slot ids). base(t) = t & ~mask = capacity * lap(t). Slot of ticket t:
//   2*base(t)                 empty: ticket t's producer may write      (init, or dequeue of t - cap)
//   2*base(t) + 1             full with ticket t's element              (enqueue of t)
//   2*base(t) + 2*capacity    empty for the next lap's producer         (dequeue of t)
// all modulo 2^64. A zeroed turn array with zeroed counters is an empty queue (cudaMemset(0) and
// set data, turns, mask). Since capacity divides 2^64 and doubling is a ring homomorphism of
// Z/2^64, the scheme is continuous across the counters' wrap with no MAX_ID reduction; turn words
// of tickets 2^63 apart coincide, so it is exact while fewer than 2^62 operations are in flight.
// To start at ticket `s` (wrap tests): head = tail = s and turns[i] = 2*base(t_i) for
// t_i = s + ((i - s) & mask), the first ticket >= s living in slot i.
//
// INTERFACES (all return GC_TQ_* codes):
//   blocking     gc_tq_enqueue / gc_tq_dequeue: one atomicAdd per warp and queue (lanes calling
//                together on the same queue, grouped with __match_any_sync, take consecutive
//                tickets in lane order from one atomicAdd of their count), then each lane waits
//                for its slot's turn (volatile polls with __nanosleep back-off). SUCCESS, or
//                CLOSED when the queue is or gets closed first. gc_tq_enqueue_lane /
//                gc_tq_dequeue_lane: the same with one atomicAdd per lane (baseline).
//   non-waiting  gc_tq_try_enqueue / gc_tq_try_dequeue: read the counter, check the slot's turn,
//                then atomicCAS the counter from exactly the value checked. SUCCESS, FULL / EMPTY
//                (distance tail - head >= capacity / <= 0 at the second counter load), BUSY (an
//                operation in flight owns the slot, or the CAS lost), CLOSED. A non-waiting call
//                never takes a ticket it then abandons: it owns a ready slot or took nothing.
//   status       gc_tq_snapshot (tail, head, tail again until both tail loads agree: a consistent
//                pair), gc_tq_distance, gc_tq_len, gc_tq_is_empty, gc_tq_is_full,
//                gc_tq_waiting_producers, gc_tq_waiting_consumers. Elements being written or read
//                count as present; exact at quiescent points (kernel boundaries, or all callers
//                done), a snapshot of the tickets otherwise.
//   close        gc_tq_close (atomicExch), gc_tq_is_closed: every later call returns CLOSED; a
//                blocked call returns CLOSED at its next poll unless its slot became ready first
//                (it then completes). A call that returns CLOSED after taking a ticket abandons it;
//                harmless, since everything after close answers CLOSED (the counters then no
//                longer describe the contents).
// The optional `ticket` out-parameter receives the ticket a successful call used (tests check
// strict ticket FIFO with it: the element of dequeue ticket t is the element of enqueue ticket t).
//
// PROGRESS. Blocking calls wait for other threads: every thread that may hold a matching ticket
// must be resident (launch at most the occupancy limit, as the benchmark does), or a waiter can
// spin forever behind a block that never gets scheduled. Lanes of one warp may wait on each
// other (independent thread scheduling, compute_70+).
//
// MEMORY ORDERING (CUDA atomics are relaxed; fences make the acquire/release patterns of the PTX
// memory model: "relaxed load; fence" acquires, "fence; relaxed store" releases):
//   - producer: poll turn == 2*base(t) (volatile), fence (acquire: the previous lap's read
//     happens-before our write), write the element, release store (st.release) of 2*base(t) + 1.
//   - consumer: poll turn == 2*base(t) + 1, fence (acquire: the element's bytes), read, release
//     store of the next lap's empty turn (our read before the next lap's write).
//   The blocking halves (gc_tq_put / gc_tq_get, and the batched gc_tq_put_n / gc_tq_get_n) use
//   gc_fence_acq_rel and gc_st_release (portable.cuh: an acquire costs an L1 invalidation, a
//   release store does not); the rest keeps __threadfence().
//   - ticket counters: atomicAdd / atomicCAS / volatile loads (atomicity only); the FULL/EMPTY and
//     status comparisons put a __threadfence() between the two counter loads.

#ifndef GPU_CILK_TICKET_QUEUE_CUH
#define GPU_CILK_TICKET_QUEUE_CUH

#ifndef GPU_CILK_PORTABLE_CUH
#include "gpu_cilk/portable.cuh"  // gc_lane(): the lane on a GPU and in the host simulation
#endif

#define GC_TQ_SUCCESS 0
#define GC_TQ_CLOSED 1
#define GC_TQ_FULL 2
#define GC_TQ_EMPTY 3
#define GC_TQ_BUSY 4

template <typename T>
struct gc_tq {
    T* data;                     // capacity elements
    unsigned long long* turns;   // capacity turn words (zeroed = empty queue at ticket 0)
    unsigned long long mask;     // capacity - 1, capacity a power of two
    unsigned long long closed;   // 0 open, 1 closed
    unsigned long long pad0[12];
    unsigned long long tail;     // producers' ticket counter (own 128-byte line)
    unsigned long long pad1[15];
    unsigned long long head;     // consumers' ticket counter (own 128-byte line)
    unsigned long long pad2[15];
};

// A consistent pair of counters (gc_tq_snapshot).
struct gc_tq_status {
    unsigned long long head;
    unsigned long long tail;
};

// ---- helpers -----------------------------------------------------------------------------------

__device__ __forceinline__ unsigned gc_tq_lane() { return gc_lane(); }

__device__ __forceinline__ unsigned gc_tq_lanemask_lt() { return gc_lane_mask_lt(); }

__device__ __forceinline__ unsigned long long gc_tq_ld(const unsigned long long* p) {
    return *(const volatile unsigned long long*)p;
}

// Ticket t's empty turn word, 2 * base(t) mod 2^64; + 1 is full (never wraps: always even).
__device__ __forceinline__ unsigned long long gc_tq_turn(unsigned long long t, unsigned long long mask) {
    return (t & ~mask) * 2ull;
}

template <typename T>
__device__ __forceinline__ unsigned long long gc_tq_capacity(const gc_tq<T>* q) {
    return q->mask + 1ull;
}

template <typename T>
__device__ __forceinline__ bool gc_tq_is_closed(const gc_tq<T>* q) {
    return gc_tq_ld(&q->closed) != 0ull;
}

// Closes the queue; true for the call that closed it.
template <typename T>
__device__ __forceinline__ bool gc_tq_close(gc_tq<T>* q) {
    __threadfence();
    return atomicExch(&q->closed, 1ull) == 0ull;
}

// Exponential back-off for the turn polls: 32 ns doubling to 1 us.
__device__ __forceinline__ void gc_tq_backoff(unsigned* ns) {
    __nanosleep(*ns);
    if (*ns < 1024u) *ns <<= 1;
}

// One ticket for this lane from `*counter`, with ONE atomicAdd per warp for the lanes calling
// together on the same counter: the peers (grouped with __match_any_sync) get consecutive tickets
// in lane order; the leader adds their count and broadcasts the base.
__device__ __forceinline__ unsigned long long gc_tq_warp_ticket(unsigned long long* counter) {
    const unsigned peers = __match_any_sync(__activemask(), (unsigned long long)counter);
    const int leader = __ffs(peers) - 1;
    unsigned long long base = 0ull;
    if (gc_tq_lane() == (unsigned)leader) base = atomicAdd(counter, (unsigned long long)__popc(peers));
    base = __shfl_sync(peers, base, leader);
    return base + (unsigned long long)__popc(peers & gc_tq_lanemask_lt());
}

// Waits for ticket t's empty turn and writes `v` (the second half of a blocking enqueue).
template <typename T>
__device__ int gc_tq_put(gc_tq<T>* q, unsigned long long t, const T& v) {
    const unsigned long long i = t & q->mask;
    const unsigned long long turn = gc_tq_turn(t, q->mask);
    unsigned ns = 32u;
    while (gc_tq_ld(&q->turns[i]) != turn) {
        if (gc_tq_is_closed(q)) return GC_TQ_CLOSED;
        gc_tq_backoff(&ns);
    }
    gc_fence_acq_rel(); // acquire: the previous lap's read before our write
    q->data[i] = v;
    gc_st_release(&q->turns[i], turn + 1ull); // release: the element before the full turn
    return GC_TQ_SUCCESS;
}

// Waits for ticket t's full turn and reads the element into *out (second half of a dequeue).
template <typename T>
__device__ int gc_tq_get(gc_tq<T>* q, unsigned long long t, T* out) {
    const unsigned long long i = t & q->mask;
    const unsigned long long turn = gc_tq_turn(t, q->mask) + 1ull;
    unsigned ns = 32u;
    while (gc_tq_ld(&q->turns[i]) != turn) {
        if (gc_tq_is_closed(q)) return GC_TQ_CLOSED;
        gc_tq_backoff(&ns);
    }
    gc_fence_acq_rel(); // acquire: the producer's element
    *out = q->data[i];
    gc_st_release(&q->turns[i], turn - 1ull + 2ull * gc_tq_capacity(q)); // release: our read first
    return GC_TQ_SUCCESS;
}

// The tickets t .. t + n - 1 (taken together by one thread) at once: waits for every slot's turn,
// then one fence orders them all (the element-wise calls above pay an acquire, and with it an L1
// invalidation, per element). Same orderings as gc_tq_put / gc_tq_get, the fence pairs shared.
template <typename T>
__device__ int gc_tq_put_n(gc_tq<T>* q, unsigned long long t, unsigned n, const T* v) {
    for (unsigned k = 0; k < n; ++k) {
        const unsigned long long i = (t + k) & q->mask;
        unsigned ns = 32u;
        while (gc_tq_ld(&q->turns[i]) != gc_tq_turn(t + k, q->mask)) {
            if (gc_tq_is_closed(q)) return GC_TQ_CLOSED;
            gc_tq_backoff(&ns);
        }
    }
    gc_fence_acq_rel(); // acquire: the previous laps' reads before our writes
    for (unsigned k = 0; k < n; ++k) q->data[(t + k) & q->mask] = v[k];
    gc_fence_acq_rel(); // release: the elements before the full turns
    for (unsigned k = 0; k < n; ++k)
        *(volatile unsigned long long*)&q->turns[(t + k) & q->mask] = gc_tq_turn(t + k, q->mask) + 1ull;
    return GC_TQ_SUCCESS;
}

template <typename T>
__device__ int gc_tq_get_n(gc_tq<T>* q, unsigned long long t, unsigned n, T* out) {
    for (unsigned k = 0; k < n; ++k) {
        const unsigned long long i = (t + k) & q->mask;
        unsigned ns = 32u;
        while (gc_tq_ld(&q->turns[i]) != gc_tq_turn(t + k, q->mask) + 1ull) {
            if (gc_tq_is_closed(q)) return GC_TQ_CLOSED;
            gc_tq_backoff(&ns);
        }
    }
    gc_fence_acq_rel(); // acquire: the producers' elements
    for (unsigned k = 0; k < n; ++k) out[k] = q->data[(t + k) & q->mask];
    gc_fence_acq_rel(); // release: our reads before the next laps' writes
    for (unsigned k = 0; k < n; ++k)
        *(volatile unsigned long long*)&q->turns[(t + k) & q->mask] = gc_tq_turn(t + k, q->mask) + 2ull * gc_tq_capacity(q);
    return GC_TQ_SUCCESS;
}

// ---- blocking interface ------------------------------------------------------------------------

// Blocking enqueue, warp-aggregated ticket (one atomicAdd per warp and queue). SUCCESS / CLOSED.
template <typename T>
__device__ int gc_tq_enqueue(gc_tq<T>* q, const T& v, unsigned long long* ticket = nullptr) {
    if (gc_tq_is_closed(q)) return GC_TQ_CLOSED;
    const unsigned long long t = gc_tq_warp_ticket(&q->tail);
    if (ticket) *ticket = t;
    return gc_tq_put(q, t, v);
}

// Blocking dequeue, warp-aggregated ticket. SUCCESS (*out holds the element) / CLOSED.
template <typename T>
__device__ int gc_tq_dequeue(gc_tq<T>* q, T* out, unsigned long long* ticket = nullptr) {
    if (gc_tq_is_closed(q)) return GC_TQ_CLOSED;
    const unsigned long long t = gc_tq_warp_ticket(&q->head);
    if (ticket) *ticket = t;
    return gc_tq_get(q, t, out);
}

// Blocking enqueue with one atomicAdd per lane (the paper's per-thread form; a baseline).
template <typename T>
__device__ int gc_tq_enqueue_lane(gc_tq<T>* q, const T& v, unsigned long long* ticket = nullptr) {
    if (gc_tq_is_closed(q)) return GC_TQ_CLOSED;
    const unsigned long long t = atomicAdd(&q->tail, 1ull);
    if (ticket) *ticket = t;
    return gc_tq_put(q, t, v);
}

// Blocking dequeue with one atomicAdd per lane.
template <typename T>
__device__ int gc_tq_dequeue_lane(gc_tq<T>* q, T* out, unsigned long long* ticket = nullptr) {
    if (gc_tq_is_closed(q)) return GC_TQ_CLOSED;
    const unsigned long long t = atomicAdd(&q->head, 1ull);
    if (ticket) *ticket = t;
    return gc_tq_get(q, t, out);
}

// ---- non-waiting interface ---------------------------------------------------------------------

// SUCCESS / FULL / BUSY / CLOSED; never waits, never abandons a ticket.
template <typename T>
__device__ int gc_tq_try_enqueue(gc_tq<T>* q, const T& v, unsigned long long* ticket = nullptr) {
    if (gc_tq_is_closed(q)) return GC_TQ_CLOSED;
    const unsigned long long t = gc_tq_ld(&q->tail);
    const unsigned long long i = t & q->mask;
    const unsigned long long turn = gc_tq_turn(t, q->mask);
    if (gc_tq_ld(&q->turns[i]) != turn) {
        __threadfence();
        const unsigned long long h = gc_tq_ld(&q->head);
        return (long long)(t - h) >= (long long)gc_tq_capacity(q) ? GC_TQ_FULL : GC_TQ_BUSY;
    }
    if (atomicCAS(&q->tail, t, t + 1ull) != t) return GC_TQ_BUSY;
    if (ticket) *ticket = t;
    __threadfence(); // acquire: the turn we checked before the CAS
    q->data[i] = v;
    __threadfence(); // release
    *(volatile unsigned long long*)&q->turns[i] = turn + 1ull;
    return GC_TQ_SUCCESS;
}

// SUCCESS (*out holds the element) / EMPTY / BUSY / CLOSED; never waits, never abandons a ticket.
template <typename T>
__device__ int gc_tq_try_dequeue(gc_tq<T>* q, T* out, unsigned long long* ticket = nullptr) {
    if (gc_tq_is_closed(q)) return GC_TQ_CLOSED;
    const unsigned long long h = gc_tq_ld(&q->head);
    const unsigned long long i = h & q->mask;
    const unsigned long long turn = gc_tq_turn(h, q->mask) + 1ull;
    if (gc_tq_ld(&q->turns[i]) != turn) {
        __threadfence();
        const unsigned long long t = gc_tq_ld(&q->tail);
        return (long long)(t - h) <= 0 ? GC_TQ_EMPTY : GC_TQ_BUSY;
    }
    if (atomicCAS(&q->head, h, h + 1ull) != h) return GC_TQ_BUSY;
    if (ticket) *ticket = h;
    __threadfence(); // acquire: the producer's element
    *out = q->data[i];
    __threadfence(); // release: our read before the next lap's write
    *(volatile unsigned long long*)&q->turns[i] = turn - 1ull + 2ull * gc_tq_capacity(q);
    return GC_TQ_SUCCESS;
}

// ---- status interface --------------------------------------------------------------------------

// A consistent (head, tail) pair: tail, head, tail again until both tail loads agree (at most 64
// tries; then the last pair, off by at most the tail's movement during one head load).
template <typename T>
__device__ gc_tq_status gc_tq_snapshot(const gc_tq<T>* q) {
    gc_tq_status s;
    s.tail = gc_tq_ld(&q->tail);
#pragma unroll 1
    for (int tries = 0; tries < 64; ++tries) {
        __threadfence();
        s.head = gc_tq_ld(&q->head);
        __threadfence();
        const unsigned long long again = gc_tq_ld(&q->tail);
        if (again == s.tail) break;
        s.tail = again;
    }
    return s;
}

// tail - head as a signed distance: elements (in flight included) plus waiting producers, or
// minus the waiting consumers.
template <typename T>
__device__ __forceinline__ long long gc_tq_distance(const gc_tq<T>* q) {
    const gc_tq_status s = gc_tq_snapshot(q);
    return (long long)(s.tail - s.head);
}

template <typename T>
__device__ __forceinline__ unsigned long long gc_tq_len(const gc_tq<T>* q) {
    const long long d = gc_tq_distance(q);
    const long long cap = (long long)gc_tq_capacity(q);
    return d <= 0 ? 0ull : (unsigned long long)(d < cap ? d : cap);
}

template <typename T>
__device__ __forceinline__ bool gc_tq_is_empty(const gc_tq<T>* q) {
    return gc_tq_distance(q) <= 0;
}

template <typename T>
__device__ __forceinline__ bool gc_tq_is_full(const gc_tq<T>* q) {
    return gc_tq_distance(q) >= (long long)gc_tq_capacity(q);
}

template <typename T>
__device__ __forceinline__ unsigned long long gc_tq_waiting_producers(const gc_tq<T>* q) {
    const long long over = gc_tq_distance(q) - (long long)gc_tq_capacity(q);
    return over > 0 ? (unsigned long long)over : 0ull;
}

template <typename T>
__device__ __forceinline__ unsigned long long gc_tq_waiting_consumers(const gc_tq<T>* q) {
    const long long d = gc_tq_distance(q);
    return d < 0 ? (unsigned long long)(-d) : 0ull;
}

static_assert(sizeof(gc_tq<int>) == 384, "gc_tq layout is shared with the host: 48 x 8 bytes");

#endif // GPU_CILK_TICKET_QUEUE_CUH

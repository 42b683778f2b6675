// gpu_cilk/channel.cuh — the array channel of Orr et al., "Fine-grain task aggregation and
// coordination on GPUs" (ISCA 2014), §3.2: the device twin of `runtime/src/channel.rs`. Header-only,
// NVRTC-compilable (no system headers), compute_70 or newer.
//
// LAYOUT. A channel is a fixed ring of `capacity` slots (a power of two): a data array of `T`, a
// control array of one 64-bit word per slot, and four monotone 64-bit counters:
//
//   reserved   tickets handed to producers          (gc_talloc_warp: one atomicAdd per warp)
//   published  done count of writes                  (gc_enq / gc_publish)
//   claimed    tickets handed to consumers           (gc_claim_warp: one atomicAdd per warp)
//   freed      done count of slots free again (tfree) (gc_take, after the read)
//
// Ticket t lives in slot t & mask. A zeroed control array with zeroed counters is an empty
// channel, so the host allocates one with cudaMemset(0) and sets `data`, `control` and `mask`.
// `gc_channel<T>` is 64 bytes, eight 8-byte fields in declaration order (mirror it with a
// #[repr(C)] struct of eight u64 on the host).
//
// PROTOCOL (the invariant the scheduler keeps, identical to the host's). Between two quiescent
// points (kernel boundaries for the host-driven scheduler) a channel is either produced into or
// consumed from, never both, and every reserved ticket is published before the phase ends.
// Within a producer phase nothing is freed, so limit = freed + capacity is constant and "full"
// is monotone: a warp's request [base, base + total) keeps the tickets below `limit` and gives
// the rest back with one atomicAdd of the negated excess (the undo). The counter is `limit` plus
// the excess of requests that have not undone yet, so it never drops below `limit` again, no
// ticket below `limit` is handed out twice, and at the end of the phase it is exactly `limit`:
// no holes. Claims in a consumer phase are the same with limit = published. When the counter
// already reached `limit` the leader answers "full"/"empty" without touching it.
// Reservation is one fetch-and-add per warp, never a CAS loop (the paper's Figure 5 uses a CAS
// loop; a bounded fetch-and-add with undo needs none under the phase contract).
//
// CONTROL WORDS. Slot i's word is (lap << 3) | state, lap = t >> log2(capacity) for the ticket
// it serves (tagged against ABA: a stale ticket of an earlier lap never matches). States, after
// the paper's five (available, reserved, ready, dispatched, done):
//
//   GC_CH_EMPTY    available            -> RESERVED  by gc_talloc_warp  (atomicCAS)
//   GC_CH_RESERVED reserved (producer)  -> READY     by gc_publish      (atomicCAS)
//   GC_CH_WRITING  host only (the Rust twin's enq holds the slot while writing; the device's
//                  gc_publish checks RESERVED -> READY after the write instead)
//   GC_CH_READY    ready                -> TAKEN     by gc_take         (atomicCAS)
//   GC_CH_TAKEN    dispatched (consumer)-> EMPTY of the next lap by gc_take (store)
//
// "done" is the `freed` done count. Under the protocol each of these CASes succeeds at its first
// try. When one fails the protocol was broken (phases overlapped, a ticket published twice or
// never): the call fails, the first such ticket is recorded in `violation` (as ticket + 1), and
// the host must report the run as failed; the channel is unusable afterwards.
//
// COUNTERS wrap modulo 2^64 (they will not in practice); every comparison is on the signed
// distance (long long)(a - b), exact while in-flight excess stays below 2^63.
//
// MEMORY ORDERING (CUDA atomics are relaxed; fences make the acquire/release patterns of the PTX
// memory model: "fence; relaxed store/RMW" releases, "relaxed load/RMW; fence" acquires):
//   - gc_talloc_warp: atomicCAS EMPTY -> RESERVED, then __threadfence(): acquire; pairs with
//     gc_take's release of EMPTY, so the previous lap's read happens-before the new write.
//   - gc_publish: __threadfence(), then atomicCAS RESERVED -> READY: release; the element's bytes
//     happen-before a consumer's acquire of READY. Then `published` += 1 (warp-aggregated).
//   - gc_take: atomicCAS READY -> TAKEN, then __threadfence(): acquire; read the element;
//     __threadfence(), then store EMPTY(next lap): release. Then `freed` += 1 (warp-aggregated).
//   - The done counts `published` and `freed` are read with acquire loads (volatile load + fence)
//     and bumped after a fence, so a thread that observes a done count observes what it counts.
//   - The ticket counters only need atomicity (relaxed atomicAdd, volatile loads).
// With the host-driven scheduler the kernel boundary already orders the phases; the fences make
// the channel correct also for a persistent scheduler that hands work over inside one launch.
//
// SLOT POINTERS. gc_slot_ptr(ch, t) is stable for the channel's lifetime; it holds ticket t's
// element from gc_enq until gc_take. Children write results into a parent's frame through it after
// the frame was published; those writes reach the consumer when they happen-before its gc_take
// (a kernel boundary, or a fence + flag the scheduler provides). gc_publish publishes a slot
// that was written in place through gc_slot_ptr (no copy).
//
// WARP FUNCTIONS (gc_talloc_warp, gc_claim_warp, gc_publish, gc_take, gc_enq, gc_deq, gc_talloc)
// aggregate over the lanes that call them together (__activemask()) on the same channel (grouped
// with __match_any_sync, so lanes of one warp may target different channels at the same call
// site). Any subset of a warp may call them, from converged or divergent code; lanes may pass
// want = 0. Requires compute_70 or newer (__match_any_sync, independent thread scheduling).

#ifndef GPU_CILK_CHANNEL_CUH
#define GPU_CILK_CHANNEL_CUH

#ifndef GPU_CILK_PORTABLE_CUH
#include "gpu_cilk/portable.cuh"  // gc_lane(): the lane on a GPU and in the host simulation
#endif

#define GC_CH_EMPTY 0ull
#define GC_CH_RESERVED 1ull
#define GC_CH_WRITING 2ull
#define GC_CH_READY 3ull
#define GC_CH_TAKEN 4ull
#define GC_CH_STATE_BITS 3
#define GC_CH_STATE_MASK 7ull

template <typename T>
struct gc_channel {
    T* data;                      // capacity elements
    unsigned long long* control;  // capacity control words, zero-initialized
    unsigned long long mask;      // capacity - 1, capacity a power of two
    unsigned long long reserved;  // ticket counter of producers
    unsigned long long published; // done count of writes
    unsigned long long claimed;   // ticket counter of consumers
    unsigned long long freed;     // done count of reads (tfree)
    unsigned long long violation; // 0, or 1 + the first ticket where the protocol was found broken
};

// ---- small helpers ---------------------------------------------------------------------------

__device__ __forceinline__ unsigned gc_lane_id() { return gc_lane(); }

__device__ __forceinline__ unsigned gc_lanemask_lt() { return gc_lane_mask_lt(); }

// Relaxed load of a counter (atomicity only).
__device__ __forceinline__ unsigned long long gc_ld_relaxed(const unsigned long long* p) {
    return *(const volatile unsigned long long*)p;
}

// Acquire load of a done count: relaxed load, then fence.
__device__ __forceinline__ unsigned long long gc_ld_acquire(const unsigned long long* p) {
    unsigned long long v = *(const volatile unsigned long long*)p;
    __threadfence();
    return v;
}

// `a` is at or past `b` (signed distance, correct across the wrap).
__device__ __forceinline__ bool gc_reached(unsigned long long a, unsigned long long b) {
    return (long long)(a - b) >= 0;
}

template <typename T>
__device__ __forceinline__ unsigned long long gc_capacity(const gc_channel<T>* ch) {
    return ch->mask + 1ull;
}

// Ticket t's control word in `state`.
template <typename T>
__device__ __forceinline__ unsigned long long gc_ch_word(const gc_channel<T>* ch, unsigned long long t,
                                                         unsigned long long state) {
    return ((t >> __popcll(ch->mask)) << GC_CH_STATE_BITS) | state;
}

template <typename T>
__device__ __forceinline__ void gc_ch_violation(gc_channel<T>* ch, unsigned long long t) {
    atomicCAS(&ch->violation, 0ull, t + 1ull);
}

// The lanes calling together (__activemask()) that pass the same `key` (a counter's address):
// lanes of one warp may work on different channels at the same call site, and each channel's
// lanes aggregate separately (__match_any_sync, compute_70+).
__device__ __forceinline__ unsigned gc_peers(const void* key) {
    return __match_any_sync(__activemask(), (unsigned long long)key);
}

// Adds `v` (per lane) to `*counter` with one atomicAdd per counter and warp: the peer lanes sum
// their values bit plane by bit plane with ballots.
__device__ __forceinline__ void gc_warp_add(unsigned long long* counter, unsigned v) {
    const unsigned peers = gc_peers(counter);
    unsigned long long total = 0;
#pragma unroll 1
    for (unsigned b = 0; b < 32u && __any_sync(peers, (v >> b) != 0u); ++b) {
        total += (unsigned long long)__popc(__ballot_sync(peers, (v >> b) & 1u)) << b;
    }
    if (gc_lane_id() == (unsigned)(__ffs(peers) - 1) && total != 0ull) {
        atomicAdd(counter, total);
    }
}

// The warp-aggregated bounded fetch-and-add behind gc_talloc_warp and gc_claim_warp. Each lane
// asks `want` units of `*counter`, bounded by `*done + offset` (read by the leader with acquire).
// Lanes get consecutive ranges in lane order: `*first` = the lane's first ticket, the result =
// how many it got (0..want; lanes whose range crosses the limit get a partial grant, lanes past
// it get 0 and must spill). One atomicAdd per warp and counter, plus one undo atomicAdd when
// over the limit.
__device__ __forceinline__ unsigned gc_warp_bounded_faa(unsigned long long* counter, const unsigned long long* done,
                                                        unsigned long long offset, unsigned want,
                                                        unsigned long long* first) {
    const unsigned peers = gc_peers(counter);
    const unsigned lt = gc_lanemask_lt();
    // Exclusive prefix sum and total of `want` over the peer lanes, one ballot per bit plane.
    unsigned long long prefix = 0, total = 0;
#pragma unroll 1
    for (unsigned b = 0; b < 32u && __any_sync(peers, (want >> b) != 0u); ++b) {
        const unsigned plane = __ballot_sync(peers, (want >> b) & 1u);
        prefix += (unsigned long long)__popc(plane & lt) << b;
        total += (unsigned long long)__popc(plane) << b;
    }
    const int leader = __ffs(peers) - 1;
    unsigned long long base = 0, limit = 0;
    if (gc_lane_id() == (unsigned)leader && total != 0ull) {
        limit = gc_ld_acquire(done) + offset; // done count: constant within the phase
        if (gc_reached(gc_ld_relaxed(counter), limit)) {
            base = limit; // full (or empty) for the rest of the phase: nobody gets anything
        } else {
            base = atomicAdd(counter, total); // relaxed: ticket counter, atomicity only
            const long long over = (long long)(base + total - limit);
            if (over > 0) {
                // The undo: give back what lies at or past `limit` (all of it when base >= limit).
                const unsigned long long back = (unsigned long long)over < total ? (unsigned long long)over : total;
                atomicAdd(counter, 0ull - back);
            }
        }
    }
    base = __shfl_sync(peers, base, leader);
    limit = __shfl_sync(peers, limit, leader);
    const unsigned long long mine = base + prefix;
    const long long room = (long long)(limit - mine);
    *first = mine;
    if (room <= 0) return 0u;
    return (unsigned long long)room < (unsigned long long)want ? (unsigned)room : want;
}

// ---- producers -------------------------------------------------------------------------------

// Warp-aggregated talloc: reserves `want` consecutive slots for this lane (one atomicAdd per
// warp). Returns how many were granted (0..want) and the first ticket in *first; tickets
// *first .. *first + granted - 1 must each be published with gc_enq or gc_publish before the
// producer phase ends. Fewer than `want`: the channel is full, spill the rest.
template <typename T>
__device__ unsigned gc_talloc_warp(gc_channel<T>* ch, unsigned want, unsigned long long* first) {
    unsigned granted = gc_warp_bounded_faa(&ch->reserved, &ch->freed, gc_capacity(ch), want, first);
    for (unsigned k = 0; k < granted; ++k) {
        const unsigned long long t = *first + k;
        const unsigned long long expect = gc_ch_word(ch, t, GC_CH_EMPTY);
        if (atomicCAS(&ch->control[t & ch->mask], expect, gc_ch_word(ch, t, GC_CH_RESERVED)) != expect) {
            gc_ch_violation(ch, t); // slot not free: the protocol was broken earlier
            granted = k;
            break;
        }
    }
    __threadfence(); // acquire: the previous lap's reads happen-before our writes
    return granted;
}

// One slot for this lane (warp-aggregated with the other lanes calling it). True on success.
template <typename T>
__device__ bool gc_talloc(gc_channel<T>* ch, unsigned long long* ticket) {
    return gc_talloc_warp(ch, 1u, ticket) == 1u;
}

// The address of ticket t's slot (stable for the channel's lifetime).
template <typename T>
__device__ __forceinline__ T* gc_slot_ptr(gc_channel<T>* ch, unsigned long long t) {
    return ch->data + (t & ch->mask);
}

// Publishes reserved ticket t whose element was written in place through gc_slot_ptr.
// False (and `violation` recorded) when t's slot was not reserved for it.
template <typename T>
__device__ bool gc_publish(gc_channel<T>* ch, unsigned long long t) {
    __threadfence(); // release: the element's bytes before READY
    const unsigned long long expect = gc_ch_word(ch, t, GC_CH_RESERVED);
    const bool ok =
        atomicCAS(&ch->control[t & ch->mask], expect, gc_ch_word(ch, t, GC_CH_READY)) == expect;
    if (!ok) gc_ch_violation(ch, t);
    gc_warp_add(&ch->published, ok ? 1u : 0u); // done count, after the fence above
    return ok;
}

// Writes `value` into reserved ticket t's slot and publishes it.
template <typename T>
__device__ bool gc_enq(gc_channel<T>* ch, unsigned long long t, const T& value) {
    *gc_slot_ptr(ch, t) = value;
    return gc_publish(ch, t);
}

// ---- consumers -------------------------------------------------------------------------------

// Warp-aggregated claim of `want` published elements for this lane (one atomicAdd per warp):
// returns how many (0..want) and the first ticket; take each with gc_take. Claims come in ticket
// order. Fewer than `want`: nothing more is published in this phase.
template <typename T>
__device__ unsigned gc_claim_warp(gc_channel<T>* ch, unsigned want, unsigned long long* first) {
    return gc_warp_bounded_faa(&ch->claimed, &ch->published, 0ull, want, first);
}

// Moves claimed ticket t's element to *out and frees its slot (deq + tfree). False (and
// `violation` recorded) when the slot was not published for t.
template <typename T>
__device__ bool gc_take(gc_channel<T>* ch, unsigned long long t, T* out) {
    unsigned long long* word = &ch->control[t & ch->mask];
    const unsigned long long expect = gc_ch_word(ch, t, GC_CH_READY);
    const bool ok = atomicCAS(word, expect, gc_ch_word(ch, t, GC_CH_TAKEN)) == expect;
    if (ok) {
        __threadfence(); // acquire: the producer's writes before our read
        *out = *gc_slot_ptr(ch, t);
        __threadfence(); // release: our read before the next lap's write
        *(volatile unsigned long long*)word = gc_ch_word(ch, t + gc_capacity(ch), GC_CH_EMPTY);
    } else {
        gc_ch_violation(ch, t);
    }
    gc_warp_add(&ch->freed, ok ? 1u : 0u); // done count, after the release fence
    return ok;
}

// Claims and takes one element (warp-aggregated claim). 1: *out holds it; 0: nothing published;
// -1: protocol violation (recorded in `violation`).
template <typename T>
__device__ int gc_deq(gc_channel<T>* ch, T* out) {
    unsigned long long t;
    if (gc_claim_warp(ch, 1u, &t) == 0u) return 0;
    return gc_take(ch, t, out) ? 1 : -1;
}

// ---- status ----------------------------------------------------------------------------------

// Published elements not yet claimed (exact at a quiescent point).
template <typename T>
__device__ unsigned long long gc_len(const gc_channel<T>* ch) {
    const long long d = (long long)(gc_ld_acquire(&ch->published) - gc_ld_relaxed(&ch->claimed));
    return d > 0 ? (unsigned long long)d : 0ull;
}

// Slots reserved or published and not yet freed, at most capacity (exact at a quiescent point).
template <typename T>
__device__ unsigned long long gc_occupancy(const gc_channel<T>* ch) {
    const long long d = (long long)(gc_ld_relaxed(&ch->reserved) - gc_ld_acquire(&ch->freed));
    const unsigned long long u = d > 0 ? (unsigned long long)d : 0ull;
    return u < gc_capacity(ch) ? u : gc_capacity(ch);
}

static_assert(sizeof(gc_channel<int>) == 64, "gc_channel layout is shared with the host: 8 x 8 bytes");

#endif // GPU_CILK_CHANNEL_CUH

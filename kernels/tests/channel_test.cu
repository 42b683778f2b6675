// Device test kernels for gpu_cilk/channel.cuh (NVRTC: -I kernels/include, compute_80 / compute_90).
// The host side, runtime/tests/device_channel.rs, runs rounds of: produce launch, check, consume
// launch, check, on one small channel, so the ring wraps between rounds exactly as the host-driven
// scheduler uses it.
//
// PARAMETERS. The runtime's Kernel<P>::launch passes one #[repr(C)] parameter struct by value, so
// every kernel takes a single `gc_test_*_params p` (defined below, before each kernel; the Rust
// test mirrors each one field for field). Pointers and 64-bit fields come first, 32-bit fields
// last, padded to a multiple of 8 bytes with an explicit `pad`, so the layout has no implicit
// padding on either side.
//
// Element: gc_test_elem { id, check = gc_test_hash(id, ticket), ticket } (24 bytes).
// Channel: gc_channel<gc_test_elem> in device memory (64 bytes, see channel.cuh): host zeroes it,
//   sets data / control / mask; control is `capacity` zeroed u64; data `capacity` elements.
//
// extern "C" __global__ void gc_test_produce(gc_test_produce_params p)
//   p = { ch, id_base, accepted_bits, counters, offers, pad } (40 bytes):
//   gc_channel<gc_test_elem>* ch      the channel (producer phase)
//   unsigned long long id_base         first id of this round (ids are id_base + gid * 3 + k; use
//                                      id_base = round * grid_threads * 3 so rounds never collide)
//   unsigned offers                    thread gid offers want = 1 + (gid + id_base) % 3 elements,
//                                      capped at `offers` (pass 3 for the full mix, 1 for singles)
//   unsigned long long* accepted_bits  bitmap over ids (bit i of word i/64), host-zeroed; the kernel
//                                      sets the bit of every id that got a slot
//   unsigned long long* counters       [0] refused elements (want - granted, summed: the spills),
//                                      [1] granted elements, [2] failed gc_enq (must stay 0)
//   Grid: any; one gc_talloc_warp per thread (warp-aggregated), lanes get partial grants at the
//   limit. Host checks: counters[1] == min(free slots, total asked), counters[0] == asked - granted,
//   counters[2] == 0, ch->violation == 0, ch->reserved == ch->published.
//
// extern "C" __global__ void gc_test_consume(gc_test_consume_params p)
//   p = { ch, consumed_bits, counters, quota, pad } (32 bytes):
//   gc_channel<gc_test_elem>* ch       the channel (consumer phase)
//   unsigned quota                     claims per thread: each thread loops gc_claim_warp(ch, want)
//                                      with want = 1 + (gid & 1) until it has taken `quota` or a
//                                      claim comes back short (pass 0xffffffff to drain)
//   unsigned long long* consumed_bits  bitmap over ids, host-zeroed per run (not per round)
//   unsigned long long* counters       [0] taken, [1] duplicates (bit already set), [2] corrupt
//                                      (checksum mismatch), [3] failed gc_take (violations)
//   Host checks: counters[1..3] == 0, ch->violation == 0, taken == min(len, threads * quota), and
//   after the last drain consumed_bits == accepted_bits (every accepted id exactly once).

#include "gpu_cilk/channel.cuh"

struct gc_test_elem {
    unsigned long long id;
    unsigned long long check;
    unsigned long long ticket;
};

__device__ __forceinline__ unsigned long long gc_test_hash(unsigned long long id, unsigned long long ticket) {
    unsigned long long x = (id ^ 0xA5A55A5ADEADBEEFull) * 0x9E3779B97F4A7C15ull;
    return x ^ ((ticket << 17) | (ticket >> 47));
}

__device__ __forceinline__ unsigned long long gc_test_gid() {
    return (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
}

struct gc_test_produce_params {
    gc_channel<gc_test_elem>* ch;
    unsigned long long id_base;
    unsigned long long* accepted_bits;
    unsigned long long* counters;
    unsigned offers;
    unsigned pad;
};

extern "C" __global__ void gc_test_produce(gc_test_produce_params p) {
    gc_channel<gc_test_elem>* const ch = p.ch;
    const unsigned long long id_base = p.id_base;
    const unsigned offers = p.offers;
    unsigned long long* const accepted_bits = p.accepted_bits;
    unsigned long long* const counters = p.counters;
    const unsigned long long gid = gc_test_gid();
    unsigned want = 1u + (unsigned)((gid + id_base) % 3ull);
    if (want > offers) want = offers;
    unsigned long long first = 0;
    const unsigned granted = gc_talloc_warp(ch, want, &first);
    unsigned failed = 0;
    for (unsigned k = 0; k < granted; ++k) {
        const unsigned long long id = id_base + gid * 3ull + k;
        const unsigned long long t = first + k;
        gc_test_elem e;
        e.id = id;
        e.ticket = t;
        e.check = gc_test_hash(id, t);
        if (gc_enq(ch, t, e)) {
            atomicOr(&accepted_bits[id / 64ull], 1ull << (id % 64ull));
        } else {
            failed += 1;
        }
    }
    if (want > granted) atomicAdd(&counters[0], (unsigned long long)(want - granted));
    if (granted) atomicAdd(&counters[1], (unsigned long long)granted);
    if (failed) atomicAdd(&counters[2], (unsigned long long)failed);
}

struct gc_test_consume_params {
    gc_channel<gc_test_elem>* ch;
    unsigned long long* consumed_bits;
    unsigned long long* counters;
    unsigned quota;
    unsigned pad;
};

extern "C" __global__ void gc_test_consume(gc_test_consume_params p) {
    gc_channel<gc_test_elem>* const ch = p.ch;
    const unsigned quota = p.quota;
    unsigned long long* const consumed_bits = p.consumed_bits;
    unsigned long long* const counters = p.counters;
    const unsigned long long gid = gc_test_gid();
    unsigned taken = 0, dup = 0, corrupt = 0, bad = 0;
    while (taken < quota) {
        unsigned want = 1u + (unsigned)(gid & 1ull);
        if (want > quota - taken) want = quota - taken;
        unsigned long long first = 0;
        const unsigned got = gc_claim_warp(ch, want, &first);
        for (unsigned k = 0; k < got; ++k) {
            gc_test_elem e;
            if (!gc_take(ch, first + k, &e)) {
                bad += 1;
                continue;
            }
            taken += 1;
            if (e.check != gc_test_hash(e.id, e.ticket) || e.ticket != first + k) corrupt += 1;
            const unsigned long long bit = 1ull << (e.id % 64ull);
            if (atomicOr(&consumed_bits[e.id / 64ull], bit) & bit) dup += 1;
        }
        if (got < want) break; // empty for the rest of the phase
    }
    if (taken) atomicAdd(&counters[0], (unsigned long long)taken);
    if (dup) atomicAdd(&counters[1], (unsigned long long)dup);
    if (corrupt) atomicAdd(&counters[2], (unsigned long long)corrupt);
    if (bad) atomicAdd(&counters[3], (unsigned long long)bad);
}

// A second element type, so the header is instantiated for more than one T: frames built in
// place through gc_slot_ptr and published without a copy (producer phase), then drained.
//
// Both take gc_test_frames_params p = { ch, counters } (16 bytes); counters has 7 entries.
// extern "C" __global__ void gc_test_frames(gc_test_frames_params p)      producer phase, one frame
//   per thread; counters [0] refused (channel full), [1] published, [2] failed gc_publish
// extern "C" __global__ void gc_test_frames_drain(gc_test_frames_params p) consumer phase, drains
//   everything; counters [4] taken, [5] bad frames (children != 2), [6] failed gc_deq
//   Host checks: [1] == min(capacity, threads), [0] == threads - [1], [4] == [1], [2] == [5] ==
//   [6] == 0, ch->violation == 0.
struct gc_test_frame {
    double acc;
    int children;
    int pad;
};

struct gc_test_frames_params {
    gc_channel<gc_test_frame>* ch;
    unsigned long long* counters;
};

extern "C" __global__ void gc_test_frames(gc_test_frames_params p) {
    gc_channel<gc_test_frame>* const ch = p.ch;
    unsigned long long* const counters = p.counters;
    unsigned long long t;
    if (gc_talloc(ch, &t)) {
        gc_test_frame* f = gc_slot_ptr(ch, t);
        f->acc = 0.0;
        f->children = 2;
        f->pad = 0;
        if (gc_publish(ch, t)) {
            atomicAdd(&counters[1], 1ull);
        } else {
            atomicAdd(&counters[2], 1ull);
        }
    } else {
        atomicAdd(&counters[0], 1ull);
    }
}

extern "C" __global__ void gc_test_frames_drain(gc_test_frames_params p) {
    gc_channel<gc_test_frame>* const ch = p.ch;
    unsigned long long* const counters = p.counters;
    gc_test_frame f;
    int r;
    while ((r = gc_deq(ch, &f)) > 0) {
        atomicAdd(&counters[4], 1ull);
        if (f.children != 2) atomicAdd(&counters[5], 1ull);
    }
    if (r < 0) atomicAdd(&counters[6], 1ull);
}

// extern "C" __global__ void gc_test_status(gc_test_status_params p), p = { ch, out } (16 bytes):
//   launch <<<1, 1>>> at a quiescent point;
//   out[0] = gc_len, out[1] = gc_occupancy, out[2] = capacity (for the element type of gc_test_produce).
struct gc_test_status_params {
    const gc_channel<gc_test_elem>* ch;
    unsigned long long* out;
};

extern "C" __global__ void gc_test_status(gc_test_status_params p) {
    const gc_channel<gc_test_elem>* const ch = p.ch;
    unsigned long long* const out = p.out;
    out[0] = gc_len(ch);
    out[1] = gc_occupancy(ch);
    out[2] = gc_capacity(ch);
}

// extern "C" __global__ void gc_test_two_channels(gc_test_two_channels_params p)
//   p = { a, b, accepted_bits, counters } (32 bytes).
//   Even lanes produce into `a`, odd lanes into `b`, at the same call site: the warp aggregation
//   must group lanes by channel (__match_any_sync). Element ids are the global thread id.
//   counters [0] granted in a, [1] granted in b, [2] refused, [3] failed gc_enq.
//   Host checks: [0] == min(cap_a, even threads), [1] == min(cap_b, odd threads), [2] == threads -
//   [0] - [1], [3] == 0, no violation in either; then drain both with gc_test_consume (one
//   consumed_bits) and compare with accepted_bits.
struct gc_test_two_channels_params {
    gc_channel<gc_test_elem>* a;
    gc_channel<gc_test_elem>* b;
    unsigned long long* accepted_bits;
    unsigned long long* counters;
};

extern "C" __global__ void gc_test_two_channels(gc_test_two_channels_params p) {
    gc_channel<gc_test_elem>* const a = p.a;
    gc_channel<gc_test_elem>* const b = p.b;
    unsigned long long* const accepted_bits = p.accepted_bits;
    unsigned long long* const counters = p.counters;
    const unsigned long long gid = gc_test_gid();
    const bool even = (gid & 1ull) == 0ull;
    gc_channel<gc_test_elem>* ch = even ? a : b;
    unsigned long long t;
    if (!gc_talloc(ch, &t)) {
        atomicAdd(&counters[2], 1ull);
        return;
    }
    gc_test_elem e;
    e.id = gid;
    e.ticket = t;
    e.check = gc_test_hash(gid, t);
    if (gc_enq(ch, t, e)) {
        atomicOr(&accepted_bits[gid / 64ull], 1ull << (gid % 64ull));
        atomicAdd(&counters[even ? 0 : 1], 1ull);
    } else {
        atomicAdd(&counters[3], 1ull);
    }
}

static_assert(sizeof(gc_test_elem) == 24, "mirrored by TestElem in runtime/tests/device_channel.rs");
static_assert(sizeof(gc_test_frame) == 16, "mirrored by TestFrame in runtime/tests/device_channel.rs");
static_assert(sizeof(gc_test_produce_params) == 40, "mirrored by ProduceParams");
static_assert(sizeof(gc_test_consume_params) == 32, "mirrored by ConsumeParams");
static_assert(sizeof(gc_test_frames_params) == 16, "mirrored by FramesParams");
static_assert(sizeof(gc_test_status_params) == 16, "mirrored by StatusParams");
static_assert(sizeof(gc_test_two_channels_params) == 32, "mirrored by TwoChannelsParams");

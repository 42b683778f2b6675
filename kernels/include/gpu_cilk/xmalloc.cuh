// gpu_cilk/xmalloc.cuh — the warp-coalesced device allocator after Huang, "XMalloc: a scalable
// lock-free dynamic memory allocator for many-core machines" (MS thesis, UIUC 2010). The device
// twin of `runtime/src/alloc/` (same layout rules, same algorithm, offsets there, pointers here).
// Header-only, NVRTC-compilable (no system headers), compute_70 or newer (__match_any_sync and
// independent thread scheduling: a lane may spin on a queue slot another lane of its warp fills).
//
// API (all __device__):
//   gc_xheap_init(h, region, bytes, sb_shift, qcap_log2)  every thread of ONE grid calls it
//       (any grid shape; the threads split the zeroing); the heap is usable after the kernel ends.
//       `h` points to a gc_xheap (its own 960-byte device buffer), `region` to `bytes` bytes of
//       cudaMalloc'd memory (metadata first, then the pages); sb_shift = log2(page = superblock
//       size), 12..24 (0: 16 = 64 KiB); qcap_log2 = log2(first-level queue entries per class)
//       (0: the default, nextpow2(bytes / 1024) but at least one superblock of the 32-byte class).
//       Also makes `h` the module's current heap (gc_malloc / gc_free without a heap argument).
//   void* gc_xmalloc(h, size)  /  gc_malloc(size)   warp-coalesced (see below); null when the
//       heap is exhausted (never traps): the caller reports an error naming itself and the size.
//   void  gc_xfree(h, p)       /  gc_free(p)        per piece; null is ignored; a pointer that
//       is not a live piece (double free, foreign pointer) is counted in h->bad_frees, not fatal.
//   gc_xheap_trim(h)   ONE thread, quiescent heap (no concurrent malloc/free): returns every fully
//       free superblock and every cached one to the page bitmap, so large requests can use them.
//   gc_xheap_max_alloc(h)  the largest size one lane alone can get from an empty, trimmed heap.
//   Pointers are 8-byte aligned. Stats (bytes_in_use = bytes of blocks held, high_water, failed,
//   bad_frees, live_blocks) live in gc_xheap; read them with a kernel or copy the struct.
//
// STRUCTURE (paper §2.1, §2.2.1, Figs. 2.1, 2.6):
//   - Pages ("Memoryblocks", §2.2.2): the region after the metadata is `npages` pages of 2^sb_shift
//     bytes, tracked by a bitmap (bit set = taken). Runs of pages serve LARGE requests (combined
//     size > 4 KiB) and single pages become superblocks. A run is claimed word by word with CAS
//     and rolled back if a later word is taken (claim-check-rollback); only a warp's leader does
//     it, so no two lanes of a warp CAS one address in a loop (the paper's key rule, §2.1.3).
//     Deviation: the paper's Memoryblock heap splits/merges a doubly linked list; the bitmap
//     merges neighbours for free (clear bits) and needs no list surgery.
//   - Second level: a FIFO queue of cached free superblocks (page indices). When it is empty the
//     leader claims up to GC_XM_SB_BATCH free pages of one bitmap word with ONE CAS, keeps one
//     and enqueues the rest (the paper's "one operation generates up to 32 spaces", §2.2).
//   - First level: per size class (32 B .. 4 KiB, powers of two, GC_XM_CLASSES = 8; the smallest
//     piece with its headers is 24 bytes) a FIFO queue of ready blocks (block offset / 16, u32). Empty: take a superblock from the second
//     level and carve it into page/class blocks; the lanes of the warp write the queue slots in
//     parallel. Only the holder of the class's refill gate (one CAS) carves; other leaders that
//     find the queue empty wait for its blocks instead of carving superblocks of their own (a
//     burst of 2048 one-lane warps on a fresh heap used to take 2048 pages for ~1 MiB of blocks).
//     A class may own at most qcap / blocks-per-superblock superblocks, so its queue can
//     never overflow (deviation: the paper returns blocks to their superblock when the first
//     level is full; we bound the first level instead and give superblocks back in
//     gc_xheap_trim). When a class is exhausted or at its bound, the next larger class serves.
//   - Queues are ticket rings (Scogland & Feng style; fetch-and-add, never a CAS loop on a hot
//     counter): slot word = (turn << 32) | value; enqueue ticket t waits for turn 2*lap(t), stores
//     turn 2*lap(t)+1; dequeue waits for 2*lap+1, stores 2*lap+2. `avail` counts published
//     values; a dequeuer first takes from `avail` with fetch-and-add and undoes it when it went
//     negative (so `empty` may be spurious under contention: the allocator then takes the refill
//     gate, re-checks, and at worst carves one superblock; it is never wrong). A carve counts
//     its blocks in `avail` before writing their slots (a dequeuer of one waits for its slot).
//     Waits are bounded by another thread's in-flight operation.
//
// WARP COALESCING (§2.1.1, §2.1.3, Fig. 2.1, 2.2b): the lanes that call gc_xmalloc together on
// the same heap (__activemask() + __match_any_sync) form one request: each lane needs
// 8 (piece header) + round8(max(size, 1)) bytes; an exclusive prefix sum over the lanes (shuffles)
// gives each lane its offset, the leader allocates ONE block of 8 (block header) + total bytes
// (class block), writes the block header {count = lanes, kind}, and broadcasts the block. When
// 8 + total exceeds 4 KiB the peers are cut into greedy segments of consecutive lanes, each one
// class block (one acquisition per segment by the leader), and a lane whose own piece exceeds
// 4 KiB gets a page run alone (deviation: a whole-warp page run wasted a 64 KiB page per warp).
// Every lane writes its piece header {back = (piece - block) / 8, magic} and returns the byte
// after it. gc_xfree atomically takes the piece header (atomicExch to 0: a second free sees 0)
// and decrements the block's count; the lane that brings it to zero returns the block: a class
// block to its class queue (lanes releasing into one class in one call share one fetch-and-add),
// a large run to the bitmap (atomicAnd).
//
// MEMORY ORDERING (CUDA atomics are relaxed; "fence; relaxed RMW" releases, "relaxed RMW/load;
// fence" acquires, as in channel.cuh):
//   - queue enqueue: the slot store (turn flip, one 64-bit store) after __threadfence(): release
//     of the block's last use by the freeing thread; dequeue: turn observed, then __threadfence():
//     acquire, so the next owner's writes come after the previous owner's.
//   - gc_xfree: __threadfence() before the count decrement (release of this piece's writes);
//     the lane that drops it to zero fences again (acquire) before recycling the block.
//   - Bitmap claim (CAS) then fence (acquire); fence then atomicAnd to free (release).
//   - Piece/block headers written by gc_xmalloc reach another thread's gc_xfree through whatever
//     orders the hand-over of the pointer itself (a kernel boundary, or the caller's release/acquire).
//   - Counters (stats, sb_count, hint) need atomicity only.
// INVARIANTS: a block is in exactly one place (a class queue, held by pieces, or inside a cached
// or taken page); tail - head of a class queue <= blocks of that class <= qcap (no overflow);
// bytes_in_use = sum of held block sizes (class size, or pages * page for large runs); after all
// pieces are freed bytes_in_use == 0 and live_blocks == 0; after gc_xheap_trim every bitmap bit
// is clear again.

#ifndef GPU_CILK_XMALLOC_CUH
#define GPU_CILK_XMALLOC_CUH

#ifndef GPU_CILK_PORTABLE_CUH
#include "gpu_cilk/portable.cuh"  // gc_lane(): the lane on a GPU and in the host simulation
#endif

#define GC_XM_CLASSES 8u           // 32, 64, ..., 4096 bytes (a piece is >= 24 bytes)
#define GC_XM_MIN_SHIFT 5u         // 32-byte smallest class
#define GC_XM_MAX_CLASS 4096ull
#define GC_XM_SB_BATCH 8u          // pages taken from the bitmap per refill of the second level
#define GC_XM_MAGIC 0xA11C0C8Du    // piece header tag
#define GC_XM_LARGE 0x80000000u    // block kind: large run (low bits: pages)

// One ticket FIFO (64 bytes). `slots` has mask + 1 words, zeroed at init.
struct gc_xqueue {
    unsigned long long* slots;
    unsigned long long mask;
    unsigned long long tail;   // enqueue tickets
    unsigned long long head;   // dequeue tickets
    unsigned long long avail;  // values dequeuers may take (signed; transiently negative under undo)
    unsigned long long refill; // class queues: 1 while one leader refills it (the refill gate)
    unsigned long long pad[2];
};

// The heap descriptor (mirror: 120 u64 on the host; fields in this order: stats at u64 8..13,
// carves 14, gate_waits 15, sb_count at 16, sb_limit at 24, sbq at 48, cls[c] at 56 + 8c).
struct gc_xheap {
    char* pages;                    // page 0
    unsigned long long npages;
    unsigned long long sb_shift;    // log2(page size)
    unsigned long long qcap;        // first-level entries per class
    unsigned long long* bitmap;     // ceil(npages / 64) words, 1 = taken
    unsigned long long nwords;
    unsigned* scratch;              // npages counters for gc_xheap_trim
    unsigned long long hint;        // rotating start word of bitmap scans
    unsigned long long bytes_in_use;
    unsigned long long high_water;
    unsigned long long failed;      // lanes that got null
    unsigned long long bad_frees;
    unsigned long long live_blocks;
    unsigned long long region_bytes;
    unsigned long long carves;      // superblocks carved into class blocks (cumulative)
    unsigned long long gate_waits;  // acquisitions that waited for another leader's refill
    unsigned long long sb_count[GC_XM_CLASSES];  // superblocks owned per class
    unsigned long long sb_limit[GC_XM_CLASSES];  // bound: qcap / blocks per superblock
    unsigned long long pad1[16];
    gc_xqueue sbq;                  // second level: cached free superblocks (page indices)
    gc_xqueue cls[GC_XM_CLASSES];   // first level: ready blocks per class
};
static_assert(sizeof(gc_xqueue) == 64, "gc_xqueue is 64 bytes");
static_assert(sizeof(gc_xheap) == 960, "gc_xheap is 960 bytes (120 u64)");

// The module's current heap (set by gc_xheap_init) for gc_malloc / gc_free.
__device__ gc_xheap* gc_xheap_current;

// ---- helpers -------------------------------------------------------------------------------

__device__ __forceinline__ unsigned gc_xm_lane() { return gc_lane(); }

__device__ __forceinline__ unsigned long long gc_xm_ld(const unsigned long long* p) {
    return *(const volatile unsigned long long*)p;
}

__device__ __forceinline__ unsigned long long gc_xm_round8(unsigned long long n) {
    return (n + 7ull) & ~7ull;
}

// Smallest class index whose block holds `bytes`, or GC_XM_CLASSES when larger than 4 KiB.
__device__ __forceinline__ unsigned gc_xm_class_of(unsigned long long bytes) {
    if (bytes > GC_XM_MAX_CLASS) return GC_XM_CLASSES;
    if (bytes <= 32ull) return 0u;
    return 64u - (unsigned)__clzll(bytes - 1ull) - GC_XM_MIN_SHIFT;
}

__device__ __forceinline__ unsigned long long gc_xm_class_bytes(unsigned c) {
    return 32ull << c;
}

__device__ __forceinline__ void gc_xm_stat_add(gc_xheap* h, unsigned long long bytes) {
    const unsigned long long now = atomicAdd(&h->bytes_in_use, bytes) + bytes;
    atomicMax(&h->high_water, now);
    atomicAdd(&h->live_blocks, 1ull);
}

__device__ __forceinline__ void gc_xm_stat_sub(gc_xheap* h, unsigned long long bytes) {
    atomicAdd(&h->bytes_in_use, 0ull - bytes);
    atomicAdd(&h->live_blocks, 0ull - 1ull);
}

// ---- ticket FIFO ---------------------------------------------------------------------------

__device__ __forceinline__ unsigned gc_xq_lap_shift(const gc_xqueue* q) {
    return (unsigned)__popcll(q->mask);
}

// Writes `v` at enqueue ticket t (waits for the slot's previous lap to be consumed). With
// `release`, a fence first (the block's previous use happens-before its next owner's); carving
// passes false after one fence for the whole superblock (fresh blocks carry nothing to release).
__device__ __forceinline__ void gc_xq_put(gc_xqueue* q, unsigned long long t, unsigned v, bool release = true) {
    const unsigned long long lap = t >> gc_xq_lap_shift(q);
    const unsigned turn = (unsigned)(2ull * lap);
    unsigned long long* slot = &q->slots[t & q->mask];
    while ((unsigned)(gc_xm_ld(slot) >> 32) != turn) {
        __nanosleep(32);
    }
    if (release) __threadfence();
    *(volatile unsigned long long*)slot = ((unsigned long long)(turn + 1u) << 32) | v;
}

// Reads the value at dequeue ticket t (waits until published). Acquire.
__device__ __forceinline__ unsigned gc_xq_take(gc_xqueue* q, unsigned long long t) {
    const unsigned long long lap = t >> gc_xq_lap_shift(q);
    const unsigned turn = (unsigned)(2ull * lap) + 1u;
    unsigned long long* slot = &q->slots[t & q->mask];
    unsigned long long w;
    while ((unsigned)((w = gc_xm_ld(slot)) >> 32) != turn) {
        __nanosleep(32);
    }
    __threadfence();
    *(volatile unsigned long long*)slot = (unsigned long long)(turn + 1u) << 32;
    return (unsigned)w;
}

// Single-value enqueue (one thread).
__device__ __forceinline__ void gc_xq_push(gc_xqueue* q, unsigned v) {
    const unsigned long long t = atomicAdd(&q->tail, 1ull);
    gc_xq_put(q, t, v);
    atomicAdd(&q->avail, 1ull);
}

// Single-value dequeue (one thread); false when (possibly spuriously) empty.
__device__ __forceinline__ bool gc_xq_pop(gc_xqueue* q, unsigned* v) {
    if ((long long)gc_xm_ld(&q->avail) <= 0) return false;
    const long long before = (long long)atomicAdd(&q->avail, 0ull - 1ull);
    if (before <= 0) {
        atomicAdd(&q->avail, 1ull);  // undo
        return false;
    }
    *v = gc_xq_take(q, atomicAdd(&q->head, 1ull));
    return true;
}

// ---- pages (bitmap) ------------------------------------------------------------------------

__device__ __forceinline__ unsigned long long gc_xm_run_mask(unsigned lo, unsigned n) {
    return (n >= 64u ? ~0ull : ((1ull << n) - 1ull)) << lo;
}

// Frees pages [first, first + n).
__device__ void gc_xm_pages_free(gc_xheap* h, unsigned long long first, unsigned long long n) {
    __threadfence();
    while (n > 0ull) {
        const unsigned lo = (unsigned)(first & 63ull);
        const unsigned k = (unsigned)((64ull - lo) < n ? (64ull - lo) : n);
        atomicAnd(&h->bitmap[first >> 6], ~gc_xm_run_mask(lo, k));
        first += k;
        n -= k;
    }
}

// Claims n contiguous free pages (first fit from a rotating hint); returns the first page or ~0.
// Claim-check-rollback: words are claimed in order with CAS; a taken bit rolls the run back.
__device__ unsigned long long gc_xm_pages_alloc(gc_xheap* h, unsigned long long n) {
    const unsigned long long nw = h->nwords;
    if (n == 0ull || n > h->npages) return ~0ull;
    const unsigned long long start = atomicAdd(&h->hint, 1ull) % nw;
    for (unsigned long long i = 0; i < nw; ++i) {
        const unsigned long long w = (start + i) % nw;
        unsigned long long word = gc_xm_ld(&h->bitmap[w]);
        for (unsigned lo = 0; lo < 64u && word != ~0ull;) {
            if ((word >> lo) & 1ull) {
                ++lo;
                continue;
            }
            const unsigned long long first = w * 64ull + lo;
            if (first + n > h->npages) break;
            // Claim [first, first + n) word by word.
            unsigned long long p = first, left = n;
            bool ok = true;
            while (left > 0ull) {
                const unsigned plo = (unsigned)(p & 63ull);
                const unsigned k = (unsigned)((64ull - plo) < left ? (64ull - plo) : left);
                const unsigned long long m = gc_xm_run_mask(plo, k);
                unsigned long long* wp = &h->bitmap[p >> 6];
                unsigned long long cur = gc_xm_ld(wp);
                bool got = false;
                while ((cur & m) == 0ull) {
                    const unsigned long long prev = atomicCAS(wp, cur, cur | m);
                    if (prev == cur) {
                        got = true;
                        break;
                    }
                    cur = prev;
                }
                if (!got) {
                    ok = false;
                    break;
                }
                p += k;
                left -= k;
            }
            if (ok) {
                __threadfence();
                return first;
            }
            if (p > first) gc_xm_pages_free(h, first, p - first);  // rollback
            word = gc_xm_ld(&h->bitmap[w]);
            ++lo;
        }
    }
    return ~0ull;
}

// Claims up to GC_XM_SB_BATCH free pages of one bitmap word with one CAS; returns the claimed
// mask and the word index (mask 0: none found).
__device__ unsigned long long gc_xm_pages_batch(gc_xheap* h, unsigned long long* word_index) {
    const unsigned long long nw = h->nwords;
    const unsigned long long start = atomicAdd(&h->hint, 1ull) % nw;
    for (unsigned long long i = 0; i < nw; ++i) {
        const unsigned long long w = (start + i) % nw;
        unsigned long long cur = gc_xm_ld(&h->bitmap[w]);
        while (cur != ~0ull) {
            unsigned long long want = 0ull, free_bits = ~cur;
            for (unsigned k = 0; k < GC_XM_SB_BATCH && free_bits != 0ull; ++k) {
                const unsigned long long b = free_bits & (0ull - free_bits);
                want |= b;
                free_bits &= free_bits - 1ull;
            }
            const unsigned long long prev = atomicCAS(&h->bitmap[w], cur, cur | want);
            if (prev == cur) {
                __threadfence();
                *word_index = w;
                return want;
            }
            cur = prev;
        }
    }
    return 0ull;
}

// A free superblock (page index) from the second level, refilled from the bitmap; ~0 if none.
__device__ unsigned long long gc_xm_superblock(gc_xheap* h) {
    unsigned v;
    if (gc_xq_pop(&h->sbq, &v)) return v;
    unsigned long long w = 0;
    unsigned long long got = gc_xm_pages_batch(h, &w);
    if (got == 0ull) return ~0ull;
    const unsigned long long mine = w * 64ull + (unsigned long long)(__ffsll((long long)got) - 1);
    got &= got - 1ull;
    const unsigned rest = (unsigned)__popcll(got);
    if (rest != 0u) {
        unsigned long long t = atomicAdd(&h->sbq.tail, (unsigned long long)rest);
        while (got != 0ull) {
            gc_xq_put(&h->sbq, t++, (unsigned)(w * 64ull + (unsigned long long)(__ffsll((long long)got) - 1)));
            got &= got - 1ull;
        }
        atomicAdd(&h->sbq.avail, (unsigned long long)rest);
    }
    return mine;
}

// Returns every cached superblock of the second level to the bitmap (one thread).
__device__ void gc_xm_drain_superblocks(gc_xheap* h) {
    unsigned v;
    while (gc_xq_pop(&h->sbq, &v)) gc_xm_pages_free(h, v, 1ull);
}

// ---- block acquisition (the leader) --------------------------------------------------------

// What the leader found, broadcast to the warp: the block (byte offset from pages, ~0 = none),
// its kind, and a carve job (blocks [carve_first, carve_first + carve_n) of class `kind`, to be
// enqueued at tickets carve_ticket..).
struct gc_xm_grant {
    unsigned long long block;
    unsigned kind;
    unsigned carve_n;
    unsigned long long carve_first;  // block index (offset / 16) of the first carved block
    unsigned long long carve_ticket;
};

// Opens a class's refill gate. The fence orders the refill's `avail` (or its giving up) before
// the gate reads open, so a waiter that sees it open also sees the published blocks.
__device__ __forceinline__ void gc_xm_gate_open(gc_xqueue* q) {
    __threadfence();
    atomicExch(&q->refill, 0ull);
}

// A ready block of class c: 1 with the block in *v; 0 when the caller now holds the class's
// refill gate (the queue is empty and the class may own another superblock: refill it, then
// open the gate); -1 when the class is empty and at its bound (try the next class).
// Only the gate holder carves, so a burst of leaders finding the queue empty (every warp of a
// fresh heap, or a spurious `empty` under contention) takes ONE superblock per class at a time,
// not one per leader: the others wait for the gate holder's blocks (published before it opens
// the gate) or for it to give up. The wait is bounded by the holder's short critical section.
__device__ int gc_xm_class_take(gc_xheap* h, unsigned c, unsigned* v) {
    gc_xqueue* q = &h->cls[c];
    bool waited = false;
    for (;;) {
        if (gc_xq_pop(q, v)) return 1;
        if (gc_xm_ld(&h->sb_count[c]) >= h->sb_limit[c]) return -1;
        if (gc_xm_ld(&q->refill) == 0ull && atomicCAS(&q->refill, 0ull, 1ull) == 0ull) {
            __threadfence();  // acquire: the previous holder's blocks and sb_count
            // Blocks published between our pop and the gate, or the bound reached meanwhile.
            if (gc_xq_pop(q, v)) {
                gc_xm_gate_open(q);
                return 1;
            }
            if (gc_xm_ld(&h->sb_count[c]) >= h->sb_limit[c]) {
                gc_xm_gate_open(q);
                return -1;
            }
            return 0;
        }
        if (!waited) {
            atomicAdd(&h->gate_waits, 1ull);
            waited = true;
        }
        while (gc_xm_ld(&q->refill) != 0ull && (long long)gc_xm_ld(&q->avail) <= 0) {
            __nanosleep(64);
        }
    }
}

__device__ gc_xm_grant gc_xm_acquire(gc_xheap* h, unsigned long long bytes) {
    gc_xm_grant g;
    g.block = ~0ull;
    g.kind = 0u;
    g.carve_n = 0u;
    g.carve_first = 0ull;
    g.carve_ticket = 0ull;
    const unsigned c0 = gc_xm_class_of(bytes);
    for (unsigned c = c0; c < GC_XM_CLASSES; ++c) {
        unsigned v;
        const int r = gc_xm_class_take(h, c, &v);
        if (r > 0) {
            g.block = (unsigned long long)v << 4;
            g.kind = c;
            gc_xm_stat_add(h, gc_xm_class_bytes(c));
            return g;
        }
        if (r < 0) continue;  // at its bound: the next larger class serves
        // We hold class c's gate: refill it with a superblock carved into class-c blocks.
        gc_xqueue* q = &h->cls[c];
        const unsigned long long page = gc_xm_superblock(h);
        if (page == ~0ull) {
            gc_xm_gate_open(q);
            continue;  // no page: maybe a larger class still has ready blocks
        }
        atomicAdd(&h->sb_count[c], 1ull);  // only the gate holder raises it
        atomicAdd(&h->carves, 1ull);
        const unsigned long long base = page << h->sb_shift;
        const unsigned long long per = (1ull << h->sb_shift) >> (GC_XM_MIN_SHIFT + c);
        g.block = base;
        g.kind = c;
        gc_xm_stat_add(h, gc_xm_class_bytes(c));
        if (per > 1ull) {
            g.carve_n = (unsigned)(per - 1ull);
            g.carve_first = (base + gc_xm_class_bytes(c)) >> 4;
            g.carve_ticket = atomicAdd(&q->tail, per - 1ull);
            // Published before the slots are written: a dequeuer that takes one of these tickets
            // waits for its slot, which this warp fills right after the broadcast (bounded).
            atomicAdd(&q->avail, per - 1ull);
        }
        gc_xm_gate_open(q);
        return g;
    }
    if (c0 == GC_XM_CLASSES) {
        const unsigned long long n = (bytes + (1ull << h->sb_shift) - 1ull) >> h->sb_shift;
        unsigned long long first = gc_xm_pages_alloc(h, n);
        if (first == ~0ull && gc_xm_ld(&h->sbq.avail) != 0ull) {
            gc_xm_drain_superblocks(h);  // cached superblocks are free pages too
            first = gc_xm_pages_alloc(h, n);
        }
        if (first != ~0ull && n < (unsigned long long)GC_XM_LARGE) {
            g.block = first << h->sb_shift;
            g.kind = GC_XM_LARGE | (unsigned)n;
            gc_xm_stat_add(h, n << h->sb_shift);
        } else if (first != ~0ull) {
            gc_xm_pages_free(h, first, n);
        }
    }
    return g;
}

// ---- public API ----------------------------------------------------------------------------

// Every thread of one grid calls this (see the top of the file).
__device__ void gc_xheap_init(gc_xheap* h, void* region, unsigned long long bytes, unsigned sb_shift,
                              unsigned qcap_log2) {
    if (sb_shift == 0u) sb_shift = 16u;
    if (sb_shift < 12u) sb_shift = 12u;
    if (sb_shift > 24u) sb_shift = 24u;
    const unsigned long long page = 1ull << sb_shift;
    unsigned long long qcap;
    if (qcap_log2 == 0u) {
        qcap = 1ull;
        while (qcap < bytes / 1024ull) qcap <<= 1;
    } else {
        qcap = 1ull << qcap_log2;
    }
    if (qcap < (page >> GC_XM_MIN_SHIFT)) qcap = page >> GC_XM_MIN_SHIFT;
    // Layout: [class queues][superblock queue][bitmap][scratch] ... pages (page-aligned offset).
    char* const r = (char*)region;
    unsigned long long off = 0;
    unsigned long long* cls_slots = (unsigned long long*)(r + off);
    off += (unsigned long long)GC_XM_CLASSES * qcap * 8ull;
    // An upper bound on npages for sizing: bytes / page.
    const unsigned long long max_pages = bytes / page;
    unsigned long long sbq_cap = 1ull;
    while (sbq_cap < max_pages) sbq_cap <<= 1;
    unsigned long long* sbq_slots = (unsigned long long*)(r + off);
    off += sbq_cap * 8ull;
    const unsigned long long nwords_max = (max_pages + 63ull) / 64ull + 1ull;
    unsigned long long* bitmap = (unsigned long long*)(r + off);
    off += nwords_max * 8ull;
    unsigned* scratch = (unsigned*)(r + off);
    off += gc_xm_round8(max_pages * 4ull);
    const unsigned long long meta = off;
    // Pages start at the first page-aligned offset after the metadata (offsets are relative to
    // `pages`, so only the page size matters for alignment of blocks within a page).
    const unsigned long long pages_off = (meta + page - 1ull) & ~(page - 1ull);
    const unsigned long long npages = bytes > pages_off ? (bytes - pages_off) / page : 0ull;
    const unsigned long long nwords = npages == 0ull ? 1ull : (npages + 63ull) / 64ull;

    // Zero the metadata (grid-stride, 8-byte words); bitmap bits past npages start taken.
    const unsigned long long tid = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    const unsigned long long nthreads = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long* words = (unsigned long long*)r;
    const unsigned long long bitmap_first = (unsigned long long)(bitmap - words);
    for (unsigned long long i = tid; i < meta / 8ull; i += nthreads) {
        unsigned long long v = 0ull;
        if (i >= bitmap_first && i < bitmap_first + nwords_max) {
            const unsigned long long w = i - bitmap_first;
            const unsigned long long lo = w * 64ull;
            if (lo >= npages) {
                v = ~0ull;
            } else if (npages - lo < 64ull) {
                v = ~0ull << (npages - lo);
            }
        }
        words[i] = v;
    }
    if (tid == 0ull) {
        unsigned long long* hw = (unsigned long long*)h;
        for (unsigned i = 0; i < sizeof(gc_xheap) / 8u; ++i) hw[i] = 0ull;
        h->pages = r + pages_off;
        h->npages = npages;
        h->sb_shift = sb_shift;
        h->qcap = qcap;
        h->bitmap = bitmap;
        h->nwords = nwords;
        h->scratch = scratch;
        h->region_bytes = bytes;
        for (unsigned c = 0; c < GC_XM_CLASSES; ++c) {
            h->cls[c].slots = cls_slots + (unsigned long long)c * qcap;
            h->cls[c].mask = qcap - 1ull;
            h->sb_limit[c] = qcap / (page >> (GC_XM_MIN_SHIFT + c));
        }
        h->sbq.slots = sbq_slots;
        h->sbq.mask = sbq_cap - 1ull;
        gc_xheap_current = h;
        __threadfence();
    }
}

__device__ __forceinline__ unsigned long long gc_xheap_max_alloc(const gc_xheap* h) {
    const unsigned long long total = h->npages << h->sb_shift;
    return total > 16ull ? total - 16ull : 0ull;
}

// One segment of a coalesced request (uniform over `peers`: every peer lane calls it with the
// same arguments): the warp leader acquires one block of 8 + seg_total bytes for the lanes in
// `seg`, the peers carve the superblock it took (if any), the segment's first lane writes the
// block header. The lanes of `seg` get the block (~0: none) in *my_block.
__device__ __forceinline__ void gc_xm_serve(gc_xheap* h, unsigned peers, unsigned leader, unsigned lane,
                                            unsigned seg, unsigned long long seg_total,
                                            unsigned long long* my_block) {
    gc_xm_grant g = {~0ull, 0u, 0u, 0ull, 0ull};
    if (lane == leader) g = gc_xm_acquire(h, 8ull + seg_total);
    g.block = __shfl_sync(peers, g.block, leader);
    g.kind = __shfl_sync(peers, g.kind, leader);
    g.carve_n = __shfl_sync(peers, g.carve_n, leader);
    g.carve_first = __shfl_sync(peers, g.carve_first, leader);
    g.carve_ticket = __shfl_sync(peers, g.carve_ticket, leader);
    if (g.carve_n != 0u) {
        // The lanes fill the carved blocks' slots together (already counted in `avail`: the
        // warp finishes them before its next acquisition, which may dequeue one of them).
        gc_xqueue* q = &h->cls[g.kind];
        const unsigned nlanes = (unsigned)__popc(peers);
        const unsigned rank = (unsigned)__popc(peers & ((1u << lane) - 1u));
        const unsigned step = (unsigned)(gc_xm_class_bytes(g.kind) >> 4);
        __threadfence();
        for (unsigned i = rank; i < g.carve_n; i += nlanes) {
            gc_xq_put(q, g.carve_ticket + i, (unsigned)(g.carve_first + (unsigned long long)i * step), false);
        }
        __syncwarp(peers);
    }
    const unsigned n = (unsigned)__popc(seg);
    if (g.block == ~0ull) {
        if (lane == leader) atomicAdd(&h->failed, (unsigned long long)n);
        return;
    }
    if (lane == (unsigned)__ffs(seg) - 1u) {
        unsigned* bh = (unsigned*)(h->pages + g.block);
        bh[0] = n;  // live pieces
        bh[1] = g.kind;
    }
    if (seg & (1u << lane)) *my_block = g.block;
}

// Warp-coalesced allocation over the lanes calling together on heap `h`. Out of line (as is
// gc_xfree): inlined at every `alloc!` site it multiplied a program's PTX and its JIT time.
__device__ __noinline__ void* gc_xmalloc(gc_xheap* h, unsigned long long size) {
    const unsigned peers = __match_any_sync(__activemask(), (unsigned long long)h);
    const unsigned lane = gc_xm_lane();
    const unsigned leader = (unsigned)__ffs(peers) - 1u;
    const unsigned long long need = 8ull + gc_xm_round8(size == 0ull ? 1ull : size);
    // Exclusive prefix sum of `need` over the peer lanes (in lane order) with shuffles.
    unsigned long long before = 0ull, total = 0ull;
    if (peers == 0xffffffffu) {
        unsigned long long incl = need;
#pragma unroll
        for (unsigned d = 1; d < 32u; d <<= 1) {
            const unsigned long long o = __shfl_up_sync(0xffffffffu, incl, d);
            if (lane >= d) incl += o;
        }
        total = __shfl_sync(0xffffffffu, incl, 31);
        before = incl - need;
    } else {
        unsigned m = peers;
        while (m != 0u) {
            const unsigned src = (unsigned)__ffs(m) - 1u;
            m &= m - 1u;
            const unsigned long long v = __shfl_sync(peers, need, src);
            if (src < lane) before += v;
            total += v;
        }
    }
    unsigned long long my_block = ~0ull;
    if (8ull + total <= GC_XM_MAX_CLASS) {
        gc_xm_serve(h, peers, leader, lane, peers, total, &my_block);  // one class block
    } else {
        // Too much for one class block: greedy segments of consecutive peer lanes, each one
        // class block (<= 4 KiB); a lane that alone needs more gets its own page run. One page
        // run for the whole warp would cost a page (64 KiB by default) per warp.
        unsigned m = peers, seg = 0u;
        unsigned long long seg_total = 0ull;
        while (m != 0u) {
            const unsigned src = (unsigned)__ffs(m) - 1u;
            m &= m - 1u;
            const unsigned long long v = __shfl_sync(peers, need, src);
            if (seg != 0u && 8ull + seg_total + v > GC_XM_MAX_CLASS) {
                gc_xm_serve(h, peers, leader, lane, seg, seg_total, &my_block);
                seg = 0u;
                seg_total = 0ull;
            }
            if (src == lane) before = seg_total;
            seg |= 1u << src;
            seg_total += v;
        }
        gc_xm_serve(h, peers, leader, lane, seg, seg_total, &my_block);
    }
    if (my_block == ~0ull) return (void*)0;
    char* const block = h->pages + my_block;
    unsigned long long* piece = (unsigned long long*)(block + 8ull + before);
    *piece = ((unsigned long long)GC_XM_MAGIC << 32) | ((8ull + before) >> 3);
    __syncwarp(peers);
    return (void*)(piece + 1);
}

// Frees one piece.
__device__ __noinline__ void gc_xfree(gc_xheap* h, void* p) {
    if (p == (void*)0) return;
    unsigned long long* hdr = (unsigned long long*)p - 1;
    const unsigned long long word = atomicExch(hdr, 0ull);
    if ((unsigned)(word >> 32) != GC_XM_MAGIC) {
        atomicAdd(&h->bad_frees, 1ull);
        return;
    }
    char* const block = (char*)hdr - ((word & 0xffffffffull) << 3);
    unsigned* bh = (unsigned*)block;
    __threadfence();  // release this piece's writes
    if (atomicSub(&bh[0], 1u) != 1u) return;
    __threadfence();  // acquire every other piece's writes
    const unsigned kind = *(volatile unsigned*)&bh[1];
    const unsigned long long off = (unsigned long long)(block - h->pages);
    if (kind & GC_XM_LARGE) {
        const unsigned long long n = kind & ~GC_XM_LARGE;
        gc_xm_stat_sub(h, n << h->sb_shift);
        gc_xm_pages_free(h, off >> h->sb_shift, n);
        return;
    }
    gc_xm_stat_sub(h, gc_xm_class_bytes(kind));
    // Lanes releasing into the same class queue now share one ticket fetch-and-add.
    gc_xqueue* q = &h->cls[kind];
    const unsigned peers = __match_any_sync(__activemask(), (unsigned long long)q);
    const unsigned lane = gc_xm_lane();
    const unsigned leader = (unsigned)__ffs(peers) - 1u;
    const unsigned n = (unsigned)__popc(peers);
    unsigned long long t = 0ull;
    if (lane == leader) t = atomicAdd(&q->tail, (unsigned long long)n);
    t = __shfl_sync(peers, t, leader) + (unsigned long long)__popc(peers & ((1u << lane) - 1u));
    gc_xq_put(q, t, (unsigned)(off >> 4));
    __syncwarp(peers);
    if (lane == leader) atomicAdd(&q->avail, (unsigned long long)n);
}

__device__ __forceinline__ void* gc_malloc(unsigned long long size) {
    return gc_xmalloc(gc_xheap_current, size);
}

__device__ __forceinline__ void gc_free(void* p) {
    gc_xfree(gc_xheap_current, p);
}

// ONE thread, quiescent heap: gives fully free superblocks and the cached ones back to the bitmap.
__device__ void gc_xheap_trim(gc_xheap* h) {
    for (unsigned c = 0; c < GC_XM_CLASSES; ++c) {
        gc_xqueue* q = &h->cls[c];
        const unsigned long long per = (1ull << h->sb_shift) >> (GC_XM_MIN_SHIFT + c);
        const long long n = (long long)gc_xm_ld(&q->avail);
        if (n <= 0) continue;
        // Pass 1: count ready blocks per superblock (rotating the FIFO once).
        for (long long i = 0; i < n; ++i) {
            unsigned v;
            if (!gc_xq_pop(q, &v)) break;
            h->scratch[((unsigned long long)v << 4) >> h->sb_shift] += 1u;
            gc_xq_push(q, v);
        }
        // Pass 2: drop the blocks of wholly free superblocks, keep the rest.
        for (long long i = 0; i < n; ++i) {
            unsigned v;
            if (!gc_xq_pop(q, &v)) break;
            const unsigned long long pg = ((unsigned long long)v << 4) >> h->sb_shift;
            if (h->scratch[pg] != (unsigned)per) gc_xq_push(q, v);
        }
        for (unsigned long long pg = 0; pg < h->npages; ++pg) {
            if (h->scratch[pg] == (unsigned)per) {
                gc_xm_pages_free(h, pg, 1ull);
                atomicAdd(&h->sb_count[c], 0ull - 1ull);
            }
            h->scratch[pg] = 0u;
        }
    }
    gc_xm_drain_superblocks(h);
}

#endif  // GPU_CILK_XMALLOC_CUH

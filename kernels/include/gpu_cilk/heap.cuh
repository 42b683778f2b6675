// gpu_cilk/heap.cuh — the generalized batched heap of Chen et al., "Accelerating Concurrent Heap
// on GPUs" (2019): nodes of K sorted keys (§3.1), a partial buffer (§3.1, §3.3.2), node-level
// multi-state locks (§3.3.1), bottom-up insert (BU-INS, §3.3.4), top-down insert (TD-INS,
// §3.3.2) and top-down delete-min (TD-DEL, §3.2.1) of full or partial batches, block-wide merge
// path (§4.2, Green et al.) and bitonic sort (§4.1), bit-reversal target selection (§4.3).
// The device twin of `runtime/src/heap/` (same algorithm, step for step; its module docs carry the
// full argument, summarized here). Header-only, NVRTC-compilable (no system headers),
// compute_70 or newer (__nanosleep, independent thread scheduling).
//
// OPERATIONS are block-wide: every thread of a block calls with the same arguments; thread 0
// takes and releases the locks, all threads move keys. One block = one operation at a time.
//   gc_heap_insert<K>(h, keys, n, smem)    n in 1..K keys (any order, global or shared memory);
//                                          GC_HEAP_OK, GC_HEAP_FULL, GC_HEAP_TOO_LARGE.
//   gc_heap_delete_min<K>(h, out, smem)    the K smallest keys into out (sorted), or, with no node
//                                          left, the whole partial buffer (< K); returns how many.
// `smem` is dynamic shared memory sized by the launcher: gc_heap_smem_bytes<K, Key>() bytes
// (a small control block and 5K keys); nothing here declares static shared-memory state. `out` and
// `keys` must not alias it.
//
// KEYS are gc_heap_key<P, V>: (priority, payload), P and V unsigned integer types (u32 or u64),
// ordered by priority then payload (smaller first). Map other priorities through an
// order-preserving unsigned image (gc_heap_prio_f32 / gc_heap_prio_i32 / gc_heap_prio_i64).
// Any other key type works with an overload of gc_heap_less and gc_heap_key_max.
//
// LAYOUT. gc_heap<Key> is 256 bytes, 32 8-byte words (mirror it on the host with a #[repr(C)]
// struct: nodes, states, pbuf, k, capacity, slots, count, pbuf_len, hlock, next_owner, error,
// trace, hlocks, 3 pad, mode, 15 pad). The host allocates `slots * K` keys for `nodes` (node i at nodes + i*K;
// slot 0 unused), `slots` zeroed state words, K keys for `pbuf`, and sets k = K, capacity (nodes,
// >= 1) and slots = the power of two above capacity's highest bit (2^(floor(log2 capacity) + 1)).
// Everything else zero. A zeroed state is EMPTY, so this is an empty heap.
//
// DIAGNOSTICS. `trace` (0: off) is the device address of 5 words per block of the launch
// (GC_HEAP_TRACE_WORDS): [0] where the block's thread 0 is, GC_HEAP_AT_* << 56 | node (the node
// it locks or last locked; 0 for the heap lock and the mode word), [1] the word it last saw while
// waiting there (a state word, hlock or mode), [2] how many times it has backed off since it came
// there, [3] the caller's (the stress kernel writes its operation index + 1 and kind), [4] how
// many locks (nodes and hlock) it has taken so far. Thread 0 writes them with volatile stores; a
// host watchdog copies them while the kernel still runs when a launch does not finish
// (runtime/tests/cuda_heap.rs), so a hang names the blocks' waits; word [4] tells a block that
// keeps taking and releasing locks inside one operation (its site can read RUN with 0 back-offs
// in both snapshots) from one that stopped. The
// heap lock names its holder (hlock = the holder's blockIdx.x + 1, 0 when free) and `hlocks` counts
// its acquisitions (written under it), so a snapshot says who holds it and two snapshots say
// whether it still changes hands (a slow heap) or not (a hang, with the holder's site beside it).
//
// STRUCTURE. Node i has children 2i, 2i+1; the root is node 1. `count` nodes are in use, at tree
// indices target(1..count): level L = floor(log2 n) is filled in bit-reversed order of n - 2^L,
// so consecutive inserts take paths that share only the root, and target(count) is always a leaf
// (the node a delete removes).
//
// STATES (one 64-bit word per node: owner << 3 | LOCKED | kind):
//   EMPTY 0    no batch (beyond count, or taken by a delete)
//   AVAIL 1    a full node in heap order with its parent            (paper: AVAIL)
//   INSHOLD 2  a bottom-up insert's batch, maybe below its parent;  (paper: INSHOLD)
//              the owner bits name the insert
//   TARGET 3   allocated to a top-down insert not yet arrived       (paper: TARGET)
//   LOCKED 4   held by a block (kind and owner unchanged)           (paper: INUSE)
// The heap lock `hlock` covers count, pbuf and pbuf_len. Lock order: hlock, then nodes by
// increasing index; every acquisition made while holding a lock goes to a larger index (a child,
// the right sibling after the left, a descendant after the root): no deadlock. A bottom-up
// insert never waits while holding a lock (it releases c, then locks p and c: Hunt et al.).
//
// MODES (why bottom-up inserts and deletes take turns). The paper runs BU-INS concurrently with
// TD-DEL. With K > 1 an INSHOLD node also holds keys of finished inserts (a merge keeps the K
// smallest of both nodes), and a delete meeting two INSHOLD siblings must either merge two
// in-flight batches or raise their parent above settled keys of the one it leaves alone; the
// host twin's history checker found the latter (a delete returned a key larger than one whose
// insert had completed before the delete began). So `mode` counts active deletes (high 32 bits)
// and bottom-up inserts (low 32 bits): a full insert counts itself in and goes bottom-up only if
// no delete is active, else top-down; a delete counts itself in, then waits until no bottom-up
// insert is in flight. Deletes never see an INSHOLD node; top-down inserts compose with
// top-down deletes as in §3.3.2.
//
// ALGORITHM (the twin's module docs, "Algorithm", in full):
//   bottom-up insert: under hlock c = target(++count), lock c; write the sorted batch; release c
//     INSHOLD(me). Until done: lock p = c/2, lock c; p not AVAIL -> unlock, back off, retry;
//     max(p) <= min(c) -> c AVAIL, done (early stop, §4.3); else p keeps the K smallest of
//     p ∪ c (a swap when max(c) <= min(p), §4.3), c the rest and AVAIL; p INSHOLD(me) (AVAIL at
//     the root: done); continue at p.
//   top-down insert: under hlock t = target(++count) becomes TARGET, lock the root, release
//     hlock; the root keeps the K smallest of root ∪ batch; the other K are carried down the
//     path to t with lock coupling, each node keeping the K smallest of itself ∪ carried (a tag
//     stays: the node keeps its smallest keys); at t write the carried batch, AVAIL.
//   partial insert / first node (under hlock): U = batch ∪ pbuf. No node: pbuf = U if |U| < K,
//     else the root is created from U's K smallest and pbuf keeps the rest. Otherwise lock the
//     root; V = root ∪ U; the root keeps V's K smallest; |U| < K: pbuf keeps the rest; else the
//     next K go top-down to a new TARGET and pbuf keeps the largest |U| - K.
//   delete-min: count in, wait for bottom-up inserts. Under hlock: no node: take pbuf. Else lock
//     the root, copy it out (the result); the only node: it becomes EMPTY. Otherwise lock the
//     last node target(count--) (while it is TARGET, waiting by looking at its state word, not
//     by locking it: the insert it waits for must lock it), take its keys as the carried batch Z,
//     make it EMPTY; Z and pbuf exchange so Z holds the K smallest; release hlock. Sift down
//     from the root (held): lock both children; EMPTY and TARGET ones are absent. None: cur = Z.
//     One, x: max(Z) <= min(x): cur = Z, done; else cur = K smallest of Z ∪ x, Z = the rest,
//     continue at x. Two: hi/lo = K smallest/largest of l ∪ r; max(Z) <= min(hi): cur = Z,
//     done; else lo goes to the child with the larger maximum (its subtree stays in order), cur
//     = K smallest of Z ∪ hi, Z = the rest, continue at the other child.
//
// INVARIANTS. (1) Heap order (properties 1-2): a node's keys are sorted and >= its parent's,
// except an INSHOLD node against its parent (its parent is still <= its children), and below a
// node held by a top-down operation (its real contents are the carried batch). (2) P3: pbuf is
// sorted, shorter than K and >= the root. (3) A carried batch is >= every node its operation
// set on the way down; top-down operations never overtake each other (lock coupling). (4) While
// a delete is past its wait no node is INSHOLD. (5) Nodes in use are exactly target(1..count).
//
// LINEARIZABILITY (§3.3.3). Deletes, top-down inserts and partial inserts lock the root while
// holding hlock: they are totally ordered by that acquisition and linearized there. They never
// overtake each other on a path; a sifting delete treats a TARGET node as absent only when it is
// ahead of that node's insert, and a delete wanting a TARGET node as its last node waits for it;
// so each node sees them in root order and the execution is equivalent to running them one at a
// time in that order: a delete returns the K smallest keys of all linearized inserts (carried
// batches on their way are >= the root), or all of pbuf when no node is left. A bottom-up insert
// runs entirely between two deletes' linearization points (it counted itself in when no delete
// was active, and later deletes wait for it): linearize it anywhere in its interval; when it
// returns its batch is in heap order. Keys only move between nodes under their locks: the
// multiset is preserved.
//
// MEMORY ORDERING (CUDA atomics are relaxed; "relaxed RMW; fence" acquires, "fence; RMW"
// releases, the pattern of cooperative groups' grid sync):
//   - lock: thread 0 atomicCAS(w, s, s | LOCKED) from an unlocked s, then __threadfence()
//     (acquire), then __syncthreads() so the block reads keys only after the lock is held.
//   - unlock: __syncthreads() (the block's key writes are done), thread 0 __threadfence()
//     (release), atomicExch(w, new word). The next holder's CAS reads that word, so every key
//     written under the lock happens-before every access of the next holder. Keys are read with
//     ld.global.cg (L2, never a stale L1 line) and written with st.global.cg.
//   - hlock: the same with atomicCAS(0 -> blockIdx.x + 1) / atomicExch(0); count, pbuf_len and
//     hlocks are plain accesses by thread 0 under it (volatile, so they are not cached in registers across it).
//   - mode: atomicAdd of +-1 or +-2^32 (a total order on one word: an insert's count-in and a
//     delete's announcement see each other in one direction); a bottom-up insert does
//     __threadfence() before leaving (release), a waiting delete polls with volatile loads and
//     __threadfence() after (acquire).
//   - next_owner: atomicAdd (uniqueness only). error: atomicCAS(0 -> code) (first fault wins).
//
// PROGRESS. Waits spin with __nanosleep back-off. Lock holders never wait for a smaller index; a
// bottom-up insert waits only for the batch above it or a top-down insert's target, and it waits
// by looking at the parent's state word, holding no lock (it locks the parent and its own node
// only once the parent looks AVAIL and unlocked, and checks again under the locks): a waiter that
// held locks while it waited would block the very insert it waits for. Likewise a delete whose
// last node is TARGET waits by looking at that node's word (holding hlock and the root, which
// the top-down insert it waits for no longer needs), and locks it only once it is no longer
// TARGET: a waiter that took and released the lock in every round raced that insert's CAS in
// every round, and on an H100 (whose sleeping waiters wake on common timer ticks) it won every
// round, starving the insert forever (issue 12's hang). A delete waits for
// bottom-up inserts, which need no delete, and a full insert that sees a delete announced goes
// top-down without touching `mode`, so a stream of inserts cannot keep the delete waiting. Every block that uses a heap concurrently
// must be resident (launch at most the occupancy limit), or a waiter can spin forever behind a
// block that never gets scheduled.

#ifndef GPU_CILK_HEAP_CUH
#define GPU_CILK_HEAP_CUH

#define GC_HEAP_OK 0
#define GC_HEAP_FULL 1
#define GC_HEAP_TOO_LARGE 2

// Fault codes in gc_heap::error (protocol assertions; 0 = none).
#define GC_HEAP_FAULT_K_MISMATCH 1
#define GC_HEAP_FAULT_BAD_STATE 2

#define GC_HEAP_EMPTY 0ull
#define GC_HEAP_AVAIL 1ull
#define GC_HEAP_INSHOLD 2ull
#define GC_HEAP_TARGET 3ull
#define GC_HEAP_LOCKED 4ull
#define GC_HEAP_KIND_MASK 3ull
#define GC_HEAP_OWNER_SHIFT 3
#define GC_HEAP_DELETE_UNIT (1ull << 32)

// Where a block's thread 0 is (trace word [0] >> 56; see DIAGNOSTICS).
#define GC_HEAP_TRACE_WORDS 5
#define GC_HEAP_AT_OUTSIDE 0ull    // between operations (the caller's code)
#define GC_HEAP_AT_LOCK_HEAP 1ull  // acquiring hlock
#define GC_HEAP_AT_LOCK_NODE 2ull  // acquiring the lock of node `node`
#define GC_HEAP_AT_WAIT_MODE 3ull  // a delete waiting for bottom-up inserts to count out
#define GC_HEAP_AT_WAIT_LAST 4ull  // a delete waiting for its last node (TARGET) to be written
#define GC_HEAP_AT_WAIT_PARENT 5ull  // a bottom-up insert at `node` waiting for its parent AVAIL
#define GC_HEAP_AT_RUN 6ull        // working; `node` is the node it locked last
#define GC_HEAP_BOTTOM_UP_MASK 0xffffffffull

// GC_HEAP_CHAOS(): a test hook thread 0 runs right after it takes a lock and right before it
// releases one (empty unless the includer defines it first; the host-simulation stress test
// delays there at random, so lock holders are slow at every step of the protocol, as a GPU block
// may be, and the interleavings a two-core host rarely produces come up).
#ifndef GC_HEAP_CHAOS
#define GC_HEAP_CHAOS() ((void)0)
#endif

// ---- keys ---------------------------------------------------------------------------------------

template <typename P, typename V>
struct gc_heap_key {
    P prio;
    V payload;
};

template <typename P, typename V>
__device__ __forceinline__ bool gc_heap_less(const gc_heap_key<P, V>& a, const gc_heap_key<P, V>& b) {
    return a.prio < b.prio || (a.prio == b.prio && a.payload < b.payload);
}

template <typename Key>
struct gc_heap_key_traits;
template <typename P, typename V>
struct gc_heap_key_traits<gc_heap_key<P, V> > {
    static __device__ __forceinline__ gc_heap_key<P, V> max() {
        gc_heap_key<P, V> k;
        k.prio = (P)~(P)0;
        k.payload = (V)~(V)0;
        return k;
    }
};

// Order-preserving unsigned images of signed and floating-point priorities.
__device__ __forceinline__ unsigned gc_heap_prio_i32(int x) { return (unsigned)x ^ 0x80000000u; }
__device__ __forceinline__ unsigned long long gc_heap_prio_i64(long long x) {
    return (unsigned long long)x ^ 0x8000000000000000ull;
}
__device__ __forceinline__ unsigned gc_heap_prio_f32(float f) {
    unsigned u = __float_as_uint(f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

// ---- the heap header ----------------------------------------------------------------------------

template <typename Key>
struct gc_heap {
    Key* nodes;                      // slots * k keys; node i at nodes + i * k
    unsigned long long* states;      // slots state words (zeroed: EMPTY)
    Key* pbuf;                       // k keys
    unsigned long long k;            // keys per node (checked against the template K)
    unsigned long long capacity;     // nodes
    unsigned long long slots;        // power of two above every target index
    unsigned long long count;        // nodes in use (under hlock)
    unsigned long long pbuf_len;     // keys in pbuf (under hlock)
    unsigned long long hlock;        // 0 free, else the holder's blockIdx.x + 1 (DIAGNOSTICS)
    unsigned long long next_owner;   // bottom-up insert ids
    unsigned long long error;        // first protocol fault (GC_HEAP_FAULT_*), 0 none
    unsigned long long* trace;       // per-block progress words (DIAGNOSTICS), null: off
    unsigned long long hlocks;       // hlock acquisitions so far (DIAGNOSTICS; under hlock)
    unsigned long long pad0[3];
    unsigned long long mode;         // deletes << 32 | bottom-up inserts (own 128-byte line)
    unsigned long long pad1[15];
};

// Control words of one operation, at the start of the dynamic shared memory workspace. Thread 0
// writes them (lock words, the path taken), a barrier publishes them, every thread copies what it
// needs into registers, and thread 0 writes a word again only after a later barrier: a warp may
// lag behind thread 0 by a whole step, and one that read a rewritten word would take another
// path and meet other barriers (runtime/tests/sim_heap.rs found duplicated keys and a crash
// from exactly that, 2026-11-26).
struct gc_heap_ctl {
    unsigned long long w[8];
};

// Bytes of dynamic shared memory one block needs: the control block and 5K keys.
template <int K, typename Key>
__host__ __device__ constexpr unsigned gc_heap_smem_bytes() {
    return (unsigned)(sizeof(gc_heap_ctl) + 5u * (unsigned)K * (unsigned)sizeof(Key));
}

template <int K, typename Key>
struct gc_heap_ws {
    gc_heap_ctl* ctl;
    Key* a;  // K: the batch / the carried keys
    Key* b;  // 2K: loaded nodes
    Key* m;  // 2K: merge output
};

template <int K, typename Key>
__device__ __forceinline__ gc_heap_ws<K, Key> gc_heap_ws_at(void* smem) {
    gc_heap_ws<K, Key> ws;
    ws.ctl = (gc_heap_ctl*)smem;
    ws.a = (Key*)((char*)smem + sizeof(gc_heap_ctl));
    ws.b = ws.a + K;
    ws.m = ws.b + 2 * K;
    return ws;
}

// ---- helpers ------------------------------------------------------------------------------------

__device__ __forceinline__ unsigned long long gc_heap_kind(unsigned long long s) { return s & GC_HEAP_KIND_MASK; }
__device__ __forceinline__ unsigned long long gc_heap_inshold(unsigned long long owner) {
    return (owner << GC_HEAP_OWNER_SHIFT) | GC_HEAP_INSHOLD;
}

__device__ __forceinline__ unsigned long long gc_heap_ld(const unsigned long long* p) {
    return *(const volatile unsigned long long*)p;
}

__device__ __forceinline__ void gc_heap_backoff(unsigned* ns) {
    __nanosleep(*ns);
    if (*ns < 1024u) *ns = *ns * 2u + 32u;
}

// Tree index of the n-th allocated node (n >= 1), bit-reversal order within each level.
__device__ __forceinline__ unsigned long long gc_heap_target(unsigned long long n) {
    const int level = 63 - __clzll((long long)n);
    if (level == 0) return 1ull;
    const unsigned long long offset = n - (1ull << level);
    return (1ull << level) | (__brevll(offset) >> (64 - level));
}

// The child of `cur` on the path down to its descendant `t`.
__device__ __forceinline__ unsigned long long gc_heap_step_toward(unsigned long long cur, unsigned long long t) {
    const int up = (63 - __clzll((long long)t)) - (63 - __clzll((long long)cur)) - 1;
    return t >> up;
}

// Thread 0: this block's trace words (DIAGNOSTICS), or null when tracing is off.
template <typename Key>
__device__ __forceinline__ volatile unsigned long long* gc_heap_tr(const gc_heap<Key>* h) {
    unsigned long long* t = h->trace;  // set by the host before the launch, constant during it
    return t ? (volatile unsigned long long*)(t + (unsigned long long)GC_HEAP_TRACE_WORDS * blockIdx.x) : 0;
}

// Thread 0: records that the block is now at `site` (about `node`), its wait count reset.
__device__ __forceinline__ void gc_heap_trace_at(volatile unsigned long long* tr, unsigned long long site,
                                                 unsigned long long node) {
    if (tr) {
        tr[0] = (site << 56) | (node & ((1ull << 56) - 1ull));
        tr[2] = 0ull;
    }
}

// Thread 0: counts one more lock taken (trace word [4]).
__device__ __forceinline__ void gc_heap_trace_locked(volatile unsigned long long* tr) {
    if (tr) tr[4] = tr[4] + 1ull;
}

// Thread 0: records one more back-off at the current site, having seen `seen`.
__device__ __forceinline__ void gc_heap_trace_wait(volatile unsigned long long* tr, unsigned long long seen) {
    if (tr) {
        tr[1] = seen;
        tr[2] = tr[2] + 1ull;
    }
}

// Thread 0: lock node word `w` (node `node`, for the trace); returns the unlocked word it held.
// ORDERING: the CAS reads the word the previous holder's atomicExch wrote after its fence;
// the fence after the CAS makes every key that holder wrote (st.global.cg or plain stores, all
// before its block's barrier and fence) visible to this block's loads after its next barrier.
// The spin re-reads with a volatile load (never a value kept in a register or a stale L1 line).
__device__ __forceinline__ unsigned long long gc_heap_lock_word(unsigned long long* w, volatile unsigned long long* tr,
                                                                unsigned long long node) {
    unsigned ns = 32u;
    gc_heap_trace_at(tr, GC_HEAP_AT_LOCK_NODE, node);
    for (;;) {
        const unsigned long long s = gc_heap_ld(w);
        if (!(s & GC_HEAP_LOCKED) && atomicCAS(w, s, s | GC_HEAP_LOCKED) == s) {
            __threadfence();  // acquire
            gc_heap_trace_at(tr, GC_HEAP_AT_RUN, node);
            gc_heap_trace_locked(tr);
            GC_HEAP_CHAOS();
            return s;
        }
        gc_heap_trace_wait(tr, s);
        gc_heap_backoff(&ns);
    }
}

// Thread 0: lock node `i` of `h`.
template <typename Key>
__device__ __forceinline__ unsigned long long gc_heap_lock_node(gc_heap<Key>* h, unsigned long long i) {
    return gc_heap_lock_word(&h->states[i], gc_heap_tr(h), i);
}

// Thread 0: unlock node word `w`, leaving `s`. ORDERING (release): every caller reaches this
// after a __syncthreads() that follows the block's last key write under the lock (so those
// writes happen-before thread 0's fence by the barrier's CTA-scope ordering), then fences at GPU
// scope before the atomicExch that the next holder's CAS reads: the pattern of cooperative
// groups' grid sync (bar.sync; thread 0 fence; atomic).
__device__ __forceinline__ void gc_heap_unlock_word(unsigned long long* w, unsigned long long s) {
    GC_HEAP_CHAOS();
    __threadfence();  // release
    atomicExch(w, s);
}

template <typename Key>
__device__ __forceinline__ void gc_heap_lock_heap(gc_heap<Key>* h) {
    const unsigned long long me = (unsigned long long)blockIdx.x + 1ull;  // the holder (DIAGNOSTICS)
    unsigned ns = 32u;
    volatile unsigned long long* tr = gc_heap_tr(h);
    gc_heap_trace_at(tr, GC_HEAP_AT_LOCK_HEAP, 0ull);
    for (;;) {
        const unsigned long long s = gc_heap_ld(&h->hlock);
        if (s == 0ull && atomicCAS(&h->hlock, 0ull, me) == 0ull) break;
        gc_heap_trace_wait(tr, s);
        gc_heap_backoff(&ns);
    }
    // Taken: "seen" becomes this block's own id before the fence, so a dump that shows the block
    // still at LOCK_HEAP having seen itself says its thread 0 stopped between the CAS and RUN.
    if (tr) tr[1] = me;
    __threadfence();  // acquire
    *(volatile unsigned long long*)&h->hlocks = *(volatile unsigned long long*)&h->hlocks + 1ull;
    GC_HEAP_CHAOS();
    gc_heap_trace_at(tr, GC_HEAP_AT_RUN, 0ull);
    gc_heap_trace_locked(tr);
}

template <typename Key>
__device__ __forceinline__ void gc_heap_unlock_heap(gc_heap<Key>* h) {
    GC_HEAP_CHAOS();
    __threadfence();  // release
    atomicExch(&h->hlock, 0ull);
}

template <typename Key>
__device__ __forceinline__ void gc_heap_fault(gc_heap<Key>* h, unsigned long long code) {
    atomicCAS(&h->error, 0ull, code);
}

// Block-wide copy of n keys, word by word through L2 (ld/st.global.cg) on the global side.
template <typename Key>
__device__ __forceinline__ void gc_heap_load(Key* dst_smem, const Key* src, unsigned n) {
    if (sizeof(Key) % 8 == 0) {
        const unsigned words = n * (unsigned)(sizeof(Key) / 8);
        const unsigned long long* s = (const unsigned long long*)src;
        unsigned long long* d = (unsigned long long*)dst_smem;
        for (unsigned i = threadIdx.x; i < words; i += blockDim.x) d[i] = __ldcg(s + i);
    } else {
        const unsigned words = n * (unsigned)(sizeof(Key) / 4);
        const unsigned* s = (const unsigned*)src;
        unsigned* d = (unsigned*)dst_smem;
        for (unsigned i = threadIdx.x; i < words; i += blockDim.x) d[i] = __ldcg(s + i);
    }
}

template <typename Key>
__device__ __forceinline__ void gc_heap_store(Key* dst, const Key* src_smem, unsigned n) {
    if (sizeof(Key) % 8 == 0) {
        const unsigned words = n * (unsigned)(sizeof(Key) / 8);
        const unsigned long long* s = (const unsigned long long*)src_smem;
        unsigned long long* d = (unsigned long long*)dst;
        for (unsigned i = threadIdx.x; i < words; i += blockDim.x) __stcg(d + i, s[i]);
    } else {
        const unsigned words = n * (unsigned)(sizeof(Key) / 4);
        const unsigned* s = (const unsigned*)src_smem;
        unsigned* d = (unsigned*)dst;
        for (unsigned i = threadIdx.x; i < words; i += blockDim.x) __stcg(d + i, s[i]);
    }
}

// Block-wide copy within shared memory.
template <typename Key>
__device__ __forceinline__ void gc_heap_copy(Key* dst, const Key* src, unsigned n) {
    for (unsigned i = threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
}

// Block-wide bitonic sort of a[0..N) ascending (N a power of two), in shared memory (§4.1).
template <int N, typename Key>
__device__ void gc_heap_bitonic_sort(Key* a) {
    if (N < 2) return;
    for (unsigned size = 2; size <= (unsigned)N; size <<= 1) {
        for (unsigned stride = size >> 1; stride > 0; stride >>= 1) {
            for (unsigned idx = threadIdx.x; idx < (unsigned)N / 2; idx += blockDim.x) {
                const unsigned i = 2u * stride * (idx / stride) + (idx % stride);
                const unsigned j = i + stride;
                const bool up = (i & size) == 0;
                const Key x = a[i], y = a[j];
                if (gc_heap_less(y, x) == up) {
                    a[i] = y;
                    a[j] = x;
                }
            }
            __syncthreads();
        }
    }
}

// Block-wide stable merge path (§4.2; Green et al.): the merge of sorted a[0..na) and b[0..nb)
// (ties: a first), output index i delivered to sink(i, key). Each thread takes a contiguous run
// of outputs, finds where it starts on the cross diagonal by binary search, then merges it.
template <typename Key, typename Sink>
__device__ void gc_heap_merge(const Key* a, unsigned na, const Key* b, unsigned nb, Sink sink) {
    const unsigned n = na + nb;
    const unsigned per = (n + blockDim.x - 1) / blockDim.x;
    const unsigned d0 = threadIdx.x * per;
    if (d0 < n) {
        const unsigned d1 = d0 + per < n ? d0 + per : n;
        unsigned lo = d0 > nb ? d0 - nb : 0u, hi = d0 < na ? d0 : na;
        while (lo < hi) {
            const unsigned mid = (lo + hi) >> 1;
            if (!gc_heap_less(b[d0 - mid - 1], a[mid])) lo = mid + 1; else hi = mid;
        }
        unsigned i = lo, j = d0 - lo;
        for (unsigned d = d0; d < d1; ++d) {
            if (j >= nb || (i < na && !gc_heap_less(b[j], a[i]))) sink(d, a[i++]);
            else sink(d, b[j++]);
        }
    }
    __syncthreads();
}

template <typename Key>
struct gc_heap_to_smem {
    Key* out;
    __device__ void operator()(unsigned i, const Key& k) const { out[i] = k; }
};

// Splits output indices over up to three destinations: [0, n0) -> d0, [n0, n1) -> d1,
// [n1, ...) -> d2 (each destination indexed from its own start).
template <typename Key>
struct gc_heap_to_three {
    Key* d0;
    Key* d1;
    Key* d2;
    unsigned n0, n1;
    __device__ void operator()(unsigned i, const Key& k) const {
        if (i < n0) d0[i] = k;
        else if (i < n1) d1[i - n0] = k;
        else d2[i - n1] = k;
    }
};

template <typename Key>
__device__ __forceinline__ void gc_heap_merge_smem(const Key* a, unsigned na, const Key* b, unsigned nb, Key* out) {
    gc_heap_to_smem<Key> s;
    s.out = out;
    gc_heap_merge(a, na, b, nb, s);
}

template <int K, typename Key>
__device__ __forceinline__ Key* gc_heap_node(gc_heap<Key>* h, unsigned long long i) {
    return h->nodes + i * (unsigned long long)K;
}

// ---- insert ---------------------------------------------------------------------------------------

// Carries ws.a (K keys, sorted) from the root (held, word `root_w`) down to the TARGET t.
template <int K, typename Key>
__device__ void gc_heap_carry_down(gc_heap<Key>* h, const gc_heap_ws<K, Key>& ws, unsigned long long t,
                                   unsigned long long root_w) {
    unsigned long long cur = 1ull, cur_w = root_w;
    for (;;) {
        const unsigned long long next = gc_heap_step_toward(cur, t);
        if (threadIdx.x == 0) {
            ws.ctl->w[0] = gc_heap_lock_node(h, next);
            gc_heap_unlock_word(&h->states[cur], cur_w);  // cur's keys were written before the last barrier
        }
        __syncthreads();
        const unsigned long long next_w = ws.ctl->w[0];
        if (next == t) {
            if (threadIdx.x == 0 && gc_heap_kind(next_w) != GC_HEAP_TARGET) gc_heap_fault(h, GC_HEAP_FAULT_BAD_STATE);
            gc_heap_store(gc_heap_node<K>(h, t), ws.a, K);
            __syncthreads();
            if (threadIdx.x == 0) gc_heap_unlock_word(&h->states[t], GC_HEAP_AVAIL);
            __syncthreads();
            return;
        }
        gc_heap_load(ws.b, gc_heap_node<K>(h, next), K);
        __syncthreads();
        if (gc_heap_less(ws.a[0], ws.b[K - 1])) {
            gc_heap_merge_smem(ws.b, K, ws.a, K, ws.m);
            gc_heap_store(gc_heap_node<K>(h, next), ws.m, K);
            gc_heap_copy(ws.a, ws.m + K, K);
        }
        __syncthreads();
        cur = next;
        cur_w = next_w;  // a tag stays: the node keeps its smallest keys
    }
}

// A partial batch in ws.a[0..n) (sorted), or the first node: through pbuf and the root.
template <int K, typename Key>
__device__ int gc_heap_insert_through_buffer(gc_heap<Key>* h, const gc_heap_ws<K, Key>& ws, unsigned n) {
    gc_heap_ctl* c = ws.ctl;
    if (threadIdx.x == 0) {
        gc_heap_lock_heap(h);
        c->w[0] = *(volatile unsigned long long*)&h->count;
        c->w[1] = *(volatile unsigned long long*)&h->pbuf_len;
    }
    __syncthreads();
    const unsigned long long nodes = c->w[0];
    const unsigned ps = (unsigned)c->w[1];
    gc_heap_load(ws.b, h->pbuf, ps);
    __syncthreads();
    gc_heap_merge_smem(ws.a, n, ws.b, ps, ws.m);  // U
    const unsigned u = n + ps;
    if (nodes == 0ull) {
        if (u >= (unsigned)K) {
            if (threadIdx.x == 0) {
                *(volatile unsigned long long*)&h->count = 1ull;
                const unsigned long long w = gc_heap_lock_node(h, 1);
                if (gc_heap_kind(w) != GC_HEAP_EMPTY) gc_heap_fault(h, GC_HEAP_FAULT_BAD_STATE);
            }
            __syncthreads();
            gc_heap_store(gc_heap_node<K>(h, 1), ws.m, K);
            gc_heap_store(h->pbuf, ws.m + K, u - K);
            __syncthreads();
            if (threadIdx.x == 0) {
                gc_heap_unlock_word(&h->states[1], GC_HEAP_AVAIL);
                *(volatile unsigned long long*)&h->pbuf_len = u - K;
                gc_heap_unlock_heap(h);
            }
        } else {
            gc_heap_store(h->pbuf, ws.m, u);
            __syncthreads();
            if (threadIdx.x == 0) {
                *(volatile unsigned long long*)&h->pbuf_len = u;
                gc_heap_unlock_heap(h);
            }
        }
        __syncthreads();
        return GC_HEAP_OK;
    }
    if (threadIdx.x == 0) {
        c->w[2] = 0ull;  // target (0: no overflow)
        c->w[3] = GC_HEAP_OK;
        if (u >= (unsigned)K) {
            if (nodes == h->capacity) {
                c->w[3] = GC_HEAP_FULL;
            } else {
                *(volatile unsigned long long*)&h->count = nodes + 1ull;
                const unsigned long long t = gc_heap_target(nodes + 1ull);
                const unsigned long long w = gc_heap_lock_node(h, t);
                if (gc_heap_kind(w) != GC_HEAP_EMPTY) gc_heap_fault(h, GC_HEAP_FAULT_BAD_STATE);
                gc_heap_unlock_word(&h->states[t], GC_HEAP_TARGET);
                c->w[2] = t;
            }
        }
        if (c->w[3] == GC_HEAP_OK) c->w[4] = gc_heap_lock_node(h, 1);
        else gc_heap_unlock_heap(h);
    }
    __syncthreads();
    if (c->w[3] != GC_HEAP_OK) return (int)c->w[3];
    const unsigned long long t = c->w[2], root_w = c->w[4];
    gc_heap_load(ws.a, gc_heap_node<K>(h, 1), K);
    __syncthreads();
    // V = root ∪ U: root <- [0, K); no overflow: pbuf <- [K, K + u); overflow: carried (ws.b)
    // <- [K, 2K), pbuf <- [2K, K + u).
    gc_heap_to_three<Key> sink;
    sink.d0 = gc_heap_node<K>(h, 1);
    sink.n0 = K;
    if (t == 0ull) {
        sink.d1 = h->pbuf;
        sink.d2 = h->pbuf;
        sink.n1 = K + u;
    } else {
        sink.d1 = ws.b;
        sink.d2 = h->pbuf;
        sink.n1 = 2u * K;
    }
    gc_heap_merge(ws.a, K, ws.m, u, sink);
    if (threadIdx.x == 0) {
        *(volatile unsigned long long*)&h->pbuf_len = t == 0ull ? u : u - K;
        gc_heap_unlock_heap(h);
        if (t == 0ull) gc_heap_unlock_word(&h->states[1], root_w);
    }
    __syncthreads();
    if (t == 0ull) return GC_HEAP_OK;
    gc_heap_copy(ws.a, ws.b, K);
    __syncthreads();
    gc_heap_carry_down<K>(h, ws, t, root_w);
    return GC_HEAP_OK;
}

// A full batch (ws.a, sorted) while deletes are active: top-down from the root.
template <int K, typename Key>
__device__ int gc_heap_insert_top_down(gc_heap<Key>* h, const gc_heap_ws<K, Key>& ws) {
    gc_heap_ctl* c = ws.ctl;
    if (threadIdx.x == 0) {
        gc_heap_lock_heap(h);
        const unsigned long long n = *(volatile unsigned long long*)&h->count;
        c->w[0] = 0ull;  // path: 0 top-down, 1 buffer, 2 full
        if (n == 0ull) {
            gc_heap_unlock_heap(h);
            c->w[0] = 1ull;
        } else if (n == h->capacity) {
            gc_heap_unlock_heap(h);
            c->w[0] = 2ull;
        } else {
            *(volatile unsigned long long*)&h->count = n + 1ull;
            const unsigned long long t = gc_heap_target(n + 1ull);
            const unsigned long long w = gc_heap_lock_node(h, t);
            if (gc_heap_kind(w) != GC_HEAP_EMPTY) gc_heap_fault(h, GC_HEAP_FAULT_BAD_STATE);
            gc_heap_unlock_word(&h->states[t], GC_HEAP_TARGET);
            c->w[1] = t;
            c->w[2] = gc_heap_lock_node(h, 1);
            gc_heap_unlock_heap(h);
        }
    }
    __syncthreads();
    const unsigned long long path = c->w[0], t = c->w[1], root_w = c->w[2];
    __syncthreads();  // every thread has its copy before thread 0 writes the words again
    if (path == 1ull) return gc_heap_insert_through_buffer<K>(h, ws, K);
    if (path == 2ull) return GC_HEAP_FULL;
    gc_heap_load(ws.b, gc_heap_node<K>(h, 1), K);
    __syncthreads();
    if (gc_heap_less(ws.a[0], ws.b[K - 1])) {
        gc_heap_merge_smem(ws.b, K, ws.a, K, ws.m);
        gc_heap_store(gc_heap_node<K>(h, 1), ws.m, K);
        gc_heap_copy(ws.a, ws.m + K, K);
    }
    __syncthreads();
    gc_heap_carry_down<K>(h, ws, t, root_w);
    return GC_HEAP_OK;
}

// A full batch (ws.a, sorted), no delete active: bottom-up from a new leaf.
template <int K, typename Key>
__device__ int gc_heap_insert_bottom_up(gc_heap<Key>* h, const gc_heap_ws<K, Key>& ws) {
    gc_heap_ctl* c = ws.ctl;
    if (threadIdx.x == 0) {
        const unsigned long long me = atomicAdd(&h->next_owner, 1ull);
        gc_heap_lock_heap(h);
        const unsigned long long n = *(volatile unsigned long long*)&h->count;
        c->w[0] = 0ull;  // path: 0 bottom-up, 1 buffer, 2 full
        if (n == 0ull) {
            gc_heap_unlock_heap(h);
            c->w[0] = 1ull;
        } else if (n == h->capacity) {
            gc_heap_unlock_heap(h);
            c->w[0] = 2ull;
        } else {
            *(volatile unsigned long long*)&h->count = n + 1ull;
            const unsigned long long cn = gc_heap_target(n + 1ull);
            const unsigned long long w = gc_heap_lock_node(h, cn);
            if (gc_heap_kind(w) != GC_HEAP_EMPTY) gc_heap_fault(h, GC_HEAP_FAULT_BAD_STATE);
            gc_heap_unlock_heap(h);
            c->w[1] = cn;
            c->w[2] = me;
        }
    }
    __syncthreads();
    const unsigned long long path = c->w[0], me = c->w[2];
    unsigned long long cn = c->w[1];
    __syncthreads();  // every thread has its copy before thread 0 writes the words again
    if (path == 1ull) return gc_heap_insert_through_buffer<K>(h, ws, K);
    if (path == 2ull) return GC_HEAP_FULL;
    gc_heap_store(gc_heap_node<K>(h, cn), ws.a, K);
    __syncthreads();
    if (threadIdx.x == 0) gc_heap_unlock_word(&h->states[cn], gc_heap_inshold(me));
    unsigned ns = 32u;
    while (cn > 1ull) {
        const unsigned long long p = cn >> 1;
        if (threadIdx.x == 0) {
            // PROGRESS: wait for the parent to be AVAIL by looking (volatile loads), not by
            // locking. Locking p to look at it, and holding it while locking our own node, made
            // waiting inserts into a convoy on the GPU: every waiter held its parent while it
            // spun for its own node, which its own children's waiters held the same way, so the
            // insert that owned a contended INSHOLD node rarely found it unlocked (and at K = 1024
            // on 264 blocks the insert phase could run for minutes). The look decides nothing:
            // under the two locks below the state is checked again.
            volatile unsigned long long* tr = gc_heap_tr(h);
            unsigned look = 32u;
            gc_heap_trace_at(tr, GC_HEAP_AT_WAIT_PARENT, cn);
            for (;;) {
                const unsigned long long s = gc_heap_ld(&h->states[p]);
                if (gc_heap_kind(s) == GC_HEAP_AVAIL && !(s & GC_HEAP_LOCKED)) break;
                gc_heap_trace_wait(tr, s);
                gc_heap_backoff(&look);
            }
            c->w[3] = gc_heap_lock_node(h, p);
            c->w[4] = gc_heap_lock_node(h, cn);
            if (c->w[4] != gc_heap_inshold(me)) gc_heap_fault(h, GC_HEAP_FAULT_BAD_STATE);
        }
        __syncthreads();
        const unsigned long long wp = c->w[3], wc = c->w[4];
        if (gc_heap_kind(wp) != GC_HEAP_AVAIL) {
            // Another insert's batch above ours, or a top-down insert's target not yet written.
            if (threadIdx.x == 0) {
                gc_heap_unlock_word(&h->states[cn], wc);
                gc_heap_unlock_word(&h->states[p], wp);
                volatile unsigned long long* tr = gc_heap_tr(h);
                gc_heap_trace_at(tr, GC_HEAP_AT_WAIT_PARENT, cn);
                gc_heap_trace_wait(tr, wp);
                gc_heap_backoff(&ns);
            }
            __syncthreads();
            continue;
        }
        gc_heap_load(ws.b, gc_heap_node<K>(h, p), K);
        gc_heap_load(ws.b + K, gc_heap_node<K>(h, cn), K);
        __syncthreads();
        // ws.b[0..K) = p, ws.b[K..2K) = c.
        if (!gc_heap_less(ws.b[K], ws.b[K - 1])) {  // max(p) <= min(c): early stop
            __syncthreads();
            if (threadIdx.x == 0) {
                gc_heap_unlock_word(&h->states[cn], GC_HEAP_AVAIL);
                gc_heap_unlock_word(&h->states[p], wp);
            }
            __syncthreads();
            return GC_HEAP_OK;
        }
        if (!gc_heap_less(ws.b[0], ws.b[2 * K - 1])) {  // max(c) <= min(p): swap
            gc_heap_store(gc_heap_node<K>(h, p), ws.b + K, K);
            gc_heap_store(gc_heap_node<K>(h, cn), ws.b, K);
        } else {
            gc_heap_merge_smem(ws.b, K, ws.b + K, K, ws.m);
            gc_heap_store(gc_heap_node<K>(h, p), ws.m, K);
            gc_heap_store(gc_heap_node<K>(h, cn), ws.m + K, K);
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            gc_heap_unlock_word(&h->states[cn], GC_HEAP_AVAIL);
            gc_heap_unlock_word(&h->states[p], p == 1ull ? GC_HEAP_AVAIL : gc_heap_inshold(me));
        }
        __syncthreads();
        cn = p;
    }
    return GC_HEAP_OK;
}

// Inserts n keys (1..K, any order) from `keys` (global or shared memory, not the workspace).
template <int K, typename Key>
__device__ int gc_heap_insert(gc_heap<Key>* h, const Key* keys, unsigned n, void* smem) {
    static_assert(K >= 1 && K <= 1024 && (K & (K - 1)) == 0, "K must be a power of two in 1..1024");
    const gc_heap_ws<K, Key> ws = gc_heap_ws_at<K, Key>(smem);
    if (n == 0u) return GC_HEAP_OK;
    if (n > (unsigned)K) return GC_HEAP_TOO_LARGE;
    if (threadIdx.x == 0 && h->k != (unsigned long long)K) gc_heap_fault(h, GC_HEAP_FAULT_K_MISMATCH);
    for (unsigned i = threadIdx.x; i < (unsigned)K; i += blockDim.x)
        ws.a[i] = i < n ? keys[i] : gc_heap_key_traits<Key>::max();
    __syncthreads();
    gc_heap_bitonic_sort<K>(ws.a);
    if (n < (unsigned)K) return gc_heap_insert_through_buffer<K>(h, ws, n);
    if (threadIdx.x == 0) {
        // PROGRESS: a delete announced in `mode` waits until the bottom-up count reads 0. Were
        // every full insert to count itself in (and at once out again) while a delete is
        // announced, many blocks inserting would keep that count above 0 at most of the
        // delete's polls. So look first, with a plain volatile read: a delete already announced
        // sends this insert top-down with no write to `mode`. Only the RMW decides (a delete
        // announced after the look is seen in `before`), so this changes no outcome.
        if (gc_heap_ld(&h->mode) >= GC_HEAP_DELETE_UNIT) {
            ws.ctl->w[7] = 1ull;
        } else {
            const unsigned long long before = atomicAdd(&h->mode, 1ull);
            ws.ctl->w[7] = before >= GC_HEAP_DELETE_UNIT;
            if (ws.ctl->w[7]) atomicAdd(&h->mode, 0ull - 1ull);  // (no 64-bit atomicSub)
        }
    }
    __syncthreads();
    if (ws.ctl->w[7]) return gc_heap_insert_top_down<K>(h, ws);
    const int r = gc_heap_insert_bottom_up<K>(h, ws);
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();  // release: our nodes before the count-out a delete waits for
        atomicAdd(&h->mode, 0ull - 1ull);
    }
    __syncthreads();
    return r;
}

// ---- delete-min -------------------------------------------------------------------------------------

// Sifts the carried batch ws.a down from the root, which thread 0 holds.
template <int K, typename Key>
__device__ void gc_heap_sift_down(gc_heap<Key>* h, const gc_heap_ws<K, Key>& ws) {
    gc_heap_ctl* c = ws.ctl;
    unsigned long long cur = 1ull;
    for (;;) {
        const unsigned long long l = 2ull * cur, r = l + 1ull;
        if (l >= h->slots) {
            gc_heap_store(gc_heap_node<K>(h, cur), ws.a, K);
            __syncthreads();
            if (threadIdx.x == 0) gc_heap_unlock_word(&h->states[cur], GC_HEAP_AVAIL);
            __syncthreads();
            return;
        }
        if (threadIdx.x == 0) {
            c->w[0] = gc_heap_lock_node(h, l);
            c->w[1] = gc_heap_lock_node(h, r);
            if (gc_heap_kind(c->w[0]) == GC_HEAP_INSHOLD || gc_heap_kind(c->w[1]) == GC_HEAP_INSHOLD)
                gc_heap_fault(h, GC_HEAP_FAULT_BAD_STATE);
        }
        __syncthreads();
        const unsigned long long wl = c->w[0], wr = c->w[1];
        const bool pl = gc_heap_kind(wl) == GC_HEAP_AVAIL, pr = gc_heap_kind(wr) == GC_HEAP_AVAIL;
        if (!pl && !pr) {
            gc_heap_store(gc_heap_node<K>(h, cur), ws.a, K);
            __syncthreads();
            if (threadIdx.x == 0) {
                gc_heap_unlock_word(&h->states[r], wr);
                gc_heap_unlock_word(&h->states[l], wl);
                gc_heap_unlock_word(&h->states[cur], GC_HEAP_AVAIL);
            }
            __syncthreads();
            return;
        }
        if (pl && pr) {
            gc_heap_load(ws.b, gc_heap_node<K>(h, l), K);
            gc_heap_load(ws.b + K, gc_heap_node<K>(h, r), K);
            __syncthreads();
            const Key hi_min = gc_heap_less(ws.b[K], ws.b[0]) ? ws.b[K] : ws.b[0];
            if (!gc_heap_less(hi_min, ws.a[K - 1])) {  // max(Z) <= min(l ∪ r): done
                gc_heap_store(gc_heap_node<K>(h, cur), ws.a, K);
                __syncthreads();
                if (threadIdx.x == 0) {
                    gc_heap_unlock_word(&h->states[r], wr);
                    gc_heap_unlock_word(&h->states[l], wl);
                    gc_heap_unlock_word(&h->states[cur], GC_HEAP_AVAIL);
                }
                __syncthreads();
                return;
            }
            // lo goes to the child with the larger maximum; continue at the other.
            const bool left_larger = gc_heap_less(ws.b[2 * K - 1], ws.b[K - 1]);
            const unsigned long long t = left_larger ? l : r, o = left_larger ? r : l;
            gc_heap_merge_smem(ws.b, K, ws.b + K, K, ws.m);  // hi = m[0, K), lo = m[K, 2K)
            gc_heap_store(gc_heap_node<K>(h, t), ws.m + K, K);
            gc_heap_merge_smem(ws.a, K, ws.m, K, ws.b);  // cur = b[0, K), Z = b[K, 2K)
            gc_heap_store(gc_heap_node<K>(h, cur), ws.b, K);
            gc_heap_copy(ws.a, ws.b + K, K);
            __syncthreads();
            if (threadIdx.x == 0) {
                gc_heap_unlock_word(&h->states[t], GC_HEAP_AVAIL);
                gc_heap_unlock_word(&h->states[cur], GC_HEAP_AVAIL);
            }
            __syncthreads();
            cur = o;  // still held
            continue;
        }
        // One child present.
        const unsigned long long x = pl ? l : r, wx = pl ? wl : wr;
        if (threadIdx.x == 0) {
            if (pl) gc_heap_unlock_word(&h->states[r], wr);
            else gc_heap_unlock_word(&h->states[l], wl);
        }
        gc_heap_load(ws.b, gc_heap_node<K>(h, x), K);
        __syncthreads();
        if (!gc_heap_less(ws.b[0], ws.a[K - 1])) {  // max(Z) <= min(x): done
            gc_heap_store(gc_heap_node<K>(h, cur), ws.a, K);
            __syncthreads();
            if (threadIdx.x == 0) {
                gc_heap_unlock_word(&h->states[x], wx);
                gc_heap_unlock_word(&h->states[cur], GC_HEAP_AVAIL);
            }
            __syncthreads();
            return;
        }
        gc_heap_merge_smem(ws.a, K, ws.b, K, ws.m);
        gc_heap_store(gc_heap_node<K>(h, cur), ws.m, K);
        gc_heap_copy(ws.a, ws.m + K, K);
        __syncthreads();
        if (threadIdx.x == 0) gc_heap_unlock_word(&h->states[cur], GC_HEAP_AVAIL);
        __syncthreads();
        cur = x;  // still held
    }
}

// Removes the K smallest keys into out (sorted), or with no node left the whole pbuf; returns
// how many (0: empty). `out` is global or shared memory, not the workspace.
template <int K, typename Key>
__device__ unsigned gc_heap_delete_min(gc_heap<Key>* h, Key* out, void* smem) {
    static_assert(K >= 1 && K <= 1024 && (K & (K - 1)) == 0, "K must be a power of two in 1..1024");
    const gc_heap_ws<K, Key> ws = gc_heap_ws_at<K, Key>(smem);
    gc_heap_ctl* c = ws.ctl;
    if (threadIdx.x == 0) {
        if (h->k != (unsigned long long)K) gc_heap_fault(h, GC_HEAP_FAULT_K_MISMATCH);
        atomicAdd(&h->mode, GC_HEAP_DELETE_UNIT);
        volatile unsigned long long* tr = gc_heap_tr(h);
        gc_heap_trace_at(tr, GC_HEAP_AT_WAIT_MODE, 0ull);
        unsigned ns = 32u;
        for (;;) {
            const unsigned long long m = gc_heap_ld(&h->mode);
            if (!(m & GC_HEAP_BOTTOM_UP_MASK)) break;
            gc_heap_trace_wait(tr, m);
            gc_heap_backoff(&ns);
        }
        __threadfence();  // acquire: the bottom-up inserts we waited for
        gc_heap_lock_heap(h);
        const unsigned long long n = *(volatile unsigned long long*)&h->count;
        c->w[0] = n;
        c->w[1] = *(volatile unsigned long long*)&h->pbuf_len;
        if (n > 0ull) c->w[2] = gc_heap_lock_node(h, 1);
    }
    __syncthreads();
    // Read once, here: on the paths below thread 0 reuses the words (the sift-down's locks)
    // while a lagging warp may not have read them yet.
    const unsigned long long n = c->w[0];
    const unsigned ps = (unsigned)c->w[1];
    unsigned result = K;
    if (n == 0ull) {
        result = ps;
        gc_heap_load(out, h->pbuf, result);  // (out may be global: the cg path is fine for both)
        __syncthreads();
        if (threadIdx.x == 0) {
            *(volatile unsigned long long*)&h->pbuf_len = 0ull;
            gc_heap_unlock_heap(h);
        }
    } else {
        gc_heap_load(out, gc_heap_node<K>(h, 1), K);
        __syncthreads();
        if (n == 1ull) {
            if (threadIdx.x == 0) {
                *(volatile unsigned long long*)&h->count = 0ull;
                gc_heap_unlock_word(&h->states[1], GC_HEAP_EMPTY);
                gc_heap_unlock_heap(h);
            }
        } else {
            const unsigned long long last = gc_heap_target(n);
            if (threadIdx.x == 0) {
                *(volatile unsigned long long*)&h->count = n - 1ull;
                // PROGRESS: while `last` is TARGET, a top-down insert ahead of us is still carrying
                // its keys down, and it must lock `last` to write them. Wait by looking (volatile
                // loads), holding no lock on `last`: a wait that locked `last` to look at it,
                // unlocked and backed off starved that insert on an H100 (issue 12, K = 1 on 256
                // blocks: the delete took and released `last` in every round, and the insert's
                // CAS, issued after its load had seen `last` unlocked, failed 15 million times in
                // a row; every waiting block backed off exactly as often in the watchdog's second,
                // so the sleeps end on common timer ticks and the race came out the same way in
                // every round). Nothing makes `last` TARGET again while we hold hlock (allocations
                // happen under it), so the look is final; the kind is checked again under the lock.
                volatile unsigned long long* tr = gc_heap_tr(h);
                unsigned ns = 32u;
                for (;;) {
                    gc_heap_trace_at(tr, GC_HEAP_AT_WAIT_LAST, last);
                    for (;;) {
                        const unsigned long long s = gc_heap_ld(&h->states[last]);
                        if (gc_heap_kind(s) != GC_HEAP_TARGET) break;
                        gc_heap_trace_wait(tr, s);
                        gc_heap_backoff(&ns);
                    }
                    const unsigned long long w = gc_heap_lock_node(h, last);
                    if (gc_heap_kind(w) != GC_HEAP_TARGET) {
                        if (gc_heap_kind(w) != GC_HEAP_AVAIL) gc_heap_fault(h, GC_HEAP_FAULT_BAD_STATE);
                        break;
                    }
                    gc_heap_unlock_word(&h->states[last], w);  // (not reached: see above)
                }
            }
            __syncthreads();
            gc_heap_load(ws.a, gc_heap_node<K>(h, last), K);  // Z
            __syncthreads();
            if (threadIdx.x == 0) gc_heap_unlock_word(&h->states[last], GC_HEAP_EMPTY);
            if (ps > 0u) {
                gc_heap_load(ws.b, h->pbuf, ps);
                __syncthreads();
                if (gc_heap_less(ws.b[0], ws.a[K - 1])) {  // exchange: Z keeps the K smallest (P3)
                    gc_heap_to_three<Key> sink;
                    sink.d0 = ws.m;
                    sink.d1 = h->pbuf;
                    sink.d2 = h->pbuf;
                    sink.n0 = K;
                    sink.n1 = K + ps;
                    gc_heap_merge(ws.a, K, ws.b, ps, sink);
                    gc_heap_copy(ws.a, ws.m, K);
                }
                __syncthreads();
            }
            if (threadIdx.x == 0) gc_heap_unlock_heap(h);
            gc_heap_sift_down<K>(h, ws);
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(&h->mode, 0ull - GC_HEAP_DELETE_UNIT);
    }
    __syncthreads();
    return result;
}

// Keys in the heap (thread 0; exact at a quiescent point, a snapshot under hlock otherwise).
template <int K, typename Key>
__device__ unsigned long long gc_heap_len(gc_heap<Key>* h) {
    gc_heap_lock_heap(h);
    const unsigned long long n =
        *(volatile unsigned long long*)&h->count * (unsigned long long)K + *(volatile unsigned long long*)&h->pbuf_len;
    gc_heap_unlock_heap(h);
    return n;
}

#endif  // GPU_CILK_HEAP_CUH

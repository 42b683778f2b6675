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
// `keys` must not alias it. K is a power of two up to 4096; above 48 KiB (K = 2048 with 8-byte
// keys: 80 KiB) the launcher must raise the kernel's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
// (an H100 block may have 227 KiB: K = 4096 with 8-byte keys, K = 2048 with 16-byte keys).
//
// KEYS are gc_heap_key<P, V>: (priority, payload), P and V unsigned integer types (u32 or u64),
// ordered by priority then payload (smaller first). Map other priorities through an
// order-preserving unsigned image (gc_heap_prio_f32 / gc_heap_prio_i32 / gc_heap_prio_i64).
// Any other key type works with an overload of gc_heap_less and gc_heap_key_max.
//
// LAYOUT. gc_heap<Key> is 256 bytes, 32 8-byte words (mirror it on the host with a #[repr(C)]
// struct: nodes, states, pbuf, k, capacity, slots, count, pbuf_len, hlock, next_owner, error,
// trace, hlocks, tune, prof, 1 pad, mode, 15 pad). The host allocates `slots * K` keys for `nodes` (node i at nodes + i*K;
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
// the right sibling after the left, a descendant after the root, the fused delete's 1, 2, 3,
// last): no deadlock. One exception, safe: a sift-down may wait for the left child while holding
// the right (TUNING bit 1), since only a node's holder ever locks both its children. A bottom-up
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
//     make it EMPTY; Z and pbuf exchange so Z holds the K smallest; release hlock. (Fused, the
//     default from 4 nodes on, TUNING: the root, its children 2 and 3 and the last node are all
//     locked before anything is read, one load phase brings them in, and the sift-down's first
//     level finds the children held; the same moves, fewer round trips under the root.) Sift down
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
//   - lock: thread 0 atomicCAS(w, s, s | LOCKED) from an unlocked s, then a fence (acquire;
//     gc_heap_fence: fence.acq_rel.gpu, or __threadfence() with TUNING bit 2), then
//     __syncthreads() so the block reads keys only after the lock is held.
//   - unlock: __syncthreads() (the block's key writes are done), thread 0 fences (release),
//     atomicExch(w, new word). One fence serves several locks taken back to back (the fused
//     delete's four, a sift-down's two children) or released together (a sift-down step's two
//     nodes; the fused delete's last node and hlock); a fence.acq_rel after a CAS and before an
//     exchange is both the acquire and the release (a bottom-up insert's leaf and hlock). The
//     next holder's CAS reads that word, so every key written under the lock happens-before every
//     access of the next holder. Keys are read with
//     ld.global.cg (L2, never a stale L1 line) and written with st.global.cg.
//   - hlock: the same with atomicCAS(0 -> blockIdx.x + 1) / atomicExch(0); count, pbuf_len and
//     hlocks are plain accesses by thread 0 under it (volatile, so they are not cached in registers across it).
//   - mode: atomicAdd of +-1 or +-2^32 (a total order on one word: an insert's count-in and a
//     delete's announcement see each other in one direction); a bottom-up insert does
//     __threadfence() before leaving (release), a waiting delete polls with volatile loads and
//     __threadfence() after (acquire).
//   - next_owner: atomicAdd (uniqueness only). error: atomicCAS(0 -> code) (first fault wins).
//
// PROGRESS. Waits spin with __nanosleep back-off. Lock holders never wait for a smaller index
// (but a sibling: LOCKS); a bottom-up insert waits only for the batch above it or a top-down
// insert's target, and it waits by looking at the parent's state word, holding no lock (it locks
// the parent and its own node only once the parent looks AVAIL and unlocked, and checks again
// under the locks): a waiter that
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
    unsigned long long tune;         // implementation switches (TUNING; 0: the defaults)
    unsigned long long* prof;        // per-block phase counters (PROFILE), null: off
    unsigned long long pad0;
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

// ---- tuning and profile ---------------------------------------------------------------------------
//
// TUNING. gc_heap::tune selects implementation variants that move the same keys under the same
// locks in the same order of linearization (ALGORITHM and INVARIANTS hold for every value); the
// benchmark sweeps them (`gpu_suite --only heap --heap-tune ...`). 0 is the default, the fastest
// measured or best guessed; the bits turn optimizations off, the fields set back-off caps:
//   bit 0 GC_HEAP_TUNE_PLAIN_DELETE  a delete locks the root, copies it out, locks and copies the
//         last node, exchanges with pbuf and releases hlock before the sift-down locks the root's
//         children (one lock, one barrier and one load at a time). Off (default): the FUSED
//         delete (with count >= 4): thread 0 locks the root, its children 2 and 3 and the last
//         node back to back (their compare-and-swaps in flight together, one acquire fence), then
//         one barrier and one load phase bring in the root (the result), the last node (Z), both
//         children and pbuf, and the sift-down's first level runs on what is already loaded.
//         Lock order stays 1, 2, 3, last (last >= 4): increasing, as LOCKS requires.
//   bit 1 GC_HEAP_TUNE_SERIAL_PAIR   the sift-down locks the left child, then the right, each with
//         its own wait and fence. Off (default): both compare-and-swaps are issued at once and one
//         acquire fence follows; a child found locked is waited for while the other may be held.
//         That is outside the increasing-index order, and safe: only the holder of a node ever
//         locks both its children, so whoever holds the left child waits only for its own
//         descendants, never for the right child or the parent (no cycle).
//   bit 2 GC_HEAP_TUNE_SC_FENCES     locks acquire and release with __threadfence() (fence.sc.gpu).
//         Off (default): fence.acq_rel.gpu, which is all MEMORY ORDERING needs (the simulation
//         always uses its sequentially consistent fence).
//   bit 3 GC_HEAP_TUNE_LOAD_FIRST    every lock looks at the word (a volatile load) before its first
//         compare-and-swap. Off (default): the first compare-and-swap guesses the word (AVAIL, or
//         EMPTY for a node being allocated): one round trip to L2 instead of two when it is free.
//   bits 8-23  hot cap: the back-off cap (gc_heap_backoff) of the waits every operation behind
//         the waiter queues on, each with one waiter: the root-lock wait of an operation holding
//         hlock, and a sift-down's (paired or fused) wait for children, which the previous delete
//         holds one level down (0: 32 ns, i.e. sleeps of 32 ns, polling by compare-and-swap).
//   bits 24-39 hlock cap: the back-off cap of the hlock wait (0: 1024).
//   bits 40-55 node cap: the back-off cap of every other wait (0: 1024).
// Every block of a launch must see the same word (set it before the launch, never during one).
// GC_HEAP_TUNE_LEGACY is the implementation before these switches (issue 12, 2026-11-26).
#define GC_HEAP_TUNE_PLAIN_DELETE 1ull
#define GC_HEAP_TUNE_SERIAL_PAIR 2ull
#define GC_HEAP_TUNE_SC_FENCES 4ull
#define GC_HEAP_TUNE_LOAD_FIRST 8ull
#define GC_HEAP_TUNE_HOT_SHIFT 8
#define GC_HEAP_TUNE_HLOCK_SHIFT 24
#define GC_HEAP_TUNE_NODE_SHIFT 40
#define GC_HEAP_TUNE_LEGACY (15ull | (1024ull << GC_HEAP_TUNE_HOT_SHIFT))

template <typename Key>
__device__ __forceinline__ unsigned long long gc_heap_tune(const gc_heap<Key>* h) {
    return h->tune;  // set by the host before the launch, constant during it
}
__device__ __forceinline__ unsigned gc_heap_cap(unsigned long long tune, int shift, unsigned dflt) {
    const unsigned c = (unsigned)((tune >> shift) & 0xffffull);
    return c ? c : dflt;
}
__device__ __forceinline__ unsigned gc_heap_hot_cap(unsigned long long t) { return gc_heap_cap(t, GC_HEAP_TUNE_HOT_SHIFT, 32u); }
__device__ __forceinline__ unsigned gc_heap_hlock_cap(unsigned long long t) { return gc_heap_cap(t, GC_HEAP_TUNE_HLOCK_SHIFT, 1024u); }
__device__ __forceinline__ unsigned gc_heap_node_cap(unsigned long long t) { return gc_heap_cap(t, GC_HEAP_TUNE_NODE_SHIFT, 1024u); }

// Thread 0: the fence of an acquire (after a relaxed RMW) or a release (before one).
__device__ __forceinline__ void gc_heap_fence(unsigned long long tune) {
#ifndef GC_HOST_SIM
    if (!(tune & GC_HEAP_TUNE_SC_FENCES)) {
        asm volatile("fence.acq_rel.gpu;" ::: "memory");
        return;
    }
#endif
    (void)tune;
    __threadfence();
}

// PROFILE (compile with -DGC_HEAP_PROFILE; without it every call below compiles to nothing).
// With gc_heap::prof set, thread 0 of block b adds clock64() cycles per phase into
// prof[b * GC_HEAP_PROF_WORDS + GC_HEAP_P_*] (plain adds: one writer per block), and the first and
// last clock64()/globaltimer pair it saw (so the host converts cycles to ns). Phases:
#define GC_HEAP_PROF_WORDS 32
#define GC_HEAP_P_DEL_OPS 0         // deletes
#define GC_HEAP_P_DEL_TOTAL 1       // whole delete-min calls
#define GC_HEAP_P_DEL_WAIT_MODE 2   // announce -> no bottom-up insert in flight
#define GC_HEAP_P_DEL_WAIT_HLOCK 3  // -> hlock held
#define GC_HEAP_P_DEL_WAIT_ROOT 4   // hlock held -> root locked
#define GC_HEAP_P_DEL_ROOT_HLOCK 5  // root locked -> hlock released (fused: 2, 3, last, loads)
#define GC_HEAP_P_DEL_ROOT_REST 6   // hlock released -> root released (first sift level)
#define GC_HEAP_P_DEL_BELOW 7       // root released -> done (sift-down below the root)
#define GC_HEAP_P_DEL_LEVELS 8      // sift-down levels (count)
#define GC_HEAP_P_DEL_LOCK_WAIT 9   // of BELOW: waiting for children's locks
#define GC_HEAP_P_DEL_WAIT_KIDS 10  // of the root's hold: locking the root's children (2, 3)
#define GC_HEAP_P_DEL_LVL_LOAD 11   // of a two-child level (root's or below): loading the children
#define GC_HEAP_P_INS_OPS 12        // inserts
#define GC_HEAP_P_INS_TOTAL 13      // whole insert calls
#define GC_HEAP_P_INS_SORT 14       // the batch's bitonic sort
#define GC_HEAP_P_INS_WAIT_HLOCK 15 // -> hlock held
#define GC_HEAP_P_INS_HOLD_HLOCK 16 // hlock held -> released
#define GC_HEAP_P_INS_LEVELS 18     // bottom-up levels climbed (count)
#define GC_HEAP_P_INS_TOP_DOWN 19   // top-down and through-buffer inserts (count)
#define GC_HEAP_P_INS_WAIT_PARENT 20 // bottom-up: waiting for the parent AVAIL and the locks
#define GC_HEAP_P_DEL_LVL_MERGE1 21 // of a two-child level: merging the children, storing lo
#define GC_HEAP_P_DEL_LVL_MERGE2 22 // then merging the carried batch with hi, storing the parent
#define GC_HEAP_P_DEL_LVL_UNLOCK 23 // then the release fence and the two unlocks
#define GC_HEAP_P_DEL_LVL_N 24      // two-child levels (count)
#define GC_HEAP_P_IN_INSERT 26     // (scratch) 1 while the block is in an insert
#define GC_HEAP_P_HLOCK_AT 27      // (scratch) when the block took hlock in an insert
#define GC_HEAP_P_CLK0 28           // first clock64() seen (0: none yet)
#define GC_HEAP_P_GT0 29            // globaltimer then
#define GC_HEAP_P_CLK1 30           // last clock64() seen
#define GC_HEAP_P_GT1 31            // globaltimer then

__device__ __forceinline__ long long gc_heap_prof_now() {
#ifdef GC_HEAP_PROFILE
    return clock64();
#else
    return 0;
#endif
}

// Thread 0: adds `v` to this block's counter `slot`.
template <typename Key>
__device__ __forceinline__ void gc_heap_prof_add(const gc_heap<Key>* h, unsigned slot, long long v) {
#ifdef GC_HEAP_PROFILE
    unsigned long long* p = h->prof;
    if (p) p[(unsigned long long)blockIdx.x * GC_HEAP_PROF_WORDS + slot] += (unsigned long long)v;
#else
    (void)h;
    (void)slot;
    (void)v;
#endif
}

// Thread 0: sets this block's counter `slot` to `v`.
template <typename Key>
__device__ __forceinline__ void gc_heap_prof_set(const gc_heap<Key>* h, unsigned slot, long long v) {
#ifdef GC_HEAP_PROFILE
    unsigned long long* p = h->prof;
    if (p) p[(unsigned long long)blockIdx.x * GC_HEAP_PROF_WORDS + slot] = (unsigned long long)v;
#else
    (void)h;
    (void)slot;
    (void)v;
#endif
}

// Thread 0: this block's counter `slot` (0 when profiling is off).
template <typename Key>
__device__ __forceinline__ long long gc_heap_prof_get(const gc_heap<Key>* h, unsigned slot) {
#ifdef GC_HEAP_PROFILE
    const unsigned long long* p = h->prof;
    return p ? (long long)p[(unsigned long long)blockIdx.x * GC_HEAP_PROF_WORDS + slot] : 0;
#else
    (void)h;
    (void)slot;
    return 0;
#endif
}

// Thread 0: adds the cycles since *t0 to `slot` and moves *t0 to now.
template <typename Key>
__device__ __forceinline__ void gc_heap_prof_lap(const gc_heap<Key>* h, unsigned slot, long long* t0) {
#ifdef GC_HEAP_PROFILE
    const long long t = clock64();
    gc_heap_prof_add(h, slot, t - *t0);
    *t0 = t;
#else
    (void)h;
    (void)slot;
    (void)t0;
#endif
}

// Thread 0: records the clock/globaltimer pair (first call: also as the first pair).
template <typename Key>
__device__ __forceinline__ void gc_heap_prof_mark(const gc_heap<Key>* h) {
#ifdef GC_HEAP_PROFILE
    unsigned long long* p = h->prof;
    if (!p) return;
    p += (unsigned long long)blockIdx.x * GC_HEAP_PROF_WORDS;
    unsigned long long g;
#ifdef GC_HOST_SIM
    g = gc_sim_globaltimer();
#else
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g));
#endif
    const unsigned long long c = (unsigned long long)clock64();
    if (p[GC_HEAP_P_CLK0] == 0ull) {
        p[GC_HEAP_P_CLK0] = c;
        p[GC_HEAP_P_GT0] = g;
    }
    p[GC_HEAP_P_CLK1] = c;
    p[GC_HEAP_P_GT1] = g;
#else
    (void)h;
#endif
}

// ---- helpers ------------------------------------------------------------------------------------

__device__ __forceinline__ unsigned long long gc_heap_kind(unsigned long long s) { return s & GC_HEAP_KIND_MASK; }
__device__ __forceinline__ unsigned long long gc_heap_inshold(unsigned long long owner) {
    return (owner << GC_HEAP_OWNER_SHIFT) | GC_HEAP_INSHOLD;
}

__device__ __forceinline__ unsigned long long gc_heap_ld(const unsigned long long* p) {
    return *(const volatile unsigned long long*)p;
}

// Sleeps *ns, then lets the next sleep grow (x2 + 32) while it is below `cap` (1024: sleeps of
// 32, 96, 224, 480, 992, then 2016 ns for good).
__device__ __forceinline__ void gc_heap_backoff(unsigned* ns, unsigned cap = 1024u) {
    __nanosleep(*ns);
    if (*ns < cap) *ns = *ns * 2u + 32u;
}

// The first sleep of a wait whose sleeps grow while below `cap` (32 ns, or `cap` when smaller).
__device__ __forceinline__ unsigned gc_heap_first_sleep(unsigned cap) { return cap < 32u ? cap : 32u; }

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

// Thread 0: takes the lock of node word `w` (node `node`, for the trace) with no fence; returns the
// unlocked word it held. The first compare-and-swap guesses `guess` (the word the node most likely
// holds, e.g. AVAIL; with the LOCKED bit set: no guess, look first), so an uncontended lock costs
// one round trip to L2, not a load and a CAS; a
// failed CAS that saw the word unlocked tries again at once with what it saw. While the word is
// locked it backs off (cap: gc_heap_backoff) and looks again with a volatile load, or, `hot`, with
// another guessing CAS (one round trip from the release to the lock, for the one waiter of a hot
// lock). `seen`: the word a compare-and-swap of the caller's just returned (first tried as is).
// Callers fence (gc_heap_fence) before they touch what the lock covers.
__device__ __forceinline__ unsigned long long gc_heap_take_word(unsigned long long* w, volatile unsigned long long* tr,
                                                                unsigned long long node, unsigned long long guess,
                                                                unsigned cap, bool hot,
                                                                unsigned long long seen = ~0ull) {
    unsigned ns = gc_heap_first_sleep(cap);
    gc_heap_trace_at(tr, GC_HEAP_AT_LOCK_NODE, node);
    const bool guessing = !(guess & GC_HEAP_LOCKED);  // a locked guess: look first (TUNING bit 3)
    unsigned long long s = seen != ~0ull ? seen : guessing ? guess : gc_heap_ld(w);
    for (;;) {
        while (!(s & GC_HEAP_LOCKED)) {
            const unsigned long long old = atomicCAS(w, s, s | GC_HEAP_LOCKED);
            if (old == s) {
                gc_heap_trace_at(tr, GC_HEAP_AT_RUN, node);
                gc_heap_trace_locked(tr);
                GC_HEAP_CHAOS();
                return s;
            }
            s = old;
        }
        gc_heap_trace_wait(tr, s);
        gc_heap_backoff(&ns, cap);
        s = hot && guessing ? guess : gc_heap_ld(w);
    }
}

// Thread 0: lock node word `w` (node `node`, for the trace); returns the unlocked word it held.
// ORDERING: the CAS reads the word the previous holder's atomicExch wrote after its fence;
// the fence after the CAS makes every key that holder wrote (st.global.cg or plain stores, all
// before its block's barrier and fence) visible to this block's loads after its next barrier.
// The spin re-reads with a volatile load (never a value kept in a register or a stale L1 line).
__device__ __forceinline__ unsigned long long gc_heap_lock_word(unsigned long long* w, volatile unsigned long long* tr,
                                                                unsigned long long node, unsigned long long tune,
                                                                unsigned long long guess, unsigned cap, bool hot) {
    const unsigned long long s = gc_heap_take_word(w, tr, node, guess, cap, hot);
    gc_heap_fence(tune);  // acquire
    return s;
}

// The first guess of a lock expecting `w`: `w`, or no guess (LOCKED) with TUNING bit 3.
__device__ __forceinline__ unsigned long long gc_heap_guess(unsigned long long tune, unsigned long long w) {
    return (tune & GC_HEAP_TUNE_LOAD_FIRST) ? GC_HEAP_LOCKED : w;
}

// Thread 0: lock node `i` of `h` (an ordinary wait; the guess: AVAIL).
template <typename Key>
__device__ __forceinline__ unsigned long long gc_heap_lock_node(gc_heap<Key>* h, unsigned long long i) {
    const unsigned long long t = gc_heap_tune(h);
    return gc_heap_lock_word(&h->states[i], gc_heap_tr(h), i, t, gc_heap_guess(t, GC_HEAP_AVAIL), gc_heap_node_cap(t),
                             false);
}

// Thread 0: lock node `i` of `h` expecting `guess` (EMPTY for a node being allocated).
template <typename Key>
__device__ __forceinline__ unsigned long long gc_heap_lock_node_as(gc_heap<Key>* h, unsigned long long i,
                                                                   unsigned long long guess) {
    const unsigned long long t = gc_heap_tune(h);
    return gc_heap_lock_word(&h->states[i], gc_heap_tr(h), i, t, gc_heap_guess(t, guess), gc_heap_node_cap(t), false);
}

// Thread 0, holding hlock: lock the root, the lock every operation behind this one queues on
// (the hot cap; legacy: an ordinary wait).
template <typename Key>
__device__ __forceinline__ unsigned long long gc_heap_lock_root(gc_heap<Key>* h) {
    const unsigned long long t = gc_heap_tune(h);
    return gc_heap_lock_word(&h->states[1], gc_heap_tr(h), 1ull, t, gc_heap_guess(t, GC_HEAP_AVAIL),
                             gc_heap_hot_cap(t), !(t & GC_HEAP_TUNE_SC_FENCES));
}

// Thread 0: sets node word `w` to `s` (unlocked), with no fence: after gc_heap_fence (release),
// which one fence may cover for several words.
__device__ __forceinline__ void gc_heap_set_word(unsigned long long* w, unsigned long long s) {
    GC_HEAP_CHAOS();
    atomicExch(w, s);
}

// Thread 0: unlock node word `w`, leaving `s`. ORDERING (release): every caller reaches this
// after a __syncthreads() that follows the block's last key write under the lock (so those
// writes happen-before thread 0's fence by the barrier's CTA-scope ordering), then fences at GPU
// scope before the atomicExch that the next holder's CAS reads: the pattern of cooperative
// groups' grid sync (bar.sync; thread 0 fence; atomic).
template <typename Key>
__device__ __forceinline__ void gc_heap_unlock(gc_heap<Key>* h, unsigned long long i, unsigned long long s) {
    GC_HEAP_CHAOS();
    gc_heap_fence(gc_heap_tune(h));  // release
    atomicExch(&h->states[i], s);
}

template <typename Key>
__device__ __forceinline__ void gc_heap_lock_heap(gc_heap<Key>* h) {
    const unsigned long long me = (unsigned long long)blockIdx.x + 1ull;  // the holder (DIAGNOSTICS)
    const unsigned long long tune = gc_heap_tune(h);
    const long long p0 = gc_heap_prof_now();
    const unsigned cap = gc_heap_hlock_cap(tune);
    unsigned ns = gc_heap_first_sleep(cap);
    volatile unsigned long long* tr = gc_heap_tr(h);
    gc_heap_trace_at(tr, GC_HEAP_AT_LOCK_HEAP, 0ull);
    for (;;) {
        const unsigned long long s = gc_heap_ld(&h->hlock);
        if (s == 0ull && atomicCAS(&h->hlock, 0ull, me) == 0ull) break;
        gc_heap_trace_wait(tr, s);
        gc_heap_backoff(&ns, cap);
    }
    // Taken: "seen" becomes this block's own id before the fence, so a dump that shows the block
    // still at LOCK_HEAP having seen itself says its thread 0 stopped between the CAS and RUN.
    if (tr) tr[1] = me;
    gc_heap_fence(tune);  // acquire
    *(volatile unsigned long long*)&h->hlocks = *(volatile unsigned long long*)&h->hlocks + 1ull;
    if (gc_heap_prof_get(h, GC_HEAP_P_IN_INSERT)) {  // (PROFILE: deletes time their own phases)
        const long long p1 = gc_heap_prof_now();
        gc_heap_prof_add(h, GC_HEAP_P_INS_WAIT_HLOCK, p1 - p0);
        gc_heap_prof_set(h, GC_HEAP_P_HLOCK_AT, p1);
    }
    GC_HEAP_CHAOS();
    gc_heap_trace_at(tr, GC_HEAP_AT_RUN, 0ull);
    gc_heap_trace_locked(tr);
}

template <typename Key>
__device__ __forceinline__ void gc_heap_unlock_heap(gc_heap<Key>* h) {
    if (gc_heap_prof_get(h, GC_HEAP_P_IN_INSERT))
        gc_heap_prof_add(h, GC_HEAP_P_INS_HOLD_HLOCK, gc_heap_prof_now() - gc_heap_prof_get(h, GC_HEAP_P_HLOCK_AT));
    GC_HEAP_CHAOS();
    gc_heap_fence(gc_heap_tune(h));  // release
    atomicExch(&h->hlock, 0ull);
}

template <typename Key>
__device__ __forceinline__ void gc_heap_fault(gc_heap<Key>* h, unsigned long long code) {
    atomicCAS(&h->error, 0ull, code);
}

// LOAD BATCH. GPUs issue a thread's instructions in order: in a loop of `load a word; store it to
// shared memory` every store waits for its load, and the next load issues only after that store,
// so a thread that moves w words of a node pays w round trips to L2 or HBM one after another (the
// PTX of such a loop shows exactly that; at K = 1024 with 512 threads a child costs 2, at K = 2048
// 4). GC_HEAP_LOAD_BATCH = n (a compile-time option, default 1: that plain loop) has each thread
// issue up to n loads into registers before it stores any of them: one round trip per n words.
// The same words move in the same phase between the same barriers, so nothing else changes; with
// n > 1 a sift-down level also loads both children (nodes 2x and 2x + 1 are adjacent) in one copy,
// and the fused delete's first phase (root, last node, children, pbuf) and a bottom-up insert's
// parent and child are each one phase (gc_heap_load_segs), so that their loads are in flight
// together.
#ifndef GC_HEAP_LOAD_BATCH
#define GC_HEAP_LOAD_BATCH 1
#endif
static_assert(GC_HEAP_LOAD_BATCH >= 1 && GC_HEAP_LOAD_BATCH <= 32, "GC_HEAP_LOAD_BATCH must be in 1..32");

// One load phase of several copies (a delete's root, last node, children and pbuf; an insert's
// parent and child; or one node): with GC_HEAP_LOAD_BATCH > 1 each thread walks the words of all
// the copies as one index space and issues up to that many loads before it stores any, so the
// phase costs one round trip per GC_HEAP_LOAD_BATCH words a thread moves, not one per copy. A
// copy of n = 0 keys is skipped. (With the default, 1, the copies run one after another.)
template <typename Key>
struct gc_heap_seg {
    Key* dst;
    const Key* src;
    unsigned n;  // keys
};

template <typename W, typename Key, int N>
__device__ __forceinline__ void gc_heap_load_segs_words(const gc_heap_seg<Key> (&g)[N]) {
    constexpr unsigned per = (unsigned)(sizeof(Key) / sizeof(W));
    unsigned total = 0u;
#pragma unroll
    for (int j = 0; j < N; ++j) total += g[j].n * per;
    const unsigned step = (unsigned)GC_HEAP_LOAD_BATCH * blockDim.x;
    for (unsigned base = threadIdx.x; base < total; base += step) {
        W r[GC_HEAP_LOAD_BATCH];
        W* to[GC_HEAP_LOAD_BATCH];
#pragma unroll
        for (unsigned u = 0; u < (unsigned)GC_HEAP_LOAD_BATCH; ++u) {
            unsigned o = base + u * blockDim.x;
            to[u] = nullptr;
            if (o < total) {
                const W* from = nullptr;
#pragma unroll
                for (int j = 0; j < N; ++j) {
                    const unsigned w = g[j].n * per;
                    if (from == nullptr && o < w) {
                        from = (const W*)g[j].src + o;
                        to[u] = (W*)g[j].dst + o;
                    } else if (from == nullptr) {
                        o -= w;
                    }
                }
                r[u] = __ldcg(from);
            }
        }
#pragma unroll
        for (unsigned u = 0; u < (unsigned)GC_HEAP_LOAD_BATCH; ++u)
            if (to[u] != nullptr) *to[u] = r[u];
    }
}

// Block-wide copy of n keys, word by word through L2 (ld/st.global.cg) on the global side.
template <typename Key>
__device__ __forceinline__ void gc_heap_load(Key* dst_smem, const Key* src, unsigned n) {
#if GC_HEAP_LOAD_BATCH > 1
    const gc_heap_seg<Key> g[1] = {{dst_smem, src, n}};
    if (sizeof(Key) % 8 == 0) gc_heap_load_segs_words<unsigned long long>(g);
    else gc_heap_load_segs_words<unsigned>(g);
#else
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
#endif
}

template <typename Key, int N>
__device__ __forceinline__ void gc_heap_load_segs(const gc_heap_seg<Key> (&g)[N]) {
#if GC_HEAP_LOAD_BATCH > 1
    if (sizeof(Key) % 8 == 0) gc_heap_load_segs_words<unsigned long long>(g);
    else gc_heap_load_segs_words<unsigned>(g);
#else
#pragma unroll
    for (int j = 0; j < N; ++j)
        if (g[j].n > 0u) gc_heap_load(g[j].dst, g[j].src, g[j].n);
#endif
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

// MERGE RUNS. In the merge below lane l of a warp writes output l * per + s at step s, and reads
// a and b near l * per / 2: with an even run length every lane's address is a multiple of 2 *
// per * sizeof(Key) bytes apart, so at K = 2048 with 512 threads (per = 8, 8-byte keys) sixteen
// lanes of a half-warp hit the same two of shared memory's 32 four-byte banks, an 8-way conflict
// on every write (16-way at K = 4096, 4-way at 1024), growing with K as the cycle per delete does.
// GC_HEAP_MERGE_ODD_RUN = 1 (the default) rounds the run up to an odd length, which spreads a
// half-warp's writes over all 32 banks (per = 9: lane l starts at bank 18 l mod 32, sixteen
// distinct); the last threads then get shorter runs or none. 0: the plain ceil(n / threads).
// GC_HEAP_MERGE_HELD = 1 (the default) keeps the two heads a[i] and b[j] of a thread's merge in
// registers, so a step reads one key from shared memory (the successor of the one it took) and
// writes one, where the plain loop (0) read both heads again every step.
#ifndef GC_HEAP_MERGE_ODD_RUN
#define GC_HEAP_MERGE_ODD_RUN 1
#endif
#ifndef GC_HEAP_MERGE_HELD
#define GC_HEAP_MERGE_HELD 1
#endif

// Block-wide stable merge path (§4.2; Green et al.): the merge of sorted a[0..na) and b[0..nb)
// (ties: a first), output index i delivered to sink(i, key). Each thread takes a contiguous run
// of outputs (MERGE RUNS), finds where it starts on the cross diagonal by binary search, then
// merges it.
template <typename Key, typename Sink>
__device__ void gc_heap_merge(const Key* a, unsigned na, const Key* b, unsigned nb, Sink sink) {
    const unsigned n = na + nb;
    const unsigned per = ((n + blockDim.x - 1) / blockDim.x) | (GC_HEAP_MERGE_ODD_RUN ? 1u : 0u);
    const unsigned d0 = threadIdx.x * per;
    if (d0 < n) {
        const unsigned d1 = d0 + per < n ? d0 + per : n;
        unsigned lo = d0 > nb ? d0 - nb : 0u, hi = d0 < na ? d0 : na;
        while (lo < hi) {
            const unsigned mid = (lo + hi) >> 1;
            if (!gc_heap_less(b[d0 - mid - 1], a[mid])) lo = mid + 1; else hi = mid;
        }
        unsigned i = lo, j = d0 - lo;
#if GC_HEAP_MERGE_HELD
        Key x{}, y{};  // a[i] and b[j] while i < na and j < nb
        if (i < na) x = a[i];
        if (j < nb) y = b[j];
        for (unsigned d = d0; d < d1; ++d) {
            if (j >= nb || (i < na && !gc_heap_less(y, x))) {
                sink(d, x);
                if (++i < na) x = a[i];
            } else {
                sink(d, y);
                if (++j < nb) y = b[j];
            }
        }
#else
        for (unsigned d = d0; d < d1; ++d) {
            if (j >= nb || (i < na && !gc_heap_less(b[j], a[i]))) sink(d, a[i++]);
            else sink(d, b[j++]);
        }
#endif
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
            gc_heap_unlock(h, cur, cur_w);  // cur's keys were written before the last barrier
        }
        __syncthreads();
        const unsigned long long next_w = ws.ctl->w[0];
        if (next == t) {
            if (threadIdx.x == 0 && gc_heap_kind(next_w) != GC_HEAP_TARGET) gc_heap_fault(h, GC_HEAP_FAULT_BAD_STATE);
            gc_heap_store(gc_heap_node<K>(h, t), ws.a, K);
            __syncthreads();
            if (threadIdx.x == 0) gc_heap_unlock(h, t, GC_HEAP_AVAIL);
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
                const unsigned long long w = gc_heap_lock_node_as(h, 1, GC_HEAP_EMPTY);
                if (gc_heap_kind(w) != GC_HEAP_EMPTY) gc_heap_fault(h, GC_HEAP_FAULT_BAD_STATE);
            }
            __syncthreads();
            gc_heap_store(gc_heap_node<K>(h, 1), ws.m, K);
            gc_heap_store(h->pbuf, ws.m + K, u - K);
            __syncthreads();
            if (threadIdx.x == 0) {
                gc_heap_unlock(h, 1, GC_HEAP_AVAIL);
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
                const unsigned long long w = gc_heap_lock_node_as(h, t, GC_HEAP_EMPTY);
                if (gc_heap_kind(w) != GC_HEAP_EMPTY) gc_heap_fault(h, GC_HEAP_FAULT_BAD_STATE);
                gc_heap_unlock(h, t, GC_HEAP_TARGET);
                c->w[2] = t;
            }
        }
        if (c->w[3] == GC_HEAP_OK) c->w[4] = gc_heap_lock_root(h);
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
        if (t == 0ull) gc_heap_unlock(h, 1, root_w);
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
            const unsigned long long w = gc_heap_lock_node_as(h, t, GC_HEAP_EMPTY);
            if (gc_heap_kind(w) != GC_HEAP_EMPTY) gc_heap_fault(h, GC_HEAP_FAULT_BAD_STATE);
            gc_heap_unlock(h, t, GC_HEAP_TARGET);
            c->w[1] = t;
            c->w[2] = gc_heap_lock_root(h);
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
            const unsigned long long tune = gc_heap_tune(h);
            if (tune & GC_HEAP_TUNE_SC_FENCES) {
                const unsigned long long w = gc_heap_lock_node_as(h, cn, GC_HEAP_EMPTY);
                if (gc_heap_kind(w) != GC_HEAP_EMPTY) gc_heap_fault(h, GC_HEAP_FAULT_BAD_STATE);
                gc_heap_unlock_heap(h);
            } else {
                // One fence.acq_rel is both the acquire of the leaf's lock (before the batch is
                // written there) and the release of hlock (count): one fence less under hlock.
                const unsigned long long w =
                    gc_heap_take_word(&h->states[cn], gc_heap_tr(h), cn, GC_HEAP_EMPTY, gc_heap_node_cap(tune), false);
                if (gc_heap_kind(w) != GC_HEAP_EMPTY) gc_heap_fault(h, GC_HEAP_FAULT_BAD_STATE);
                if (gc_heap_prof_get(h, GC_HEAP_P_IN_INSERT))
                    gc_heap_prof_add(h, GC_HEAP_P_INS_HOLD_HLOCK, gc_heap_prof_now() - gc_heap_prof_get(h, GC_HEAP_P_HLOCK_AT));
                GC_HEAP_CHAOS();
                gc_heap_fence(tune);  // acquire (the leaf) and release (hlock)
                atomicExch(&h->hlock, 0ull);
            }
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
    if (threadIdx.x == 0) gc_heap_unlock(h, cn, gc_heap_inshold(me));
    unsigned ns = 32u;
    while (cn > 1ull) {
        const unsigned long long p = cn >> 1;
        if (threadIdx.x == 0) {
            const long long w0 = gc_heap_prof_now();
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
            c->w[4] = gc_heap_lock_node_as(h, cn, gc_heap_inshold(me));
            if (c->w[4] != gc_heap_inshold(me)) gc_heap_fault(h, GC_HEAP_FAULT_BAD_STATE);
            gc_heap_prof_add(h, GC_HEAP_P_INS_WAIT_PARENT, gc_heap_prof_now() - w0);
            gc_heap_prof_add(h, GC_HEAP_P_INS_LEVELS, 1);
        }
        __syncthreads();
        const unsigned long long wp = c->w[3], wc = c->w[4];
        if (gc_heap_kind(wp) != GC_HEAP_AVAIL) {
            // Another insert's batch above ours, or a top-down insert's target not yet written.
            if (threadIdx.x == 0) {
                gc_heap_unlock(h, cn, wc);
                gc_heap_unlock(h, p, wp);
                volatile unsigned long long* tr = gc_heap_tr(h);
                gc_heap_trace_at(tr, GC_HEAP_AT_WAIT_PARENT, cn);
                gc_heap_trace_wait(tr, wp);
                gc_heap_backoff(&ns);
            }
            __syncthreads();
            continue;
        }
        if (GC_HEAP_LOAD_BATCH > 1) {
            const gc_heap_seg<Key> g[2] = {{ws.b, gc_heap_node<K>(h, p), (unsigned)K},
                                           {ws.b + K, gc_heap_node<K>(h, cn), (unsigned)K}};
            gc_heap_load_segs(g);
        } else {
            gc_heap_load(ws.b, gc_heap_node<K>(h, p), K);
            gc_heap_load(ws.b + K, gc_heap_node<K>(h, cn), K);
        }
        __syncthreads();
        // ws.b[0..K) = p, ws.b[K..2K) = c.
        if (!gc_heap_less(ws.b[K], ws.b[K - 1])) {  // max(p) <= min(c): early stop
            __syncthreads();
            if (threadIdx.x == 0) {
                gc_heap_unlock(h, cn, GC_HEAP_AVAIL);
                gc_heap_unlock(h, p, wp);
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
            gc_heap_unlock(h, cn, GC_HEAP_AVAIL);
            gc_heap_unlock(h, p, p == 1ull ? GC_HEAP_AVAIL : gc_heap_inshold(me));
        }
        __syncthreads();
        cn = p;
    }
    return GC_HEAP_OK;
}

// gc_heap_insert's body; p0: thread 0's profile clock at its start (PROFILE).
template <int K, typename Key>
__device__ int gc_heap_insert_impl(gc_heap<Key>* h, const Key* keys, unsigned n, void* smem, long long p0) {
    static_assert(K >= 1 && K <= 4096 && (K & (K - 1)) == 0, "K must be a power of two in 1..4096");
    const gc_heap_ws<K, Key> ws = gc_heap_ws_at<K, Key>(smem);
    if (n == 0u) return GC_HEAP_OK;
    if (n > (unsigned)K) return GC_HEAP_TOO_LARGE;
    if (threadIdx.x == 0 && h->k != (unsigned long long)K) gc_heap_fault(h, GC_HEAP_FAULT_K_MISMATCH);
    for (unsigned i = threadIdx.x; i < (unsigned)K; i += blockDim.x)
        ws.a[i] = i < n ? keys[i] : gc_heap_key_traits<Key>::max();
    __syncthreads();
    gc_heap_bitonic_sort<K>(ws.a);
    if (threadIdx.x == 0) gc_heap_prof_add(h, GC_HEAP_P_INS_SORT, gc_heap_prof_now() - p0);
    if (n < (unsigned)K) {
        if (threadIdx.x == 0) gc_heap_prof_add(h, GC_HEAP_P_INS_TOP_DOWN, 1);
        return gc_heap_insert_through_buffer<K>(h, ws, n);
    }
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
    if (ws.ctl->w[7]) {
        if (threadIdx.x == 0) gc_heap_prof_add(h, GC_HEAP_P_INS_TOP_DOWN, 1);
        return gc_heap_insert_top_down<K>(h, ws);
    }
    const int r = gc_heap_insert_bottom_up<K>(h, ws);
    __syncthreads();
    if (threadIdx.x == 0) {
        gc_heap_fence(gc_heap_tune(h));  // release: our nodes before the count-out a delete waits for
        atomicAdd(&h->mode, 0ull - 1ull);
    }
    __syncthreads();
    return r;
}

// Inserts n keys (1..K, any order) from `keys` (global or shared memory, not the workspace).
template <int K, typename Key>
__device__ int gc_heap_insert(gc_heap<Key>* h, const Key* keys, unsigned n, void* smem) {
    const long long p0 = gc_heap_prof_now();
    if (threadIdx.x == 0) {
        gc_heap_prof_mark(h);
        gc_heap_prof_set(h, GC_HEAP_P_IN_INSERT, 1);
    }
    const int r = gc_heap_insert_impl<K>(h, keys, n, smem, p0);
    if (threadIdx.x == 0) {
        gc_heap_prof_add(h, GC_HEAP_P_INS_OPS, 1);
        gc_heap_prof_add(h, GC_HEAP_P_INS_TOTAL, gc_heap_prof_now() - p0);
        gc_heap_prof_set(h, GC_HEAP_P_IN_INSERT, 0);
        gc_heap_prof_mark(h);
    }
    return r;
}

// ---- delete-min -------------------------------------------------------------------------------------

// Thread 0, holding node l / 2: lock both children l and l + 1 into *wl, *wr (the unlocked words
// they held). TUNING bit 1 set: one after the other, each with its own wait and fence. Clear: both
// compare-and-swaps (guessing AVAIL) in flight at once, a child found locked or not AVAIL taken
// as gc_heap_take_word does, then one acquire fence. (Waiting for the left child while holding
// the right is outside the increasing-index order and safe: see TUNING.)
template <typename Key>
__device__ __forceinline__ void gc_heap_lock_children(gc_heap<Key>* h, unsigned long long l, unsigned long long* wl,
                                                      unsigned long long* wr) {
    const unsigned long long t = gc_heap_tune(h);
    if (t & GC_HEAP_TUNE_SERIAL_PAIR) {
        *wl = gc_heap_lock_node(h, l);
        *wr = gc_heap_lock_node(h, l + 1ull);
        return;
    }
    unsigned long long* a = &h->states[l];
    unsigned long long* b = &h->states[l + 1ull];
    const unsigned long long ol = atomicCAS(a, GC_HEAP_AVAIL, GC_HEAP_AVAIL | GC_HEAP_LOCKED);
    const unsigned long long orr = atomicCAS(b, GC_HEAP_AVAIL, GC_HEAP_AVAIL | GC_HEAP_LOCKED);
    volatile unsigned long long* tr = gc_heap_tr(h);
    // The waits here are on the deletes' pipeline (the child is the previous delete's node one
    // level down, and everything behind this delete waits for it): the hot cap, polling by CAS.
    const unsigned cap = gc_heap_hot_cap(t);
    if (ol == GC_HEAP_AVAIL) {
        gc_heap_trace_locked(tr);
        GC_HEAP_CHAOS();
        *wl = ol;
    } else {
        *wl = gc_heap_take_word(a, tr, l, GC_HEAP_AVAIL, cap, true, ol);
    }
    if (orr == GC_HEAP_AVAIL) {
        gc_heap_trace_locked(tr);
        GC_HEAP_CHAOS();
        *wr = orr;
    } else {
        *wr = gc_heap_take_word(b, tr, l + 1ull, GC_HEAP_AVAIL, cap, true, orr);
    }
    gc_heap_fence(t);  // acquire (both)
}

// Thread 0: unlock nodes i and j (leaving si, sj), after the block's barrier: one release fence
// for both (TUNING bit 2 set: one each, as gc_heap_unlock).
template <typename Key>
__device__ __forceinline__ void gc_heap_unlock2(gc_heap<Key>* h, unsigned long long i, unsigned long long si,
                                                unsigned long long j, unsigned long long sj) {
    if (gc_heap_tune(h) & GC_HEAP_TUNE_SC_FENCES) {
        gc_heap_unlock(h, i, si);
        gc_heap_unlock(h, j, sj);
        return;
    }
    gc_heap_fence(gc_heap_tune(h));  // release (both)
    gc_heap_set_word(&h->states[i], si);
    gc_heap_set_word(&h->states[j], sj);
}

// Sifts the carried batch ws.a down from the root, which thread 0 holds. `pre` (the fused delete):
// the root's children are already locked (words pwl, pwr; read by every thread after a barrier)
// and the present ones loaded, node 2 into ws.b[0, K), node 3 into ws.b[K, 2K). `pt`: thread 0's
// profile clock (PROFILE).
template <int K, typename Key>
__device__ void gc_heap_sift_down(gc_heap<Key>* h, const gc_heap_ws<K, Key>& ws, bool pre, unsigned long long pwl,
                                  unsigned long long pwr, long long* pt) {
    gc_heap_ctl* c = ws.ctl;
    unsigned long long cur = 1ull;
    bool loaded = pre;  // this level's children are locked and loaded
    for (;;) {
        const unsigned long long l = 2ull * cur, r = l + 1ull;
        if (threadIdx.x == 0) gc_heap_prof_add(h, GC_HEAP_P_DEL_LEVELS, 1);
        if (l >= h->slots) {
            gc_heap_store(gc_heap_node<K>(h, cur), ws.a, K);
            __syncthreads();
            if (threadIdx.x == 0) {
                gc_heap_unlock(h, cur, GC_HEAP_AVAIL);
                if (cur == 1ull) gc_heap_prof_lap(h, GC_HEAP_P_DEL_ROOT_REST, pt);
                gc_heap_prof_lap(h, GC_HEAP_P_DEL_BELOW, pt);
            }
            __syncthreads();
            return;
        }
        unsigned long long wl, wr;
        if (loaded) {
            wl = pwl;
            wr = pwr;
        } else {
            if (threadIdx.x == 0) {
                const long long w0 = gc_heap_prof_now();
                gc_heap_lock_children(h, l, &c->w[0], &c->w[1]);
                gc_heap_prof_add(h, cur == 1ull ? GC_HEAP_P_DEL_WAIT_KIDS : GC_HEAP_P_DEL_LOCK_WAIT,
                                 gc_heap_prof_now() - w0);
                if (gc_heap_kind(c->w[0]) == GC_HEAP_INSHOLD || gc_heap_kind(c->w[1]) == GC_HEAP_INSHOLD)
                    gc_heap_fault(h, GC_HEAP_FAULT_BAD_STATE);
            }
            __syncthreads();
            wl = c->w[0];
            wr = c->w[1];
        }
        const bool pl = gc_heap_kind(wl) == GC_HEAP_AVAIL, pr = gc_heap_kind(wr) == GC_HEAP_AVAIL;
        if (!pl && !pr) {
            gc_heap_store(gc_heap_node<K>(h, cur), ws.a, K);
            __syncthreads();
            if (threadIdx.x == 0) {
                gc_heap_unlock2(h, r, wr, l, wl);
                gc_heap_unlock(h, cur, GC_HEAP_AVAIL);
                if (cur == 1ull) gc_heap_prof_lap(h, GC_HEAP_P_DEL_ROOT_REST, pt);
                gc_heap_prof_lap(h, GC_HEAP_P_DEL_BELOW, pt);
            }
            __syncthreads();
            return;
        }
        if (pl && pr) {
            long long lt = gc_heap_prof_now();  // thread 0's level clock (PROFILE)
            if (!loaded) {
                if (GC_HEAP_LOAD_BATCH > 1) {
                    gc_heap_load(ws.b, gc_heap_node<K>(h, l), 2u * K);  // r = l + 1: adjacent nodes
                } else {
                    gc_heap_load(ws.b, gc_heap_node<K>(h, l), K);
                    gc_heap_load(ws.b + K, gc_heap_node<K>(h, r), K);
                }
                __syncthreads();
            }
            if (threadIdx.x == 0) {
                gc_heap_prof_add(h, GC_HEAP_P_DEL_LVL_N, 1);
                gc_heap_prof_lap(h, GC_HEAP_P_DEL_LVL_LOAD, &lt);
            }
            const Key hi_min = gc_heap_less(ws.b[K], ws.b[0]) ? ws.b[K] : ws.b[0];
            if (!gc_heap_less(hi_min, ws.a[K - 1])) {  // max(Z) <= min(l ∪ r): done
                gc_heap_store(gc_heap_node<K>(h, cur), ws.a, K);
                __syncthreads();
                if (threadIdx.x == 0) {
                    gc_heap_unlock2(h, r, wr, l, wl);
                    gc_heap_unlock(h, cur, GC_HEAP_AVAIL);
                    if (cur == 1ull) gc_heap_prof_lap(h, GC_HEAP_P_DEL_ROOT_REST, pt);
                    gc_heap_prof_lap(h, GC_HEAP_P_DEL_BELOW, pt);
                }
                __syncthreads();
                return;
            }
            // lo goes to the child with the larger maximum; continue at the other.
            const bool left_larger = gc_heap_less(ws.b[2 * K - 1], ws.b[K - 1]);
            const unsigned long long t = left_larger ? l : r, o = left_larger ? r : l;
            gc_heap_merge_smem(ws.b, K, ws.b + K, K, ws.m);  // hi = m[0, K), lo = m[K, 2K)
            gc_heap_store(gc_heap_node<K>(h, t), ws.m + K, K);
            if (threadIdx.x == 0) gc_heap_prof_lap(h, GC_HEAP_P_DEL_LVL_MERGE1, &lt);
            gc_heap_merge_smem(ws.a, K, ws.m, K, ws.b);  // cur = b[0, K), Z = b[K, 2K)
            gc_heap_store(gc_heap_node<K>(h, cur), ws.b, K);
            gc_heap_copy(ws.a, ws.b + K, K);
            __syncthreads();
            if (threadIdx.x == 0) {
                gc_heap_prof_lap(h, GC_HEAP_P_DEL_LVL_MERGE2, &lt);
                gc_heap_unlock2(h, t, GC_HEAP_AVAIL, cur, GC_HEAP_AVAIL);
                gc_heap_prof_lap(h, GC_HEAP_P_DEL_LVL_UNLOCK, &lt);
                if (cur == 1ull) gc_heap_prof_lap(h, GC_HEAP_P_DEL_ROOT_REST, pt);
            }
            __syncthreads();
            cur = o;  // still held
            loaded = false;
            continue;
        }
        // One child present.
        const unsigned long long x = pl ? l : r, wx = pl ? wl : wr;
        if (threadIdx.x == 0) {
            if (pl) gc_heap_unlock(h, r, wr);
            else gc_heap_unlock(h, l, wl);
        }
        const Key* xb = ws.b;
        if (loaded) {
            xb = pl ? ws.b : ws.b + K;
        } else {
            gc_heap_load(ws.b, gc_heap_node<K>(h, x), K);
            __syncthreads();
        }
        if (!gc_heap_less(xb[0], ws.a[K - 1])) {  // max(Z) <= min(x): done
            gc_heap_store(gc_heap_node<K>(h, cur), ws.a, K);
            __syncthreads();
            if (threadIdx.x == 0) {
                gc_heap_unlock2(h, x, wx, cur, GC_HEAP_AVAIL);
                if (cur == 1ull) gc_heap_prof_lap(h, GC_HEAP_P_DEL_ROOT_REST, pt);
                gc_heap_prof_lap(h, GC_HEAP_P_DEL_BELOW, pt);
            }
            __syncthreads();
            return;
        }
        gc_heap_merge_smem(ws.a, K, xb, K, ws.m);
        gc_heap_store(gc_heap_node<K>(h, cur), ws.m, K);
        gc_heap_copy(ws.a, ws.m + K, K);
        __syncthreads();
        if (threadIdx.x == 0) {
            gc_heap_unlock(h, cur, GC_HEAP_AVAIL);
            if (cur == 1ull) gc_heap_prof_lap(h, GC_HEAP_P_DEL_ROOT_REST, pt);
        }
        __syncthreads();
        cur = x;  // still held
        loaded = false;
    }
}

// Thread 0, holding hlock (and the root, fused): waits while the last node `last` is TARGET, by
// looking (volatile loads), then takes its lock without a fence (fused) or with one; returns the
// word it held (AVAIL). PROGRESS: while `last` is TARGET, a top-down insert ahead of us is still
// carrying its keys down, and it must lock `last` to write them. Wait by looking, holding no lock
// on `last`: a wait that locked `last` to look at it, unlocked and backed off starved that insert
// on an H100 (issue 12, K = 1 on 256 blocks: the delete took and released `last` in every round,
// and the insert's CAS, issued after its load had seen `last` unlocked, failed 15 million times in
// a row; every waiting block backed off exactly as often in the watchdog's second, so the sleeps
// end on common timer ticks and the race came out the same way in every round). Nothing makes
// `last` TARGET again while we hold hlock (allocations happen under it), so the look is final;
// the kind is checked again under the lock. That insert holds no lock we hold (it is past the
// root, and, fused, past the root's children: it held one of them when it released the root, and
// it needs only nodes below it).
template <typename Key>
__device__ unsigned long long gc_heap_take_last(gc_heap<Key>* h, unsigned long long last, bool fence) {
    volatile unsigned long long* tr = gc_heap_tr(h);
    const unsigned long long tune = gc_heap_tune(h);
    const unsigned cap = gc_heap_node_cap(tune);
    unsigned ns = gc_heap_first_sleep(cap);
    if (!(tune & GC_HEAP_TUNE_LOAD_FIRST)) {
        // First a compare-and-swap guessing AVAIL (one round trip): it cannot lock a TARGET
        // node (the word does not match), so it never races the insert a TARGET waits for.
        const unsigned long long old = atomicCAS(&h->states[last], GC_HEAP_AVAIL, GC_HEAP_AVAIL | GC_HEAP_LOCKED);
        if (old == GC_HEAP_AVAIL) {
            gc_heap_trace_locked(tr);
            GC_HEAP_CHAOS();
            if (fence) gc_heap_fence(tune);  // acquire
            return old;
        }
    }
    for (;;) {
        gc_heap_trace_at(tr, GC_HEAP_AT_WAIT_LAST, last);
        unsigned long long s;
        for (;;) {
            s = gc_heap_ld(&h->states[last]);
            if (gc_heap_kind(s) != GC_HEAP_TARGET) break;
            gc_heap_trace_wait(tr, s);
            gc_heap_backoff(&ns, cap);
        }
        const unsigned long long w = gc_heap_take_word(&h->states[last], tr, last, s, cap, false);
        if (fence) gc_heap_fence(tune);  // acquire
        if (gc_heap_kind(w) != GC_HEAP_TARGET) {
            if (gc_heap_kind(w) != GC_HEAP_AVAIL) gc_heap_fault(h, GC_HEAP_FAULT_BAD_STATE);
            return w;
        }
        gc_heap_unlock(h, last, w);  // (not reached: see above)
    }
}

// Removes the K smallest keys into out (sorted), or with no node left the whole pbuf; returns
// how many (0: empty). `out` is global or shared memory, not the workspace.
template <int K, typename Key>
__device__ unsigned gc_heap_delete_min(gc_heap<Key>* h, Key* out, void* smem) {
    static_assert(K >= 1 && K <= 4096 && (K & (K - 1)) == 0, "K must be a power of two in 1..4096");
    const gc_heap_ws<K, Key> ws = gc_heap_ws_at<K, Key>(smem);
    gc_heap_ctl* c = ws.ctl;
    long long pt = gc_heap_prof_now(), p_start = pt;  // thread 0's profile clock (PROFILE)
    if (threadIdx.x == 0) {
        const unsigned long long tune = gc_heap_tune(h);
        gc_heap_prof_mark(h);
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
        gc_heap_fence(tune);  // acquire: the bottom-up inserts we waited for
        gc_heap_prof_lap(h, GC_HEAP_P_DEL_WAIT_MODE, &pt);
        gc_heap_lock_heap(h);
        gc_heap_prof_lap(h, GC_HEAP_P_DEL_WAIT_HLOCK, &pt);
        const unsigned long long n = *(volatile unsigned long long*)&h->count;
        c->w[0] = n;
        c->w[1] = *(volatile unsigned long long*)&h->pbuf_len;
        // The fused delete (TUNING bit 0 clear) from 4 nodes on: the root, its children and the
        // last node (>= 4) locked in increasing index order, one acquire fence for all four.
        const bool fused = !(tune & GC_HEAP_TUNE_PLAIN_DELETE) && n >= 4ull;
        c->w[5] = fused;
        if (fused) {
            c->w[2] = gc_heap_take_word(&h->states[1], tr, 1ull, gc_heap_guess(tune, GC_HEAP_AVAIL),
                                        gc_heap_hot_cap(tune), !(tune & GC_HEAP_TUNE_SC_FENCES));
            gc_heap_prof_lap(h, GC_HEAP_P_DEL_WAIT_ROOT, &pt);
            *(volatile unsigned long long*)&h->count = n - 1ull;
            unsigned long long* s2 = &h->states[2];
            unsigned long long* s3 = &h->states[3];
            const unsigned long long o2 = atomicCAS(s2, GC_HEAP_AVAIL, GC_HEAP_AVAIL | GC_HEAP_LOCKED);
            const unsigned long long o3 = atomicCAS(s3, GC_HEAP_AVAIL, GC_HEAP_AVAIL | GC_HEAP_LOCKED);
            const unsigned cap = gc_heap_hot_cap(tune);  // (as in gc_heap_lock_children)
            c->w[3] = o2 == GC_HEAP_AVAIL ? o2 : gc_heap_take_word(s2, tr, 2ull, GC_HEAP_AVAIL, cap, true, o2);
            c->w[4] = o3 == GC_HEAP_AVAIL ? o3 : gc_heap_take_word(s3, tr, 3ull, GC_HEAP_AVAIL, cap, true, o3);
            if (gc_heap_kind(c->w[3]) == GC_HEAP_INSHOLD || gc_heap_kind(c->w[4]) == GC_HEAP_INSHOLD)
                gc_heap_fault(h, GC_HEAP_FAULT_BAD_STATE);
            gc_heap_prof_add(h, GC_HEAP_P_DEL_WAIT_KIDS, gc_heap_prof_now() - pt);
            gc_heap_take_last(h, gc_heap_target(n), false);
            gc_heap_fence(tune);  // acquire (all four)
        } else {
            if (n > 0ull) c->w[2] = gc_heap_lock_root(h);
            gc_heap_prof_lap(h, GC_HEAP_P_DEL_WAIT_ROOT, &pt);
        }
    }
    __syncthreads();
    // Read once, here: on the paths below thread 0 reuses the words (the sift-down's locks)
    // while a lagging warp may not have read them yet.
    const unsigned long long n = c->w[0];
    const unsigned ps = (unsigned)c->w[1];
    const bool fused = c->w[5] != 0ull;
    const unsigned long long w2 = c->w[3], w3 = c->w[4];
    unsigned result = K;
    if (fused) {
        // One load phase: the root (the result), the last node (Z), the present children, pbuf
        // (into ws.m[K, K + ps), beside where the exchange writes Z).
        const unsigned long long last = gc_heap_target(n);
        if (GC_HEAP_LOAD_BATCH > 1) {
            const gc_heap_seg<Key> g[5] = {
                {out, gc_heap_node<K>(h, 1), (unsigned)K},
                {ws.a, gc_heap_node<K>(h, last), (unsigned)K},
                {ws.b, gc_heap_node<K>(h, 2), gc_heap_kind(w2) == GC_HEAP_AVAIL ? (unsigned)K : 0u},
                {ws.b + K, gc_heap_node<K>(h, 3), gc_heap_kind(w3) == GC_HEAP_AVAIL ? (unsigned)K : 0u},
                {ws.m + K, h->pbuf, ps}};
            gc_heap_load_segs(g);
        } else {
            gc_heap_load(out, gc_heap_node<K>(h, 1), K);
            gc_heap_load(ws.a, gc_heap_node<K>(h, last), K);
            if (gc_heap_kind(w2) == GC_HEAP_AVAIL) gc_heap_load(ws.b, gc_heap_node<K>(h, 2), K);
            if (gc_heap_kind(w3) == GC_HEAP_AVAIL) gc_heap_load(ws.b + K, gc_heap_node<K>(h, 3), K);
            if (ps > 0u) gc_heap_load(ws.m + K, h->pbuf, ps);
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            // One release fence: `last` EMPTY (its keys are read) and, with no exchange, hlock.
            const unsigned long long tune = gc_heap_tune(h);
            GC_HEAP_CHAOS();
            gc_heap_fence(tune);  // release
            gc_heap_set_word(&h->states[last], GC_HEAP_EMPTY);
            if (ps == 0u) {
                atomicExch(&h->hlock, 0ull);
                gc_heap_prof_lap(h, GC_HEAP_P_DEL_ROOT_HLOCK, &pt);
            }
        }
        if (ps > 0u) {
            if (gc_heap_less(ws.m[K], ws.a[K - 1])) {  // exchange: Z keeps the K smallest (P3)
                gc_heap_to_three<Key> sink;
                sink.d0 = ws.m;
                sink.d1 = h->pbuf;
                sink.d2 = h->pbuf;
                sink.n0 = K;
                sink.n1 = K + ps;
                gc_heap_merge(ws.a, K, ws.m + K, ps, sink);
                gc_heap_copy(ws.a, ws.m, K);
            }
            __syncthreads();
            if (threadIdx.x == 0) {
                gc_heap_unlock_heap(h);
                gc_heap_prof_lap(h, GC_HEAP_P_DEL_ROOT_HLOCK, &pt);
            }
        }
        gc_heap_sift_down<K>(h, ws, true, w2, w3, &pt);
    } else if (n == 0ull) {
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
                gc_heap_unlock(h, 1, GC_HEAP_EMPTY);
                gc_heap_unlock_heap(h);
            }
        } else {
            const unsigned long long last = gc_heap_target(n);
            if (threadIdx.x == 0) {
                *(volatile unsigned long long*)&h->count = n - 1ull;
                gc_heap_take_last(h, last, true);
            }
            __syncthreads();
            gc_heap_load(ws.a, gc_heap_node<K>(h, last), K);  // Z
            __syncthreads();
            if (threadIdx.x == 0) gc_heap_unlock(h, last, GC_HEAP_EMPTY);
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
            if (threadIdx.x == 0) {
                gc_heap_unlock_heap(h);
                gc_heap_prof_lap(h, GC_HEAP_P_DEL_ROOT_HLOCK, &pt);
            }
            gc_heap_sift_down<K>(h, ws, false, 0ull, 0ull, &pt);
        }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        gc_heap_fence(gc_heap_tune(h));
        atomicAdd(&h->mode, 0ull - GC_HEAP_DELETE_UNIT);
        gc_heap_prof_add(h, GC_HEAP_P_DEL_OPS, 1);
        gc_heap_prof_add(h, GC_HEAP_P_DEL_TOTAL, gc_heap_prof_now() - p_start);
        gc_heap_prof_mark(h);
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

// gpu_cilk/persistent.cuh — the device-resident scheduler (GPU_CILK_SCHEDULER=persistent): one
// resident grid runs a whole task tree. Every lane runs tasks depth-first from an explicit stack
// of task frames in memory (its LANE STACK, no recursion on the CUDA call stack); the oldest
// pending spawns of a busy lane are handed to idle lanes of its warp and, through a global pool,
// to idle warps; join counters (no level barrier) join the tasks whose children were handed away.
//
// Owns: the scheduler's `gc_cx`, `gc_spawn` and `gc_raise_cx` (what generated code calls), lane
// stacks, frames and their join counters, the global pool and the frame free ring (Scogland &
// Feng ticket queues, ticket_queue.cuh), the warp loop, termination and statistics.
// Must not own: the tasks (generated code), the program's dispatch table (the assembler emits
// `gc_prog` with `step`/`resume` switches over the tasks), host-side sizing (runtime/src/backend/
// cuda/persistent/).
//
// EXECUTION MODEL (after Cilk-5's work-first principle and lazy task creation: Frigo, Leiserson
// and Randall, PLDI 1998; Mohr, Kranz and Halstead, 1991)
// - LANE STACKS. Each lane owns a ring of `lane_cap` ENTRIES in global memory. An entry is laid
//   out like a frame slot (`gc_pslot<Task>`: a gc_frame_hdr, then the frame, then a deferred
//   return value); a spawned call that has not started (FRESH, next_segment == 0) holds its
//   arguments where the frame will go. A spawn pushes a FRESH entry for the child on the
//   spawning lane's stack and returns at once; the child's result will go into the parent's
//   entry at the destination's offset. A lane's STEP runs the segment its top entry is at: a
//   FRESH entry's segment 0 (the arguments are read first), or the continuation of a task whose
//   children are done. A segment that spawned stores its frame into its own entry (the children
//   above it have not started: no child can have written yet) and counts its children in the
//   header's `pending`; a task that returns delivers its value, pops its entry and decrements its
//   parent's `pending` — a plain store, since the parent is further down the same lane's stack.
//   The last child popped leaves the parent on top, ready. This is the serial order with the C++
//   call stack replaced by the lane stack: a FAST CLONE needs no frame slot, no join atomic and
//   no fence, and its children cost one push each.
// - TAKING WORK (pending work stays takeable). The oldest FRESH entry of a lane's stack is the
//   largest piece of work there (Cilk's steal from the top of the deque). When lanes of a warp
//   have nothing to run, every busy lane that has a FRESH entry below its top hands its oldest one
//   to an idle lane (through shared memory, once per round while some lane is idle); when warps
//   are hungry (the global `hungry` count) busy lanes send their oldest FRESH entries to the
//   global POOL, and a warp with nothing at all takes up to one item per lane from it (programs
//   with priority spawns: from the ready heap first). Oldest first keeps every lane's stack a
//   depth-first path with the pending siblings of its ancestors, so live memory stays about
//   depth x fan-out per lane. The owner does the handing over itself between two steps, so a lane
//   stack has one writer only and needs no lock and no atomic (work pushing, not stealing).
// - PROMOTION (the slow clone). An entry handed away must report to a parent that does not live
//   in its new lane's stack, so before it leaves, the entries below it on the donor's stack (its
//   parent and that parent's ancestors: no FRESH entry lies below the oldest one) are PROMOTED:
//   each moves into a frame slot of the global frame pool, keeping its header (pending count,
//   segment, destination, parent) and frame bytes, and the entries that pointed at the old place
//   (children still on the stack) are pointed at the slot. The old entry stays behind as a DEAD
//   tombstone that pops are skipped over. A pool frame is joined with atomics: a child of one
//   decrements its `pending` with one acquire-release RMW, and whichever child moves it to zero
//   resumes the task at once on its own lane (the continuation's spawns go on that lane's stack).
// - OVERFLOW. A push that finds its lane stack full SPILLS the whole stack first: every
//   suspended entry is promoted, every FRESH one is sent to the pool, the running task's entry
//   too (its frame is not built yet: the slot gets the header, and the children it already
//   spawned, now in the pool, are REMOTE: their destination bytes are masked when the segment's
//   frame is stored, and the segment's end adds its children to the slot's join counter with an
//   RMW, since a remote child may have finished already). So a chain of any depth costs
//   lane_cap entries per lane plus one pool frame per level beyond them, and a loop that spawns
//   a million children sends them to the pool lane_cap at a time. The pool full, or the frame
//   pool used up: the run fails with GC_FAULT_DEV_STACK naming the pool — never a dropped task.
// - JOIN COUNTERS OF POOL FRAMES. `pending` counts the children outstanding. Promotion copies
//   the count of the local children (none of them can finish during the copy: they are on the
//   promoting lane's stack). A segment running on a pool frame ends with the join protocol: if
//   none of its children is remote (they are all on this lane's stack, not started), a plain
//   store of the count; otherwise gc_join_add(n): children may have finished before it (the
//   count is then <= 0), and whoever moves it to exactly 0 after the add runs the continuation
//   (the add itself: "every child already finished"; or the last child).
// - CHILD ORDER. A segment's children are pushed in spawn order; before its frame is stored they
//   are put in the order the lane should run them: the serial order (the first spawned on top)
//   or, in programs with priority spawns, best first (the highest priority on top). So one lane
//   runs a subtree exactly as the serial program would (a branch and bound finds its incumbents
//   as early), and the entry handed away first is the one the serial order reaches last.
// - LANE FRAME CACHE. Each lane keeps up to GC_FRAME_CACHE free pool-frame slots: promotions take
//   them and returns of promoted tasks give them back with no atomic and no fence; the cache
//   refills and flushes half of itself at a time through the free ring (one ticket RMW and one
//   fence pair per batch: gc_tq_get_n / gc_tq_put_n). Statistics are counted per lane and added
//   once, at the end.
// - TERMINATION. Every spawn is joined by its parent's next sync or by the implicit sync of a
//   return, so the root's completion implies every task's: the lane that delivers the root's
//   result sets `done`, and every warp leaves its loop when it sees `done` (or `abort`, set with
//   the first fault). Warps that find no work count themselves in `hungry` and poll with back-off.
// - SUM GROUPS. A task whose result is a constant plus its children's results (`x + y`,
//   `1 + Σ sizes[j]`: macros/src/lower/sums.rs) and whose callees are all such tasks (the
//   assembler defines GC_SUM_<task> for the largest such set) needs no frame and no continuation:
//   a tree of them is ONE GROUP whose root keeps, in its entry, the sum cell (the slot's deferred
//   return value, starting at the root's constant) and a count of the group's live tasks in
//   `pending` (starting at 1: the root itself). The root's spawns, and every spawn of a MEMBER, push
//   member entries (FRESH, `pending` = GC_SUM_MEMBER, parent = the group, dest = its sum cell). A
//   lane runs a member by popping it first (its children take its place: a work list, as a hand
//   kernel's DFS) and adds, in REGISTERS, the member's value (its return value, or its constant when
//   it synced) to a lane sum and its effect on the count (+1 per spawn, -1 when it ends) to a lane
//   delta for its group. The lane FLUSHES both into the group (plain adds on a lane entry; a relaxed
//   atomic add of the sum, then one acquire-release join add of the delta on a pool frame) before
//   it runs anything else (another group's member, any other step), before its lane-entry group
//   is promoted, and when it has nothing left to run. Whoever brings the count to 0 resumes the
//   root, which returns its sum cell. A member handed to another lane (share, pool) leaves counted
//   without an atomic of its own: the lane adds GC_SUM_CREDIT to its pool-frame group's count at a
//   time and moves the member's +1 from its delta to that credit (gc_sum_handoff); a flush gives
//   the unused credit back. Why the count never reaches 0 early: count minus the lanes' unused
//   credits is the count of the credit-free protocol, in which every live entry is counted once,
//   in `pending` or in the delta of the lane that spawned it; an entry leaves its lane only
//   counted, so an uncounted entry lies on its spawner's stack, and the spawner has then ended,
//   unpaid, the counted ancestor it descends from, which keeps `pending` >= 1 (credits only add).
//   Integer sums wrap, so the order of the adds does not matter. A member's entry is taken and
//   handed like any FRESH entry (the mark travels in the item's `flags`); promoting a lane-entry
//   group repoints every member above it (members are not contiguous children blocks).
//   runtime/tests/sum_loom.rs model-checks a Rust twin of the protocol.
// - PLAIN CALLS of a task from a segment (`let v = f(..)` without spawn!) and `#[gpu_cilk::device]`
//   helpers run their serial device forms on the CUDA stack (the only recursion left); a guard
//   bounds it in bytes (`dev_stack_budget`) and fails the run with GC_FAULT_DEV_STACK past it.
//
// MEMORY ORDERING (plain CUDA atomics are relaxed; "fence; atomic" releases, "atomic; fence"
// acquires; gc_join_add is one acquire-release RMW at GPU scope, which does both):
// - lane stacks: one thread reads and writes its own ring (donations are made by the owner), so
//   program order is enough; an entry handed to another lane of the warp goes through shared
//   memory between two __syncwarp()s (block-scope barrier and fence).
// - pool frames: child: store result -> gc_join_add(pending, -1) -> (if it saw 1) read the frame.
//   Segment end: frame store (masked when children are remote) -> gc_join_add(pending, n), or a
//   plain store of n when every child is still unstarted on this lane's stack (none can run
//   before this lane's later steps or its next donation, and a donation's promotion is in
//   program order after the store).
// - a promoted frame's bytes and an item's bytes are written before the item is published to the
//   pool (gc_tq_put: fence; turn store) and read after it is taken (turn load; fence), so the
//   taker's child sees its parent's slot and the slot's count by cumulativity.
// - frames: a freed slot's index goes to the free ring (gc_tq_put releases); it is reused only
//   after its task returned, when no child holds a pointer into it any more.
// - sum groups: a flush adds the lane's sum with a relaxed atomic, then its delta with the join's
//   acquire-release RMW (release: the sum before the count; acquire, for whoever reaches 0: every
//   earlier flush's sum); a credit is a relaxed add, ordered before the handed entry's publication
//   (the pool's release, or __syncwarp), so the taker's flushes come after it in the count's order.

#pragma once
#ifndef GPU_CILK_PORTABLE_CUH
#include "gpu_cilk/portable.cuh"
#endif
// Needs runtime.cuh and ticket_queue.cuh before it (the cuda backend assembles them in that order).

// Threads per block of the persistent kernel (8 warps); the host sizes shared memory for it.
#define GC_PERSISTENT_THREADS 256

// Programs with priority spawns: the assembler defines this to 1 and appends heap.cuh and
// ready_heap.cuh.
#ifndef GC_PRIORITIES
#define GC_PRIORITIES 0
#endif

// ---------------------------------------------------------------------------------------------
// Frames and lane-stack entries (one layout for both).

struct gc_frame_hdr {
  int pending;             // children outstanding (see JOIN COUNTERS)
  gc_u32 task;             // the task's index in the program
  gc_u32 next_segment;     // low 16 bits: the state (below); high 16 bits: the task's result bytes
  gc_u32 depth;            // recursion level of the task
  void* dest;              // where the task's result goes (null: discarded)
  gc_frame_hdr* parent;    // the frame that waits for this task (null: the root); a DEAD entry:
                           // the pool frame it was promoted to (null: sent to the pool as an item)
};

// States (low 16 bits of next_segment): 0 FRESH (not started: the arguments are in the payload),
// 1..=SYNCS the continuation to run, SYNCS + 1 deliver the deferred return value, DEAD.
#define GC_SEG_FRESH 0u
#define GC_SEG_DEAD 0xffffu
__device__ __forceinline__ gc_u32 gc_seg_state(gc_u32 w) { return w & 0xffffu; }
__device__ __forceinline__ gc_u32 gc_seg_ret_bytes(gc_u32 w) { return w >> 16; }
__device__ __forceinline__ gc_u32 gc_seg_word(gc_u32 state, gc_u32 ret_bytes) { return state | ret_bytes << 16; }

template <typename Task> struct gc_pslot {
  gc_frame_hdr h;
  typename Task::Frame frame;
  typename Task::Ret deferred;  // a `return` with children outstanding (implicit sync)
};

// ---------------------------------------------------------------------------------------------
// Items (spawned calls moving between lanes and warps): a 32-byte header, then the arguments,
// 16-aligned — the arguments at the same offset as in a FRESH entry. The program's item type
// `gc_items<..>::Item` is the largest task's `gc_pitem<W>` (the assembler defines `gc_items` once
// the tasks' argument structs are known).

struct gc_pitem_hdr {
  gc_u32 task;             // the callee's index in the program
  gc_u32 depth;            // its recursion level
  void* dest;              // where its result goes (null: discarded)
  gc_frame_hdr* parent;    // the pool frame waiting for it (null: the root)
  gc_u32 ret_bytes;        // the callee's result bytes
  gc_u32 flags;            // 1: a member of its parent's sum group (SUM GROUPS)
};

template <int W> struct gc_pitem {
  gc_pitem_hdr h;
  alignas(16) gc_u64 args[W];
};

template <typename Any> struct gc_items;  // defined by the assembled program: `typedef gc_pitem<W> Item;`

// ---------------------------------------------------------------------------------------------
// Scheduler state (the kernel parameter; mirrored by `GcPSched` in the runtime's abi.rs).

enum gc_pctl_word : gc_u32 {
  // Line 0, written once: what every warp polls to know when to stop.
  GC_PCTL_DONE = 0,    // the root has returned
  GC_PCTL_ABORT = 1,   // a fault was raised: stop
  // Line 1, updated with atomics while the run goes on (kept off the polled line).
  GC_PCTL_HUNGRY = 32,  // warps that found no work
  GC_PCTL_WORDS = 64,  // (two 128-byte lines)
};

enum gc_pstat : gc_u32 {
  GC_PSTAT_PROMOTED = 0,    // lane entries promoted to pool frames (slow clones)
  GC_PSTAT_DONATED = 1,     // items sent to the pool
  GC_PSTAT_TAKEN = 2,       // items taken from the pool (and the ready heap)
  GC_PSTAT_MAX_DEPTH = 3,   // deepest level of a task (atomicMax)
  GC_PSTAT_FRAMES = 4,      // frame slots ever handed out from the never-used part of the pool
  GC_PSTAT_SHARED = 5,      // entries handed to an idle lane of the same warp
  GC_PSTAT_ROUNDS = 6,      // warp rounds that ran steps
  GC_PSTAT_STEPS = 7,       // lane steps those rounds ran (steps / rounds = lanes busy per round)
  GC_PSTAT_CYC_IDLE = 8,    // warp cycles spent finding no work (polls and sleeps), summed over warps
  GC_PSTAT_CYC_RUN = 9,     // warp cycles spent running steps
  GC_PSTAT_CYC_ALL = 10,    // warp cycles in the loop in total (the rest: taking, handing over)
  GC_PSTAT_SPILLS = 11,     // lane stacks that overflowed and spilled
  GC_PSTAT_PRIO = 12,       // priority spawns queued in the ready heap (ready_heap.cuh)
  GC_PSTAT_PRIO_FULL = 13,  // priority spawns that found every heap slot taken (plain spawns instead)
  GC_PSTAT_TASKS = 14,      // then per task: [2 * task] tasks started, [2 * task + 1] continuations run
};

struct gc_psched {
  unsigned char* pool;          // gc_tq<Item>: ready items, oldest first
  long long* pool_avail;        // items published in `pool` and not yet claimed
  unsigned char* frames;        // frame slots
  gc_u64 frame_bytes;           // bytes per slot (a multiple of 16)
  gc_u64 frame_count;           // slots
  gc_tq<gc_u32>* free_ring;     // indices of freed slots
  long long* free_avail;        // freed slots published and not yet claimed
  gc_u64* fresh;                // next never-used slot
  gc_u32* ctl;                  // GC_PCTL_* words
  gc_fault* fault;              // the first fault
  void* result;                 // the root's result cell
  gc_u64* stats;                // GC_PSTAT_* counters
  gc_xheap* temps;              // the temporary heap (alloc!), null when no task uses it
  const unsigned char* root_args;  // the root call's arguments (sizeof(<root>_args) bytes)
  gc_u64 pool_slack;            // the pool accepts items while it holds fewer than capacity - slack
  unsigned char* lanes;         // per lane (global thread index): lane_cap entries of entry_bytes
  gc_u64 entry_bytes;           // bytes of a lane-stack entry (>= frame_bytes, >= the item size)
  // Prioritized ready work (spawn!(.., priority = key); ready_heap.cuh), all null / 0 when the
  // program has no priority spawn: the batched heap, the item slots its keys name, and three
  // ticket queues of slot indices / keys.
  void* prio_heap;              // gc_heap<gc_prio_key> (heap.cuh), null: no priority spawns
  unsigned char* prio_items;    // prio_slots items
  void* prio_free;              // gc_tq<gc_u32>: freed item slots
  void* prio_inbox;             // gc_tq<gc_prio_key>: spawned, not yet in the heap
  void* prio_ready;             // gc_tq<gc_u32>: slots taken from the heap, best first
  void* prio_stage;             // per server block: 2 * GC_PRIO_K keys (gc_prio_key)
  long long* prio_counters;     // GC_PRIO_CTR_* words, each on its own 128-byte line
  gc_u64 prio_slots;            // item slots (every queued priority spawn holds one)
  gc_u32 lane_cap;              // entries per lane stack (a power of two)
  gc_u32 max_depth;             // deepest recursion level allowed (Config::max_depth)
  gc_u32 dev_stack_budget;      // stack bytes serial device forms (plain calls, helpers) may use
  gc_u32 idle_max_ns;           // longest sleep of an idle warp between two looks for work
  gc_u32 prio_servers;          // the grid's last blocks serve the ready heap (0: no priority spawns)
  gc_u32 prio_window;           // servers keep the ready queue at least this full while the heap has keys
  gc_u32 prio_reserve;          // priority spawns go depth-first once this many wait in the heap's queues
  gc_u32 pad;
};

// One warp's state in shared memory: the header, then 32 items (the exchange of a hand-over).
struct gc_pwarp_hdr {
  int hungry;       // the global hungry count, read every few rounds
  unsigned nblock;  // BLOCK ITEMS: how many of this warp's exchange items a join runs
  unsigned bmask;   // BLOCK ITEMS: the lanes that own them, in order
  int pad;
};

struct gc_pwarp {
  const gc_psched* P;
  gc_pwarp_hdr* h;
  unsigned char* xchg;       // 32 items of `item_bytes` (shared memory)
  gc_u32 item_bytes;
  gc_u32 lane;
};

// Free frame slots a lane keeps (a multiple of 2): refilled and flushed half at a time.
#define GC_FRAME_CACHE 16u

// A lane's stack: live entries [lo, hi) of a ring (indices wrap; an entry never moves while live,
// so children may point into it). Only its own lane touches it.
struct gc_lstack {
  unsigned char* ring;
  gc_u32 lo, hi;
  gc_u32 mask;        // lane_cap - 1
  gc_u32 cap;         // lane_cap
  gc_u32 bytes;       // entry bytes
  gc_u32 fresh_lo;    // no FRESH entry lies below this index (a hint for the oldest-first search)
  // Free pool-frame slots this lane holds (LANE FRAME CACHE): allocations and frees take no atomic
  // and no fence until the cache runs dry or over.
  gc_u32 fc_n;
  gc_u32 fc[GC_FRAME_CACHE];
  // SUM GROUPS: the group whose members this lane ran last (null: none), its sum cell and result
  // bytes, and what the lane owes it: the members' values and their effect on its count.
  gc_frame_hdr* acc_group;
  void* acc_dest;
  gc_u64 acc_sum;
  int acc_delta;
  int acc_credit;  // counts the lane added to its pool-frame group ahead of hand-offs, not used yet
  gc_u32 acc_bytes;
  // A pool frame a flush made ready between two steps (a group whose count it brought to 0): the
  // lane resumes it at its next step.
  gc_frame_hdr* resume;
  // This lane's counts (added to the run's statistics once, at the end).
  gc_u64 n_promoted, n_shared, n_donated, n_spills, n_frames;
};

__device__ __forceinline__ gc_frame_hdr* gc_lane_at(const gc_lstack* L, gc_u32 i) {
  return reinterpret_cast<gc_frame_hdr*>(L->ring + (gc_u64)(i & L->mask) * L->bytes);
}

// Pops the top entry. The oldest-FRESH hint never stays above the top: a later push at that index
// would be FRESH below the hint.
__device__ __forceinline__ void gc_lane_pop(gc_lstack* L) {
  L->hi -= 1u;
  if ((int)(L->fresh_lo - L->hi) > 0) L->fresh_lo = L->hi;
}

// ---------------------------------------------------------------------------------------------
// What a running segment sees (`gc_cx` of this scheduler).

struct gc_cx {
  gc_pwarp* W;
  gc_lstack* L;
  gc_frame_hdr* frame;       // the running task's frame: its lane entry, or a pool frame
  gc_u64* mask;              // bytes of the frame that remote children write
  gc_u32 mask_words;
  gc_u32 deferred;           // children spawned in the current segment
  gc_u32 remote;             // of those, children that left this lane's stack during it
  gc_u32 depth;              // recursion level of the running task
  gc_u32 task;               // its index (for faults)
  gc_u32 spawns_from;        // lane index of this segment's first child entry
  mutable gc_u32 dev_depth;  // depth of serial recursion (plain calls of tasks, gc_dev_guard)
  mutable gc_u32 unwinding;  // a guard tripped: every serial form returns at once (the run fails)
  mutable gc_u64 dev_base;   // stack address of the outermost serial form's guard
  // The priority (gc_priority image) of the spawn gc_spawn_prio hands to gc_spawn (0: a plain
  // spawn).
  gc_u64 spawn_key;
  // The running task is a sum-group root or member: its spawns are members of the lane's group.
  gc_u32 member;
};

__device__ __forceinline__ void gc_cx_init(gc_cx& cx, gc_pwarp* W, gc_lstack* L, gc_frame_hdr* frame, gc_u64* mask,
                                           gc_u32 mask_words, gc_u32 depth, gc_u32 task) {
  cx.W = W;
  cx.L = L;
  cx.frame = frame;
  cx.mask = mask;
  cx.mask_words = mask_words;
  for (gc_u32 i = 0; i < mask_words; ++i) mask[i] = 0ull;
  cx.deferred = 0u;
  cx.remote = 0u;
  cx.depth = depth;
  cx.task = task;
  cx.spawns_from = L->hi;
  cx.dev_depth = 0u;
  cx.unwinding = 0u;
  cx.dev_base = 0ull;
  cx.spawn_key = 0ull;
  cx.member = 0u;
}

__device__ inline void gc_praise(const gc_psched* P, gc_u32 code, gc_u32 site, gc_u32 task, gc_u32 level,
                                 gc_u64 detail) {
  if (atomicCAS(&P->fault->code, 0u, code) == 0u) {
    P->fault->site = site;
    P->fault->task = task;
    P->fault->level = level;
    P->fault->detail = detail;
    __threadfence();
  }
  atomicExch(&P->ctl[GC_PCTL_ABORT], 1u);
}

__device__ inline void gc_raise_cx(const gc_cx& cx, gc_u32 code, gc_u32 site, gc_u64 detail) {
  if (cx.unwinding != 0u) return;  // a check of a placeholder value after a guard trip
  gc_praise(cx.W->P, code, site, cx.task, cx.depth + cx.dev_depth, detail);
}

__device__ inline gc_xheap* gc_temps_of(const gc_cx& cx) { return cx.W->P->temps; }
// A plain call over the stack budget failed the run: the serial forms return at once.
__device__ inline bool gc_unwinding(const gc_cx& cx) { return cx.unwinding != 0u; }
// `&Sum` adds: one atomic add.
template <typename U> __device__ inline U gc_sum_add(const gc_cx&, U* ptr, U v) { return atomicAdd(ptr, v); }

// Flags of a serial device form (the third argument of its guard, written by the compiler; this
// scheduler needs neither).
enum gc_dev_flags : gc_u32 { GC_DEV_WARP = 1u, GC_DEV_DIRTY = 2u };

// Why a spawn could not be kept (the high word of a GC_FAULT_DEV_STACK fault's detail;
// runtime/src/backend/cuda/faults.rs words each).
enum gc_forced : gc_u32 {
  GC_FORCED_NO_FRAME = 1u,  // the frame pool is used up
  GC_FORCED_FULL = 2u,      // a lane stack spilled into a full global pool
  GC_FORCED_CALL = 4u,      // a plain call of a task from a segment recursed past the stack budget
};

// Entered by every serial device form (`<task>_dev`, helpers): bounds the recursion of plain
// calls, which uses the thread's stack, in BYTES (the address of a local here against the one
// the outermost serial form recorded): past `dev_stack_budget` the run fails at this site and
// `cx.unwinding` makes every serial form return at once (generated code checks it after its guard
// and after every call).
struct gc_dev_guard {
  const gc_cx& cx;
  __device__ gc_dev_guard(const gc_cx& c, gc_u32 site, gc_u32 = 0u) : cx(c) {
    char probe;  // only its address is used: where this thread's stack is now
    const gc_u64 here = reinterpret_cast<gc_u64>(&probe);
    if (cx.dev_depth++ == 0u) cx.dev_base = here;
    if (cx.unwinding != 0u) return;
    // Stacks grow down on GPUs and hosts alike; the distance either way is what counts.
    const gc_u64 used = cx.dev_base > here ? cx.dev_base - here : here - cx.dev_base;
    if (used > (gc_u64)cx.W->P->dev_stack_budget) {
      gc_raise_cx(cx, GC_FAULT_DEV_STACK, site, (gc_u64)cx.W->P->dev_stack_budget | (gc_u64)GC_FORCED_CALL << 32);
      cx.unwinding = 1u;
    }
  }
  __device__ ~gc_dev_guard() { cx.dev_depth -= 1; }
};

// Whether the run is over (the root returned, or a fault stopped it).
__device__ __forceinline__ bool gc_pstopped(const gc_psched* P) {
  const volatile gc_u32* c = P->ctl;
  return c[GC_PCTL_DONE] != 0u || c[GC_PCTL_ABORT] != 0u;
}

// ---------------------------------------------------------------------------------------------
// Counted ticket queues: a gc_tq plus the number of published elements not yet claimed, so a
// consumer takes only what exists (never blocks on an empty queue) with one atomic.

template <typename T> __device__ inline gc_tq<T>* gc_pool_queue(const gc_psched* P) {
  return reinterpret_cast<gc_tq<T>*>(P->pool);
}

// Claims up to `want` published elements; returns how many (0: none published now). One thread.
__device__ inline unsigned gc_claim(long long* avail, unsigned want) {
  if (*(volatile long long*)avail <= 0) return 0u;
  long long a = (long long)atomicAdd(reinterpret_cast<unsigned long long*>(avail), (unsigned long long)(-(long long)want));
  long long got = a < 0 ? 0 : (a < (long long)want ? a : (long long)want);
  if (got < (long long)want) atomicAdd(reinterpret_cast<unsigned long long*>(avail), (unsigned long long)((long long)want - got));
  return (unsigned)got;
}

// Makes `n` elements put into the queue claimable: a RELEASE add, so the turn stores that filled
// their slots are visible before the count that lets consumers claim them. Safety does not need it
// (a consumer waits for its slot's turn and acquires the element there, gc_tq_get), but without
// it a consumer can claim a slot whose turn is still in flight and sleep in gc_tq_get's back-off
// (a relaxed add measured 7% slower on queens(15), whose frame ring turns over 13 M slots).
__device__ inline void gc_publish(long long* avail, unsigned n) {
  gc_red_release_add(reinterpret_cast<unsigned long long*>(avail), (unsigned long long)n);
}

__device__ inline bool gc_pool_has_room(const gc_psched* P, gc_u64 n) {
  const gc_tq<gc_u64>* q = reinterpret_cast<const gc_tq<gc_u64>*>(P->pool);
  gc_u64 head = gc_tq_ld(&q->head);
  gc_u64 tail = gc_tq_ld(&q->tail);
  return tail - head + n + P->pool_slack <= q->mask + 1ull;
}

// ---------------------------------------------------------------------------------------------
// Frame slots (pool frames: promoted entries). Any lane, divergent.

__device__ __forceinline__ gc_frame_hdr* gc_frame_at(const gc_psched* P, gc_u64 i) {
  return reinterpret_cast<gc_frame_hdr*>(P->frames + i * P->frame_bytes);
}
__device__ __forceinline__ gc_u32 gc_frame_index(const gc_psched* P, const gc_frame_hdr* f) {
  return (gc_u32)((reinterpret_cast<const unsigned char*>(f) - P->frames) / P->frame_bytes);
}
// Whether `f` is a pool frame (else a lane-stack entry; null is neither).
__device__ __forceinline__ bool gc_is_pool_frame(const gc_psched* P, const gc_frame_hdr* f) {
  const unsigned char* p = reinterpret_cast<const unsigned char*>(f);
  return p >= P->frames && p < P->frames + P->frame_count * P->frame_bytes;
}

// A frame slot for lane `L` (LANE FRAME CACHE): from its cache; an empty cache takes half its size
// at once, freed ones from the free ring, else never-used ones. Null when the pool is used up (the
// caller fails the run).
__device__ inline gc_frame_hdr* gc_alloc_frame(const gc_psched* P, gc_lstack* L) {
  if (L->fc_n == 0u) {
    const unsigned want = GC_FRAME_CACHE / 2u;
    const unsigned got = gc_claim(P->free_avail, want);
    if (got > 0u) {
      const unsigned long long t = atomicAdd(&P->free_ring->head, (unsigned long long)got);
      gc_tq_get_n(P->free_ring, t, got, &L->fc[L->fc_n]);
      L->fc_n += got;
    } else {
      const gc_u64 f = atomicAdd(P->fresh, (gc_u64)want);
      for (unsigned k = 0; k < want && f + k < P->frame_count; ++k) L->fc[L->fc_n++] = (gc_u32)(f + k);
      L->n_frames += L->fc_n;
    }
    if (L->fc_n == 0u) return nullptr;
  }
  return gc_frame_at(P, L->fc[--L->fc_n]);
}

// Gives frame slot `f` back (its task returned): into lane `L`'s cache; a full cache sends half of
// itself to the free ring first.
__device__ inline void gc_free_frame(const gc_psched* P, gc_lstack* L, gc_frame_hdr* f) {
  if (L->fc_n == GC_FRAME_CACHE) {
    const unsigned n = GC_FRAME_CACHE / 2u;
    gc_tq<gc_u32>* q = P->free_ring;
    const unsigned long long t = atomicAdd(&q->tail, (unsigned long long)n);
    L->fc_n -= n;
    gc_tq_put_n(q, t, n, &L->fc[L->fc_n]);
    gc_publish(P->free_avail, n);
  }
  L->fc[L->fc_n++] = gc_frame_index(P, f);
}

// ---------------------------------------------------------------------------------------------
// Frame masks: one bit per byte of a frame that a remote child writes.

__device__ inline void gc_mask_set(gc_u64* mask, gc_u64 off, gc_u64 len) {
  for (gc_u64 b = off; b < off + len; ++b) mask[b >> 6] |= 1ull << (b & 63);
}

// Stores `src` into `dst` except the bytes set in `mask` (written by children, maybe already).
template <typename F> __device__ inline void gc_store_masked(F* dst, const F& src, const gc_u64* mask) {
  const unsigned char* s = reinterpret_cast<const unsigned char*>(&src);
  unsigned char* d = reinterpret_cast<unsigned char*>(dst);
  const gc_u64 n = sizeof(F);
  gc_u64 b = 0;
  for (; b + 8 <= n; b += 8) {
    const gc_u64 m = (mask[b >> 6] >> (b & 63)) & 0xffull;
    if (m == 0ull) {
      gc_u64 w = 0;
      for (int k = 0; k < 8; ++k) w |= (gc_u64)s[b + k] << (8 * k);
      *reinterpret_cast<gc_u64*>(d + b) = w;
    } else if (m != 0xffull) {
      for (int k = 0; k < 8; ++k)
        if (!((m >> k) & 1ull)) d[b + k] = s[b + k];
    }
  }
  for (; b < n; ++b)
    if (!((mask[b >> 6] >> (b & 63)) & 1ull)) d[b] = s[b];
}

// Copies `n` bytes (a multiple of 8, both 8-aligned).
__device__ __forceinline__ void gc_copy_words(void* dst, const void* src, gc_u64 n) {
  gc_u64* d = reinterpret_cast<gc_u64*>(dst);
  const gc_u64* s = reinterpret_cast<const gc_u64*>(src);
  for (gc_u64 i = 0; i < n / 8; ++i) d[i] = s[i];
}

// ---------------------------------------------------------------------------------------------
// Warp tasks (`#[gpu_cilk(warp)]`): a task type that declares `static const bool WARP = true` has
// a cooperative entry `warp` (same signature as `seg0`) that all 32 lanes of a warp run together
// for one entry: its `lanes` loops are spread over the lanes and end with __syncwarp. Warp tasks
// are leaves (no spawn, no sync, no alloc!), so they need no frame.

template <typename T, typename = void> struct gc_is_warp {
  static const bool value = false;
};
template <typename T> struct gc_is_warp<T, decltype((void)T::WARP)> {
  static const bool value = T::WARP;
};

template <bool Warp> struct gc_warp_entry {
  template <typename Task>
  static __device__ bool run(gc_cx&, const typename Task::Args&, typename Task::Frame*, typename Task::Ret*) {
    return false;  // never called: the dispatch asks gc_is_warp first
  }
};
template <> struct gc_warp_entry<true> {
  template <typename Task>
  static __device__ bool run(gc_cx& cx, const typename Task::Args& a, typename Task::Frame* out, typename Task::Ret* ret) {
    return Task::warp(cx, a, out, ret);
  }
};

// ---------------------------------------------------------------------------------------------
// BLOCK ITEMS (`#[gpu_cilk(block)]`): a task type that declares `static const bool BLOCK = true`
// has a cooperative entry `block` (`seg0`'s signature plus the block's scratch) that every thread
// of a thread block runs together for one entry, with `SCRATCH` bytes of the block's shared memory
// for its `shared!` arrays. Block tasks are leaves, like warp tasks. How a block is freed for such
// an item (docs/architecture.md, "Block items"):
//
// - A lane whose top entry is a FRESH block item stops stepping (as for a warp item) and keeps it.
// - At the start of every round (where a warp holds nothing another warp waits for: a round's
//   takes, hand-overs and publications are all finished within it) the warp looks: if one of its
//   lanes holds a block item, it copies those items into its exchange area, sets the block's
//   `want` and joins; if `want` is set by another warp, it joins with none. A join is a counter in
//   shared memory (gc_pblock_join), not __syncthreads: a warp that leaves the loop (the run
//   stopped) counts itself in the high half for good, and a join that such a warp completes tells
//   everyone to leave too, so no warp ever waits for one that has exited.
// - Every warp reaches the start of a round within one round (a round runs at most
//   GC_LANE_QUANTUM steps per lane, the warp phase and the sharing, all finite; an idle warp's
//   round is a sleep), so a join completes once every warp has finished its current round.
// - When the join completes with every warp in it, every thread of the block is in the block
//   phase: only then does it use __syncthreads (in gc_pblock_start and the items themselves), and
//   it runs every collected item in turn; the owner lane delivers each result and completes it.
//   After the last item's barrier the exchange areas and the scratch are free again, and every
//   warp goes back to its own lane stacks.

template <typename T, typename = void> struct gc_is_block {
  static const bool value = false;
  static const gc_u64 scratch = 0;
};
template <typename T> struct gc_is_block<T, decltype((void)T::BLOCK)> {
  static const bool value = T::BLOCK;
  static const gc_u64 scratch = T::SCRATCH;
};

template <bool Block> struct gc_block_entry {
  template <typename Task>
  static __device__ bool run(gc_cx&, const typename Task::Args&, typename Task::Frame*, typename Task::Ret*,
                             unsigned char*) {
    return false;  // never called: the dispatch asks gc_is_block first
  }
};
template <> struct gc_block_entry<true> {
  template <typename Task>
  static __device__ bool run(gc_cx& cx, const typename Task::Args& a, typename Task::Frame* out, typename Task::Ret* ret,
                             unsigned char* scratch) {
    return Task::block(cx, a, out, ret, scratch);
  }
};

// The block's join state, after the warps' areas in dynamic shared memory (16 bytes; the scratch
// of block items follows it).
struct gc_pblock_hdr {
  unsigned count;  // arrivals of the current join (low 16 bits) + warps that left the loop (each
                   // counted in both halves: it never arrives again)
  unsigned gen;    // completed joins
  int want;        // a warp with block items is joining (cleared when the join completes)
  int go;          // the last join's verdict: 1 = run the items, 0 = the block is stopping
};

// Lane 0 of a warp: arrives at the block's join (`add` 1) or leaves the loop for good (`add`
// 0x10001), and for an arrival waits until every warp has arrived or left. True: every warp
// arrived, run the items (every thread of the block is in the block phase).
__device__ inline bool gc_pblock_join(gc_pblock_hdr* B, unsigned nwarps, unsigned add) {
  volatile gc_pblock_hdr* vb = B;
  const unsigned g = vb->gen;  // cannot move before this warp's own arrival below
  __threadfence_block();       // the exchange items and counts written before are seen after `gen`
  const unsigned old = atomicAdd(&B->count, add);
  if ((old & 0xffffu) + 1u == nwarps) {
    // The last arrival: the verdict, a fresh count (the warps that left stay counted), then `gen`.
    const unsigned left = (old >> 16) + (add >> 16);
    vb->go = left == 0u ? 1 : 0;
    vb->want = 0;
    vb->count = left * 0x10001u;
    __threadfence_block();
    atomicAdd(&B->gen, 1u);
  } else if (add == 1u) {
    unsigned ns = 32u;
    while (vb->gen == g) {
      __nanosleep(ns);
      ns = ns < 1024u ? ns * 2u : ns;
    }
  }
  __threadfence_block();
  return add == 1u && vb->go != 0;
}

// ---------------------------------------------------------------------------------------------
// Sum groups (SUM GROUPS): a task type whose `SUM` is true (the assembler defined GC_SUM_<task>)
// has `sum_base()`, its constant.

// Programs with sum-group tasks: the assembler defines this to 1.
#ifndef GC_SUMS
#define GC_SUMS 0
#endif

template <typename T, typename = void> struct gc_is_sum {
  static const bool value = false;
};
template <typename T> struct gc_is_sum<T, decltype((void)T::SUM)> {
  static const bool value = T::SUM;
};
// `base`: the task's constant; `add`: adds a member's value (its return value, or its constant
// when it synced) to the lane's sum (wrapping: integers only, which is all sum tasks return).
template <bool Sum> struct gc_sum_of {
  template <typename Task> static __device__ typename Task::Ret base() { return typename Task::Ret(); }
  template <typename Task, typename L> static __device__ void add(L*, bool, const typename Task::Ret&) {}
};
template <> struct gc_sum_of<true> {
  template <typename Task> static __device__ typename Task::Ret base() { return Task::sum_base(); }
  template <typename Task, typename L> static __device__ void add(L* lane, bool sync, const typename Task::Ret& ret) {
    lane->acc_sum += (gc_u64)(sync ? Task::sum_base() : ret);
  }
};

// The `pending` word of a FRESH member entry (no priority key compresses to it: gc_key32 sets bit
// 23 whenever it sets bit 31).
#define GC_SUM_MEMBER ((int)0x80000000)

// ---------------------------------------------------------------------------------------------
// Lane stacks: entries, items, promotion.

// Byte offset of the payload (arguments of a FRESH entry, the frame of a suspended one) in an
// entry, a frame slot and an item alike.
#define GC_PAYLOAD 32u

// Where a child's result goes: byte `offset` of the frame data of `Task`'s frame `frame` (a lane
// entry or a pool frame: the same layout).
template <typename Task> __device__ inline void* gc_dest_in(gc_frame_hdr* frame, gc_u64 offset) {
  if (offset == ~0ull) return nullptr;
  return reinterpret_cast<unsigned char*>(frame) + GC_OFFSETOF(gc_pslot<Task>, frame) + offset;
}

// Pushes item `it` on the lane's stack as a FRESH entry (the caller checked the room).
template <typename Item> __device__ inline void gc_push_item(gc_lstack* L, const Item& it) {
  gc_frame_hdr* e = gc_lane_at(L, L->hi);
  L->hi += 1u;
  e->pending = it.h.flags != 0u ? GC_SUM_MEMBER : 0;
  e->task = it.h.task;
  e->next_segment = gc_seg_word(GC_SEG_FRESH, it.h.ret_bytes);
  e->depth = it.h.depth;
  e->dest = it.h.dest;
  e->parent = it.h.parent;
  gc_copy_words(reinterpret_cast<unsigned char*>(e) + GC_PAYLOAD, it.args, sizeof(it.args));
}

// The item of FRESH entry `e`.
template <typename Item> __device__ inline void gc_entry_item(const gc_frame_hdr* e, Item* it) {
  it->h.task = e->task;
  it->h.depth = e->depth;
  it->h.dest = e->dest;
  it->h.parent = e->parent;
  it->h.ret_bytes = gc_seg_ret_bytes(e->next_segment);
  it->h.flags = e->pending == GC_SUM_MEMBER ? 1u : 0u;
  gc_copy_words(it->args, reinterpret_cast<const unsigned char*>(e) + GC_PAYLOAD, sizeof(it->args));
}

// If `x`'s parent is a lane entry that was promoted (DEAD, forwarding to a pool frame), points
// `x`'s parent and destination at the same place in that frame and returns true.
__device__ inline bool gc_repoint(const gc_psched* P, gc_frame_hdr* x) {
  gc_frame_hdr* p = x->parent;
  if (p == nullptr || gc_is_pool_frame(P, p) || gc_seg_state(p->next_segment) != GC_SEG_DEAD) return false;
  gc_frame_hdr* f = p->parent;
  if (x->dest != nullptr) {
    x->dest = reinterpret_cast<unsigned char*>(f) + (reinterpret_cast<unsigned char*>(x->dest) - reinterpret_cast<unsigned char*>(p));
  }
  x->parent = f;
  return true;
}

// Moves suspended entry `e` into a pool frame (header and frame bytes) and leaves a DEAD
// tombstone that forwards to it. False (a fault raised) when the frame pool is used up.
__device__ inline bool gc_promote(const gc_psched* P, gc_lstack* L, gc_frame_hdr* e, gc_u64 bytes, gc_u32 task) {
  gc_frame_hdr* f = gc_alloc_frame(P, L);
  if (f == nullptr) {
    gc_praise(P, GC_FAULT_DEV_STACK, 0u, task, e->depth, (gc_u64)P->frame_count | (gc_u64)GC_FORCED_NO_FRAME << 32);
    return false;
  }
  gc_repoint(P, e);  // its own parent may have been promoted just before
  gc_copy_words(f, e, bytes);
  e->next_segment = GC_SEG_DEAD;
  e->parent = f;
  L->n_promoted += 1u;
  return true;
}

// The index of the oldest FRESH entry below the top of the lane's stack, or -1. Entries below
// `fresh_lo` are not FRESH (pushes happen at the top, and pops keep the hint at most the top).
__device__ inline long long gc_oldest_fresh(gc_lstack* L) {
  gc_u32 i = (int)(L->fresh_lo - L->lo) > 0 ? L->fresh_lo : L->lo;
  for (; i + 1u < L->hi; ++i) {
    if (gc_seg_state(gc_lane_at(L, i)->next_segment) == GC_SEG_FRESH) {
      L->fresh_lo = i;
      return (long long)i;
    }
  }
  L->fresh_lo = L->hi;
  return -1;
}

__device__ __forceinline__ int gc_join_add(int* counter, int v);

// Pays what lane `L` owes its sum group (SUM GROUPS): the members' values into the group's sum
// cell, their effect into its count. Returns the group when this brought its count to 0 (the
// caller resumes it), else null. A lane-entry group lies on this lane's stack, below the members
// (nobody else sees it): plain adds. A pool frame: the sum with a relaxed atomic add, then the
// count with the join's acquire-release add (release: the sum before the count; acquire, for the
// one that reaches 0: every lane's sum). A lane that ran members since its last flush owes at
// least one ended counted member, so the count it adds to is >= 1 before the add.
__device__ inline gc_frame_hdr* gc_sum_flush(const gc_psched* P, gc_lstack* L) {
  gc_frame_hdr* g = L->acc_group;
  if (g == nullptr) return nullptr;
  L->acc_group = nullptr;
  const gc_u64 sum = L->acc_sum;
  const int delta = L->acc_delta - L->acc_credit;
  L->acc_sum = 0ull;
  L->acc_delta = 0;
  L->acc_credit = 0;
  if (!gc_is_pool_frame(P, g)) {
    if (L->acc_bytes == 8u) *reinterpret_cast<gc_u64*>(L->acc_dest) += sum;
    else *reinterpret_cast<gc_u32*>(L->acc_dest) += (gc_u32)sum;
    g->pending += delta;
    return nullptr;
  }
  if (sum == 0ull && delta == 0) return nullptr;
  if (sum != 0ull) {
    if (L->acc_bytes == 8u) atomicAdd(reinterpret_cast<unsigned long long*>(L->acc_dest), (unsigned long long)sum);
    else atomicAdd(reinterpret_cast<unsigned*>(L->acc_dest), (unsigned)sum);
  }
  return gc_join_add(&g->pending, delta) + delta == 0 ? g : nullptr;
}

// Flushes lane `L`'s group; a group that became ready is resumed at the lane's next step.
__device__ __forceinline__ void gc_sum_leave(const gc_psched* P, gc_lstack* L) {
  if (L->acc_group == nullptr) return;
  gc_frame_hdr* r = gc_sum_flush(P, L);
  if (r != nullptr) L->resume = r;
}

// Member entries leave the lane counted (SUM GROUPS) without an atomic each: the lane adds
// GC_SUM_CREDIT to its pool-frame group's count at a time (an over-count, which only delays the
// count's 0) and moves one member's count from its delta to those credits per hand-away; the
// flush gives back what is left. A lane-entry group is paid in full (plain adds): it is about to
// be promoted with its count.
#define GC_SUM_CREDIT 64
__device__ inline void gc_sum_handoff(const gc_psched* P, gc_lstack* L, const gc_frame_hdr* e) {
  if (L->acc_group == nullptr) return;  // every entry on the stack is counted
  if (!gc_is_pool_frame(P, L->acc_group)) {
    gc_sum_leave(P, L);
    return;
  }
  if (e->pending != GC_SUM_MEMBER) return;
  if (L->acc_credit == 0) {
    // Relaxed: the entry is published after it (the pool's release, or __syncwarp), so the taker's
    // count updates come after this add.
    atomicAdd(&L->acc_group->pending, GC_SUM_CREDIT);
    L->acc_credit = GC_SUM_CREDIT;
  }
  L->acc_credit -= 1;
  L->acc_delta -= 1;
}

// Takes FRESH entry `i` (the oldest: only suspended and DEAD entries lie below it) off the lane's
// stack as an item: promotes the entries below it and points the entries above it that referred
// to them at their new places. False (a fault raised) when the frame pool is used up. Owner lane,
// between two steps.
//
// Which entries above `i` refer below it (CHILD BLOCKS): a segment runs only on its lane's top
// entry and pushes all its children at once, so the children of a lane entry q form one
// contiguous block directly above q (shortened from the top as they finish), and every entry
// above that block descends from the block's top entry. No FRESH entry lies below `i`, so a lower
// sibling of `i` is impossible (siblings run top down): the only entries above `i` whose parent
// lies below it are `i`'s own younger siblings, the entries right above it up to the first one
// whose parent does not move. The repointing stops there: a take costs the entries it promotes,
// not the height of the stack.
//
// SUM GROUPS: the entry leaves counted (gc_sum_handoff), and when it promoted
// anything, every entry above `i` is looked at (a lane-entry group's members lie anywhere above it).
template <typename Item> __device__ bool gc_take_oldest(const gc_psched* P, gc_lstack* L, gc_u32 i, Item* out) {
  gc_sum_handoff(P, L, gc_lane_at(L, i));
  bool moved = false;
  for (gc_u32 k = L->lo; k < i; ++k) {
    gc_frame_hdr* e = gc_lane_at(L, k);
    if (gc_seg_state(e->next_segment) == GC_SEG_DEAD) continue;
    if (!gc_promote(P, L, e, P->frame_bytes, e->task)) return false;
    moved = true;
  }
  gc_frame_hdr* e = gc_lane_at(L, i);
  gc_repoint(P, e);
  gc_entry_item(e, out);
  e->next_segment = GC_SEG_DEAD;
  e->parent = nullptr;
  const bool all = GC_SUMS && moved;
  for (gc_u32 k = i + 1u; k < L->hi && (gc_repoint(P, gc_lane_at(L, k)) || all); ++k) {
  }
  L->lo = i + 1u;
  L->fresh_lo = i + 1u;
  return true;
}

// Writes one item of `Callee` at `dst` (an item slot of the program's item type).
template <typename Callee> __device__ inline void gc_write_item(unsigned char* dst, const typename Callee::Args& a,
                                                                gc_u32 depth, void* dest, gc_frame_hdr* parent) {
  gc_pitem_hdr* h = reinterpret_cast<gc_pitem_hdr*>(dst);
  h->task = Callee::ID;
  h->depth = depth;
  h->dest = dest;
  h->parent = parent;
  h->ret_bytes = (gc_u32)sizeof(typename Callee::Ret);
  h->flags = 0u;
  *reinterpret_cast<typename Callee::Args*>(dst + GC_PAYLOAD) = a;
}

// Puts one item into the pool (any lane; the caller checked the room).
template <typename Item> __device__ inline void gc_pool_put(const gc_psched* P, gc_lstack* L, const Item& it) {
  gc_tq<Item>* q = gc_pool_queue<Item>(P);
  const unsigned long long t = atomicAdd(&q->tail, 1ull);
  gc_tq_put(q, t, it);
  gc_publish(P->pool_avail, 1u);
  L->n_donated += 1u;
}

// The lane's stack is full at a spawn of `Task`'s running segment: SPILLS it (see OVERFLOW).
// Every suspended entry is promoted, every FRESH one goes to the pool, and the running task's
// own entry (if its frame is one) moves to a pool frame that `cx.frame` then names; the children
// this segment already spawned become remote. False (a fault raised) when the pool has no room
// for the FRESH entries or the frame pool is used up.
template <typename Task> __device__ bool gc_lane_spill(gc_cx& cx) {
  typedef typename gc_items<Task>::Item Item;
  const gc_psched* P = cx.W->P;
  gc_lstack* L = cx.L;
  // The running task's frame data (for the masks of its remote children), once it is a pool frame.
  unsigned char* data = gc_is_pool_frame(P, cx.frame)
                            ? reinterpret_cast<unsigned char*>(cx.frame) + GC_OFFSETOF(gc_pslot<Task>, frame)
                            : nullptr;
  gc_u64 fresh = 0;
  for (gc_u32 k = L->lo; k < L->hi; ++k) fresh += gc_seg_state(gc_lane_at(L, k)->next_segment) == GC_SEG_FRESH ? 1u : 0u;
  if (fresh > 0 && !gc_pool_has_room(P, fresh)) {
    gc_raise_cx(cx, GC_FAULT_DEV_STACK, 0u, (gc_u64)L->cap | (gc_u64)GC_FORCED_FULL << 32);
    return false;
  }
  L->n_spills += 1u;
  // SUM GROUPS: pay the group first; a running member or root goes on spawning into it, wherever
  // it moves (its count cannot reach 0 while the running task is counted in it).
  gc_frame_hdr* group = L->acc_group;
  const gc_u64 group_off = group != nullptr ? (gc_u64)(reinterpret_cast<unsigned char*>(L->acc_dest) - reinterpret_cast<unsigned char*>(group)) : 0u;
  const gc_u32 group_bytes = L->acc_bytes;
  gc_sum_leave(P, L);
  for (gc_u32 k = L->lo; k < L->hi; ++k) {
    gc_frame_hdr* e = gc_lane_at(L, k);
    const gc_u32 st = gc_seg_state(e->next_segment);
    if (st == GC_SEG_DEAD) continue;
    if (e == cx.frame) {
      // The running task: its frame is still in registers; the slot gets its header, and the
      // join protocol of a segment with remote children (gc_lfinish) counts from 0. A sum-group
      // root keeps its whole slot (its count and its sum cell).
      const bool root = gc_is_sum<Task>::value && cx.member != 0u;
      if (!gc_promote(P, L, e, root ? (gc_u64)sizeof(gc_pslot<Task>) : (gc_u64)GC_PAYLOAD, cx.task)) return false;
      cx.frame = e->parent;
      if (!root) cx.frame->pending = 0;
      data = reinterpret_cast<unsigned char*>(cx.frame) + GC_OFFSETOF(gc_pslot<Task>, frame);
    } else if (st == GC_SEG_FRESH) {
      gc_repoint(P, e);
      Item it;
      gc_entry_item(e, &it);
      if (it.h.parent == cx.frame && data != nullptr && cx.member == 0u) {
        // A child of the running segment: it may finish before the segment ends.
        cx.remote += 1u;
        if (it.h.dest != nullptr) {
          gc_mask_set(cx.mask, (gc_u64)(reinterpret_cast<unsigned char*>(it.h.dest) - data), it.h.ret_bytes);
        }
      }
      e->next_segment = GC_SEG_DEAD;
      e->parent = nullptr;
      gc_pool_put(P, L, it);
    } else {
      if (!gc_promote(P, L, e, P->frame_bytes, e->task)) return false;
    }
  }
  L->lo = L->hi;
  L->fresh_lo = L->hi;
  cx.spawns_from = L->hi;
  if (cx.member != 0u && group != nullptr) {
    // The running task's group, where it lives now (a promoted lane entry forwards to its slot).
    if (!gc_is_pool_frame(P, group) && gc_seg_state(group->next_segment) == GC_SEG_DEAD) group = group->parent;
    L->acc_group = group;
    L->acc_dest = reinterpret_cast<unsigned char*>(group) + group_off;
    L->acc_bytes = group_bytes;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Child order (CHILD ORDER): the children one segment left on its lane's stack run in the serial
// order (the first spawned on top: the lane pops it first) or, in programs with priority spawns,
// best first (the highest priority on top; equal priorities in the serial order). A FRESH entry's
// `pending` word (unused until it runs) holds its priority, compressed to 32 order-preserving bits.

// The u64 priority image `k` (gc_priority) in 32 bits, order-preserving (k < 2^31 exactly, larger
// keys by their bit length and top 24 bits).
__device__ __forceinline__ gc_u32 gc_key32(gc_u64 k) {
  if (k < (1ull << 31)) return (gc_u32)k;
  const gc_u32 bits = 64u - (gc_u32)__clzll((long long)k);
  return 0x80000000u | (bits - 32u) << 24 | (gc_u32)((k >> (bits - 24u)) & 0xffffffull);
}

// Swaps the first `bytes` (a multiple of 8) of two entries.
__device__ __forceinline__ void gc_swap_entries(gc_frame_hdr* a, gc_frame_hdr* b, gc_u32 bytes) {
  gc_u64* x = reinterpret_cast<gc_u64*>(a);
  gc_u64* y = reinterpret_cast<gc_u64*>(b);
  for (gc_u32 i = 0; i < bytes / 8u; ++i) {
    const gc_u64 t = x[i];
    x[i] = y[i];
    y[i] = t;
  }
}

// Puts the FRESH entries [from, L->hi) (one segment's children, spawn order upwards) in CHILD
// ORDER. `bytes`: an item's size (a FRESH entry's header and arguments).
__device__ inline void gc_order_children(gc_lstack* L, gc_u32 from, gc_u32 bytes) {
  const gc_u32 n = L->hi - from;
  if (n < 2u) return;
  for (gc_u32 i = 0; i < n / 2u; ++i) gc_swap_entries(gc_lane_at(L, from + i), gc_lane_at(L, L->hi - 1u - i), bytes);
#if GC_PRIORITIES
  // Stable insertion sort, priorities ascending upwards (the best on top).
  for (gc_u32 i = 1; i < n; ++i) {
    for (gc_u32 j = i; j > 0u; --j) {
      gc_frame_hdr* lo = gc_lane_at(L, from + j - 1u);
      gc_frame_hdr* hi = gc_lane_at(L, from + j);
      if ((gc_u32)lo->pending <= (gc_u32)hi->pending) break;
      gc_swap_entries(lo, hi, bytes);
    }
  }
#endif
}

// ---------------------------------------------------------------------------------------------
// Spawning.

// Code size: every spawn site instantiates gc_spawn. Inlined (the default), a program with many
// spawn sites becomes one huge kernel that the driver's PTX JIT takes minutes to compile
// (Strassen's 32 sites); the program assembler (runtime/src/backend/cuda/program.rs) defines
// GC_OUTLINE_SPAWNS to 1 for programs with more than a few spawn sites.
#ifndef GC_OUTLINE_SPAWNS
#define GC_OUTLINE_SPAWNS 0
#endif
#if GC_OUTLINE_SPAWNS
#define GC_SPAWN_LINKAGE __noinline__
#else
#define GC_SPAWN_LINKAGE inline
#endif

// spawn!(Callee(args)) into byte `offset` of the frame this segment leaves behind (~0: discarded):
// one FRESH entry on this lane's stack. The child runs after the segment ends (this lane's next
// steps, or wherever it is handed); it writes its result into the frame, so the value returned
// here is always Ret().
template <typename Task, typename Callee>
__device__ GC_SPAWN_LINKAGE typename Callee::Ret gc_spawn(gc_cx& cx, typename Callee::Args args, gc_u64 offset, gc_u32 site) {
  typedef typename Callee::Ret Ret;
  const gc_psched* P = cx.W->P;
  gc_lstack* L = cx.L;
  if (cx.depth + 1u >= P->max_depth) {
    gc_raise_cx(cx, GC_FAULT_DEPTH, site, P->max_depth);
    return Ret();
  }
  if (L->hi - L->lo >= L->cap && !gc_lane_spill<Task>(cx)) return Ret();
  gc_frame_hdr* e = gc_lane_at(L, L->hi);
  L->hi += 1u;
  if (gc_is_sum<Task>::value && cx.member != 0u) {
    // A member of the lane's sum group (SUM GROUPS): counted in the lane's delta.
    e->pending = GC_SUM_MEMBER;
    e->task = Callee::ID;
    e->next_segment = gc_seg_word(GC_SEG_FRESH, (gc_u32)sizeof(Ret));
    e->depth = cx.depth + 1u;
    e->dest = L->acc_dest;
    e->parent = L->acc_group;
    *reinterpret_cast<typename Callee::Args*>(reinterpret_cast<unsigned char*>(e) + GC_PAYLOAD) = args;
    L->acc_delta += 1;
    return Ret();
  }
  e->pending = (int)gc_key32(cx.spawn_key);  // CHILD ORDER (0 for plain spawns)
  e->task = Callee::ID;
  e->next_segment = gc_seg_word(GC_SEG_FRESH, (gc_u32)sizeof(Ret));
  e->depth = cx.depth + 1u;
  e->dest = gc_dest_in<Task>(cx.frame, offset);
  e->parent = cx.frame;
  *reinterpret_cast<typename Callee::Args*>(reinterpret_cast<unsigned char*>(e) + GC_PAYLOAD) = args;
  cx.deferred += 1u;
  return Ret();
}

#if GC_PRIORITIES
// ready_heap.cuh: queues the spawn in the ready heap with key `key`; false when no slot is free.
template <typename Task, typename Callee>
__device__ bool gc_prio_enqueue(gc_cx& cx, const typename Callee::Args& args, gc_u64 offset, gc_u64 key);
#endif

// ---------------------------------------------------------------------------------------------
// Running tasks.

// Adds `v` to a join counter and returns the old value, as one acquire-release read-modify-write
// at GPU scope: it releases this thread's earlier writes (a child's result, a parent's frame) and
// acquires those of every earlier add on the counter (PTX `atom.acq_rel.gpu`, sm_70+). A release
// RMW with an acquire fence only for the party that brings the count to 0 orders the same and
// acquires once per frame instead of once per child, but measured slower on an H200 (queens(15)
// bitmask 331 vs 311 ms, same run; fib and queens array within noise): `atom.release` is a fence
// and an atomic, and the resumer's fence comes on top. Built with -DGC_JOIN_SC_FENCES it is the
// older `__threadfence(); atomicAdd; __threadfence()` instead (set GPU_CILK_NVRTC_FLAGS to compare).
// The simulation: a sequentially consistent RMW.
__device__ __forceinline__ int gc_join_add(int* counter, int v) {
#if defined(GC_HOST_SIM) || defined(GC_JOIN_SC_FENCES)
  __threadfence();
  const int old = atomicAdd(counter, v);
  __threadfence();
  return old;
#else
  int old;
  asm volatile("atom.acq_rel.gpu.add.s32 %0, [%1], %2;" : "=r"(old) : "l"(counter), "r"(v) : "memory");
  return old;
#endif
}

// A task finished (its result delivered): tells its parent. A lane-entry parent (further down this
// lane's stack) counts it with a plain decrement; a pool frame with the join RMW, and it is
// returned when this was its last outstanding child (resume it next).
__device__ inline gc_frame_hdr* gc_child_done(const gc_psched* P, gc_frame_hdr* parent) {
  if (parent == nullptr) {
    __threadfence();  // release: the result before `done`
    atomicExch(&P->ctl[GC_PCTL_DONE], 1u);
    return nullptr;
  }
  if (!gc_is_pool_frame(P, parent)) {
    parent->pending -= 1;
    return nullptr;
  }
  // Release: the result before the count; acquire (when last): every child's result and the
  // parent's frame.
  if (gc_join_add(&parent->pending, -1) == 1) return parent;
  return nullptr;
}

template <typename Ret> __device__ inline void gc_pdeliver(void* dest, const Ret& v) {
  if (dest != nullptr) *reinterpret_cast<Ret*>(dest) = v;
}

// The segment after `seg` when `seg` ended at a sync: `seg + 1`, except after the last one, which
// only a task whose body is a state machine reaches (its one continuation reads the resume point
// from the frame and may sync again): that continuation runs again.
template <typename Task> __device__ __forceinline__ gc_u32 gc_next_segment(gc_u32 seg) {
  return seg < (gc_u32)Task::SYNCS ? seg + 1u : seg;
}

// The end of segment `seg` of the task whose frame is `cx.frame` (sync = it ended at a sync!, else
// it returned `ret`): runs the following segments while nothing is outstanding; otherwise stores
// the frame and counts the children. Returns a pool frame to resume next (this task's, if its
// remote children are all done already, or its parent's), or null.
template <typename Task>
__device__ gc_frame_hdr* gc_lfinish(gc_cx& cx, gc_u32 seg, bool sync, typename Task::Frame& frame,
                                    typename Task::Ret& ret, gc_u64* stats) {
  const gc_psched* P = cx.W->P;
  for (;;) {
    if (cx.deferred == 0u) {
      gc_frame_hdr* h = cx.frame;
      if (!sync) {
        void* dest = h->dest;
        gc_frame_hdr* parent = h->parent;
        gc_pdeliver(dest, ret);
        // A lane entry with no children outstanding is this lane's top: pop it.
        if (gc_is_pool_frame(P, h)) gc_free_frame(P, cx.L, h);
        else gc_lane_pop(cx.L);
        return gc_child_done(P, parent);
      }
      if (*(volatile gc_u32*)&P->ctl[GC_PCTL_ABORT] != 0u) return nullptr;
      seg = gc_next_segment<Task>(seg);
      typename Task::Frame f = frame;
      for (gc_u32 i = 0; i < cx.mask_words; ++i) cx.mask[i] = 0ull;
      cx.spawns_from = cx.L->hi;
      stats[2 * Task::ID + 1] += 1ull;
      sync = Task::resume(cx, seg, f, &frame, &ret);
      continue;
    }
    gc_pslot<Task>* slot = reinterpret_cast<gc_pslot<Task>*>(cx.frame);
    if (cx.remote == 0u) slot->frame = frame;
    else gc_store_masked(&slot->frame, frame, cx.mask);
    if (!sync) slot->deferred = ret;
    slot->h.next_segment = gc_seg_word(sync ? gc_next_segment<Task>(seg) : (gc_u32)Task::SYNCS + 1u,
                                       gc_seg_ret_bytes(slot->h.next_segment));
    const int n = (int)cx.deferred;
    gc_order_children(cx.L, cx.spawns_from, (gc_u32)sizeof(typename gc_items<Task>::Item));
    if (cx.remote == 0u) {
      // Every child is unstarted on this lane's stack: nobody else reads or writes the count yet.
      slot->h.pending = n;
      return nullptr;
    }
    // Release: the frame before the count; acquire (when the sum is 0): the children's results.
    if (gc_join_add(&slot->h.pending, n) + n == 0) return cx.frame;
    return nullptr;
  }
}

// One step of `Task` whose entry `e` is the top of the lane's stack and ready (FRESH, or every
// child done): runs its next segment. Returns a pool frame to resume next, or null.
//
// A member of a sum group runs as one (gc_mstep); any other step pays the lane's group first. A
// sum task that starts here is a group's root (SUM GROUPS): its entry keeps the sum cell and the
// count, and when it syncs it waits for its members with the deferred return state.
template <typename Task> __device__ gc_frame_hdr* gc_mstep(gc_pwarp* W, gc_lstack* L, gc_frame_hdr* e, gc_u64* stats);
template <typename Task> __device__ gc_frame_hdr* gc_lstep(gc_pwarp* W, gc_lstack* L, gc_frame_hdr* e, gc_u64* stats) {
  const gc_u32 seg = gc_seg_state(e->next_segment);
  const bool sum = gc_is_sum<Task>::value;
  if (sum && seg == GC_SEG_FRESH && e->pending == GC_SUM_MEMBER) return gc_mstep<Task>(W, L, e, stats);
  gc_sum_leave(W->P, L);
  constexpr gc_u32 MW = (gc_u32)((sizeof(typename Task::Frame) + 63) / 64);
  gc_u64 mask[MW];
  gc_cx cx;
  gc_cx_init(cx, W, L, e, mask, MW, e->depth, Task::ID);
  gc_pslot<Task>* slot = reinterpret_cast<gc_pslot<Task>*>(e);
  typename Task::Frame out;
  typename Task::Ret ret = typename Task::Ret();
  bool sync = false;
  if (seg == GC_SEG_FRESH) {
    const typename Task::Args a = *reinterpret_cast<const typename Task::Args*>(reinterpret_cast<unsigned char*>(e) + GC_PAYLOAD);
    stats[2 * Task::ID] += 1ull;
    if (sum) {
      // A group's root: its slot keeps the sum cell and the count (the args are read already).
      slot->deferred = gc_sum_of<gc_is_sum<Task>::value>::template base<Task>();
      slot->h.pending = 1;  // the root itself, until its first segment ends
      L->acc_group = e;
      L->acc_dest = &slot->deferred;
      L->acc_bytes = (gc_u32)sizeof(typename Task::Ret);
      cx.member = 1u;
    }
    sync = Task::seg0(cx, a, &out, &ret);
    if (sum && sync) {
      // cx.frame: where the root lives now (a spill may have moved it to a pool frame).
      cx.frame->next_segment = gc_seg_word((gc_u32)Task::SYNCS + 1u, gc_seg_ret_bytes(cx.frame->next_segment));
      L->acc_delta -= 1;
      return nullptr;
    }
    if (sum) L->acc_group = nullptr;  // it returned before any spawn (lower::sums)
  } else if (seg > (gc_u32)Task::SYNCS) {
    ret = slot->deferred;  // a return that waited for its children
  } else {
    typename Task::Frame f = slot->frame;
    stats[2 * Task::ID + 1] += 1ull;
    sync = Task::resume(cx, seg, f, &out, &ret);
  }
  return gc_lfinish<Task>(cx, seg, sync, out, ret, stats);
}

// Resumes the task of pool frame `h` (its children are all done) on this lane. Returns the next
// pool frame to resume, or null.
template <typename Task> __device__ gc_frame_hdr* gc_presume(gc_pwarp* W, gc_lstack* L, gc_frame_hdr* h, gc_u64* stats) {
  gc_sum_leave(W->P, L);
  constexpr gc_u32 MW = (gc_u32)((sizeof(typename Task::Frame) + 63) / 64);
  gc_u64 mask[MW];
  gc_cx cx;
  gc_cx_init(cx, W, L, h, mask, MW, h->depth, Task::ID);
  gc_pslot<Task>* slot = reinterpret_cast<gc_pslot<Task>*>(h);
  const gc_u32 seg = gc_seg_state(h->next_segment);
  typename Task::Frame out;
  typename Task::Ret ret = typename Task::Ret();
  bool sync = false;
  if (seg > (gc_u32)Task::SYNCS) {
    ret = slot->deferred;
  } else {
    typename Task::Frame f = slot->frame;
    stats[2 * Task::ID + 1] += 1ull;
    sync = Task::resume(cx, seg, f, &out, &ret);
  }
  return gc_lfinish<Task>(cx, seg, sync, out, ret, stats);
}

// Runs member entry `e` (the top of the lane's stack) of a sum group: pops it (its children take
// its place), runs its first segment and adds its value (its return value, or its constant when
// it synced: lower::sums guarantees that no return follows a spawn) and its end to what the lane
// owes the group, paying the lane's previous group first if it was another one. Never returns a
// frame: the group is resumed by whoever pays its count down to 0.
template <typename Task> __device__ gc_frame_hdr* gc_mstep(gc_pwarp* W, gc_lstack* L, gc_frame_hdr* e, gc_u64* stats) {
  gc_frame_hdr* group = e->parent;
  if (group != L->acc_group) {
    gc_sum_leave(W->P, L);
    L->acc_group = group;
    L->acc_dest = e->dest;
    L->acc_bytes = gc_seg_ret_bytes(e->next_segment);
  }
  const typename Task::Args a = *reinterpret_cast<const typename Task::Args*>(reinterpret_cast<unsigned char*>(e) + GC_PAYLOAD);
  const gc_u32 depth = e->depth;
  gc_lane_pop(L);
  gc_cx cx;
  gc_cx_init(cx, W, L, nullptr, nullptr, 0u, depth, Task::ID);
  cx.member = 1u;
  typename Task::Frame out;
  typename Task::Ret ret = typename Task::Ret();
  stats[2 * Task::ID] += 1ull;
  const bool sync = Task::seg0(cx, a, &out, &ret);
  gc_sum_of<gc_is_sum<Task>::value>::template add<Task>(L, sync, ret);
  L->acc_delta -= 1;
  return nullptr;
}

// Runs item `it` of the warp task `Task` on the whole warp (every lane calls this, converged, with
// the same item; it is the top entry of the `owner` lane's stack). The owner then delivers the
// result, pops the entry and completes the child; it gets a pool frame back when that completion
// was the last one (to resume), the other lanes get null.
template <typename Task, typename Item>
__device__ gc_frame_hdr* gc_pwarp_start(gc_pwarp* W, gc_lstack* L, const Item& it, bool owner, gc_u64* stats) {
  gc_cx cx;
  gc_cx_init(cx, W, L, nullptr, nullptr, 0u, it.h.depth, Task::ID);
  typename Task::Frame out;
  typename Task::Ret ret = typename Task::Ret();
  const typename Task::Args a = *reinterpret_cast<const typename Task::Args*>(it.args);
  gc_warp_entry<gc_is_warp<Task>::value>::template run<Task>(cx, a, &out, &ret);
  __syncwarp();
  if (!owner) return nullptr;
  stats[2 * Task::ID] += 1ull;
  gc_pdeliver(it.h.dest, ret);
  gc_lane_pop(L);
  return gc_child_done(W->P, it.h.parent);
}

// Runs item `it` of the block task `Task` on the whole block (every thread calls this with the
// same item; it is the top entry of the `owner` lane's stack). Ends with a block barrier, after
// which the scratch is free; then the owner delivers the result, pops the entry and completes the
// child (a pool frame back when that was the last child, to resume).
template <typename Task, typename Item>
__device__ gc_frame_hdr* gc_pblock_start(gc_pwarp* W, gc_lstack* L, const Item& it, bool owner, unsigned char* scratch,
                                         gc_u64* stats) {
  gc_cx cx;
  gc_cx_init(cx, W, L, nullptr, nullptr, 0u, it.h.depth, Task::ID);
  typename Task::Frame out;
  typename Task::Ret ret = typename Task::Ret();
  const typename Task::Args a = *reinterpret_cast<const typename Task::Args*>(it.args);
  gc_block_entry<gc_is_block<Task>::value>::template run<Task>(cx, a, &out, &ret, scratch);
  __syncthreads();
  if (!owner) return nullptr;
  stats[2 * Task::ID] += 1ull;
  gc_pdeliver(it.h.dest, ret);
  gc_lane_pop(L);
  return gc_child_done(W->P, it.h.parent);
}

// Lane `from`'s item, on every lane (whole warp, converged).
template <typename Item> __device__ inline void gc_shfl_item(Item* dst, const Item& src, int from) {
  const gc_u64* s = reinterpret_cast<const gc_u64*>(&src);
  gc_u64* d = reinterpret_cast<gc_u64*>(dst);
  for (gc_u32 i = 0; i < (gc_u32)(sizeof(Item) / 8); ++i) d[i] = __shfl_sync(0xffffffffu, s[i], from);
}

// ---------------------------------------------------------------------------------------------
// The warp loop.

// Programs with priority spawns: the assembler defines GC_PRIORITIES to 1 and appends heap.cuh
// and ready_heap.cuh, which define these two.
#if GC_PRIORITIES
template <typename Item> __device__ int gc_prio_take(gc_pwarp* W, Item* mine);
template <typename Item> __device__ void gc_prio_serve(const gc_psched& P);
#endif

// Takes up to one item per lane for a warp with nothing to run (whole warp, converged): the best
// prioritized ready items (programs with priority spawns), else the oldest items of the pool.
template <typename Item> __device__ int gc_take_items(gc_pwarp* W, Item* mine) {
  const gc_psched* P = W->P;
#if GC_PRIORITIES
  if (P->prio_servers != 0u) {
    const int n = gc_prio_take<Item>(W, mine);
    if (n > 0) return n;
  }
#endif
  unsigned got = 0;
  unsigned long long t0 = 0;
  if (W->lane == 0) {
    got = gc_claim(P->pool_avail, gc_warp_size());
    if (got > 0) {
      t0 = atomicAdd(&gc_pool_queue<Item>(P)->head, (unsigned long long)got);
      atomicAdd(&P->stats[GC_PSTAT_TAKEN], (gc_u64)got);
    }
  }
  got = __shfl_sync(0xffffffffu, got, 0);
  t0 = __shfl_sync(0xffffffffu, t0, 0);
  if (W->lane < got) gc_tq_get(gc_pool_queue<Item>(P), t0 + W->lane, mine);
  __syncwarp();
  return (int)got;
}

// The lanes of a whole warp (one lane in the host simulation).
__device__ __forceinline__ unsigned gc_full_mask() {
  return gc_warp_size() >= 32u ? 0xffffffffu : (1u << gc_warp_size()) - 1u;
}

// Hands the oldest FRESH entries of busy lanes to idle lanes of this warp (`busy`: the lanes with
// work), one per idle lane at most, through the warp's exchange area (whole warp, converged).
template <typename Item> __device__ void gc_share(gc_pwarp* W, gc_lstack* L, unsigned busy) {
  const bool mine_busy = (busy >> W->lane) & 1u;
  const unsigned idle = ~busy & gc_full_mask();
  long long oldest = -1;
  if (mine_busy) oldest = gc_oldest_fresh(L);
  const unsigned give = __ballot_sync(0xffffffffu, oldest >= 0);
  const int m = __popc(give) < __popc(idle) ? __popc(give) : __popc(idle);
  if (m == 0) return;
  const unsigned lt = gc_lane_mask_lt();
  Item* xchg = reinterpret_cast<Item*>(W->xchg);
  bool ok = true;
  const int r = __popc(give & lt);
  if (oldest >= 0 && r < m) {
    ok = gc_take_oldest<Item>(W->P, L, (gc_u32)oldest, &xchg[r]);
  }
  const unsigned good = __ballot_sync(0xffffffffu, ok);
  __syncwarp();
  const int q = __popc(idle & lt);
  if (!mine_busy && q < m && good == gc_full_mask()) {
    gc_push_item(L, xchg[q]);
    L->n_shared += 1u;
  }
  __syncwarp();
}

// Lanes of a partly busy warp that are still idle (`idle`) take up to one item each from the pool
// (whole warp, converged).
template <typename Item> __device__ void gc_take_for(gc_pwarp* W, gc_lstack* L, unsigned idle) {
  const gc_psched* P = W->P;
  unsigned got = 0;
  unsigned long long t0 = 0;
  if (W->lane == 0 && *(volatile long long*)P->pool_avail > 0) {
    got = gc_claim(P->pool_avail, (unsigned)__popc(idle));
    if (got > 0) {
      t0 = atomicAdd(&gc_pool_queue<Item>(P)->head, (unsigned long long)got);
      atomicAdd(&P->stats[GC_PSTAT_TAKEN], (gc_u64)got);
    }
  }
  got = __shfl_sync(0xffffffffu, got, 0);
  t0 = __shfl_sync(0xffffffffu, t0, 0);
  const unsigned q = (unsigned)__popc(idle & gc_lane_mask_lt());
  if (((idle >> W->lane) & 1u) && q < got) {
    Item it;
    gc_tq_get(gc_pool_queue<Item>(P), t0 + q, &it);
    gc_push_item(L, it);
  }
  __syncwarp();
}

// Warps are hungry: busy lanes send their oldest FRESH entries to the pool, as many as the hungry
// warps' lanes lack (the pool's published items count against it) — splitting by supply.
template <typename Item> __device__ void gc_feed_pool(gc_pwarp* W, gc_lstack* L) {
  const gc_psched* P = W->P;
  // Which lanes have a FRESH entry below their top comes first: it reads only the lanes' own
  // stacks (the hint keeps it short), and a warp without surplus must not touch the pool's hot
  // counters, which every idle warp polls.
  const long long oldest = gc_oldest_fresh(L);
  const unsigned give = __ballot_sync(0xffffffffu, oldest >= 0);
  if (give == 0u) return;
  long long want = 0;
  if (W->lane == 0) {
    const long long avail = *(volatile long long*)P->pool_avail;
    want = (long long)W->h->hungry * (long long)gc_warp_size() - avail;
    if (want > 0 && !gc_pool_has_room(P, gc_warp_size())) want = 0;
  }
  want = __shfl_sync(0xffffffffu, want, 0);
  if (want <= 0) return;
  if (oldest >= 0 && (long long)__popc(give & gc_lane_mask_lt()) < want) {
    Item it;
    if (gc_take_oldest<Item>(P, L, (gc_u32)oldest, &it)) gc_pool_put(P, L, it);
  }
  __syncwarp();
}

// Steps a lane runs per round before the warp looks at idle lanes and hungry warps again (a
// compile-time constant, swept with GPU_CILK_NVRTC_FLAGS=-DGC_LANE_QUANTUM=n by the benchmarks).
#ifndef GC_LANE_QUANTUM
#define GC_LANE_QUANTUM 1
#endif

// Resumes pool frame `next` and the chain of pool frames its return completes (each resume returns
// the next), and any sum group a flush on the way made ready (`L->resume`). A chain climbs at most
// to the root; it looks for a stop every 64 frames.
template <typename Prog>
__device__ inline void gc_climb(const gc_psched& P, gc_pwarp* W, gc_lstack* L, gc_frame_hdr* next, gc_u64* stats) {
  for (gc_u32 k = 1u; next != nullptr; ++k) {
    if ((k & 63u) == 0u && gc_pstopped(&P)) break;
    next = Prog::resume(W, L, next, stats);
    if (next == nullptr) {
      next = L->resume;
      L->resume = nullptr;
    }
  }
}

// The persistent kernel's body (called by the assembled program's `gc_persistent` kernel with its
// `gc_prog`). Dynamic shared memory: per warp, a gc_pwarp_hdr and 32 items, then (16-byte aligned)
// the block's gc_pblock_hdr and the largest SCRATCH of the program's block tasks, as the host
// sized it.
template <typename Prog> __device__ void gc_persistent_loop(const gc_psched& P) {
  typedef typename Prog::Item Item;
#if GC_PRIORITIES
  // The grid's last `prio_servers` blocks serve the ready heap instead of running tasks.
  if (P.prio_servers != 0u && blockIdx.x + P.prio_servers >= gridDim.x) {
    gc_prio_serve<Item>(P);
    return;
  }
#endif
  unsigned char* gc_psmem = gc_dynamic_smem();
  const gc_u32 warp = threadIdx.x / gc_warp_size();
  const gc_u64 warp_bytes = sizeof(gc_pwarp_hdr) + gc_warp_size() * sizeof(Item);
  gc_pwarp W;
  W.P = &P;
  W.h = reinterpret_cast<gc_pwarp_hdr*>(gc_psmem + warp * warp_bytes);
  W.xchg = gc_psmem + warp * warp_bytes + sizeof(gc_pwarp_hdr);
  W.item_bytes = (gc_u32)sizeof(Item);
  W.lane = gc_lane();
  // BLOCK ITEMS: the block's join state and the scratch of block items, after the warps' areas.
  const gc_u32 nwarps = blockDim.x / gc_warp_size();
  const gc_u64 warps_end = ((gc_u64)nwarps * warp_bytes + 15u) / 16u * 16u;
  gc_pblock_hdr* const B = reinterpret_cast<gc_pblock_hdr*>(gc_psmem + warps_end);
  unsigned char* const bscratch = gc_psmem + warps_end + sizeof(gc_pblock_hdr);
  if (Prog::HAS_BLOCK) {
    if (threadIdx.x == 0) {
      B->count = 0u;
      B->gen = 0u;
      B->want = 0;
      B->go = 0;
    }
    __syncthreads();  // every thread is here: no warp has entered its loop yet
  }
  gc_lstack L;
  {
    const gc_u64 gtid = (gc_u64)blockIdx.x * blockDim.x + threadIdx.x;
    L.ring = P.lanes + gtid * (gc_u64)P.lane_cap * P.entry_bytes;
    L.lo = 0u;
    L.hi = 0u;
    L.cap = P.lane_cap;
    L.mask = P.lane_cap - 1u;
    L.bytes = (gc_u32)P.entry_bytes;
    L.fresh_lo = 0u;
    L.fc_n = 0u;
    L.acc_group = nullptr;
    L.acc_dest = nullptr;
    L.acc_sum = 0ull;
    L.acc_delta = 0;
    L.acc_credit = 0;
    L.acc_bytes = 0u;
    L.resume = nullptr;
    L.n_promoted = L.n_shared = L.n_donated = L.n_spills = L.n_frames = 0ull;
  }
  if (W.lane == 0) {
    W.h->hungry = 0;
    W.h->nblock = 0u;
    W.h->bmask = 0u;
  }
  __syncwarp();
  // The root call starts on the first lane of the grid.
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    Item root;
    unsigned char* dst = reinterpret_cast<unsigned char*>(&root);
    for (gc_u32 i = 0; i < sizeof(Item); ++i) dst[i] = 0;
    Prog::write_root(dst, P.root_args, P.result);
    gc_push_item(&L, root);
  }
  __syncwarp();
  // Per lane: per task started, resumed; then per warp (lane 0): rounds, steps, idle cycles, run
  // cycles, all cycles.
  constexpr gc_u32 NS = 2 * Prog::TASKS + 5;
  gc_u64 stats[NS];
  for (gc_u32 i = 0; i < NS; ++i) stats[i] = 0ull;
  gc_u64* const wstat = stats + 2 * Prog::TASKS;
  gc_u32 deepest = 0;
  bool idle = false;
  unsigned ns = 64u;
  gc_u32 round = 0;
  const long long loop_start = clock64();
  for (;;) {
    // Only lane 0 reads the stop word (one load per warp), and only every 8th round (or every
    // round once an idle warp sleeps 4 µs or more between rounds): the stop line is hot (every
    // idle warp reads it), and a late stop costs a few rounds once. A busy warp's work is finite.
    const bool look = (round & 7u) == 0u || (idle && ns >= 4096u);
    if (look) {
      int stop = 0;
      if (W.lane == 0) stop = (int)gc_pstopped(&P);
      if (__shfl_sync(0xffffffffu, stop, 0)) break;
    }
    round += 1u;
    const long long t0 = clock64();
    // Tombstones on top are skipped; an empty stack starts again at the ring's next index.
    while (L.hi != L.lo && gc_seg_state(gc_lane_at(&L, L.hi - 1u)->next_segment) == GC_SEG_DEAD) gc_lane_pop(&L);
    if (Prog::HAS_BLOCK) {
      // BLOCK ITEMS: the round boundary. A warp joins when one of its lanes holds a block item on
      // top or another warp wants the block; a join that finds a warp gone stops this one too.
      const gc_frame_hdr* bt = L.hi != L.lo && L.resume == nullptr ? gc_lane_at(&L, L.hi - 1u) : nullptr;
      const bool bmine = bt != nullptr && gc_seg_state(bt->next_segment) == GC_SEG_FRESH && Prog::is_block(bt->task);
      const unsigned bm = __ballot_sync(0xffffffffu, bmine);
      int join = 0;
      if (W.lane == 0) join = bm != 0u || *(volatile int*)&B->want != 0;
      if (__shfl_sync(0xffffffffu, join, 0)) {
        if (bmine) gc_entry_item(bt, reinterpret_cast<Item*>(W.xchg) + __popc(bm & gc_lane_mask_lt()));
        int go = 0;
        if (W.lane == 0) {
          W.h->nblock = (unsigned)__popc(bm);
          W.h->bmask = bm;
          if (bm != 0u) *(volatile int*)&B->want = 1;
          go = (int)gc_pblock_join(B, nwarps, 1u);
        }
        if (!__shfl_sync(0xffffffffu, go, 0)) break;
        __syncthreads();  // every thread of the block is here (the join had every warp)
        // The items of every warp in warp order. The counts are read before each item's
        // barrier: after the last one a warp may already be writing its next join's.
        gc_u32 total = 0u;
        for (gc_u32 w = 0u; w < nwarps; ++w)
          total += reinterpret_cast<const gc_pwarp_hdr*>(gc_psmem + w * warp_bytes)->nblock;
        gc_frame_hdr* bnext = nullptr;
        gc_u32 w = 0u, k = 0u;
        unsigned owners = 0u;
        for (gc_u32 done = 0u; done < total; ++done, ++k) {
          const gc_pwarp_hdr* hw = reinterpret_cast<const gc_pwarp_hdr*>(gc_psmem + w * warp_bytes);
          while (k == hw->nblock) {
            w += 1u;
            k = 0u;
            hw = reinterpret_cast<const gc_pwarp_hdr*>(gc_psmem + w * warp_bytes);
          }
          if (k == 0u) owners = hw->bmask;
          const int owner = __ffs((int)owners) - 1;
          owners &= owners - 1u;
          const Item one = reinterpret_cast<const Item*>(gc_psmem + w * warp_bytes + sizeof(gc_pwarp_hdr))[k];
          const bool mine = w == warp && (int)W.lane == owner;
          gc_frame_hdr* nx = Prog::start_block(&W, &L, one, mine, bscratch, stats);
          if (mine) bnext = nx;
        }
        gc_climb<Prog>(P, &W, &L, bnext, stats);
        __syncwarp();
        continue;  // a new round: the stacks have changed
      }
    }
    unsigned busy = __ballot_sync(0xffffffffu, L.hi != L.lo || L.resume != nullptr);
    if (busy == 0u) {
      // A warp with nothing to run pays its lanes' sum groups (which may make one ready).
      gc_sum_leave(&P, &L);
      busy = __ballot_sync(0xffffffffu, L.resume != nullptr);
    }
    if (busy == 0u) {
      Item mine;
      const int n = gc_take_items<Item>(&W, &mine);
      if (n == 0) {
        if (!idle && W.lane == 0) atomicAdd(&P.ctl[GC_PCTL_HUNGRY], 1u);
        idle = true;
        __nanosleep(ns);
        if (ns < P.idle_max_ns) ns = ns * 2u < P.idle_max_ns ? ns * 2u : P.idle_max_ns;
        if (W.lane == 0) wstat[2] += (gc_u64)(clock64() - t0);
        continue;
      }
      if ((int)W.lane < n) gc_push_item(&L, mine);
      busy = __ballot_sync(0xffffffffu, L.hi != L.lo || L.resume != nullptr);
    }
    ns = 64u;
    if (idle && W.lane == 0) atomicSub(&P.ctl[GC_PCTL_HUNGRY], 1u);
    idle = false;
    // The hunger count is read every 8th round: a warp that decides from a stale count only
    // hands work out a few rounds late.
    if ((round & 7u) == 1u) {
      if (W.lane == 0) W.h->hungry = (int)*(volatile gc_u32*)&P.ctl[GC_PCTL_HUNGRY];
      __syncwarp();
    }
    if (busy != gc_full_mask()) {
      gc_share<Item>(&W, &L, busy);
      // Lanes still idle look at the pool every 8th round.
      if ((round & 7u) == 2u) {
        const unsigned still = ~__ballot_sync(0xffffffffu, L.hi != L.lo || L.resume != nullptr) & gc_full_mask();
        if (still != 0u) gc_take_for<Item>(&W, &L, still);
      }
      // A lane that got nothing pays its sum group: the group's last members may have run here.
      if (L.hi == L.lo) gc_sum_leave(&P, &L);
      // What sharing left (FRESH entries below a lane's top after the warp's idle lanes were
      // served) is surplus: hungry warps get it as a full warp's would. Without this, a warp that
      // never fills (a narrow tree: subtrees die as fast as they are shared) keeps its work to
      // itself while the rest of the grid sleeps.
      if (W.h->hungry > 0) gc_feed_pool<Item>(&W, &L);
    } else if (W.h->hungry > 0) {
      gc_feed_pool<Item>(&W, &L);
    }
    const long long t1 = clock64();
    // Up to GC_LANE_QUANTUM steps per lane: the top entry's next segment, again while the new top
    // is ready (a warp task waits for the warp phase below; DEAD entries end the quantum).
    gc_frame_hdr* top = nullptr;
    bool wmine = false;
    for (gc_u32 q = 0u; q < (gc_u32)GC_LANE_QUANTUM && (L.hi != L.lo || L.resume != nullptr); ++q) {
      if (L.resume != nullptr) {
        // A sum group this lane's flush made ready (and the continuations its return starts).
        gc_frame_hdr* next = L.resume;
        L.resume = nullptr;
        gc_climb<Prog>(P, &W, &L, next, stats);
        continue;
      }
      top = gc_lane_at(&L, L.hi - 1u);
      const gc_u32 st = gc_seg_state(top->next_segment);
      if (st == GC_SEG_DEAD) {
        top = nullptr;
        break;
      }
      if (Prog::HAS_BLOCK && st == GC_SEG_FRESH && Prog::is_block(top->task)) {
        top = nullptr;  // a block item waits for the next round's join (BLOCK ITEMS)
        break;
      }
      wmine = st == GC_SEG_FRESH && Prog::is_warp(top->task);
      if (wmine) break;
      deepest = top->depth > deepest ? top->depth : deepest;
      gc_frame_hdr* next = Prog::step(&W, &L, top, stats);
      if (next == nullptr) {
        next = L.resume;  // the step paid a sum group that became ready
        L.resume = nullptr;
      }
      gc_climb<Prog>(P, &W, &L, next, stats);
      top = nullptr;
    }
    __syncwarp();
    // Warp tasks on top of lanes' stacks: the whole warp runs each in turn; then each owner lane
    // climbs the continuation chain its completion started.
    unsigned wmask = __ballot_sync(0xffffffffu, wmine);
    if (wmask != 0u) {
      Item it;
      if (wmine) gc_entry_item(top, &it);
      gc_frame_hdr* wnext = nullptr;
      while (wmask != 0u) {
        const int j = __ffs((int)wmask) - 1;
        wmask &= wmask - 1u;
        Item one;
        gc_shfl_item(&one, it, j);
        gc_frame_hdr* nx = Prog::start_warp(&W, &L, one, (int)W.lane == j, stats);
        if ((int)W.lane == j) wnext = nx;
      }
      gc_climb<Prog>(P, &W, &L, wnext, stats);
      __syncwarp();
    }
    if (W.lane == 0) {
      wstat[0] += 1ull;
      wstat[1] += (gc_u64)__popc(busy);
      wstat[3] += (gc_u64)(clock64() - t1);
    }
  }
  // BLOCK ITEMS: this warp leaves for good (a join waiting for it completes, telling all to stop).
  if (Prog::HAS_BLOCK && W.lane == 0) (void)gc_pblock_join(B, nwarps, 0x10001u);
  if (W.lane == 0) wstat[4] = (gc_u64)(clock64() - loop_start);
  if (W.lane == 0 && idle) atomicSub(&P.ctl[GC_PCTL_HUNGRY], 1u);
  // (A lane's cached frame slots need not go back: the host resets the pool and the free ring
  // before every run.)
  const gc_u64 lane_counts[5] = {L.n_promoted, L.n_shared, L.n_donated, L.n_spills, L.n_frames};
  const gc_u32 lane_at[5] = {GC_PSTAT_PROMOTED, GC_PSTAT_SHARED, GC_PSTAT_DONATED, GC_PSTAT_SPILLS, GC_PSTAT_FRAMES};
  for (gc_u32 i = 0; i < 5u; ++i) {
    gc_u64 v = lane_counts[i];
    for (unsigned o = gc_warp_size() / 2u; o > 0u; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    if (W.lane == 0 && v != 0ull) atomicAdd(&P.stats[lane_at[i]], v);
  }
  for (gc_u32 i = 0; i < NS; ++i) {
    gc_u64 v = stats[i];
    for (unsigned o = gc_warp_size() / 2u; o > 0u; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    gc_u32 at = (gc_u32)GC_PSTAT_TASKS + i;
    if (i >= 2 * Prog::TASKS) {
      const gc_u32 extra[5] = {GC_PSTAT_ROUNDS, GC_PSTAT_STEPS, GC_PSTAT_CYC_IDLE, GC_PSTAT_CYC_RUN, GC_PSTAT_CYC_ALL};
      at = extra[i - 2 * Prog::TASKS];
    }
    if (W.lane == 0 && v != 0ull) atomicAdd(&P.stats[at], v);
  }
  gc_u32 d = __reduce_max_sync(0xffffffffu, deepest);
  if (W.lane == 0) atomicMax(reinterpret_cast<unsigned long long*>(&P.stats[GC_PSTAT_MAX_DEPTH]), (unsigned long long)d);
}

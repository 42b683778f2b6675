// gpu_cilk/persistent.cuh — the device-resident scheduler (GPU_CILK_SCHEDULER=persistent): one
// resident grid runs a whole task tree, with join counters instead of level barriers, a
// shared-memory work stack per warp, a global pool for spreading work between warps, and
// depth-first inline execution once the GPU holds enough work.
//
// Owns: the scheduler's `gc_cx`, `gc_spawn` and `gc_raise_cx` (what generated code calls), frames
// and their join counters, the per-warp stacks, the global pool and frame free list (Scogland &
// Feng ticket queues, ticket_queue.cuh), the warp loop, termination and statistics.
// Must not own: the tasks (generated code), the program's dispatch table (the assembler emits
// `gc_prog` with `start`/`resume` switches over the tasks), host-side sizing (runtime/src/backend/
// cuda/persistent/).
//
// EXECUTION MODEL
// - The unit of scheduling is a WARP. Each warp loops: take up to 32 ready items (spawned calls:
//   task id, depth, where the result goes, the parent's frame, the arguments) from its own stack,
//   newest first (depth-first), or else from the global pool (oldest first: the largest work); each
//   lane runs one item's task from segment 0. Items are aggregated by kind the way a LIFO stack
//   naturally aggregates them: a batch's lanes mostly run the same task. A warp's stack has two
//   parts: `local_cap` items in shared memory, and a ring of `deep_cap` items in global memory
//   (`deep`, this warp's alone) that takes spawns once the shared part is full; a batch pops the
//   shared part first, and a warp donates the deep part's oldest items first.
// - A spawn either runs the callee INLINE at once through its serial device form (`Task::dev`, the
//   automatic cutoff: only when this warp's stack already holds `inline_threshold` items, no warp
//   is hungry, and the child is at least as deep as the learned INLINE FLOOR), or DEFERS it: the
//   item goes to this warp's stack, or to the pool when some warp is hungry and this one keeps other
//   work, or when its stack is full (both parts). The floor (ctl word GC_PCTL_INLINE_FLOOR, 0 at
//   the start) rises when a call inlined from a segment turns out to make more than `inline_budget`
//   calls: spawns at that level and above stay tasks from then on, so that no lane runs a large
//   subtree alone while the other lanes and warps wait. The floor also rises when an inline call
//   is UNWOUND and deferred after all (INLINE LIMITS). A deferred child needs the
//   parent's FRAME: each lane gets a frame slot from its warp's free list before it starts an item
//   (no frame available: every spawn of that item runs inline).
// - JOIN COUNTERS (no level barrier). A frame header counts outstanding children in `pending`
//   (int, starts at 0). A child that finishes writes its result into the parent's frame, fences,
//   and decrements `pending`. The parent, at the end of a segment that deferred n children,
//   stores its frame, fences and adds n. Children may finish before the parent adds: `pending`
//   then goes negative; whoever moves it to exactly 0 AFTER the parent's add (the parent's add
//   itself, or the last child's decrement: before the add the value is <= 0, so no decrement can
//   see 1) runs the continuation, on its own lane, at once ("the last child resumes the parent").
//   A continuation chain can climb many levels on one lane; frees and deliveries happen on the way.
// - FRAME STORE WITH A MASK. A segment builds its frame in registers and stores it at its end, but
//   deferred children may already have written their results into the frame slot (a donated child
//   can run on another SM at once). The segment therefore records which bytes of the frame its
//   deferred children own (`cx.mask`, one bit per byte) and stores only the other bytes. A child
//   run inline instead returns its value, which generated code assigns to the destination
//   local, so it is part of the stored frame.
// - TERMINATION. Every spawn is joined by its parent's next sync or by the implicit sync of a
//   return, so the root's completion implies every task's: the lane that delivers the root's
//   result sets `done`, and every warp leaves its loop when it sees `done` (or `abort`, set with
//   the first fault). Warps that find no work count themselves in `hungry` and poll with back-off.
// - BOUNDED MEMORY. Live memory is the frames of unfinished tasks (one per task that deferred a
//   child; a chain of depth d holds d frames, a balanced tree about depth x 32 x warps) plus the
//   items waiting in stacks and the pool (bounded by their capacities; a full stack and pool make
//   spawns run inline). No item is ever dropped: a spawn that can be neither deferred nor inlined
//   (no frame, inline recursion over its stack budget and not restartable) fails the run with a
//   fault. Inline recursion is bounded in BYTES of the thread's stack (INLINE LIMITS), never by
//   an overflow.
//
// INLINE LIMITS (the guard of every serial form, gc_dev_guard, and gc_spawn's inline path)
// - The stack: the host sets each thread's stack (Config::device_stack_bytes, 16 KiB) and gives
//   inline recursion a budget of it (`dev_stack_budget`, by default 4 KiB less, for the
//   scheduler's and the segment's frames below the first serial form and the frames of the last
//   one). The outermost serial form of an inline call records the address of a local
//   (`cx.dev_base`); every guard compares its own local's address with it.
// - The work: an inline call that gc_spawn may re-run (below) makes at most `inline_abort` calls
//   (Config::device_inline_abort, default 4096 = the inline budget, 0 = no limit). The budget only
//   raises the floor after a large call has FINISHED; the abort bounds how long one lane runs a
//   subtree alone, and the work thrown away per abort (at most `inline_abort` calls; every abort
//   raises the floor above the aborted call's level, so that level's later spawns stay tasks and
//   only lanes that have not yet seen the new floor abort there again).
// - A guard over either limit TRIPS: it sets `cx.unwinding`, and every serial form returns at
//   once (generated code checks it after its guard, after every spawn and after every statement
//   that calls a function; raised faults and bound updates are ignored while it is set, their
//   values being placeholders). Re-running is harmless only for serial forms without a `&mut`
//   slice or `Temp` parameter and without alloc! (`&Sum` adds are held back until the call
//   completes, gc_sum_add; the compiler passes GC_DEV_DIRTY to the
//   guard otherwise; `Max`/`Min` updates are monotone: a re-run changes nothing). When the trip
//   is in a call gc_spawn made by the cutoff (it has a frame) and no dirty serial form was
//   entered in it (`cx.dirty`), gc_spawn clears `unwinding`, counts the call (GC_PSTAT_UNWOUND or
//   GC_PSTAT_ABORTED), raises the floor (to max_depth, i.e. no inline call any more, once the
//   run has unwound `inline_unwind_limit` calls over the stack budget: Config::
//   device_inline_unwind_limit) and DEFERS the spawn as a task instead (the LOCAL or POOL
//   path); otherwise (dirty, no frame, stack and pool full, or a plain call of a task from a
//   segment) the guard fails the run with GC_FAULT_DEV_STACK at its site (the function's).
//   No stack overflow as long as the reserve holds the frames below the first serial form and
//   those of one more serial form and its helpers (4 KiB by default; frames of tasks with large
//   local arrays may need Config::device_inline_stack_bytes lower).
//
// MEMORY ORDERING (plain CUDA atomics are relaxed; "fence; atomic" releases, "atomic; fence"
// acquires; gc_join_add is one acquire-release RMW at GPU scope, which does both):
// - child: store result -> gc_join_add(pending, -1) -> (if it saw 1) read the frame (all
//   children's results, each released by its own add, and the parent's stored frame).
// - parent: masked frame store, header fields -> gc_join_add(pending, n) -> (if the sum is 0) read
//   the frame. (When every child is still on this warp's stack, a plain store; see gc_pfinish.)
// - items: the pool is a ticket queue (ticket_queue.cuh: turn words with fences); a warp's stack is
//   touched by its own lanes only; pushes during a run phase claim slots with shared-memory
//   atomics and the batch-start pop happens after __syncwarp (a block-scope barrier and fence).
// - frames: a freed frame's index goes to its warp's free list or the free ring; it is reused only
//   after the task it belonged to returned, when no child holds a pointer into it any more.

#pragma once
#ifndef GPU_CILK_PORTABLE_CUH
#include "gpu_cilk/portable.cuh"
#endif
// Needs runtime.cuh and ticket_queue.cuh before it (the cuda backend assembles them in that order).

// Threads per block of the persistent kernel (8 warps); the host sizes shared memory for it.
#define GC_PERSISTENT_THREADS 256

// ---------------------------------------------------------------------------------------------
// Frames.

struct gc_frame_hdr {
  int pending;             // join counter (see JOIN COUNTERS)
  gc_u32 task;             // the task's index in the program
  gc_u32 next_segment;     // segment to run when pending reaches 0; SYNCS + 1: deliver `deferred`
  gc_u32 depth;            // recursion level of the task
  void* dest;              // where the task's result goes (null: discarded)
  gc_frame_hdr* parent;    // the frame that waits for this task (null: the root)
};

template <typename Task> struct gc_pslot {
  gc_frame_hdr h;
  typename Task::Frame frame;
  typename Task::Ret deferred;  // a `return` with children outstanding (implicit sync)
};

// ---------------------------------------------------------------------------------------------
// Items (spawned calls waiting to run): a 32-byte header, then the arguments, 16-aligned. The
// program's item type `gc_items<..>::Item` is the largest task's `gc_pitem<W>` (the assembler
// defines `gc_items` once the tasks' argument structs are known).

struct gc_pitem_hdr {
  gc_u32 task;             // the callee's index in the program
  gc_u32 depth;            // its recursion level
  void* dest;              // where its result goes (null: discarded)
  gc_frame_hdr* parent;    // the frame waiting for it (null: the root)
  gc_u64 pad;
};

template <int W> struct gc_pitem {
  gc_pitem_hdr h;
  alignas(16) gc_u64 args[W];
};

template <typename Any> struct gc_items;  // defined by the assembled program: `typedef gc_pitem<W> Item;`

// ---------------------------------------------------------------------------------------------
// Scheduler state (the kernel parameter; mirrored by `GcPersistent` in the runtime's abi.rs).

enum gc_pctl_word : gc_u32 {
  // Line 0, written once: what every warp polls to know when to stop.
  GC_PCTL_DONE = 0,    // the root has returned
  GC_PCTL_ABORT = 1,   // a fault was raised: stop
  // Line 1, updated with atomics while the run goes on (kept off the polled line).
  GC_PCTL_HUNGRY = 32,  // warps that found no work
  GC_PCTL_INLINE_FLOOR = 33,  // spawns of a child at a shallower level never run inline (learned)
  GC_PCTL_WORDS = 64,  // (two 128-byte lines)
};

enum gc_pstat : gc_u32 {
  GC_PSTAT_INLINE = 0,      // calls run inline (serial device form)
  GC_PSTAT_DONATED = 1,     // items sent to the pool
  GC_PSTAT_TAKEN = 2,       // items taken from the pool
  GC_PSTAT_MAX_DEPTH = 3,   // deepest level of a task (atomicMax)
  GC_PSTAT_FRAMES = 4,      // frame slots ever handed out from the never-used part of the pool
  GC_PSTAT_POOL_FULL = 5,   // deferred spawns that found both the stack and the pool full (ran inline)
  GC_PSTAT_BATCHES = 6,     // batches run (a warp took items and ran them)
  GC_PSTAT_ITEMS = 7,       // items those batches ran (items / batches = lanes busy per batch)
  GC_PSTAT_CYC_IDLE = 8,    // warp cycles spent finding no work (polls and sleeps), summed over warps
  GC_PSTAT_CYC_RUN = 9,     // warp cycles spent running segments and continuations
  GC_PSTAT_CYC_ALL = 10,    // warp cycles in the loop in total (the rest: taking, donating, frames)
  GC_PSTAT_LOCAL_JOINS = 11,  // segments whose children all stayed on the warp's stack (no atomics)
  GC_PSTAT_UNWOUND = 12,    // inline calls unwound over the stack budget and deferred as tasks
  GC_PSTAT_ABORTED = 13,    // inline calls unwound over `inline_abort` calls and deferred as tasks
  GC_PSTAT_PRIO = 14,       // priority spawns queued in the ready heap (ready_heap.cuh)
  GC_PSTAT_PRIO_FULL = 15,  // priority spawns that found every heap slot taken (plain spawns instead)
  GC_PSTAT_TASKS = 16,      // then per task: [2 * task] tasks started, [2 * task + 1] continuations run
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
  unsigned char* deep;          // per warp: deep_cap items, the part of its stack below shared memory
  gc_u64 deep_cap;              // items per warp in `deep` (a power of two)
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
  gc_u32 local_cap;             // items per warp stack
  gc_u32 free_cap;              // frame indices per warp free list
  gc_u32 inline_threshold;      // inline once the warp's stack holds this many items (0: never)
  gc_u32 max_depth;             // deepest recursion level allowed (Config::max_depth)
  gc_u32 dev_stack_budget;      // stack bytes inline recursion of serial device forms may use
  gc_u32 idle_max_ns;           // longest sleep of an idle warp between two looks for work
  gc_u32 inline_budget;         // an inline call that makes more calls than this raises the floor
  gc_u32 inline_abort;          // an inline call that makes more calls than this unwinds (0: never)
  gc_u32 prio_servers;          // the grid's last blocks serve the ready heap (0: no priority spawns)
  gc_u32 prio_window;           // servers keep the ready queue at least this full while the heap has keys
  gc_u32 prio_reserve;          // priority spawns go depth-first once this many wait in the heap's queues
  gc_u32 inline_unwind_limit;   // after this many stack unwinds in a run no spawn runs inline (0: never)
};

// One warp's state in shared memory: the header, then `free_cap` frame indices, then `local_cap`
// items (16-aligned).
struct gc_pwarp_hdr {
  int top;          // items in the shared-memory part of the stack
  int nfree;        // frame indices in the free list
  int hungry;       // the global hungry count, read at the start of the batch
  int floor;        // the global inline floor, read at the start of the batch
  gc_u32 deep_head; // the deep part of the stack: items [deep_head, deep_tail) (mod deep_cap)
  gc_u32 deep_tail;
  int pad[2];
};

struct gc_pwarp {
  const gc_psched* P;
  gc_pwarp_hdr* h;
  gc_u32* free;
  unsigned char* items;      // local_cap items of `item_bytes`
  unsigned char* deep;       // this warp's deep_cap items in global memory
  gc_u32 item_bytes;
  gc_u32 lane;
  gc_u32 deep_mask;          // deep_cap - 1
};

__device__ __forceinline__ unsigned char* gc_deep_at(const gc_pwarp* W, gc_u32 i) {
  return W->deep + (gc_u64)(i & W->deep_mask) * W->item_bytes;
}

// Items in the deep part of the warp's stack (its own lanes only touch it).
__device__ __forceinline__ int gc_deep_count(const gc_pwarp* W) {
  return (int)(*(volatile gc_u32*)&W->h->deep_tail - *(volatile gc_u32*)&W->h->deep_head);
}

// ---------------------------------------------------------------------------------------------
// What a running segment sees (`gc_cx` of this scheduler).

struct gc_cx {
  gc_pwarp* W;
  gc_frame_hdr* frame;       // the task's frame slot (null: spawns run inline)
  gc_u64* mask;              // bytes of the frame that deferred children write
  gc_u32 mask_words;
  gc_u32 deferred;           // children deferred in the current segment
  gc_u32 remote;             // of those, children sent to the global pool (may run anywhere, now)
  gc_u32 depth;              // recursion level of the running task
  gc_u32 task;               // its index (for faults)
  mutable gc_u32 dev_depth;  // depth of inline serial recursion (gc_dev_guard)
  mutable gc_u64 inline_calls;
  mutable gc_u32 warp_inline;  // warp tasks run inline through their serial form (one lane)
  gc_u32 local_joins;        // segments that ended with only local children (statistics)
  // Unwinding (see INLINE LIMITS): set by gc_dev_guard, read by generated serial forms and gc_spawn.
  mutable gc_u32 unwinding;  // 0, or why (gc_unwind) the serial forms are returning at once
  mutable gc_u32 dirty;      // a serial form that cannot run twice was entered in this inline call
  mutable gc_u32 catching;   // gc_spawn re-runs the current inline call as a task on a trip
  gc_u32 forced;             // why gc_spawn runs the current call inline as a last resort (gc_forced)
  mutable gc_u64 dev_base;   // stack address of the outermost serial form's guard
  mutable gc_u64 abort_at;   // inline_calls past which the current inline call unwinds (~0: never)
  // `&Sum` adds of a call gc_spawn may re-run, held back until it completes (gc_sum_add).
  mutable gc_u64 sum_ptr;    // the one Sum word held back in this inline call (0: none yet)
  mutable gc_u64 sum_acc;    // the adds held back (two's complement; the word's width at the flush)
  mutable gc_u32 sum_width;  // that word's bytes (4 or 8)
  // The priority (gc_priority image) of the spawn gc_spawn_prio hands to gc_spawn (0: a plain
  // spawn): the key it takes into the ready heap as the overflow of last resort (ready_heap.cuh).
  gc_u64 spawn_key;
};

// Resets the serial-form state of a fresh `cx` (every segment start).
__device__ __forceinline__ void gc_cx_dev_init(gc_cx& cx) {
  cx.dev_depth = 0u;
  cx.inline_calls = 0ull;
  cx.warp_inline = 0u;
  cx.unwinding = 0u;
  cx.dirty = 0u;
  cx.catching = 0u;
  cx.forced = 0u;
  cx.dev_base = 0ull;
  cx.abort_at = ~0ull;
  cx.sum_ptr = 0ull;
  cx.sum_acc = 0ull;
  cx.sum_width = 0u;
  cx.spawn_key = 0ull;
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
__device__ inline bool gc_unwinding(const gc_cx& cx) { return cx.unwinding != 0u; }

// Adds the `&Sum` adds an inline call held back to their word (at the call's completion, or when
// a second Sum word makes the call one that cannot run twice), and forgets them.
__device__ inline void gc_sum_flush(const gc_cx& cx) {
  if (cx.sum_ptr != 0ull && cx.sum_acc != 0ull) {
    if (cx.sum_width == 4u) atomicAdd(reinterpret_cast<gc_u32*>(cx.sum_ptr), (gc_u32)cx.sum_acc);
    else atomicAdd(reinterpret_cast<unsigned long long*>(cx.sum_ptr), (unsigned long long)cx.sum_acc);
  }
  cx.sum_ptr = 0ull;
  cx.sum_acc = 0ull;
}

// `&Sum` adds (`gc_bound_sum::fetch_add`, U: the word's unsigned type). In an inline call gc_spawn
// may re-run as a task (`catching`, nothing dirty entered) the adds to ONE Sum word are summed in
// `cx` instead: gc_spawn flushes them when the call completes and drops them when it unwinds, so
// a re-run adds nothing twice and a node counter stays exact. The value returned is then the word
// plus what is held back (fetch_add's result is "some earlier total" on a parallel backend
// anyway). A second Sum word in the same call flushes and marks the call dirty (it can no longer
// be re-run: a later trip fails the run, INLINE LIMITS). Elsewhere: one atomic add.
template <typename U> __device__ inline U gc_sum_add(const gc_cx& cx, U* ptr, U v) {
  if (cx.catching != 0u && cx.dirty == 0u) {
    const gc_u64 p = reinterpret_cast<gc_u64>(ptr);
    if (cx.sum_ptr == 0ull || cx.sum_ptr == p) {
      const U seen = (U)(*(volatile U*)ptr + (U)cx.sum_acc);
      cx.sum_ptr = p;
      cx.sum_width = (gc_u32)sizeof(U);
      cx.sum_acc += (gc_u64)v;
      return seen;
    }
    gc_sum_flush(cx);
    cx.dirty = 1u;
  }
  return atomicAdd(ptr, v);
}

// Flags of a serial device form (the third argument of its guard, written by the compiler).
enum gc_dev_flags : gc_u32 {
  GC_DEV_WARP = 1u,   // the serial form of a warp task (the work of a whole warp on one lane)
  GC_DEV_DIRTY = 2u,  // running it twice is not harmless: a `&mut` slice or `Temp` parameter, or alloc!
};
// Why serial forms unwind (`cx.unwinding`).
enum gc_unwind : gc_u32 { GC_UNWIND_STACK = 1u, GC_UNWIND_WORK = 2u };

// Why an inline call that trips its guard cannot be re-run as a task (the high word of a
// GC_FAULT_DEV_STACK fault's detail; runtime/src/backend/cuda/faults.rs words each).
enum gc_forced : gc_u32 {
  GC_FORCED_NO_FRAME = 1u,  // the task that spawned it got no frame slot (the frame pool is used up)
  GC_FORCED_FULL = 2u,      // its warp's stack, the global pool (and the ready heap's slots) were full
  GC_FORCED_DIRTY = 3u,     // it entered a serial form that cannot run twice (&mut slice, Temp, alloc!)
  GC_FORCED_CALL = 4u,      // a plain call of a task from a segment (not a spawn)
};

// A guard trip: every serial form returns at once from here on (generated code checks
// `cx.unwinding` after its guard and after every call of another serial form). When gc_spawn
// cannot re-run the inline call as a task (no frame to defer it to, a plain call of a task from a
// segment, or a serial form that cannot run twice was entered), the run fails with a fault here.
__device__ __noinline__ void gc_dev_trip(const gc_cx& cx, gc_u32 why, gc_u32 site) {
  cx.unwinding = why;
  if (cx.catching == 0u || cx.dirty != 0u) {
    // The detail's high word says why the call could not be re-run as a task (gc_forced).
    const gc_u64 why_not = cx.dirty != 0u ? GC_FORCED_DIRTY : (cx.forced != 0u ? cx.forced : GC_FORCED_CALL);
    gc_praise(cx.W->P, GC_FAULT_DEV_STACK, site, cx.task, cx.depth + cx.dev_depth,
              (gc_u64)cx.W->P->dev_stack_budget | why_not << 32);
  }
}

// Entered by every serial device form of a task (`<task>_dev`): counts inline calls and bounds
// the inline recursion, which uses the thread's stack, in BYTES: the address of a local here
// against the one the outermost serial form recorded, over `dev_stack_budget`. A call over the
// budget (or, in a call gc_spawn may re-run, over `cx.abort_at` calls) trips (gc_dev_trip).
// `GC_DEV_WARP`: a call run inline from a segment that reaches a warp task's serial form raises
// the inline floor like a call over the budget (gc_spawn), so its level spawns tasks again.
struct gc_dev_guard {
  const gc_cx& cx;
  __device__ gc_dev_guard(const gc_cx& c, gc_u32 site, gc_u32 flags = 0u) : cx(c) {
    char probe;  // only its address is used: where this thread's stack is now
    const gc_u64 here = reinterpret_cast<gc_u64>(&probe);
    if (cx.dev_depth++ == 0u) cx.dev_base = here;
    // Unwinding: the serial form returns at once (a call in an expression can still enter one),
    // and `dirty` must keep saying what was entered BEFORE the trip (gc_spawn reads it).
    if (cx.unwinding != 0u) return;
    cx.inline_calls += 1;
    if (flags & GC_DEV_WARP) cx.warp_inline += 1u;
    if (flags & GC_DEV_DIRTY) cx.dirty = 1u;
    // Stacks grow down on GPUs and hosts alike; the distance either way is what counts.
    const gc_u64 used = cx.dev_base > here ? cx.dev_base - here : here - cx.dev_base;
    if (used > (gc_u64)cx.W->P->dev_stack_budget) {
      gc_dev_trip(cx, GC_UNWIND_STACK, site);
    } else if (cx.inline_calls > cx.abort_at && cx.dirty == 0u) {
      gc_dev_trip(cx, GC_UNWIND_WORK, site);
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

// Makes `n` elements put into the queue claimable.
__device__ inline void gc_publish(long long* avail, unsigned n) {
  __threadfence();
  atomicAdd(reinterpret_cast<unsigned long long*>(avail), (unsigned long long)n);
}

// ---------------------------------------------------------------------------------------------
// Frame slots.

__device__ __forceinline__ gc_frame_hdr* gc_frame_at(const gc_psched* P, gc_u32 i) {
  return reinterpret_cast<gc_frame_hdr*>(P->frames + (gc_u64)i * P->frame_bytes);
}
__device__ __forceinline__ gc_u32 gc_frame_index(const gc_psched* P, const gc_frame_hdr* f) {
  return (gc_u32)((reinterpret_cast<const unsigned char*>(f) - P->frames) / P->frame_bytes);
}

// Returns a frame to this warp's free list (any lane, divergent): claim a slot with a shared-memory
// atomic; a full list sends the index to the global free ring instead. (Only frees touch the free
// list while a batch runs, so a failed claim can simply be undone.)
__device__ inline void gc_free_frame(gc_pwarp* W, gc_frame_hdr* f) {
  const gc_psched* P = W->P;
  gc_u32 idx = gc_frame_index(P, f);
  int slot = atomicAdd(&W->h->nfree, 1);
  if (slot < (int)P->free_cap) {
    W->free[slot] = idx;
    return;
  }
  atomicSub(&W->h->nfree, 1);
  gc_tq<gc_u32>* q = P->free_ring;
  unsigned long long t = atomicAdd(&q->tail, 1ull);
  gc_tq_put(q, t, idx);
  gc_publish(P->free_avail, 1u);
}

// Tops up this warp's free list to at least `need` indices (whole warp, converged): from the free
// ring, then from the never-used part of the pool. Returns the indices available.
__device__ inline int gc_refill_frames(gc_pwarp* W, int need) {
  const gc_psched* P = W->P;
  __syncwarp();
  int have = W->h->nfree;
  if (have >= need) return have;
  int want = (int)P->free_cap - have;
  if (want > (int)gc_warp_size()) want = (int)gc_warp_size();
  unsigned got = 0;
  unsigned long long t0 = 0;
  if (W->lane == 0) {
    got = gc_claim(P->free_avail, (unsigned)want);
    if (got > 0) t0 = atomicAdd(&P->free_ring->head, (unsigned long long)got);
  }
  got = __shfl_sync(0xffffffffu, got, 0);
  t0 = __shfl_sync(0xffffffffu, t0, 0);
  if (W->lane < got) {
    gc_u32 idx = 0;
    gc_tq_get(P->free_ring, t0 + W->lane, &idx);
    W->free[have + W->lane] = idx;
  }
  have += (int)got;
  if (have < need) {
    int more = want - (int)got;
    gc_u64 base = 0;
    if (W->lane == 0 && more > 0) {
      base = atomicAdd(P->fresh, (gc_u64)more);
      if (base >= P->frame_count) more = 0;
      else if (base + (gc_u64)more > P->frame_count) more = (int)(P->frame_count - base);
      if (more > 0) atomicAdd(&P->stats[GC_PSTAT_FRAMES], (gc_u64)more);
    }
    more = __shfl_sync(0xffffffffu, more, 0);
    base = __shfl_sync(0xffffffffu, base, 0);
    if ((int)W->lane < more) W->free[have + W->lane] = (gc_u32)(base + W->lane);
    have += more > 0 ? more : 0;
  }
  __syncwarp();
  if (W->lane == 0) W->h->nfree = have;
  __syncwarp();
  return have;
}

// ---------------------------------------------------------------------------------------------
// Frame masks: one bit per byte of a frame that a deferred child writes.

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

// ---------------------------------------------------------------------------------------------
// Warp tasks (`#[gpu_cilk(warp)]`): a task type that declares `static const bool WARP = true` has
// a cooperative entry `warp` (same signature as `seg0`) that all 32 lanes of a warp run together
// for one item: its `lanes` loops are spread over the lanes and end with __syncwarp. Warp tasks
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
// Spawning.

enum gc_spawn_mode { GC_SPAWN_INLINE = 0, GC_SPAWN_LOCAL = 1, GC_SPAWN_POOL = 2 };

__device__ inline bool gc_pool_has_room(const gc_psched* P) {
  const gc_tq<gc_u64>* q = reinterpret_cast<const gc_tq<gc_u64>*>(P->pool);
  gc_u64 head = gc_tq_ld(&q->head);
  gc_u64 tail = gc_tq_ld(&q->tail);
  return tail - head + P->pool_slack < q->mask + 1ull;
}

// Writes one item of `Callee` at `dst` (an item slot of the program's item type).
template <typename Callee> __device__ inline void gc_write_item(unsigned char* dst, const typename Callee::Args& a,
                                                                gc_u32 depth, void* dest, gc_frame_hdr* parent) {
  gc_pitem_hdr* h = reinterpret_cast<gc_pitem_hdr*>(dst);
  h->task = Callee::ID;
  h->depth = depth;
  h->dest = dest;
  h->parent = parent;
  *reinterpret_cast<typename Callee::Args*>(dst + sizeof(gc_pitem_hdr)) = a;
}

// Where a child's result goes: byte `offset` of the frame data of `Task`'s slot `frame`.
template <typename Task> __device__ inline void* gc_dest_in(gc_frame_hdr* frame, gc_u64 offset) {
  if (offset == ~0ull) return nullptr;
  return reinterpret_cast<unsigned char*>(frame) + GC_OFFSETOF(gc_pslot<Task>, frame) + offset;
}

// Claims `cnt` slots of a counter only this warp's lanes move (the shared part's `top`, or the
// deep part's tail) while it stays within `cap` of `floor`: returns the first, or -1 when they do
// not fit. A claim past the limit is undone; every claim after a failed one fails too until it is
// undone, so no slot is handed out twice. Unsigned arithmetic: the deep counters wrap.
__device__ __forceinline__ long long gc_claim_slots(gc_u32* counter, gc_u32 cnt, gc_u32 floor, gc_u32 cap) {
  const gc_u32 base = atomicAdd(counter, cnt);
  if (base + cnt - floor > cap) {
    atomicSub(counter, cnt);
    return -1;
  }
  return (long long)base;
}

// spawn!(Callee(args)) into byte `offset` of the frame this segment leaves behind (~0: discarded).
// Returns the callee's value when it ran inline (generated code assigns it to the destination),
// else Ret() (the child writes into the frame later).
//
// Code size: every spawn site instantiates this function. Inlined (the default), a program with
// many spawn sites becomes one huge kernel that the driver's PTX JIT takes minutes to compile
// (Strassen's 32 sites: 2.9 MB of PTX, ptxas over two minutes on an H100 host). The program
// assembler (runtime/src/backend/cuda/program.rs) defines GC_OUTLINE_SPAWNS to 1 for programs
// with more than a few spawn sites: one out-of-line copy per (caller, callee) pair instead.
#ifndef GC_OUTLINE_SPAWNS
#define GC_OUTLINE_SPAWNS 0
#endif
#if GC_OUTLINE_SPAWNS
#define GC_SPAWN_LINKAGE __noinline__
#else
#define GC_SPAWN_LINKAGE inline
#endif
#ifndef GC_PRIORITIES
#define GC_PRIORITIES 0
#endif
#if GC_PRIORITIES
// ready_heap.cuh: queues the spawn in the ready heap with key `key`; false when no slot is free.
template <typename Task, typename Callee>
__device__ bool gc_prio_enqueue(gc_cx& cx, const typename Callee::Args& args, gc_u64 offset, gc_u64 key);
#endif

template <typename Task, typename Callee>
__device__ GC_SPAWN_LINKAGE typename Callee::Ret gc_spawn(gc_cx& cx, typename Callee::Args args, gc_u64 offset, gc_u32 site) {
  typedef typename Callee::Ret Ret;
  typedef typename gc_items<Task>::Item Item;
  gc_pwarp* W = cx.W;
  const gc_psched* P = W->P;
  if (cx.depth + 1u >= P->max_depth) {
    gc_raise_cx(cx, GC_FAULT_DEPTH, site, P->max_depth);
    return Ret();
  }
  int mode = GC_SPAWN_LOCAL;
  const int queued = *(volatile int*)&W->h->top + gc_deep_count(W);
  const int hungry = W->h->hungry;
  if (cx.frame == nullptr) {
    mode = GC_SPAWN_INLINE;
  } else if (P->inline_threshold != 0u && hungry == 0 && queued >= (int)P->inline_threshold &&
             (int)(cx.depth + 1u) >= W->h->floor) {
    mode = GC_SPAWN_INLINE;
  } else if (hungry > 0 && queued > 0 && gc_pool_has_room(P)) {
    mode = GC_SPAWN_POOL;  // keep working on the local stack; feed a hungry warp
  }
  if (mode == GC_SPAWN_INLINE && cx.frame != nullptr && gc_is_warp<Callee>::value) {
    // A warp task run inline would run on this lane alone: queue it for a whole warp.
    mode = GC_SPAWN_LOCAL;
  }
  if (mode == GC_SPAWN_INLINE && cx.frame != nullptr) {
    // The automatic cutoff: run the callee now, through its serial form. A call that turns out to
    // make more than `inline_budget` calls raises the floor: children at its level or shallower
    // run as tasks from then on, so that no lane runs a large subtree alone while others wait.
    // A call that trips its guard (over the stack budget, or over `inline_abort` calls) unwinds
    // instead; unless it entered a serial form that cannot run twice (the guard then failed the
    // run), it is deferred as a task below, as if the cutoff had said so, and the floor rises.
    const gc_u64 before = cx.inline_calls;
    const gc_u32 warp_before = cx.warp_inline;
    cx.catching = 1u;
    cx.dirty = 0u;
    cx.abort_at = P->inline_abort != 0u ? before + (gc_u64)P->inline_abort : ~0ull;
    const Ret v = Callee::dev(cx, args);
    cx.catching = 0u;
    cx.abort_at = ~0ull;
    const gc_u32 why = cx.unwinding;
    if (why == 0u) gc_sum_flush(cx);  // the call completed: its held-back Sum adds count
    cx.sum_ptr = 0ull;                // (after a trip they are dropped: the re-run adds them again)
    cx.sum_acc = 0ull;
    if (why == 0u) {
      if (cx.inline_calls - before > (gc_u64)P->inline_budget || cx.warp_inline != warp_before) {
        atomicMax(reinterpret_cast<int*>(&P->ctl[GC_PCTL_INLINE_FLOOR]), (int)(cx.depth + 2u));
      }
      return v;
    }
    cx.unwinding = 0u;
    if (cx.dirty != 0u) return Ret();  // gc_dev_trip raised GC_FAULT_DEV_STACK: the run stops
    // A tree whose inline calls keep running out of stack is deeper than inline recursion can
    // serve (a branch-and-bound path is n levels deep, and every level's unwind throws the call's
    // work away): after `inline_unwind_limit` of them in this run the floor goes to max_depth,
    // so every spawn from then on is a task (INLINE LIMITS).
    const gc_u64 seen =
        atomicAdd(&P->stats[why == GC_UNWIND_STACK ? GC_PSTAT_UNWOUND : GC_PSTAT_ABORTED], 1ull) + 1ull;
    const bool too_deep =
        why == GC_UNWIND_STACK && P->inline_unwind_limit != 0u && seen >= (gc_u64)P->inline_unwind_limit;
    atomicMax(reinterpret_cast<int*>(&P->ctl[GC_PCTL_INLINE_FLOOR]), too_deep ? (int)P->max_depth : (int)(cx.depth + 2u));
    mode = hungry > 0 && queued > 0 && gc_pool_has_room(P) ? GC_SPAWN_POOL : GC_SPAWN_LOCAL;
  }
  if (mode == GC_SPAWN_LOCAL) {
    // Claim stack slots: lanes spawning together share one shared-memory atomic, in the shared
    // part while it has room, else in the deep part (global memory, still this warp's own).
    const unsigned peers = __activemask();
    const int leader = __ffs(peers) - 1;
    const unsigned rank = __popc(peers & gc_lane_mask_lt());
    const int cnt = __popc(peers);
    long long base = -1;
    int where = 0;  // 0: shared, 1: deep
    if ((int)W->lane == leader) {
      base = gc_claim_slots(reinterpret_cast<gc_u32*>(&W->h->top), (gc_u32)cnt, 0u, P->local_cap);
      if (base < 0) {
        const gc_u32 head = *(volatile gc_u32*)&W->h->deep_head;
        const long long t = gc_claim_slots(&W->h->deep_tail, (gc_u32)cnt, head, (gc_u32)P->deep_cap);
        if (t >= 0) {
          base = t;
          where = 1;
        }
      }
    }
    base = __shfl_sync(peers, base, leader);
    where = __shfl_sync(peers, where, leader);
    if (base >= 0) {
      unsigned char* dst = where == 0 ? W->items + (gc_u64)(base + (long long)rank) * sizeof(Item)
                                      : gc_deep_at(W, (gc_u32)(base + (long long)rank));
      gc_write_item<Callee>(dst, args, cx.depth + 1u, gc_dest_in<Task>(cx.frame, offset), cx.frame);
      if (offset != ~0ull) gc_mask_set(cx.mask, offset, sizeof(Ret));
      cx.deferred += 1u;
      return Ret();
    }
    mode = gc_pool_has_room(P) ? GC_SPAWN_POOL : GC_SPAWN_INLINE;
    if (mode == GC_SPAWN_INLINE) atomicAdd(&P->stats[GC_PSTAT_POOL_FULL], 1ull);
  }
  if (mode == GC_SPAWN_POOL) {
    gc_tq<Item>* q = gc_pool_queue<Item>(P);
    Item it;
    gc_write_item<Callee>(reinterpret_cast<unsigned char*>(&it), args, cx.depth + 1u, gc_dest_in<Task>(cx.frame, offset),
                          cx.frame);
    if (offset != ~0ull) gc_mask_set(cx.mask, offset, sizeof(Ret));
    cx.deferred += 1u;
    cx.remote += 1u;
    const unsigned peers = __activemask();
    const unsigned long long t = gc_tq_warp_ticket(&q->tail);
    gc_tq_put(q, t, it);
    __syncwarp(peers);
    if ((int)W->lane == __ffs(peers) - 1) {
      gc_publish(P->pool_avail, __popc(peers));
      atomicAdd(&P->stats[GC_PSTAT_DONATED], (gc_u64)__popc(peers));
    }
    return Ret();
  }
  // Both parts of the stack and the pool are full (or no frame slot). Programs with priority
  // spawns have one more place: the ready heap's slots (the overflow of last resort; the key of
  // the priority spawn that came here through gc_spawn_prio, 0 for a plain spawn).
#if GC_PRIORITIES
  if (cx.frame != nullptr && P->prio_servers != 0u && gc_prio_enqueue<Task, Callee>(cx, args, offset, cx.spawn_key)) {
    return Ret();
  }
#endif
  // Inline because nothing else can take the call. Not measured, and not undone: a trip of its
  // guard fails the run (saying why, cx.forced).
  cx.forced = cx.frame == nullptr ? GC_FORCED_NO_FRAME : GC_FORCED_FULL;
  const Ret v = Callee::dev(cx, args);
  cx.forced = 0u;
  return v;
}

// ---------------------------------------------------------------------------------------------
// Running tasks.

// Adds `v` to a join counter and returns the old value, as one acquire-release read-modify-write
// at GPU scope: it releases this thread's earlier writes (a child's result, a parent's frame) and
// acquires those of every earlier add on the counter (PTX `atom.acq_rel.gpu`, sm_70+). Built with
// -DGC_JOIN_SC_FENCES it is the older `__threadfence(); atomicAdd; __threadfence()` instead (set
// GPU_CILK_NVRTC_FLAGS to compare the two). The simulation: a sequentially consistent RMW.
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

// A task finished (its result delivered): tells its parent. Returns the parent's frame when this
// was its last outstanding child and the parent had already stored its frame (run it next).
__device__ inline gc_frame_hdr* gc_child_done(const gc_psched* P, gc_frame_hdr* parent) {
  if (parent == nullptr) {
    __threadfence();  // release: the result before `done`
    atomicExch(&P->ctl[GC_PCTL_DONE], 1u);
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

// The end of segment `seg` of `Task` (sync = it ended at a sync!, else it returned `ret`): runs
// the following segments while nothing is outstanding; otherwise stores the frame and adds the
// deferred children to its join counter. Returns a frame to resume next (this task's, if all its
// children are already done, or its parent's), or null.
// `own` is whether cx.frame belongs to this task already (a resumed task) or was only lent to it.
// The segment after `seg` when `seg` ended at a sync: `seg + 1`, except after the last one, which
// only a task whose body is a state machine reaches (its one continuation reads the resume point
// from the frame and may sync again): that continuation runs again.
template <typename Task> __device__ __forceinline__ gc_u32 gc_next_segment(gc_u32 seg) {
  return seg < (gc_u32)Task::SYNCS ? seg + 1u : seg;
}

template <typename Task>
__device__ gc_frame_hdr* gc_pfinish(gc_cx& cx, gc_u32 seg, bool sync, typename Task::Frame& frame,
                                    typename Task::Ret& ret, void* dest, gc_frame_hdr* parent, bool* frame_used) {
  const gc_psched* P = cx.W->P;
  for (;;) {
    if (cx.deferred == 0u) {
      if (!sync) {
        gc_pdeliver(dest, ret);
        if (*frame_used) gc_free_frame(cx.W, cx.frame);
        *frame_used = false;
        return gc_child_done(P, parent);
      }
      seg = gc_next_segment<Task>(seg);
      typename Task::Frame f = frame;
      for (gc_u32 i = 0; i < cx.mask_words; ++i) cx.mask[i] = 0ull;
      sync = Task::resume(cx, seg, f, &frame, &ret);
      if (*(volatile gc_u32*)&P->ctl[GC_PCTL_ABORT] != 0u) return nullptr;
      continue;
    }
    gc_pslot<Task>* slot = reinterpret_cast<gc_pslot<Task>*>(cx.frame);
    gc_store_masked(&slot->frame, frame, cx.mask);
    if (!sync) slot->deferred = ret;
    slot->h.task = Task::ID;
    slot->h.next_segment = sync ? gc_next_segment<Task>(seg) : (gc_u32)Task::SYNCS + 1u;
    slot->h.depth = cx.depth;
    slot->h.dest = dest;
    slot->h.parent = parent;
    *frame_used = true;
    const int n = (int)cx.deferred;
    if (cx.remote == 0u) {
      // Every child is on this warp's stack: none can run before this batch ends (the warp takes
      // items only between batches, and donates them only after a __syncwarp and a fence), so a
      // plain store of the count is enough, and no child can have finished yet.
      slot->h.pending = n;
      cx.local_joins += 1u;
      return nullptr;
    }
    // Release: the frame before the count; acquire (when the sum is 0): the children's results.
    if (gc_join_add(&slot->h.pending, n) + n == 0) {
      return cx.frame;  // every child already finished: resume here
    }
    return nullptr;
  }
}

// Runs item `it` (a call of `Task`) from segment 0 with `frame` lent to it (null: none). Returns
// a frame to resume next, or null. *frame_used: the task kept the frame.
template <typename Task, typename Item>
__device__ gc_frame_hdr* gc_pstart(gc_pwarp* W, const Item& it, gc_frame_hdr* frame, bool* frame_used, gc_u64* stats) {
  constexpr gc_u32 MW = (gc_u32)((sizeof(typename Task::Frame) + 63) / 64);
  gc_u64 mask[MW];
  for (gc_u32 i = 0; i < MW; ++i) mask[i] = 0ull;
  gc_cx cx;
  cx.W = W;
  cx.frame = frame;
  cx.mask = mask;
  cx.mask_words = MW;
  cx.deferred = 0u;
  cx.remote = 0u;
  cx.local_joins = 0u;
  cx.task = Task::ID;
  gc_cx_dev_init(cx);
  if (frame != nullptr) frame->pending = 0;
  typename Task::Frame out;
  typename Task::Ret ret = typename Task::Ret();
  const typename Task::Args a = *reinterpret_cast<const typename Task::Args*>(it.args);
  cx.depth = it.h.depth;
  stats[2 * Task::ID] += 1ull;
  bool sync = Task::seg0(cx, a, &out, &ret);
  *frame_used = false;
  gc_frame_hdr* next = gc_pfinish<Task>(cx, 0u, sync, out, ret, it.h.dest, it.h.parent, frame_used);
  stats[2 * gc_items<Task>::TASKS] += cx.inline_calls;
  stats[2 * gc_items<Task>::TASKS + 1] += cx.local_joins;
  return next;
}

// Runs item `it` of the warp task `Task` on the whole warp (every lane calls this, converged, with
// the same item). The `owner` lane (the one that took the item) then delivers the result and
// completes the child (join counter); it gets the parent's frame back when that completion was
// the last one (to resume), the other lanes get null.
template <typename Task, typename Item>
__device__ gc_frame_hdr* gc_pwarp_start(gc_pwarp* W, const Item& it, bool owner, gc_u64* stats) {
  gc_cx cx;
  cx.W = W;
  cx.frame = nullptr;
  cx.mask = nullptr;
  cx.mask_words = 0u;
  cx.deferred = 0u;
  cx.remote = 0u;
  cx.local_joins = 0u;
  cx.task = Task::ID;
  gc_cx_dev_init(cx);
  cx.depth = it.h.depth;
  typename Task::Frame out;
  typename Task::Ret ret = typename Task::Ret();
  const typename Task::Args a = *reinterpret_cast<const typename Task::Args*>(it.args);
  gc_warp_entry<gc_is_warp<Task>::value>::template run<Task>(cx, a, &out, &ret);
  __syncwarp();
  if (!owner) return nullptr;
  stats[2 * Task::ID] += 1ull;
  stats[2 * gc_items<Task>::TASKS] += cx.inline_calls;
  gc_pdeliver(it.h.dest, ret);
  return gc_child_done(W->P, it.h.parent);
}

// Lane `from`'s item, on every lane (whole warp, converged).
template <typename Item> __device__ inline void gc_shfl_item(Item* dst, const Item& src, int from) {
  const gc_u64* s = reinterpret_cast<const gc_u64*>(&src);
  gc_u64* d = reinterpret_cast<gc_u64*>(dst);
  for (gc_u32 i = 0; i < (gc_u32)(sizeof(Item) / 8); ++i) d[i] = __shfl_sync(0xffffffffu, s[i], from);
}

// Resumes the task of frame `h` (its children are all done). Returns the next frame to resume.
template <typename Task> __device__ gc_frame_hdr* gc_presume(gc_pwarp* W, gc_frame_hdr* h, gc_u64* stats) {
  gc_pslot<Task>* slot = reinterpret_cast<gc_pslot<Task>*>(h);
  void* dest = h->dest;
  gc_frame_hdr* parent = h->parent;
  if (h->next_segment > (gc_u32)Task::SYNCS) {
    // A return with children outstanding: its value waited in the frame.
    typename Task::Ret v = slot->deferred;
    gc_free_frame(W, h);
    gc_pdeliver(dest, v);
    return gc_child_done(W->P, parent);
  }
  constexpr gc_u32 MW = (gc_u32)((sizeof(typename Task::Frame) + 63) / 64);
  gc_u64 mask[MW];
  for (gc_u32 i = 0; i < MW; ++i) mask[i] = 0ull;
  gc_cx cx;
  cx.W = W;
  cx.frame = h;
  cx.mask = mask;
  cx.mask_words = MW;
  cx.deferred = 0u;
  cx.remote = 0u;
  cx.local_joins = 0u;
  cx.depth = h->depth;
  cx.task = Task::ID;
  gc_cx_dev_init(cx);
  const gc_u32 seg = h->next_segment;
  typename Task::Frame f = slot->frame;
  typename Task::Frame out;
  typename Task::Ret ret = typename Task::Ret();
  stats[2 * Task::ID + 1] += 1ull;
  bool sync = Task::resume(cx, seg, f, &out, &ret);
  bool used = true;
  gc_frame_hdr* next = gc_pfinish<Task>(cx, seg, sync, out, ret, dest, parent, &used);
  stats[2 * gc_items<Task>::TASKS] += cx.inline_calls;
  stats[2 * gc_items<Task>::TASKS + 1] += cx.local_joins;
  return next;
}

// ---------------------------------------------------------------------------------------------
// The warp loop.

// Programs with priority spawns: the assembler defines GC_PRIORITIES to 1 and appends heap.cuh
// and ready_heap.cuh, which define these two.
#if GC_PRIORITIES
template <typename Item> __device__ int gc_prio_take(gc_pwarp* W, Item* mine);
template <typename Item> __device__ void gc_prio_serve(const gc_psched& P);
#endif

// Takes up to one item per lane for this warp into `mine` (lane i gets the i-th newest):
// from its own stack, else the best prioritized ready items (programs with priority spawns),
// else from the pool. Whole warp, converged. Returns the count.
template <typename Item> __device__ int gc_take_batch(gc_pwarp* W, Item* mine) {
  const gc_psched* P = W->P;
  __syncwarp();
  int top = W->h->top;
  const int batch = (int)gc_warp_size();
  int n = top < batch ? top : batch;
  if (n > 0) {
    if ((int)W->lane < n) {
      const unsigned char* src = W->items + (gc_u64)(top - 1 - (int)W->lane) * W->item_bytes;
      *mine = *reinterpret_cast<const Item*>(src);
    }
    __syncwarp();
    if (W->lane == 0) W->h->top = top - n;
    __syncwarp();
    return n;
  }
  // The shared part is empty: the newest items of the deep part (this warp's own, global memory).
  const gc_u32 tail = W->h->deep_tail;
  const int deep = gc_deep_count(W);
  n = deep < batch ? deep : batch;
  if (n > 0) {
    if ((int)W->lane < n) *mine = *reinterpret_cast<const Item*>(gc_deep_at(W, tail - 1u - W->lane));
    __syncwarp();
    if (W->lane == 0) W->h->deep_tail = tail - (gc_u32)n;
    __syncwarp();
    return n;
  }
#if GC_PRIORITIES
  if (P->prio_servers != 0u) {
    n = gc_prio_take<Item>(W, mine);
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

// Sends the oldest half of this warp's stack (at most one item per lane) to the pool when warps are
// hungry.
template <typename Item> __device__ void gc_donate(gc_pwarp* W) {
  const gc_psched* P = W->P;
  __syncwarp();
  const int top = W->h->top;
  const int deep = gc_deep_count(W);
  if (W->h->hungry <= 0 || top + deep < 2) return;
  bool room = false;
  if (W->lane == 0) room = gc_pool_has_room(P);
  room = __shfl_sync(0xffffffffu, room, 0);
  if (!room) return;
  gc_tq<Item>* q = gc_pool_queue<Item>(P);
  unsigned long long t0 = 0;
  if (deep >= 2) {
    // The deep part's oldest items first: no compaction needed.
    int n = deep / 2;
    if (n > (int)gc_warp_size()) n = (int)gc_warp_size();
    const gc_u32 head = W->h->deep_head;
    if (W->lane == 0) t0 = atomicAdd(&q->tail, (unsigned long long)n);
    t0 = __shfl_sync(0xffffffffu, t0, 0);
    if ((int)W->lane < n) gc_tq_put(q, t0 + W->lane, *reinterpret_cast<const Item*>(gc_deep_at(W, head + W->lane)));
    __syncwarp();
    if (W->lane == 0) {
      W->h->deep_head = head + (gc_u32)n;
      gc_publish(P->pool_avail, (unsigned)n);
      atomicAdd(&P->stats[GC_PSTAT_DONATED], (gc_u64)n);
    }
    __syncwarp();
    return;
  }
  if (top < 2) return;
  int n = top / 2;
  if (n > (int)gc_warp_size()) n = (int)gc_warp_size();
  if (W->lane == 0) t0 = atomicAdd(&q->tail, (unsigned long long)n);
  t0 = __shfl_sync(0xffffffffu, t0, 0);
  if ((int)W->lane < n) gc_tq_put(q, t0 + W->lane, *reinterpret_cast<const Item*>(W->items + (gc_u64)W->lane * W->item_bytes));
  __syncwarp();
  // Close the gap at the bottom of the stack, one item per lane a round (every lane takes part in
  // every round; a round reads [base + n, base + n + lanes) before it writes [base, base + lanes)).
  for (int base = 0; base < top - n; base += (int)gc_warp_size()) {
    const int i = base + (int)W->lane;
    Item v;
    if (i < top - n) v = *reinterpret_cast<const Item*>(W->items + (gc_u64)(i + n) * W->item_bytes);
    __syncwarp();
    if (i < top - n) *reinterpret_cast<Item*>(W->items + (gc_u64)i * W->item_bytes) = v;
    __syncwarp();
  }
  if (W->lane == 0) {
    W->h->top = top - n;
    gc_publish(P->pool_avail, (unsigned)n);
    atomicAdd(&P->stats[GC_PSTAT_DONATED], (gc_u64)n);
  }
  __syncwarp();
}

// The persistent kernel's body (called by the assembled program's `gc_persistent` kernel with its
// `gc_prog`). Dynamic shared memory: per warp, a gc_pwarp_hdr, free_cap frame indices and
// local_cap items, as the host sized it.
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
  const gc_u64 warp_bytes = ((sizeof(gc_pwarp_hdr) + 4ull * P.free_cap + 15ull) & ~15ull) + (gc_u64)P.local_cap * sizeof(Item);
  gc_pwarp W;
  W.P = &P;
  W.h = reinterpret_cast<gc_pwarp_hdr*>(gc_psmem + warp * warp_bytes);
  W.free = reinterpret_cast<gc_u32*>(W.h + 1);
  W.items = gc_psmem + warp * warp_bytes + ((sizeof(gc_pwarp_hdr) + 4ull * P.free_cap + 15ull) & ~15ull);
  W.item_bytes = (gc_u32)sizeof(Item);
  W.lane = gc_lane();
  {
    const gc_u64 gwarp = (gc_u64)blockIdx.x * (blockDim.x / gc_warp_size()) + warp;
    W.deep = P.deep + gwarp * P.deep_cap * sizeof(Item);
    W.deep_mask = P.deep_cap == 0ull ? 0u : (gc_u32)(P.deep_cap - 1ull);
  }
  if (W.lane == 0) {
    W.h->top = 0;
    W.h->nfree = 0;
    W.h->hungry = 0;
    W.h->floor = 0;
    W.h->deep_head = 0u;
    W.h->deep_tail = 0u;
  }
  __syncwarp();
  // The root call starts on the first warp of the grid.
  if (blockIdx.x == 0 && warp == 0 && W.lane == 0) {
    unsigned char* dst = W.items;
    for (gc_u32 i = 0; i < sizeof(Item); ++i) dst[i] = 0;
    Prog::write_root(dst, P.root_args, P.result);
    W.h->top = 1;
  }
  __syncwarp();
  // Per lane: per task started, resumed; then inline calls, local joins (lanes), and per warp
  // (lane 0): batches, items, idle cycles, run cycles, all cycles.
  constexpr gc_u32 NS = 2 * Prog::TASKS + 7;
  gc_u64 stats[NS];
  for (gc_u32 i = 0; i < NS; ++i) stats[i] = 0ull;
  gc_u64* const wstat = stats + 2 * Prog::TASKS + 2;
  gc_u32 deepest = 0;
  bool idle = false;
  unsigned ns = 64u;
  gc_u32 round = 0;
  const long long loop_start = clock64();
  for (;;) {
    // Only lane 0 reads the stop word (one load per warp), and only every 8th round (or every
    // round once an idle warp sleeps 4 µs or more between rounds): the stop line is hot (every
    // idle warp reads it), and a late stop costs a few rounds once, while every read slows the
    // warps that have work. A busy warp's work is finite anyway.
    const bool look = (round & 7u) == 0u || (idle && ns >= 4096u);
    if (look) {
      int stop = 0;
      if (W.lane == 0) stop = (int)gc_pstopped(&P);
      if (__shfl_sync(0xffffffffu, stop, 0)) break;
    }
    round += 1u;
    const long long t0 = clock64();
    Item mine;
    const int n = gc_take_batch<Item>(&W, &mine);
    if (n == 0) {
      if (!idle && W.lane == 0) atomicAdd(&P.ctl[GC_PCTL_HUNGRY], 1u);
      idle = true;
      __nanosleep(ns);
      if (ns < P.idle_max_ns) ns = ns * 2u < P.idle_max_ns ? ns * 2u : P.idle_max_ns;
      if (W.lane == 0) wstat[2] += (gc_u64)(clock64() - t0);
      continue;
    }
    ns = 64u;
    if (idle && W.lane == 0) atomicSub(&P.ctl[GC_PCTL_HUNGRY], 1u);
    idle = false;
    // The hunger count and the inline floor, on the other hand, are read at every batch that has
    // work: a warp that decides from a stale `hungry == 0` runs everything inline and starves the
    // idle warps (measured on an H100: reading them every 8th round only took fib(35) from 7.5 ms
    // to 306 ms with 93% of the cycles idle).
    if (W.lane == 0) {
      W.h->hungry = (int)*(volatile gc_u32*)&P.ctl[GC_PCTL_HUNGRY];
      W.h->floor = (int)*(volatile gc_u32*)&P.ctl[GC_PCTL_INLINE_FLOOR];
    }
    __syncwarp();
    gc_donate<Item>(&W);
    // Lend every lane with an item a frame slot.
    const int have = gc_refill_frames(&W, n);
    gc_frame_hdr* frame = nullptr;
    if ((int)W.lane < n && (int)W.lane < have) frame = gc_frame_at(&P, W.free[have - 1 - (int)W.lane]);
    __syncwarp();
    if (W.lane == 0) W.h->nfree = have - (n < have ? n : have);
    __syncwarp();
    const long long t1 = clock64();
    bool used = false;
    const bool wmine = (int)W.lane < n && Prog::is_warp(mine.h.task);
    if ((int)W.lane < n) deepest = mine.h.depth > deepest ? mine.h.depth : deepest;
    if ((int)W.lane < n && !wmine) {
      gc_frame_hdr* next = Prog::start(&W, mine, frame, &used, stats);
      // A continuation chain climbs at most to the root; look for a stop every 64 steps only.
      for (gc_u32 k = 1u; next != nullptr; ++k) {
        if ((k & 63u) == 0u && gc_pstopped(&P)) break;
        next = Prog::resume(&W, next, stats);
      }
    }
    __syncwarp();
    // The batch's warp tasks: the whole warp runs each in turn; then each owner lane climbs the
    // continuation chain its completion started.
    unsigned wmask = __ballot_sync(0xffffffffu, wmine);
    if (wmask != 0u) {
      gc_frame_hdr* wnext = nullptr;
      while (wmask != 0u) {
        const int j = __ffs((int)wmask) - 1;
        wmask &= wmask - 1u;
        Item it;
        gc_shfl_item(&it, mine, j);
        gc_frame_hdr* nx = Prog::start_warp(&W, it, (int)W.lane == j, stats);
        if ((int)W.lane == j) wnext = nx;
      }
      for (gc_u32 k = 1u; wnext != nullptr; ++k) {
        if ((k & 63u) == 0u && gc_pstopped(&P)) break;
        wnext = Prog::resume(&W, wnext, stats);
      }
      __syncwarp();
    }
    if (W.lane == 0) {
      wstat[0] += 1ull;
      wstat[1] += (gc_u64)n;
      wstat[3] += (gc_u64)(clock64() - t1);
    }
    // A lent frame the task did not keep goes back to the list.
    if (frame != nullptr && !used) gc_free_frame(&W, frame);
    __syncwarp();
  }
  if (W.lane == 0) wstat[4] = (gc_u64)(clock64() - loop_start);
  if (W.lane == 0 && idle) atomicSub(&P.ctl[GC_PCTL_HUNGRY], 1u);
  for (gc_u32 i = 0; i < NS; ++i) {
    gc_u64 v = stats[i];
    for (unsigned o = gc_warp_size() / 2u; o > 0u; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
    gc_u32 at = (gc_u32)GC_PSTAT_TASKS + i;
    if (i >= 2 * Prog::TASKS) {
      const gc_u32 extra[7] = {GC_PSTAT_INLINE,  GC_PSTAT_LOCAL_JOINS, GC_PSTAT_BATCHES, GC_PSTAT_ITEMS,
                               GC_PSTAT_CYC_IDLE, GC_PSTAT_CYC_RUN,     GC_PSTAT_CYC_ALL};
      at = extra[i - 2 * Prog::TASKS];
    }
    if (W.lane == 0 && v != 0ull) atomicAdd(&P.stats[at], v);
  }
  gc_u32 d = __reduce_max_sync(0xffffffffu, deepest);
  if (W.lane == 0) atomicMax(reinterpret_cast<unsigned long long*>(&P.stats[GC_PSTAT_MAX_DEPTH]), (unsigned long long)d);
}

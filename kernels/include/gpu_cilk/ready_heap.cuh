// gpu_cilk/ready_heap.cuh — prioritized ready work of the persistent scheduler
// (`spawn!(f(..), priority = key)`): the batched heap of heap.cuh as the queue of ready items that
// carry a priority, served best first.
//
// Owns: gc_spawn_prio (what generated segments call for a priority spawn), the heap's server
// blocks (gc_prio_serve), the warps' take from the ready queue (gc_prio_take), the item slots and
// the three ticket queues around the heap. Must not own: the heap's algorithm (heap.cuh), the
// warp loop and plain spawns (persistent.cuh), host-side sizing (runtime/src/backend/cuda/
// persistent/prio.rs). Assembled after persistent.cuh, ticket_queue.cuh and heap.cuh, and only
// into programs with a priority spawn (GC_PRIORITIES 1).
//
// WHY SERVER BLOCKS. The heap's operations are block-wide (one block = one operation: bitonic
// sorts and merge paths over K keys with __syncthreads), while the persistent scheduler runs
// warps that each go their own way. So the grid's last `prio_servers` blocks (Config::
// device_priority_servers) run no tasks: they move keys into the heap and the best keys out of
// it, and the task-running warps talk to them through ticket queues only.
//
// THE RESERVE (why not every priority spawn goes through the heap). Measured on an H100
// (knapsack sc 200/7000/5%): with every node through the heap the run took 285 ms and explored
// 2.9 M nodes, 92.7% of the warp time idle (two server blocks move about 12 M keys/s, and
// best-first order in batches of 256 finds good incumbents late), against 7.5 ms and 1.4 M nodes
// with plain depth-first spawns; sending spawns to the heap whenever a warp was idle fed itself
// (the servers fall behind, more warps idle, more spawns to the heap: 338 ms), and so did
// sending every spawn while fewer than a reserve were queued (idle warps drain the heap as fast
// as it fills: 89 ms, 91% idle). A RESERVE of the best work filled from SURPLUS: a priority
// spawn goes into the heap only while every warp is busy (the `hungry` count this warp read at
// the start of its batch is 0) and fewer than `prio_reserve` (Config::device_priority_reserve)
// prioritized items are queued; with 8192 sc 200 took 8.7 ms but sc 800 became bimodal (half the
// runs explored 15-50x more nodes), so the default reserve is 0. Otherwise it is a plain spawn: the
// warp's own stack, depth first, with the automatic cutoff, and the global pool when warps are
// idle. Idle warps take the heap's best items before the pool. And when a plain spawn finds the
// warp's stack and the pool full (it could only run inline, with no stack budget to fall back
// on), gc_spawn offers it to the heap (the OVERFLOW of last resort, with the spawn's key, 0 for
// plain spawns of the program) before it runs it inline. With prio_reserve >= prio_slots every
// priority spawn goes into the heap (strict best first in batches, idle warps or not).

// THE PATH OF A PRIORITY SPAWN INTO THE HEAP (one item, any lane):
//   1. gc_spawn_prio takes an item SLOT (an index into prio_items): from the free ring, else a
//      never-used one; none left: the spawn is a plain gc_spawn (GC_PSTAT_PRIO_FULL; nothing is
//      dropped, it only loses its place in the order). It writes the item (task, depth, dest,
//      parent frame, arguments) into the slot, marks the frame bytes the child owns (the child
//      may run anywhere, now: it counts as `remote`), and puts the key (~priority, slot) into the
//      INBOX (ticket queue of keys; published through GC_PRIO_CTR_IN).
//   2. A server block claims up to K keys from the inbox and inserts them into the heap
//      (gc_heap_insert: a full batch or a partial one through the heap's buffer).
//   3. While the READY queue holds fewer than `prio_window` published slots and the heap holds
//      keys, a server deletes the K smallest keys (gc_heap_delete_min: the largest priorities)
//      and puts their slots into the ready queue in that order (tickets ascending = best first).
//   4. A warp whose own stack is empty (gc_take_batch) takes up to 32 slots from the ready queue
//      (before the global pool), copies the items out and returns the slots to the free ring.
// Keys are gc_heap_key<u64, u32>: the heap serves the smallest first, so the key's priority is
// the bitwise complement of the spawn's `Priority::key` image (larger priorities first); equal
// priorities come out by slot index (no particular order, unlike the cpu backend's newest first).
//
// ORDER. The ready queue is a window of at most `prio_window` + K items already taken out of the
// heap: an item spawned later with a higher priority waits behind them, and items in the inboxes
// wait for the next insert. So the order is best first in batches, like the paper's parallel
// branch-and-bound (every block deletes K at once); priorities change order, never results.
//
// PROGRESS AND TERMINATION. Every queued item owns a slot, so no queue holds more than
// prio_slots elements: the rings (capacity >= prio_slots) never make a producer wait for a
// consumer, and the heap (capacity prio_slots / K + 2 nodes) is never full. A server waits only
// inside heap operations (other servers) and on tickets whose producers already published. A
// queued item is a deferred child: its parent's join counter is not zero while it waits, so the
// root cannot complete before every prioritized item ran; servers leave their loop on `done` or
// `abort` like every warp. A heap fault (GC_HEAP_FAULT_*, a broken invariant) or a full heap fails
// the run with GC_FAULT_PRIO_HEAP (an internal error) (detail: the heap's error word, or the
// insert's result | 1 << 32).
//
// MEMORY ORDERING. Producer of an item: writes the slot, then gc_tq_put (fence; turn store:
// release) into the inbox; the server's gc_tq_get (turn load; fence: acquire) precedes its heap
// operations, which order key moves by locks with fences (heap.cuh); the server's gc_tq_put into
// the ready queue releases, the warp's gc_tq_get acquires, then it reads the slot: the item's
// bytes are visible by cumulativity of the fences on that chain. A slot returns to the free ring
// (gc_tq_put, release) only after the warp read its item; the next owner's gc_tq_get acquires.

#pragma once
#ifndef GPU_CILK_PORTABLE_CUH
#include "gpu_cilk/portable.cuh"
#endif

// Keys per heap node (the batch of one server operation). The host mirrors it (PRIO_K in
// runtime/src/backend/cuda/persistent/prio.rs; a static_assert in every program checks it).
#define GC_PRIO_K 256

typedef gc_heap_key<gc_u64, gc_u32> gc_prio_key;

// The words of `prio_counters` (each on its own 128-byte line: index * 16).
enum gc_prio_ctr : gc_u32 {
  GC_PRIO_CTR_FREE = 0,   // freed slots published in prio_free and not yet claimed
  GC_PRIO_CTR_IN = 1,     // keys published in the inbox and not yet claimed
  GC_PRIO_CTR_READY = 2,  // slots published in the ready queue and not yet claimed
  GC_PRIO_CTR_FRESH = 3,  // never-used slots handed out (may run past prio_slots: then none is left)
  GC_PRIO_CTR_HELD = 4,   // keys inserted into the heap and not yet deleted (servers only)
  GC_PRIO_CTR_WORDS = 5,
};

__device__ __forceinline__ long long* gc_prio_ctr(const gc_psched* P, gc_u32 which) {
  return P->prio_counters + 16u * which;
}

// Takes an item slot (one lane, divergent): a freed one, else a never-used one; -1 when none.
__device__ inline long long gc_prio_slot(const gc_psched* P) {
  gc_tq<gc_u32>* fr = reinterpret_cast<gc_tq<gc_u32>*>(P->prio_free);
  if (gc_claim(gc_prio_ctr(P, GC_PRIO_CTR_FREE), 1u) == 1u) {
    const unsigned long long t = atomicAdd(&fr->head, 1ull);
    gc_u32 s = 0u;
    gc_tq_get(fr, t, &s);
    return (long long)s;
  }
  // Never-used slots: a counter that only grows (past prio_slots it means "none left").
  const unsigned long long f =
      atomicAdd(reinterpret_cast<unsigned long long*>(gc_prio_ctr(P, GC_PRIO_CTR_FRESH)), 1ull);
  return f < P->prio_slots ? (long long)f : -1ll;
}

// Prioritized items queued now (slots handed out and not yet freed; a snapshot).
__device__ __forceinline__ long long gc_prio_queued(const gc_psched* P) {
  const unsigned long long fresh = *(volatile unsigned long long*)gc_prio_ctr(P, GC_PRIO_CTR_FRESH);
  const long long used = (long long)(fresh < P->prio_slots ? fresh : P->prio_slots);
  return used - *(volatile long long*)gc_prio_ctr(P, GC_PRIO_CTR_FREE);
}

// Queues spawn!(Callee(args)) in the ready heap with priority image `key`, into byte `offset`
// of the frame this segment leaves behind (~0: discarded): takes a slot, writes the item, marks
// the frame bytes the child owns, puts (~key, slot) into the inbox. False (nothing done) when no
// slot is free. Needs a frame (cx.frame != null) and prio_servers != 0.
template <typename Task, typename Callee>
__device__ bool gc_prio_enqueue(gc_cx& cx, const typename Callee::Args& args, gc_u64 offset, gc_u64 key) {
  typedef typename Callee::Ret Ret;
  typedef typename gc_items<Task>::Item Item;
  const gc_psched* P = cx.W->P;
  // The child may run anywhere, now: the running task's frame must be a pool frame (its lane
  // stack spills, persistent.cuh OVERFLOW).
  if (!gc_is_pool_frame(P, cx.frame) && !gc_lane_spill<Task>(cx)) return false;
  const long long slot = gc_prio_slot(P);
  if (slot < 0) return false;
  unsigned char* dst = P->prio_items + (gc_u64)slot * sizeof(Item);
  gc_write_item<Callee>(dst, args, cx.depth + 1u, gc_dest_in<Task>(cx.frame, offset), cx.frame);
  if (offset != ~0ull) gc_mask_set(cx.mask, offset, sizeof(Ret));
  cx.deferred += 1u;
  cx.remote += 1u;
  gc_prio_key k;
  k.prio = ~key;
  k.payload = (gc_u32)slot;
  gc_tq<gc_prio_key>* in = reinterpret_cast<gc_tq<gc_prio_key>*>(P->prio_inbox);
  const unsigned long long t = gc_tq_warp_ticket(&in->tail);
  gc_tq_put(in, t, k);
  gc_publish(gc_prio_ctr(P, GC_PRIO_CTR_IN), 1u);
  atomicAdd(&P->stats[GC_PSTAT_PRIO], 1ull);
  return true;
}

// spawn!(Callee(args), priority = key) into byte `offset` of the frame this segment leaves
// behind (~0: discarded); `key` is the priority's order-preserving u64 image (gc_priority, larger
// first). Returns Ret() when the child was deferred (it writes into the frame later), else the
// value of the inline call gc_spawn made.
template <typename Task, typename Callee>
__device__ GC_SPAWN_LINKAGE typename Callee::Ret gc_spawn_prio(gc_cx& cx, typename Callee::Args args, gc_u64 offset,
                                                               gc_u32 site, gc_u64 key) {
  typedef typename Callee::Ret Ret;
  const gc_psched* P = cx.W->P;
  // The heap takes the spawn while its reserve is short and every warp is busy, or always when
  // the reserve is the whole heap (see THE RESERVE); a frame is needed to join the child, and a
  // spawn too deep faults in gc_spawn.
  const bool strict = (gc_u64)P->prio_reserve >= P->prio_slots;
  if (P->prio_servers != 0u && cx.frame != nullptr && cx.depth + 1u < P->max_depth &&
      (strict || (cx.W->h->hungry == 0 && gc_prio_queued(P) < (long long)P->prio_reserve))) {
    if (gc_prio_enqueue<Task, Callee>(cx, args, offset, key)) return Ret();
    atomicAdd(&P->stats[GC_PSTAT_PRIO_FULL], 1ull);
  }
  // A plain spawn, depth first on this warp, the pool for idle warps; if the stack and the pool
  // are full, gc_spawn offers it to the heap with this key before it runs it inline.
  cx.spawn_key = key;
  const Ret v = gc_spawn<Task, Callee>(cx, args, offset, site);
  cx.spawn_key = 0ull;
  return v;
}

// Takes up to one prioritized item per lane, best first (whole warp, converged); returns how many.
template <typename Item> __device__ int gc_prio_take(gc_pwarp* W, Item* mine) {
  const gc_psched* P = W->P;
  gc_tq<gc_u32>* rq = reinterpret_cast<gc_tq<gc_u32>*>(P->prio_ready);
  gc_tq<gc_u32>* fr = reinterpret_cast<gc_tq<gc_u32>*>(P->prio_free);
  unsigned got = 0;
  unsigned long long t0 = 0;
  if (W->lane == 0) {
    got = gc_claim(gc_prio_ctr(P, GC_PRIO_CTR_READY), gc_warp_size());
    if (got > 0) t0 = atomicAdd(&rq->head, (unsigned long long)got);
  }
  got = __shfl_sync(0xffffffffu, got, 0);
  t0 = __shfl_sync(0xffffffffu, t0, 0);
  if (got == 0u) return 0;
  if (W->lane < got) {
    gc_u32 s = 0u;
    gc_tq_get(rq, t0 + W->lane, &s);
    *mine = *reinterpret_cast<const Item*>(P->prio_items + (gc_u64)s * sizeof(Item));
    const unsigned long long t = gc_tq_warp_ticket(&fr->tail);
    gc_tq_put(fr, t, s);
  }
  __syncwarp();
  if (W->lane == 0) {
    gc_publish(gc_prio_ctr(P, GC_PRIO_CTR_FREE), got);
    atomicAdd(&P->stats[GC_PSTAT_TAKEN], (gc_u64)got);
  }
  __syncwarp();
  return (int)got;
}

// Raises the heap's fault (thread 0 of a server block): the run stops.
__device__ inline void gc_prio_fault(const gc_psched& P, gc_u64 detail) {
  gc_praise(&P, GC_FAULT_PRIO_HEAP, 0u, 0u, 0u, detail);
}

// A server block's loop (whole block). Dynamic shared memory: the heap's workspace, then 8
// control words (the host sizes it: gc_prio_smem_bytes).
template <typename Item> __device__ void gc_prio_serve(const gc_psched& P) {
  constexpr int K = GC_PRIO_K;
  typedef gc_prio_key Key;
  gc_heap<Key>* h = reinterpret_cast<gc_heap<Key>*>(P.prio_heap);
  unsigned char* smem = gc_dynamic_smem();
  volatile gc_u64* ctl = reinterpret_cast<volatile gc_u64*>(smem + gc_heap_smem_bytes<K, Key>());
  const gc_u32 server = gridDim.x - 1u - blockIdx.x;
  Key* in_stage = reinterpret_cast<Key*>(P.prio_stage) + (gc_u64)server * 2ull * K;
  Key* out_stage = in_stage + K;
  gc_tq<Key>* in = reinterpret_cast<gc_tq<Key>*>(P.prio_inbox);
  gc_tq<gc_u32>* rq = reinterpret_cast<gc_tq<gc_u32>*>(P.prio_ready);
  unsigned long long* held = reinterpret_cast<unsigned long long*>(gc_prio_ctr(&P, GC_PRIO_CTR_HELD));
  unsigned ns = 64u;
  for (;;) {
    // Thread 0 decides, a barrier publishes, every thread copies, a barrier lets thread 0 write
    // again (a thread may lag a whole step behind it; see heap.cuh's gc_heap_ctl).
    if (threadIdx.x == 0) {
      const bool stop = gc_pstopped(&P);
      unsigned n_in = 0;
      unsigned long long t_in = 0;
      if (!stop) {
        n_in = gc_claim(gc_prio_ctr(&P, GC_PRIO_CTR_IN), (unsigned)K);
        if (n_in > 0) t_in = atomicAdd(&in->head, (unsigned long long)n_in);
      }
      ctl[0] = stop ? 1ull : 0ull;
      ctl[1] = n_in;
      ctl[2] = t_in;
    }
    __syncthreads();
    const bool stop = ctl[0] != 0ull;
    const unsigned n_in = (unsigned)ctl[1];
    const unsigned long long t_in = ctl[2];
    __syncthreads();
    if (stop) break;
    if (n_in > 0u) {
      for (unsigned i = threadIdx.x; i < n_in; i += blockDim.x) gc_tq_get(in, t_in + i, &in_stage[i]);
      __syncthreads();
      const int r = gc_heap_insert<K>(h, in_stage, n_in, smem);
      __syncthreads();
      if (threadIdx.x == 0) {
        if (r != GC_HEAP_OK) gc_prio_fault(P, (1ull << 32) | (gc_u64)(unsigned)r);
        atomicAdd(held, (unsigned long long)n_in);
      }
    }
    // Refill the ready queue from the heap.
    if (threadIdx.x == 0) {
      const long long ready = *(volatile long long*)gc_prio_ctr(&P, GC_PRIO_CTR_READY);
      const unsigned long long keys = *(volatile unsigned long long*)held;
      ctl[3] = (ready < (long long)P.prio_window && keys != 0ull) ? 1ull : 0ull;
    }
    __syncthreads();
    const bool refill = ctl[3] != 0ull;
    __syncthreads();
    unsigned n_out = 0;
    if (refill) {
      n_out = gc_heap_delete_min<K>(h, out_stage, smem);
      __syncthreads();
      if (threadIdx.x == 0) {
        ctl[4] = n_out > 0u ? atomicAdd(&rq->tail, (unsigned long long)n_out) : 0ull;
        if (n_out > 0u) atomicAdd(held, 0ull - (unsigned long long)n_out);
      }
      __syncthreads();
      const unsigned long long t_out = ctl[4];
      for (unsigned i = threadIdx.x; i < n_out; i += blockDim.x) gc_tq_put(rq, t_out + i, out_stage[i].payload);
      __syncthreads();
      if (threadIdx.x == 0 && n_out > 0u) gc_publish(gc_prio_ctr(&P, GC_PRIO_CTR_READY), n_out);
    }
    if (threadIdx.x == 0) {
      const unsigned long long e = *(volatile unsigned long long*)&h->error;
      if (e != 0ull) gc_prio_fault(P, e);
    }
    if (n_in == 0u && n_out == 0u) {
      __nanosleep(ns);
      if (ns < P.idle_max_ns) ns = ns * 2u < P.idle_max_ns ? ns * 2u : P.idle_max_ns;
    } else {
      ns = 64u;
    }
  }
}

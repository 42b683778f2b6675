// gpu_cilk/levels.cuh — the device side of the host-driven levelized scheduler
// (GPU_CILK_SCHEDULER=levels; runtime/src/backend/cuda/levels/ is the host side). Assembled after
// runtime.cuh.
//
// Owns: the channel table the host maintains, warp-aggregated reservation in a channel, this
// scheduler's `gc_cx`/`gc_spawn`/`gc_raise_cx`, and the generic driver that runs one element of a
// (task, queue, level) channel through a task's segments (`gc_run`), the root push and the spill
// kernels. Must not own: which channel runs next (the host decides).
//
// Execution model (Orr et al., "Fine-grain task aggregation and coordination on GPUs", §3–5):
// for every task function T, recursion level L and queue q there is one channel: q = 0 holds
// pre-spawn elements (T's arguments + where the result goes), q = k >= 1 holds frames waiting for
// segment k (and deferred returns of segment k - 1; q = SYNCS + 1 holds only those). One kernel
// launch consumes a contiguous run of one channel (one thread per element); a spawn reserves a
// slot one level down with one fetch-and-add per warp; the first spawn of a segment reserves the
// task's frame slot in its own continuation channel; children write results straight into that
// frame. The host launches the deepest level with work first, so a continuation runs only when all
// its children are done.
//
// Memory ordering: producers and consumers of one channel never run in the same launch. All
// writes of a launch (elements, frames, children's results, counters) are ordered before the next
// launch on the stream, which is the only place they are read; the host reads the counters after
// the launch completes. Within a launch the counters are only touched by atomics.
#pragma once
#ifndef GPU_CILK_PORTABLE_CUH
#include "gpu_cilk/portable.cuh"
#endif

struct gc_ctl {            // per-channel counters, read back by the host after each launch
  gc_u64 reserved;         // tickets handed out (talloc)
  gc_u64 freed;            // done count: elements consumed and released (tfree)
  gc_u32 max_fanout;       // most spawns one segment made (sizes the host's chunks)
  gc_u32 overflow;         // set when a reservation found no room
};

struct gc_chan {           // one (task, queue, level) channel, as the host laid it out
  unsigned char* data;
  gc_u64 mask;             // capacity - 1 (capacity is a power of two)
  gc_ctl* ctl;
};

struct gc_launch {
  const gc_chan* table;    // [level * nq + queue]
  gc_u32 nq;               // queues per level (all tasks)
  gc_u32 level;            // the level this launch consumes
  gc_u32 levels;           // levels allocated in the table (a spawn needs level + 1 < levels)
  gc_u32 task;             // task index (for faults)
  gc_u64 first;            // first ticket to consume
  gc_u64 count;            // elements to consume
  gc_fault* fault;
  unsigned char* spill;    // the spill pool: records of `spill_stride` bytes
  gc_u64* spill_used;      // bytes of the pool in use (host resets it after moving records)
  gc_u64 spill_capacity;   // bytes in the pool
  gc_u64 spill_stride;     // 8-byte header + the largest pre-spawn element, 8-aligned
  gc_xheap* temps;         // the temporary heap (temp.cuh), null when no task uses alloc!
  gc_u32 dev_stack_budget; // stack bytes serial recursion through task device forms may use
  gc_u32 pad0;
};

// A spilled pre-spawn element: where it belongs, then its bytes.
struct gc_spill_header {
  gc_u32 queue;            // global queue index (the callee's QBASE)
  gc_u32 level;
};

struct gc_cx {             // what a running segment needs
  const gc_launch* L;
  gc_u32 own_queue;        // queue of the frame this segment leaves behind
  gc_u32 spawned;
  unsigned char* frame_slot; // reserved at the first spawn, null before
  mutable gc_u32 dev_depth;  // depth of serial recursion through task device forms (gc_dev_guard)
  mutable gc_u32 unwinding;  // a guard tripped: serial forms return at once (the run has failed)
  mutable gc_u64 dev_base;   // stack address of the outermost serial form's guard
};

__device__ inline void gc_raise(const gc_launch* L, gc_u32 code, gc_u32 site, gc_u64 detail) {
  if (atomicCAS(&L->fault->code, 0u, code) == 0u) {
    L->fault->site = site;
    L->fault->task = L->task;
    L->fault->level = L->level;
    L->fault->detail = detail;
  }
}

__device__ inline void gc_raise_cx(const gc_cx& cx, gc_u32 code, gc_u32 site, gc_u64 detail) {
  if (cx.unwinding != 0u) return;  // a check of a placeholder value after a guard trip
  gc_raise(cx.L, code, site, detail);
}

__device__ inline gc_xheap* gc_temps_of(const gc_cx& cx) { return cx.L->temps; }
__device__ inline bool gc_unwinding(const gc_cx& cx) { return cx.unwinding != 0u; }
// `&Sum` adds (`gc_bound_sum::fetch_add`): one atomic each (this scheduler never re-runs a call).
template <typename U> __device__ inline U gc_sum_add(const gc_cx&, U* ptr, U v) { return atomicAdd(ptr, v); }

// Flags of a serial device form (the third argument of its guard; persistent.cuh reads them,
// this scheduler runs no inline call it could re-run).
enum gc_dev_flags : gc_u32 { GC_DEV_WARP = 1u, GC_DEV_DIRTY = 2u };

// Entered by every serial device form of a task (`<task>_dev`, a plain call of a task from device
// code): bounds that recursion, which uses the thread's stack, in bytes (the address of a local
// here against the outermost serial form's, as in persistent.cuh). A trip fails the run with
// GC_FAULT_DEV_STACK and sets `cx.unwinding`: every serial form then returns at once.
struct gc_dev_guard {
  const gc_cx& cx;
  __device__ gc_dev_guard(const gc_cx& c, gc_u32 site, gc_u32 flags = 0u) : cx(c) {
    (void)flags;
    char probe;  // only its address is used
    const gc_u64 here = reinterpret_cast<gc_u64>(&probe);
    if (cx.dev_depth++ == 0u) cx.dev_base = here;
    if (cx.unwinding != 0u) return;
    const gc_u64 used = cx.dev_base > here ? cx.dev_base - here : here - cx.dev_base;
    if (used > (gc_u64)cx.L->dev_stack_budget) {
      gc_raise_cx(cx, GC_FAULT_DEV_STACK, site, cx.L->dev_stack_budget);
      cx.unwinding = 1u;
    }
  }
  __device__ ~gc_dev_guard() { cx.dev_depth -= 1; }
};

// ---------------------------------------------------------------------------------------------
// Channels.
__device__ inline const gc_chan* gc_chan_at(const gc_launch* L, gc_u32 level, gc_u32 queue) {
  return &L->table[(gc_u64)level * L->nq + queue];
}

template <typename E> __device__ inline E* gc_slot(const gc_chan* ch, gc_u64 ticket) {
  return reinterpret_cast<E*>(ch->data) + (ticket & ch->mask);
}

// talloc: one fetch-and-add per group of lanes that reserve in the same channel at the same time
// (a warp-wide prefix sum; one lane does the atomic, the base is broadcast). Returns the slot, or
// null when the channel has no room; then the failed ticket is given back (within a launch no slot
// of this channel is freed, so every later reservation fails too and `reserved` ends exactly at
// the limit: no holes) and the channel's overflow flag is set.
__device__ inline bool gc_try_reserve(const gc_chan* ch, gc_u64* ticket) {
  unsigned active = __activemask();
  unsigned peers = __match_any_sync(active, (unsigned long long)ch);
  int leader = __ffs(peers) - 1;
  unsigned lane = gc_lane();
  unsigned rank = __popc(peers & ((1u << lane) - 1u));
  gc_u64 base = 0;
  if ((int)lane == leader) base = atomicAdd(&ch->ctl->reserved, (gc_u64)__popc(peers));
  base = __shfl_sync(peers, base, leader);
  gc_u64 t = base + rank;
  // `freed` is stable during this launch: this channel is not consumed by it. A channel the host
  // has not allocated (null data) counts as full.
  if (ch->data == nullptr || t - ch->ctl->freed > ch->mask) {
    atomicAdd(&ch->ctl->reserved, (gc_u64)-1);
    atomicExch(&ch->ctl->overflow, 1u);
    return false;
  }
  *ticket = t;
  return true;
}

template <typename E> __device__ inline E* gc_try_talloc(const gc_chan* ch) {
  gc_u64 t;
  return gc_try_reserve(ch, &t) ? gc_slot<E>(ch, t) : nullptr;
}

// For frames: the host sizes every frame channel for the whole launch, so no room is a fault.
template <typename E> __device__ inline E* gc_talloc(const gc_launch* L, const gc_chan* ch, gc_u32 site) {
  E* e = gc_try_talloc<E>(ch);
  if (e == nullptr) gc_raise(L, GC_FAULT_CHANNEL_FULL, site, ch->mask + 1);
  return e;
}

// For spawned elements: when the channel is full the element goes to the spill pool, which the
// host moves into the (then grown) channel after the launch, so no spawn is ever dropped; only an
// exhausted pool stops the run (GC_FAULT_SPILL_POOL).
template <typename E> __device__ inline E* gc_talloc_or_spill(const gc_launch* L, const gc_chan* ch, gc_u32 queue,
                                                              gc_u32 level, gc_u32 site) {
  E* e = gc_try_talloc<E>(ch);
  if (e != nullptr) return e;
  gc_u64 off = atomicAdd(L->spill_used, L->spill_stride);
  if (L->spill == nullptr || off + L->spill_stride > L->spill_capacity) {
    gc_raise(L, GC_FAULT_SPILL_POOL, site, L->spill_capacity);
    return nullptr;
  }
  gc_spill_header* h = reinterpret_cast<gc_spill_header*>(L->spill + off);
  h->queue = queue;
  h->level = level;
  return reinterpret_cast<E*>(L->spill + off + sizeof(gc_spill_header));
}

// tfree: the done count of consumed elements, one atomic per warp.
__device__ inline void gc_tfree(const gc_chan* ch) {
  unsigned active = __activemask();
  unsigned lane = gc_lane();
  if ((int)lane == __ffs(active) - 1) atomicAdd(&ch->ctl->freed, (gc_u64)__popc(active));
}

// The channel elements of task `Task`: a pre-spawn element (its arguments and where its result
// goes) and a continuation element (a frame, or a deferred return).
template <typename Task> struct gc_pre {
  typename Task::Args args;
  void* dest;
};
template <typename Task> struct gc_cont {
  typename Task::Frame frame;
  typename Task::Ret deferred;
  gc_u32 has_deferred;
  void* dest;
};

// The frame slot a segment leaves behind, reserved at its first spawn.
template <typename Task> __device__ inline unsigned char* gc_frame_slot(gc_cx& cx, gc_u32 site) {
  if (cx.frame_slot == nullptr) {
    const gc_chan* ch = gc_chan_at(cx.L, cx.L->level, Task::QBASE + cx.own_queue);
    cx.frame_slot = reinterpret_cast<unsigned char*>(gc_talloc<gc_cont<Task>>(cx.L, ch, site));
  }
  return cx.frame_slot;
}

// spawn!(Callee(args)) into `offset` of the current frame (or nowhere: offset == ~0). The child
// always runs in a later launch, so the value returned (which generated code assigns to the
// destination) is a placeholder the child's result replaces.
template <typename Task, typename Callee>
__device__ inline typename Callee::Ret gc_spawn(gc_cx& cx, typename Callee::Args args, gc_u64 offset, gc_u32 site) {
  typedef typename Callee::Ret Ret;
  cx.spawned += 1;
  unsigned char* frame = gc_frame_slot<Task>(cx, site);
  if (frame == nullptr) return Ret();  // fault recorded
  if (cx.L->level + 1 >= cx.L->levels) { gc_raise(cx.L, GC_FAULT_CHANNEL_FULL, site, 0); return Ret(); }
  const gc_chan* ch = gc_chan_at(cx.L, cx.L->level + 1, Callee::QBASE);
  gc_pre<Callee>* e = gc_talloc_or_spill<gc_pre<Callee>>(cx.L, ch, Callee::QBASE, cx.L->level + 1, site);
  if (e == nullptr) return Ret();
  e->args = args;
  e->dest = offset == ~0ull ? nullptr : (void*)(frame + offset);
  return Ret();
}

// spawn!(Callee(args), priority = key): this scheduler runs a level's ready work in one launch,
// so a priority orders nothing here; the spawn is a plain one (docs/dsl.md).
template <typename Task, typename Callee>
__device__ inline typename Callee::Ret gc_spawn_prio(gc_cx& cx, typename Callee::Args args, gc_u64 offset, gc_u32 site,
                                                     gc_u64 key) {
  (void)key;
  return gc_spawn<Task, Callee>(cx, args, offset, site);
}

// ---------------------------------------------------------------------------------------------
// The generic driver: one thread runs one element of queue `q` of task `Task` at `L.level`,
// through as many segments as end without outstanding children, then either delivers the result
// or publishes its frame (or deferred return) into the reserved slot.
//
// A generated task type provides: Args, Frame, Ret, QBASE, SYNCS, and
//   static __device__ bool seg0(gc_cx&, Args, Frame*, Ret*);          // true = Sync, false = Return
//   static __device__ bool resume(gc_cx&, gc_u32 k, Frame, Frame*, Ret*);
enum { GC_RETURN = 0, GC_SYNC = 1 };

template <typename Task> __device__ inline void gc_deliver(void* dest, typename Task::Ret v) {
  if (dest != nullptr) *reinterpret_cast<typename Task::Ret*>(dest) = v;
}

template <typename Task> __device__ void gc_run(const gc_launch& L, gc_u32 q) {
  gc_u64 i = (gc_u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= L.count) return;
  const gc_chan* src = gc_chan_at(&L, L.level, Task::QBASE + q);
  gc_cx cx;
  cx.L = &L;
  cx.own_queue = q + 1;  // segment s leaves its frame in queue s + 1
  cx.spawned = 0;
  cx.frame_slot = nullptr;
  cx.dev_depth = 0;
  cx.unwinding = 0u;
  cx.dev_base = 0ull;
  typename Task::Frame frame;
  typename Task::Ret ret;
  void* dest;
  bool sync;
  gc_u32 seg = q;
  if (q == 0) {
    gc_pre<Task> e = *gc_slot<gc_pre<Task>>(src, L.first + i);
    gc_tfree(src);
    dest = e.dest;
    sync = Task::seg0(cx, e.args, &frame, &ret);
  } else {
    gc_cont<Task> e = *gc_slot<gc_cont<Task>>(src, L.first + i);
    gc_tfree(src);
    dest = e.dest;
    if (e.has_deferred) {
      gc_deliver<Task>(dest, e.deferred);
      return;
    }
    sync = Task::resume(cx, q, e.frame, &frame, &ret);
  }
  gc_u32 most = 0;
  for (;;) {
    most = cx.spawned > most ? cx.spawned : most;
    if (cx.frame_slot == nullptr) {
      if (!sync) { gc_deliver<Task>(dest, ret); break; }
      seg += 1;                     // nothing outstanding: run the next segment right here
      cx.own_queue = seg + 1;
      cx.spawned = 0;
      typename Task::Frame f = frame;
      sync = Task::resume(cx, seg, f, &frame, &ret);
      continue;
    }
    gc_cont<Task>* slot = reinterpret_cast<gc_cont<Task>*>(cx.frame_slot);
    if (sync) { slot->frame = frame; slot->has_deferred = 0; }
    else { slot->deferred = ret; slot->has_deferred = 1; }
    slot->dest = dest;
    break;
  }
  // One atomic per warp for the fan-out the host sizes chunks by.
  unsigned active = __activemask();
  gc_u32 warp_most = __reduce_max_sync(active, most);
  if ((int)gc_lane() == __ffs(active) - 1 && warp_most > 0) atomicMax(&src->ctl->max_fanout, warp_most);
}

// ---------------------------------------------------------------------------------------------
// The root: the host launches one thread of `gc_root` to place the root call's channel element
// in the (empty) pre-spawn channel of level 0. The arguments arrive as bytes in device memory (at
// least sizeof(Args) of them), never as a Rust struct embedded in the parameter: a task without
// parameters has a 0-byte `Args` in Rust but a 1-byte one in C++, so no layout that embeds `Args`
// can agree on both sides.
struct gc_root_params {
  const unsigned char* args;  // sizeof(Task::Args) bytes (zero-padded by the host)
  void* dest;
  const gc_chan* chan;
};
template <typename Task> __device__ void gc_push_root(const gc_root_params& p) {
  gc_pre<Task>* e = gc_slot<gc_pre<Task>>(p.chan, p.chan->ctl->reserved);
  unsigned char* to = reinterpret_cast<unsigned char*>(&e->args);
  for (unsigned i = 0; i < sizeof(typename Task::Args); ++i) to[i] = p.args[i];
  e->dest = p.dest;
  p.chan->ctl->reserved += 1;
}

// ---------------------------------------------------------------------------------------------
// Spill handling, launched by the host between two scheduling launches when the pool is in use.

// Grows a ring: copies the live tickets [first, first + count) from the old storage to the new,
// each to its slot under the new mask (elements are `words` 8-byte words).
struct gc_regrow_params {
  const gc_u64* old_data;
  gc_u64* new_data;
  gc_u64 old_mask;
  gc_u64 new_mask;
  gc_u64 first;
  gc_u64 count;
  gc_u64 words;
};
extern "C" __global__ void gc_regrow(gc_regrow_params p) {
  gc_u64 i = (gc_u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= p.count * p.words) return;
  gc_u64 k = i / p.words, w = i % p.words, t = p.first + k;
  p.new_data[(t & p.new_mask) * p.words + w] = p.old_data[(t & p.old_mask) * p.words + w];
}

// Moves every spilled record into its channel (which the host has grown to fit). One thread per
// record; `sizes[q]` is the element size of queue q (a multiple of 8).
struct gc_unspill_params {
  const gc_chan* table;
  gc_u32 nq;
  gc_u32 pad;
  const unsigned char* spill;
  gc_u64 stride;
  gc_u64 records;
  const gc_u64* sizes;
  gc_fault* fault;
};
extern "C" __global__ void gc_unspill(gc_unspill_params p) {
  gc_u64 i = (gc_u64)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= p.records) return;
  const gc_spill_header* h = reinterpret_cast<const gc_spill_header*>(p.spill + i * p.stride);
  const gc_chan* ch = &p.table[(gc_u64)h->level * p.nq + h->queue];
  gc_u64 t;
  if (!gc_try_reserve(ch, &t)) {
    if (atomicCAS(&p.fault->code, 0u, (gc_u32)GC_FAULT_CHANNEL_FULL) == 0u) p.fault->detail = ch->mask + 1;
    return;
  }
  gc_u64 words = p.sizes[h->queue] / 8;
  gc_u64* slot = reinterpret_cast<gc_u64*>(ch->data) + (t & ch->mask) * words;
  const gc_u64* src = reinterpret_cast<const gc_u64*>(p.spill + i * p.stride + sizeof(gc_spill_header));
  for (gc_u64 w = 0; w < words; ++w) slot[w] = src[w];
}

// Clears the pool and the overflow flags of one level once its records have moved.
struct gc_spill_reset_params {
  const gc_chan* table;
  gc_u32 nq;
  gc_u32 level;
  gc_u64* spill_used;
};
extern "C" __global__ void gc_spill_reset(gc_spill_reset_params p) {
  gc_u32 q = threadIdx.x;
  if (q < p.nq) p.table[(gc_u64)p.level * p.nq + q].ctl->overflow = 0u;
  if (q == 0) *p.spill_used = 0;
}

// The work-stack microbenchmark of the persistent device scheduler (issue 9, point 3), on the
// scheduler's own code: gpu_cilk/persistent.cuh's per-warp stack (`local_cap` items in shared
// memory, then a ring of `deep_cap` items in global memory, both this warp's own), its global
// pool (a counted Scogland & Feng ticket queue) and the functions the scheduler runs on them:
//   push   gc_claim_slots on the stack's `top` (one shared-memory atomic per group of lanes that
//          push together, as gc_spawn does for a deferred spawn), then the deep part's tail when
//          the shared part is full; each lane writes its item (a gc_pitem<2>, 48 bytes).
//   pop    gc_take_batch: the warp takes up to 32 items, newest first (shared part, then deep).
//   steal  gc_donate (a warp with work sends the oldest half of its stack to the pool while
//          another warp is hungry) and gc_take_batch on an empty stack (claims from the pool).
// Kernels (one `dq_params`, 256-thread blocks; the host sizes shared memory as
// 8 * dq_warp_bytes(local_cap) and passes at most as many blocks as are resident):
//   dq_local  every warp pushes `items` items per lane (32 * items per warp, spilling into the
//             deep part beyond local_cap), then pops batches until its stack is empty.
//   dq_steal  even warps (producers) push `items` items per lane and then alternate donating
//             (their `hungry` word set, as when another warp is idle) and popping; odd warps
//             (thieves) start empty and take from the pool; every warp runs until all items
//             were consumed.
// Every item carries a unique id, (global warp << 32) | k. Each consumed item adds to `count`
// and `checksum` (sum of ids); with `verify` it also increments seen[global warp * per_warp + k]
// (the host checks every entry is exactly 1: nothing lost, nothing taken twice). Measured runs
// pass verify = 0 (the count and checksum still checked).

#include "gpu_cilk/runtime.cuh"
#include "gpu_cilk/ticket_queue.cuh"
#include "gpu_cilk/persistent.cuh"

typedef gc_pitem<2> dq_item;
static_assert(sizeof(dq_item) == 48, "dq_item layout");
// The host mirrors these (benches/gpu_suite/deque.rs): a change to gc_psched fails here first.
static_assert(sizeof(gc_psched) == 248, "gc_psched layout (GcPSched of the runtime, used by deque.rs)");

#define DQ_THREADS 256
#define DQ_WARPS (DQ_THREADS / 32)

struct dq_params {
  gc_psched sched;          // pool, pool_avail, stats, deep, deep_cap, local_cap, pool_slack used
  unsigned long long* count;     // items consumed (all warps)
  unsigned long long* checksum;  // sum of consumed ids
  unsigned* seen;           // per item (verify only)
  unsigned long long total; // items produced in all
  unsigned items;           // pushes per lane
  unsigned verify;
};
static_assert(sizeof(dq_params) == 288, "dq_params layout (mirrored by DqParams in deque.rs)");

__host__ __device__ constexpr unsigned long long dq_warp_bytes(unsigned local_cap) {
  return ((sizeof(gc_pwarp_hdr) + 15ull) & ~15ull) + (unsigned long long)local_cap * sizeof(dq_item);
}

// This warp's gc_pwarp over its part of dynamic shared memory (free_cap 0: no frame list).
__device__ inline gc_pwarp dq_warp(const gc_psched* P) {
  unsigned char* smem = gc_dynamic_smem();
  const gc_u32 warp = threadIdx.x / 32u;
  gc_pwarp W;
  W.P = P;
  W.h = reinterpret_cast<gc_pwarp_hdr*>(smem + warp * dq_warp_bytes(P->local_cap));
  W.free = reinterpret_cast<gc_u32*>(W.h + 1);
  W.items = smem + warp * dq_warp_bytes(P->local_cap) + ((sizeof(gc_pwarp_hdr) + 15ull) & ~15ull);
  W.item_bytes = (gc_u32)sizeof(dq_item);
  W.lane = gc_lane();
  const gc_u64 gwarp = (gc_u64)blockIdx.x * DQ_WARPS + warp;
  W.deep = P->deep + gwarp * P->deep_cap * sizeof(dq_item);
  W.deep_mask = (gc_u32)(P->deep_cap - 1ull);
  if (W.lane == 0) {
    W.h->top = 0;
    W.h->nfree = 0;
    W.h->hungry = 0;
    W.h->floor = 0;
    W.h->deep_head = 0u;
    W.h->deep_tail = 0u;
  }
  __syncwarp();
  return W;
}

// One push per active lane, as gc_spawn's LOCAL path: the shared part while it has room, else
// the deep part. Returns false when both are full (the bench sizes deep_cap so they never are).
__device__ inline bool dq_push(gc_pwarp* W, unsigned long long id) {
  const gc_psched* P = W->P;
  const unsigned peers = __activemask();
  const int leader = __ffs(peers) - 1;
  const unsigned rank = __popc(peers & gc_lane_mask_lt());
  const int cnt = __popc(peers);
  long long base = -1;
  int where = 0;
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
  if (base < 0) return false;
  unsigned char* dst = where == 0 ? W->items + (gc_u64)(base + (long long)rank) * sizeof(dq_item)
                                  : gc_deep_at(W, (gc_u32)(base + (long long)rank));
  dq_item* it = reinterpret_cast<dq_item*>(dst);
  it->h.task = 0u;
  it->h.depth = 1u;
  it->h.dest = nullptr;
  it->h.parent = nullptr;
  it->args[0] = id;
  it->args[1] = ~id;
  return true;
}

// Consumes the item a lane took (n lanes took one each).
__device__ inline void dq_consume(const dq_params& p, int n, const dq_item& it, unsigned per_warp) {
  const unsigned lane = gc_lane();
  unsigned long long id = 0ull;
  if ((int)lane < n) {
    id = it.args[0];
    if (it.args[1] != ~id) id = 0ull;  // a torn item: the checksum will not match
    if (p.verify) atomicAdd(&p.seen[(id >> 32) * per_warp + (id & 0xffffffffull)], 1u);
  }
  // One atomic per warp for the count and the checksum.
  for (int o = 16; o > 0; o >>= 1) id += __shfl_down_sync(0xffffffffu, id, o);
  if (lane == 0 && n > 0) {
    atomicAdd(p.count, (unsigned long long)n);
    atomicAdd(p.checksum, id);
  }
}

__device__ inline void dq_push_all(gc_pwarp* W, const dq_params& p, gc_u64 gwarp) {
  for (unsigned r = 0; r < p.items; ++r) {
    const unsigned k = r * 32u + W->lane;
    // No room (the host sizes deep_cap so there always is): count the item as consumed so the
    // run ends, and leave it out of the checksum and `seen`, so verification fails.
    if (!dq_push(W, (gwarp << 32) | k)) atomicAdd(p.count, 1ull);
    __syncwarp();
  }
}

extern "C" __global__ void dq_local(dq_params p) {
  gc_pwarp W = dq_warp(&p.sched);
  const gc_u64 gwarp = (gc_u64)blockIdx.x * DQ_WARPS + threadIdx.x / 32u;
  const unsigned per_warp = 32u * p.items;
  dq_push_all(&W, p, gwarp);
  for (;;) {
    dq_item it;
    const int n = gc_take_batch<dq_item>(&W, &it);
    if (n == 0) break;
    dq_consume(p, n, it, per_warp);
  }
}

extern "C" __global__ void dq_steal(dq_params p) {
  gc_pwarp W = dq_warp(&p.sched);
  const gc_u64 gwarp = (gc_u64)blockIdx.x * DQ_WARPS + threadIdx.x / 32u;
  const unsigned per_warp = 32u * p.items;
  const bool producer = (gwarp & 1ull) == 0ull;
  if (producer) {
    dq_push_all(&W, p, gwarp);
    if (W.lane == 0) W.h->hungry = 1;  // as if a thief were idle: gc_donate sends work out
    __syncwarp();
  }
  unsigned ns = 32u;
  for (;;) {
    if (producer) gc_donate<dq_item>(&W);
    dq_item it;
    const int n = gc_take_batch<dq_item>(&W, &it);
    if (n > 0) {
      dq_consume(p, n, it, per_warp);
      ns = 32u;
      continue;
    }
    // Nothing here and nothing in the pool now: done once every item was consumed.
    unsigned long long c = 0ull;
    if (W.lane == 0) c = *(volatile unsigned long long*)p.count;
    c = __shfl_sync(0xffffffffu, c, 0);
    if (c >= p.total) break;
    __nanosleep(ns);
    if (ns < 1024u) ns *= 2u;
  }
}

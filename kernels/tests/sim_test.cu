// Test kernels of the host simulation of device code (kernels/sim/gc_sim.h), driven by
// runtime/tests/sim_device.rs. Valid CUDA as well: that test also compiles this file with NVRTC
// (when NVRTC loads), so the simulation is never the only compiler that accepts it. The expected
// values of the warp intrinsics in `sim_intrinsics` are those of a one-lane warp (the simulation's
// model); on a GPU they would differ.
//
// Every kernel takes one `SimParams` (mirrored by `Params` in the Rust test).

#include "gpu_cilk/portable.cuh"

typedef unsigned long long u64;

struct SimParams {
    u64* out;       // results, indexed as each kernel documents
    u64* counters;  // scratch counters, host-zeroed unless said otherwise
    u64 n;          // a size (threads, rounds, ...)
    u64 arg;        // a kernel-specific argument
};

__device__ __forceinline__ u64 sim_gid() {
    const u64 tpb = (u64)blockDim.x * blockDim.y * blockDim.z;
    const u64 block = ((u64)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    const u64 thread = ((u64)threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    return block * tpb + thread;
}

// One thread: bit intrinsics and the warp intrinsics of a one-lane warp, out[0..40).
extern "C" __global__ void sim_intrinsics(SimParams p) {
    if (sim_gid() != 0) return;
    u64* o = p.out;
    const unsigned x = (unsigned)p.arg;  // 0xF0F0_0001 from the host (opaque to the compiler)
    o[0] = (u64)__popc(x);
    o[1] = (u64)__popcll(((u64)x << 32) | x);
    o[2] = (u64)__ffs((int)x);
    o[3] = (u64)__ffs(0);
    o[4] = (u64)__ffsll((long long)((u64)x << 40));
    o[5] = (u64)__clz((int)(x >> 4));
    o[6] = (u64)__clz(0);
    o[7] = (u64)__clzll((long long)(x >> 8));
    o[8] = (u64)__clzll(0);
    o[9] = (u64)__brev(x);
    o[10] = __brevll((u64)x);
    o[11] = (u64)__byte_perm(0x33221100u, 0x77665544u, 0x5140u);
    o[12] = (u64)__umulhi(x, 0x12345678u);
    o[13] = __umul64hi((u64)x << 30, 0x123456789abcdefull);
    o[14] = (u64)__activemask();
    o[15] = (u64)__ballot_sync(__activemask(), 1);
    o[16] = (u64)__ballot_sync(0xffffffffu, 0);
    o[17] = (u64)__any_sync(0xffffffffu, 5);
    o[18] = (u64)__all_sync(__activemask(), 0);
    o[19] = (u64)__shfl_sync(0xffffffffu, (u64)x + 1, 7);
    o[20] = (u64)__shfl_up_sync(0xffffffffu, x + 2u, 1u);
    o[21] = (u64)__shfl_down_sync(0xffffffffu, (int)x + 3, 1u);
    o[22] = (u64)__shfl_xor_sync(0xffffffffu, x + 4u, 16);
    o[23] = (u64)__match_any_sync(__activemask(), (u64)p.out);
    o[24] = (u64)__reduce_add_sync(0xffffffffu, x);
    o[25] = (u64)__reduce_min_sync(0xffffffffu, 7u);
    o[26] = (u64)__reduce_max_sync(0xffffffffu, -7);
    o[27] = (u64)__reduce_and_sync(0xffffffffu, x);
    o[28] = (u64)__reduce_or_sync(0xffffffffu, x);
    o[29] = (u64)__reduce_xor_sync(0xffffffffu, x);
    __syncwarp();
    o[30] = (u64)gc_lane();
    o[31] = (u64)gc_warp_size();
    o[32] = (u64)gc_lane_mask_lt();
    o[33] = (u64)warpSize;
    // fence and clock intrinsics: they only have to compile and run.
    __threadfence();
    __threadfence_block();
    __threadfence_system();
    const long long c0 = clock64();
    __nanosleep(100u);
    const long long c1 = clock64();
    o[34] = c1 >= c0 ? 1ull : 0ull;
    const u64 t0 = gc_globaltimer();
    o[35] = gc_globaltimer() >= t0 ? 1ull : 0ull;
    o[36] = (u64)__float_as_uint(1.5f);
    o[37] = (u64)__double_as_longlong(-2.0);
    o[38] = (u64)(sqrtf((float)(x & 0xffu) + 3.0f) == 2.0f);
    o[39] = (u64)(fma(2.0, 3.0, 1.0) == 7.0);
}

// Every thread (gid < n): atomics of every type on p.counters[0..21) (host-zeroed, except [6]
// = 0xffffffff, [8] = [18] = ~0). The host checks, for T = n threads:
//   [0] int add 1: T           [1] unsigned add 2: 2T       [2] u64 add 3: 3T
//   [3] float add 0.5: T/2     [4] double add 0.25: T/4     [5] int sub 1: -T (32 bits)
//   [6] unsigned min gid: 0    [7] unsigned max gid: T-1    [8] u64 min gid+5: 5
//   [9] u64 max 3 gid: 3(T-1)  [10] long long min -gid: -(T-1)   [11] int max gid: T-1
//   [12] atomicInc(9): T % 10  [13] atomicDec(4) from 0: (5 - T % 5) % 5
//   [14] CAS-loop increment: T [15] + [19]: exch of gid+1, plus the sum of what exch returned:
//                                  T(T+1)/2
//   [16] or of 1 << gid%64     [17] xor of gid              [18] and of ~(1 << gid%64)
//   [20] atomicAdd_block 1 (low word): T, atomicAdd_system 1 (high word): T
extern "C" __global__ void sim_atomics(SimParams p) {
    const u64 gid = sim_gid();
    if (gid >= p.n) return;
    u64* c = p.counters;
    atomicAdd((int*)&c[0], 1);
    atomicAdd((unsigned*)&c[1], 2u);
    atomicAdd(&c[2], 3ull);
    atomicAdd((float*)&c[3], 0.5f);
    atomicAdd((double*)&c[4], 0.25);
    atomicSub((int*)&c[5], 1);
    atomicMin((unsigned*)&c[6], (unsigned)gid);
    atomicMax((unsigned*)&c[7], (unsigned)gid);
    atomicMin(&c[8], gid + 5);
    atomicMax(&c[9], gid * 3);
    atomicMin((long long*)&c[10], -(long long)gid);
    atomicMax((int*)&c[11], (int)gid);
    atomicInc((unsigned*)&c[12], 9u);
    atomicDec((unsigned*)&c[13], 4u);
    u64 old = c[14];
    for (;;) {
        const u64 seen = atomicCAS(&c[14], old, old + 1);
        if (seen == old) break;
        old = seen;
    }
    const u64 prev = atomicExch(&c[15], gid + 1);
    atomicAdd(&c[19], prev);
    atomicOr(&c[16], 1ull << (gid % 64));
    atomicXor(&c[17], gid);
    atomicAnd(&c[18], ~(1ull << (gid % 64)));
    atomicAdd_block((unsigned*)&c[20], 1u);
    atomicAdd_system((unsigned*)&c[20] + 1, 1u);
}

// Every thread writes (its block, its thread) linearized the CUDA way, at its global id:
// out[gid] = block << 32 | thread. Any grid and block shape.
extern "C" __global__ void sim_ids(SimParams p) {
    const u64 tpb = (u64)blockDim.x * blockDim.y * blockDim.z;
    const u64 block = ((u64)blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
    const u64 thread = ((u64)threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
    p.out[block * tpb + thread] = (block << 32) | thread;
}

// out[i] = i * arg for i < n (1-D).
extern "C" __global__ void sim_iota(SimParams p) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < p.n) p.out[i] = i * p.arg;
}

// Cooperative, dynamic shared memory of blockDim.x u64: each thread writes its slot, a barrier,
// then reads its right neighbour's: out[gid] = neighbour's value. counters[block] =
// __syncthreads_count(thread is even); counters[gridDim.x + block] = 1 if __syncthreads_and(true)
// and !__syncthreads_or(false); out[n + block] = gc_dynamic_smem_bytes().
extern "C" __global__ void sim_smem_barrier(SimParams p) {
    u64* s = reinterpret_cast<u64*>(gc_dynamic_smem());
    const unsigned t = threadIdx.x, n = blockDim.x;
    s[t] = ((u64)blockIdx.x << 32) | t;
    __syncthreads();
    p.out[(u64)blockIdx.x * n + t] = s[(t + 1) % n];
    const int even = __syncthreads_count((t & 1u) == 0u);
    const int ok = __syncthreads_and(1) && !__syncthreads_or(0);
    if (t == 0) {
        p.counters[blockIdx.x] = (u64)even;
        p.counters[gridDim.x + blockIdx.x] = (u64)ok;
        p.out[(u64)gridDim.x * n + blockIdx.x] = gc_dynamic_smem_bytes();
    }
}

// Independent, dynamic shared memory: every thread takes a ticket from a counter in its block's
// shared memory (never initialized: the simulation fills it with 0xA5 bytes, a GPU with anything)
// and writes it at its global id. Tickets of one block are consecutive from the first one iff the
// block has ONE shared buffer, whatever host threads ran its threads.
extern "C" __global__ void sim_smem_tickets(SimParams p) {
    unsigned* counter = reinterpret_cast<unsigned*>(gc_dynamic_smem());
    p.out[sim_gid()] = (u64)atomicAdd(counter, 1u);
}

// A grid-wide barrier by spinning, `n` rounds (cooperative launches only: every thread waits for
// every other). Round r: write out[gid] = r << 32 | gid, arrive (counters[0] += 1), spin until all
// threads arrived, then check the left neighbour's slot holds round r (counters[1] += mismatches)
// and arrive again (counters[2]) before anyone overwrites it in round r + 1. `arg` = threads.
__device__ __forceinline__ void sim_spin_until(u64* counter, u64 target) {
    while (atomicAdd(counter, 0ull) < target) {
    }
}
extern "C" __global__ void sim_grid_barrier(SimParams p) {
    const u64 gid = sim_gid();
    const u64 threads = p.arg;
    for (u64 r = 0; r < p.n; ++r) {
        *(volatile u64*)&p.out[gid] = (r << 32) | gid;
        __threadfence();
        atomicAdd(&p.counters[0], 1ull);
        sim_spin_until(&p.counters[0], (r + 1) * threads);
        __threadfence();
        const u64 left = (gid + threads - 1) % threads;
        if (*(volatile u64*)&p.out[left] != ((r << 32) | left)) atomicAdd(&p.counters[1], 1ull);
        atomicAdd(&p.counters[2], 1ull);
        sim_spin_until(&p.counters[2], (r + 1) * threads);
    }
}

// __device__ globals persist across launches (as on a GPU).
__device__ u64 sim_global_value;
__device__ u64 sim_global_array[4];
extern "C" __global__ void sim_global_set(SimParams p) {
    if (sim_gid() == 0) {
        sim_global_value = p.arg;
        for (int i = 0; i < 4; ++i) sim_global_array[i] = p.arg + (u64)i;
    }
}
extern "C" __global__ void sim_global_get(SimParams p) {
    if (sim_gid() == 0) {
        p.out[0] = sim_global_value;
        for (int i = 0; i < 4; ++i) p.out[1 + i] = sim_global_array[i];
    }
}

// Faults: the thread with gid == arg does the faulting thing.
extern "C" __global__ void sim_trap(SimParams p) {
    if (sim_gid() == p.arg) __trap();
    if (sim_gid() < p.n) p.out[sim_gid()] = 1;
}
extern "C" __global__ void sim_bad_address(SimParams p) {
    if (sim_gid() == p.arg) *(volatile u64*)(p.out + (1ull << 40)) = 1;
}
extern "C" __global__ void sim_bad_mask(SimParams p) {
    if (sim_gid() == p.arg) p.out[0] = __ballot_sync(2u, 1);
}
extern "C" __global__ void sim_syncthreads(SimParams p) {
    __syncthreads();
    p.out[sim_gid()] = 1;
}
#ifdef GC_HOST_SIM
// (NVRTC has no assert without CUDA's headers.)
extern "C" __global__ void sim_assert(SimParams p) { assert(sim_gid() != p.arg); }
#endif

// Two parameters (CUDA's layout: out at 0, v at 8; 12 bytes): out[gid] = v.
extern "C" __global__ void sim_two_params(u64* out, unsigned v) { out[sim_gid()] = v; }

// gpu_cilk/portable.cuh — the few device facts that differ between a GPU and the host simulation
// of device code (kernels/sim/gc_sim.h, `-DGC_HOST_SIM`): the lane, the warp width, the lanes
// below this one, the global nanosecond timer, the dynamic shared memory of the block, and the
// scoped memory-ordering operations that plain CUDA lacks (an acquire-release fence, a release
// store, a release add).
//
// Why the scoped operations: on sm_70+ `__threadfence()` is `fence.sc.gpu`, which ptxas emits as
// MEMBAR.SC.GPU followed by CCTL.IVALL — it invalidates the whole L1 data cache of the SM, for
// every warp on it. Every ACQUIRE at GPU scope pays that invalidation (L1 is not coherent), a
// RELEASE does not (MEMBAR.ALL.GPU only). Hot paths release with gc_st_release /
// gc_red_release_add and acquire with gc_fence_acq_rel only where the acquiring thread goes on to
// read what others wrote (seen in the SASS of the persistent scheduler before these were used: two
// L1 invalidations per frame-ring element, several per warp round).
//
// Owns: these accessors, one definition for NVRTC / nvcc (PTX special registers) and one for the
// simulation (which runs every simulated thread as its own warp of one lane). Must not own:
// anything else; device code that is the same in both worlds belongs in the other headers.
//
// Every gpu_cilk header includes this one under its guard, and the `gpu_cilk_kernels` constants
// carry it in front of each header's text (so programs assembled from the constants, which NVRTC
// compiles with no include path, never look for the file). Header-only, no system headers.
//
// Use these instead of `threadIdx.x & 31`, `%laneid`, `%lanemask_lt`, `%globaltimer`, `warpSize`
// and `extern __shared__`: code that does is correct on both a GPU (32 lanes) and the simulation
// (1 lane). Static `__shared__` variables do not compile under the simulation (there is no
// per-block storage behind a C++ variable); carve block-local arrays from gc_dynamic_smem() and
// launch with the bytes they need.
#ifndef GPU_CILK_PORTABLE_CUH
#define GPU_CILK_PORTABLE_CUH

#ifdef GC_HOST_SIM

// The simulation: every simulated thread is one warp of one lane (gc_sim.h).
__device__ __forceinline__ unsigned gc_lane() { return 0u; }
__device__ __forceinline__ unsigned gc_warp_size() { return 1u; }
__device__ __forceinline__ unsigned gc_lane_mask_lt() { return 0u; }
__device__ __forceinline__ unsigned long long gc_globaltimer() { return gc_sim_globaltimer(); }
__device__ __forceinline__ unsigned char* gc_dynamic_smem() { return gc_sim_dynamic_smem(); }
__device__ __forceinline__ unsigned gc_dynamic_smem_bytes() { return gc_sim_dynamic_smem_bytes(); }
// The simulation's fences and atomics are sequentially consistent: stronger than asked.
__device__ __forceinline__ void gc_fence_acq_rel() { __threadfence(); }
__device__ __forceinline__ void gc_st_release(unsigned long long* p, unsigned long long v) {
    __threadfence();
    *(volatile unsigned long long*)p = v;
}
__device__ __forceinline__ void gc_red_release_add(unsigned long long* p, unsigned long long v) {
    __threadfence();
    atomicAdd(p, v);
}

#else

// The lane of this thread in its warp (`%laneid`: threadIdx.x & 31 for 1-D blocks).
__device__ __forceinline__ unsigned gc_lane() {
    unsigned lane;
    asm volatile("mov.u32 %0, %%laneid;" : "=r"(lane));
    return lane;
}
// Lanes per warp (32 on every NVIDIA GPU so far).
__device__ __forceinline__ unsigned gc_warp_size() { return (unsigned)warpSize; }
// The bits of the lanes below this one (`%lanemask_lt`).
__device__ __forceinline__ unsigned gc_lane_mask_lt() {
    unsigned m;
    asm volatile("mov.u32 %0, %%lanemask_lt;" : "=r"(m));
    return m;
}
// Nanoseconds of the global timer (`%globaltimer`; its resolution is about a microsecond).
__device__ __forceinline__ unsigned long long gc_globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
// The block's dynamic shared memory (the launch's shared-memory bytes), 16-byte aligned.
__device__ __forceinline__ unsigned char* gc_dynamic_smem() {
    extern __shared__ __align__(16) unsigned char gc_dynamic_smem_base_[];
    return gc_dynamic_smem_base_;
}
// Its size in bytes (`%dynamic_smem_size`).
__device__ __forceinline__ unsigned gc_dynamic_smem_bytes() {
    unsigned n;
    asm volatile("mov.u32 %0, %%dynamic_smem_size;" : "=r"(n));
    return n;
}

// An acquire-release fence at GPU scope (`fence.acq_rel.gpu`: MEMBAR.ALL.GPU + CCTL.IVALL). After
// a relaxed load or RMW it acquires; before a relaxed store it releases (but gc_st_release does
// that without the invalidation).
__device__ __forceinline__ void gc_fence_acq_rel() { asm volatile("fence.acq_rel.gpu;" ::: "memory"); }
// A release store at GPU scope (`st.release.gpu`: MEMBAR.ALL.GPU, then the store; no invalidation).
__device__ __forceinline__ void gc_st_release(unsigned long long* p, unsigned long long v) {
    asm volatile("st.release.gpu.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}
// A release add at GPU scope with no result (`red.release.gpu.add.u64`; no invalidation).
__device__ __forceinline__ void gc_red_release_add(unsigned long long* p, unsigned long long v) {
    asm volatile("red.release.gpu.add.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

#endif  // GC_HOST_SIM
#endif  // GPU_CILK_PORTABLE_CUH

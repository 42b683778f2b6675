// gpu_cilk/portable.cuh — the few device facts that differ between a GPU and the host simulation
// of device code (kernels/sim/gc_sim.h, `-DGC_HOST_SIM`): the lane, the warp width, the lanes
// below this one, the global nanosecond timer and the dynamic shared memory of the block.
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

#endif  // GC_HOST_SIM
#endif  // GPU_CILK_PORTABLE_CUH

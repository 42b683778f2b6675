//! # gpu-cilk-kernels
//!
//! The device library of gpu-cilk as CUDA C++ source text. The cuda backend prefixes every
//! assembled program with these headers and compiles it with NVRTC; nothing here is compiled by
//! `cargo`. Each header documents its invariants and memory orderings and cites the paper it
//! follows.
//!
//! Every header constant starts with the text of `gpu_cilk/portable.cuh` ([`PORTABLE_CUH`]: the
//! lane, warp width, timer and dynamic shared memory, for a GPU and for the host simulation), so
//! a program assembled from the constants is complete without an include path; the headers on
//! disk `#include` it instead (under its guard, so it is read once either way).
//!
//! [`SIM_H`] is the host simulation of device code (`kernels/sim/gc_sim.h`): with
//! `g++ -DGC_HOST_SIM -include gc_sim.h` the same CUDA C++ runs on host threads (see
//! `gpu_cilk_runtime::backend::cuda::sim`).
#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

/// `gpu_cilk/runtime.cuh`: scalar types, Rust-semantics arithmetic, device fault codes: what every
/// program needs, whichever scheduler runs it.
pub const RUNTIME_CUH: &str =
    concat!(include_str!("../include/gpu_cilk/portable.cuh"), include_str!("../include/gpu_cilk/runtime.cuh"));

/// `gpu_cilk/levels.cuh`: the host-driven levelized scheduler's device side: the channel table,
/// warp-aggregated reservation, the generic segment driver (`gc_run`), root push and spills.
pub const LEVELS_CUH: &str =
    concat!(include_str!("../include/gpu_cilk/portable.cuh"), include_str!("../include/gpu_cilk/levels.cuh"));

/// `gpu_cilk/persistent.cuh`: the device-resident scheduler: join counters, per-warp stacks in
/// shared memory, the global pool and frame free list (ticket queues), the warp loop.
pub const PERSISTENT_CUH: &str =
    concat!(include_str!("../include/gpu_cilk/portable.cuh"), include_str!("../include/gpu_cilk/persistent.cuh"));

/// `gpu_cilk/channel.cuh`: the device array channel (Orr et al., ISCA 2014, §3.2), the twin of the
/// runtime's host channel: warp-aggregated bounded reservation and claims, lap-tagged control
/// words, done counts with acquire/release fences. Include it as `"gpu_cilk/channel.cuh"`.
pub const CHANNEL_CUH: &str =
    concat!(include_str!("../include/gpu_cilk/portable.cuh"), include_str!("../include/gpu_cilk/channel.cuh"));

/// `gpu_cilk/xmalloc.cuh`: the warp-coalesced device allocator (XMalloc: size classes, two-level FIFO buffers).
pub const XMALLOC_CUH: &str =
    concat!(include_str!("../include/gpu_cilk/portable.cuh"), include_str!("../include/gpu_cilk/xmalloc.cuh"));

/// `gpu_cilk/ticket_queue.cuh`: the fetch-and-add ticket queue (Scogland & Feng, ICPE 2015), the
/// twin of the runtime's `ticket_queue`: warp-aggregated tickets, blocking, non-waiting and status
/// interfaces, close. Include it as `"gpu_cilk/ticket_queue.cuh"`.
pub const TICKET_QUEUE_CUH: &str =
    concat!(include_str!("../include/gpu_cilk/portable.cuh"), include_str!("../include/gpu_cilk/ticket_queue.cuh"));

/// `gpu_cilk/portable.cuh`: `gc_lane()`, `gc_warp_size()`, `gc_lane_mask_lt()`, `gc_globaltimer()`,
/// `gc_dynamic_smem()`, `gc_dynamic_smem_bytes()`, defined for a GPU and for the host simulation
/// (`-DGC_HOST_SIM`). Already at the front of every other header constant.
pub const PORTABLE_CUH: &str = include_str!("../include/gpu_cilk/portable.cuh");

/// `kernels/sim/gc_sim.h`: the host simulation of CUDA device code. Compile device code with
/// `g++ -std=c++17 -DGC_HOST_SIM -include gc_sim.h` and it runs on host threads, every simulated
/// thread a warp of one lane (intrinsics, atomics, fences, `__syncthreads`, dynamic shared memory,
/// the launcher `gc_sim_launch`). Driven by `gpu_cilk_runtime::backend::cuda::sim`.
pub const SIM_H: &str = include_str!("../sim/gc_sim.h");

/// `gpu_cilk/heap.cuh`: the generalized batched heap (Chen et al. 2019): nodes of `K` sorted
/// `(priority, payload)` keys, a partial buffer, node-level multi-state locks, bottom-up and
/// top-down insert and top-down delete-min of full or partial batches, block-wide merge path and
/// bitonic sort, bit-reversal targets; the twin of the runtime's `heap` module. Standalone (no
/// other header needed); include it as `"gpu_cilk/heap.cuh"`.
pub const HEAP_CUH: &str = include_str!("../include/gpu_cilk/heap.cuh");

/// `gpu_cilk/ready_heap.cuh`: the persistent scheduler's prioritized ready work
/// (`spawn!(f(..), priority = key)`): `gc_spawn_prio`, the heap's server blocks, the warps' take
/// from the ready queue. Assembled after `persistent.cuh`, `ticket_queue.cuh` and [`HEAP_CUH`],
/// only into programs with a priority spawn.
pub const READY_HEAP_CUH: &str = include_str!("../include/gpu_cilk/ready_heap.cuh");

/// `gpu_cilk/temp.cuh`: task-scoped temporaries (`alloc!`): `gc_temp<T>`, `gc_alloc_temp`,
/// `gc_free_temp` and the heap's init kernel. Assembled after `runtime.cuh` and `xmalloc.cuh`.
pub const TEMP_CUH: &str = include_str!("../include/gpu_cilk/temp.cuh");

#[cfg(test)]
mod tests {
    #[test]
    fn runtime_header_declares_the_driver() {
        assert!(super::LEVELS_CUH.contains("__device__ void gc_run("));
        assert!(super::LEVELS_CUH.contains("struct gc_launch"));
        assert!(super::PERSISTENT_CUH.contains("__device__ void gc_persistent_loop("));
        assert!(super::RUNTIME_CUH.contains("enum gc_fault_code"));
    }

    #[test]
    fn every_header_constant_starts_with_the_portable_layer() {
        for h in [
            super::RUNTIME_CUH,
            super::LEVELS_CUH,
            super::PERSISTENT_CUH,
            super::CHANNEL_CUH,
            super::XMALLOC_CUH,
            super::TICKET_QUEUE_CUH,
        ] {
            assert!(h.starts_with(super::PORTABLE_CUH));
        }
        assert!(super::SIM_H.contains("gc_sim_launch"));
    }

    #[test]
    fn heap_header_declares_the_operations() {
        assert!(super::HEAP_CUH.contains("__device__ int gc_heap_insert(gc_heap<Key>* h"));
        assert!(super::HEAP_CUH.contains("__device__ unsigned gc_heap_delete_min(gc_heap<Key>* h"));
        assert!(super::HEAP_CUH.contains("gc_heap_smem_bytes()"));
        assert!(!super::HEAP_CUH.contains("__shared__"), "heap state lives in launcher-sized dynamic shared memory");
    }

    #[test]
    fn channel_header_declares_the_channel() {
        assert!(super::CHANNEL_CUH.contains("struct gc_channel {"));
        assert!(super::CHANNEL_CUH.contains("__device__ unsigned gc_talloc_warp("));
    }
}

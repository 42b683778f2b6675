//! # gpu-cilk-kernels
//!
//! The device library of gpu-cilk as CUDA C++ source text. The cuda backend prefixes every
//! assembled program with these headers and compiles it with NVRTC; nothing here is compiled by
//! `cargo`. Each header documents its invariants and memory orderings and cites the paper it
//! follows.
#![deny(missing_docs)]

/// `gpu_cilk/runtime.cuh`: scalar types, Rust-semantics arithmetic, device faults, the channel
/// table, warp-aggregated reservation and the generic segment driver (`gc_run`).
pub const RUNTIME_CUH: &str = include_str!("../include/gpu_cilk/runtime.cuh");

/// `gpu_cilk/channel.cuh`: the device array channel (Orr et al., ISCA 2014, §3.2), the twin of the
/// runtime's host channel: warp-aggregated bounded reservation and claims, lap-tagged control
/// words, done counts with acquire/release fences. Include it as `"gpu_cilk/channel.cuh"`.
pub const CHANNEL_CUH: &str = include_str!("../include/gpu_cilk/channel.cuh");

/// `gpu_cilk/xmalloc.cuh`: the warp-coalesced device allocator (XMalloc: size classes, two-level FIFO buffers).
pub const XMALLOC_CUH: &str = include_str!("../include/gpu_cilk/xmalloc.cuh");

/// `gpu_cilk/ticket_queue.cuh`: the fetch-and-add ticket queue (Scogland & Feng, ICPE 2015), the
/// twin of the runtime's `ticket_queue`: warp-aggregated tickets, blocking, non-waiting and status
/// interfaces, close. Include it as `"gpu_cilk/ticket_queue.cuh"`.
pub const TICKET_QUEUE_CUH: &str = include_str!("../include/gpu_cilk/ticket_queue.cuh");

/// `gpu_cilk/temp.cuh`: task-scoped temporaries (`alloc!`): `gc_temp<T>`, `gc_alloc_temp`,
/// `gc_free_temp` and the heap's init kernel. Assembled after `runtime.cuh` and `xmalloc.cuh`.
pub const TEMP_CUH: &str = include_str!("../include/gpu_cilk/temp.cuh");

#[cfg(test)]
mod tests {
    #[test]
    fn runtime_header_declares_the_driver() {
        assert!(super::RUNTIME_CUH.contains("__device__ void gc_run("));
        assert!(super::RUNTIME_CUH.contains("struct gc_launch"));
    }

    #[test]
    fn channel_header_declares_the_channel() {
        assert!(super::CHANNEL_CUH.contains("struct gc_channel {"));
        assert!(super::CHANNEL_CUH.contains("__device__ unsigned gc_talloc_warp("));
    }
}

//! The host mirror of `gc_tq<T>` (`kernels/include/gpu_cilk/ticket_queue.cuh`), used by the
//! ticket queue's device suite (`runtime/tests/device_ticket_queue.rs`) and the benchmark suite
//! (`benches/gpu_suite/queue.rs`), so the layout is written down once.

use gpu_cilk_runtime::backend::cuda::DeviceCopy;

/// Mirrors `gc_tq<T>` (ticket_queue.cuh: 48 8-byte words; `data` and `turns` are device pointers).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct GcTq {
    pub data: u64,
    pub turns: u64,
    pub mask: u64,
    pub closed: u64,
    pub pad0: [u64; 12],
    pub tail: u64,
    pub pad1: [u64; 15],
    pub head: u64,
    pub pad2: [u64; 15],
}
// SAFETY: repr(C) POD of 48 u64, the layout of `gc_tq<T>` (static_assert'ed 384 bytes there).
unsafe impl DeviceCopy for GcTq {}

const _: () = assert!(std::mem::size_of::<GcTq>() == 384);

//! The host mirror of `gc_channel<T>` (`kernels/include/gpu_cilk/channel.cuh`), used by the
//! channel's device suite (`runtime/tests/device_channel.rs`) and the benchmark suite
//! (`benches/gpu_suite/channel.rs`), so the layout is written down once.

use gpu_cilk_runtime::backend::cuda::DeviceCopy;

/// Mirrors `gc_channel<T>` (channel.cuh: eight 8-byte fields; `data` is a `T*` for whichever `T`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GcChannel {
    pub data: u64,
    pub control: u64,
    pub mask: u64,
    pub reserved: u64,
    pub published: u64,
    pub claimed: u64,
    pub freed: u64,
    pub violation: u64,
}
// SAFETY: repr(C), eight u64 (no padding, every bit pattern valid), the layout of `gc_channel<T>`
// (static_assert'ed 64 bytes in channel.cuh; pointers are 8-byte device addresses).
unsafe impl DeviceCopy for GcChannel {}

const _: () = assert!(std::mem::size_of::<GcChannel>() == 64);

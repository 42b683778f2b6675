//! Host mirrors of `kernels/include/gpu_cilk/heap.cuh`'s structs, shared by the heap's GPU test
//! (`runtime/tests/cuda_heap.rs`) and the benchmark suite (`benches/gpu_suite/heap.rs`) through
//! `#[path]`, so the layout is written down once: the 256-byte `gc_heap<Key>` header and the two
//! key layouts, with the header's host-side setup rules.

#![allow(dead_code)]

use gpu_cilk_runtime::backend::cuda::DeviceCopy;

/// Mirrors `gc_heap<Key>` (32 8-byte words; the three pointers as device addresses).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GcHeap {
    pub nodes: u64,
    pub states: u64,
    pub pbuf: u64,
    pub k: u64,
    pub capacity: u64,
    pub slots: u64,
    pub count: u64,
    pub pbuf_len: u64,
    pub hlock: u64,
    pub next_owner: u64,
    pub error: u64,
    pub pad0: [u64; 5],
    pub mode: u64,
    pub pad1: [u64; 15],
}
// SAFETY: repr(C), 32 u64 (no padding, every bit pattern valid), the layout of `gc_heap<Key>`
// (static_assert'ed 256 bytes in kernels/tests/heap_test.cu).
unsafe impl DeviceCopy for GcHeap {}
const _: () = assert!(std::mem::size_of::<GcHeap>() == 256);

impl GcHeap {
    /// Node slots for `capacity` nodes: the power of two above the highest target index.
    pub fn slots(capacity: u64) -> u64 {
        1u64 << (64 - capacity.leading_zeros())
    }

    /// An empty heap's header over device arrays at `nodes` (`slots * k` keys), `states`
    /// (`slots` zeroed words) and `pbuf` (`k` keys).
    pub fn empty(nodes: u64, states: u64, pbuf: u64, k: u64, capacity: u64) -> Self {
        GcHeap { nodes, states, pbuf, k, capacity, slots: Self::slots(capacity), next_owner: 1, ..Default::default() }
    }
}

/// `gc_heap_key<unsigned, unsigned>`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DevKey32 {
    pub prio: u32,
    pub payload: u32,
}
// SAFETY: repr(C) { u32, u32 }: 8 bytes, no padding, every bit pattern valid.
unsafe impl DeviceCopy for DevKey32 {}

/// `gc_heap_key<unsigned, unsigned long long>`: the device struct has 4 bytes of padding after
/// `prio`; here they are an explicit field (always 0 from the host; the device leaves them
/// unspecified, so comparisons ignore them).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct DevKey64 {
    pub prio: u32,
    pub pad: u32,
    pub payload: u64,
}
// SAFETY: repr(C) { u32, u32, u64 }: 16 bytes, no padding, every bit pattern valid.
unsafe impl DeviceCopy for DevKey64 {}
const _: () = assert!(std::mem::size_of::<DevKey32>() == 8 && std::mem::size_of::<DevKey64>() == 16);

/// Dynamic shared memory of one block: `gc_heap_smem_bytes<K, Key>()` (a 64-byte control block
/// and 5K keys).
pub fn smem_bytes(k: u32, key_bytes: u32) -> u32 {
    64 + 5 * k * key_bytes
}

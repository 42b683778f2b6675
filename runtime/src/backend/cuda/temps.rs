//! The device heap of task-scoped temporaries (`alloc!`): made once per program state when some
//! task of the program allocates, over the warp-coalesced allocator (`xmalloc.cuh`, `temp.cuh`).
//! Shared by both device schedulers and both targets (a GPU, the host simulation); owns the heap's
//! buffers and initialization only.

use super::abi::GcTempHeapInit;
use super::module::LaunchDims;
use super::program::AssembledProgram;
use super::target::Target;
use crate::config::Config;
use crate::error::Result;

/// The `gc_xheap` struct and its region.
pub(crate) struct TempHeap<D: Target> {
    heap: D::Buffer<u8>,
    region: D::Buffer<u8>,
}

impl<D: Target> TempHeap<D> {
    /// The heap for `asm` if any of its tasks allocates, initialized (in launch order).
    pub(crate) fn for_program(
        dev: &D,
        program: &D::Program,
        asm: &AssembledProgram,
        config: &Config,
    ) -> Result<Option<TempHeap<D>>> {
        if !asm.uses_temps() {
            return Ok(None);
        }
        let bytes = config.temp_heap_bytes.max(1 << 16);
        let th = TempHeap { heap: dev.alloc_zeroed::<u8>(1024)?, region: dev.alloc_zeroed::<u8>(bytes)? };
        let p = GcTempHeapInit { heap: D::addr(&th.heap), region: D::addr(&th.region), bytes: bytes as u64 };
        // SAFETY: `gc_temp_heap_init(gc_temp_heap_params)` (temp.cuh) initializes the 960-byte
        // `gc_xheap` at `heap` over the `bytes` bytes at `region`; both buffers are that large.
        let k = unsafe { dev.kernel::<GcTempHeapInit>(program, "gc_temp_heap_init")? };
        dev.launch(&k, LaunchDims::cover(1 << 16, 256), &p)?;
        Ok(Some(th))
    }

    /// The `gc_xheap*` kernels receive.
    pub(crate) fn heap_addr(&self) -> u64 {
        D::addr(&self.heap)
    }

    /// The region's size in bytes.
    pub(crate) fn capacity(&self) -> u64 {
        D::len(&self.region) as u64
    }
}

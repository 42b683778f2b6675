//! Zeroed atomic words straight from the allocator (the arena and the rings of [`super::XHeap`]).

use std::alloc::Layout;
use std::sync::atomic::AtomicU64;

/// `n` atomic words, all 0, from `alloc_zeroed` (`None` when `n` words exceed a layout's
/// limit). For a large `n` the allocator maps fresh pages that the OS zeroes when each is first
/// touched, so making a heap costs nothing per byte and the pages are faulted in by whichever
/// thread first uses them: `(0..n).map(|_| AtomicU64::new(0)).collect()` wrote every word in the
/// constructing thread, and on the cpu backend the run's first `alloc!` (`temp::RunHeap`) did so
/// inside the root task while every other worker waited for work: `strassen 2048 --backend cpu`
/// (a 3.6 GB heap sized for every level at once) gave the second worker its first task after
/// 13.7 s of a 28 s run on 2 cores.
pub(crate) fn words(n: usize) -> Option<Box<[AtomicU64]>> {
    if n == 0 {
        return Some(Box::new([]));
    }
    let layout = Layout::array::<AtomicU64>(n).ok()?;
    // SAFETY: `layout` has a nonzero size (`n > 0` words of 8 bytes).
    let p = unsafe { std::alloc::alloc_zeroed(layout) }.cast::<AtomicU64>();
    if p.is_null() {
        std::alloc::handle_alloc_error(layout);
    }
    // SAFETY: `p` is a live allocation of the global allocator with the layout of
    // `[AtomicU64; n]` (what `Box<[AtomicU64]>` frees it with), and all-zero bytes are a valid
    // `AtomicU64` (it has the size and bit validity of `u64`), so it holds `n` initialized words.
    Some(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(p, n)) })
}

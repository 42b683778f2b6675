//! The chain workload: a recursion with one spawn per level, `n` levels deep. Every level waits
//! for the one below, so there is no parallelism at all; it measures what a task costs when
//! every spawn must become one, and shows that depth costs heap frames, not stack (on the cpu
//! backend's stealing scheduler a 1,000,000-deep chain completes). Shared by the `chain` example,
//! the tests and the benchmarks.

use gpu_cilk::prelude::*;

/// `n` nested single spawns; returns `n`.
#[gpu_cilk]
pub fn chain(n: u32) -> u64 {
    if n == 0 {
        return 0;
    }
    let below = spawn!(chain(n - 1));
    sync!();
    below + 1
}

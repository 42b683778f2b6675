//! The fib workload: `fib(n)` with every call a task (pure spawn/sync overhead). Shared by the
//! `fib` example, the differential tests and the benchmarks, so all of them run the same code.

use gpu_cilk::prelude::*;

/// The Cilk classic: two spawns, one sync.
#[gpu_cilk]
pub fn fib(n: u32) -> u64 {
    if n < 2 {
        return n as u64;
    }
    let x = spawn!(fib(n - 1));
    let y = spawn!(fib(n - 2));
    sync!();
    x + y
}

//! One module per workload, each with its `#[gpu_cilk]` tasks and the host-side helpers (inputs,
//! references, checks) its example, tests and benchmarks share.

pub mod chain;
pub mod closest;
pub mod fib;
pub mod knapsack;
pub mod matmul;
// Written in the supported subset (index loops), not in idiomatic Rust.
#[allow(clippy::needless_range_loop)]
pub mod queens;
pub mod sort;
pub mod strassen;
pub mod unbalanced;

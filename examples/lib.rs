//! The annotated workloads of the examples, as a library, so the examples, the tests and the
//! benchmarks run the same code without `#[path]` includes: `workloads::{chain, closest, fib,
//! knapsack, queens, sort, strassen, unbalanced}`. Owns the workloads; must not hold any CLI code
//! (`common/`, the examples' own files) or any test's checks.

pub mod workloads;

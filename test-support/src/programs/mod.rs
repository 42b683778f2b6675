//! The root crate's test programs: `#[gpu_cilk]` fixtures (one task shape each), the random task
//! tree, control flow around `sync!()`, generic tasks and task-scoped temporaries, and the
//! backends every differential test runs them on. Owns those programs; must not hold any test's
//! checks (those stay in `tests/`).

pub mod backends;
pub mod block;
pub mod control;
pub mod fixtures;
pub mod generics;
pub mod random_tree;
pub mod temps;

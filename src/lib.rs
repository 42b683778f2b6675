//! # gpu-cilk
//!
//! Cilk-style recursive task parallelism for Rust, compiled for NVIDIA GPUs, with serial and
//! multi-core CPU backends. Annotate a function with [`macro@gpu_cilk`], write `spawn!(f(..))` and
//! `sync!()` in it, and run it on any backend:
//!
//! ```
//! use gpu_cilk::prelude::*;
//!
//! #[gpu_cilk]
//! fn fib(n: u32) -> u64 {
//!     if n < 2 {
//!         return n as u64;
//!     }
//!     let x = spawn!(fib(n - 1));
//!     let y = spawn!(fib(n - 2));
//!     sync!();
//!     x + y
//! }
//!
//! # fn main() -> Result<(), gpu_cilk::Error> {
//! let rt = Runtime::with_backend(BackendKind::Cpu)?;
//! assert_eq!(rt.run(fib::task(20))?, 6765);
//! assert_eq!(fib(20), 6765); // the plain function stays callable: the serial oracle
//! # Ok(())
//! # }
//! ```
//!
//! This crate is a facade: the compiler lives in `gpu-cilk-macros`, the runtime in
//! `gpu-cilk-runtime`. See `docs/` in the repository for the architecture and the supported subset.
#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub use gpu_cilk_macros::{device, gpu_cilk, DeviceStruct};
pub use gpu_cilk_runtime as runtime;
pub use gpu_cilk_runtime::DeviceStruct;
pub use gpu_cilk_runtime::{BackendKind, Config, Error, Report, ResidentBuffer, Runtime, SchedulerKind, Stats, Temp};
pub use gpu_cilk_runtime::{Key, Max, Min, Sum};

/// Spawns a child task inside a `#[gpu_cilk]` function: `let x = spawn!(f(a, b));`.
///
/// Only meaningful inside a `#[gpu_cilk]` function, whose compiler rewrites it; anywhere else it
/// is a compile error.
#[macro_export]
macro_rules! spawn {
    ($($t:tt)*) => {
        ::core::compile_error!("`spawn!` can only be used inside a `#[gpu_cilk]` function")
    };
}

/// Waits for every child spawned so far in a `#[gpu_cilk]` function: `sync!();`.
///
/// Only meaningful inside a `#[gpu_cilk]` function, whose compiler rewrites it; anywhere else it
/// is a compile error.
#[macro_export]
macro_rules! sync {
    ($($t:tt)*) => {
        ::core::compile_error!("`sync!` can only be used inside a `#[gpu_cilk]` function")
    };
}

/// Allocates a task-scoped temporary inside a `#[gpu_cilk]` function: `let t = alloc!(f32, n);`
/// gives `n` zeroed elements (a [`Temp<f32>`](runtime::Temp)) that live until the task returns
/// and that children may receive as an argument; `alloc!(f32, n, uninit)` skips the zeroing on
/// the cuda backend (for temporaries written whole before they are read). See "Task-scoped
/// temporaries" in `docs/dsl.md`.
///
/// Only meaningful inside a `#[gpu_cilk]` function, whose compiler rewrites it; anywhere else it
/// is a compile error.
#[macro_export]
macro_rules! alloc {
    ($($t:tt)*) => {
        ::core::compile_error!("`alloc!` can only be used inside a `#[gpu_cilk]` function")
    };
}

/// The cooperative loop of a `#[gpu_cilk(warp)]` task: `for i in lanes(lo, hi) { .. }`, whose
/// iterations must be independent of each other. On the persistent cuda scheduler the warp that
/// runs the task spreads them over its lanes (lane `l` runs `lo + l`, `lo + l + 32`, ..) and
/// waits for all of them (`__syncwarp`) after the loop; everywhere else, and here, it is the
/// plain range `lo..hi`. See "Warp tasks" in `docs/dsl.md`.
pub fn lanes<T>(lo: T, hi: T) -> core::ops::Range<T> {
    lo..hi
}

/// The cooperative loop of a `#[gpu_cilk(block)]` task: `for i in threads(lo, hi) { .. }`, whose
/// iterations must be independent of each other. On the persistent cuda scheduler the thread
/// block that runs the task spreads them over its threads (thread `t` runs `lo + t`,
/// `lo + t + blockDim`, ..) and waits for all of them (a block barrier) after the loop;
/// everywhere else, and here, it is the plain range `lo..hi`. See "Block tasks" in `docs/dsl.md`.
pub fn threads<T>(lo: T, hi: T) -> core::ops::Range<T> {
    lo..hi
}

/// A scratch array shared by the threads of the block that runs a `#[gpu_cilk(block)]` task:
/// `let mut s = shared!([0u32; 256]);` at the top level of its body. On the persistent cuda
/// scheduler it lives in the block's shared memory (filled with the value by the whole block,
/// then a barrier); everywhere else, and here, it is the local array `[0u32; 256]`. See "Block
/// tasks" in `docs/dsl.md`.
#[macro_export]
macro_rules! shared {
    ([$v:expr; $n:expr]) => {
        [$v; $n]
    };
}

/// The barrier of a `#[gpu_cilk(block)]` task: every thread of the block waits until all have
/// reached it, so writes before it are visible to all after it. On the host it does nothing (one
/// thread runs the task). Not allowed inside a `threads(..)` loop. See "Block tasks" in
/// `docs/dsl.md`.
#[macro_export]
macro_rules! block_sync {
    () => {
        ()
    };
}

/// Everything an annotated program needs: `use gpu_cilk::prelude::*;`.
pub mod prelude {
    pub use crate::{alloc, block_sync, gpu_cilk, lanes, shared, spawn, sync, threads, DeviceStruct};
    pub use gpu_cilk_runtime::{
        BackendKind, Config, Error, Report, ResidentBuffer, Runtime, SchedulerKind, Stats, Temp,
    };
    pub use gpu_cilk_runtime::{Key, Mat, MatMut, Max, Min, Sum};
}

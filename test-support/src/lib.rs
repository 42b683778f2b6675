//! # gpu-cilk-test-support (dev-only, not published)
//!
//! What the workspace's tests and benchmarks share, as one crate instead of `#[path]` includes:
//!
//! - [`gate`]: whether GPU, NVRTC and host-simulation tests run, skip or fail;
//! - [`target`]: the [`Target`] a device suite is written against (the GPU, or the host
//!   simulation of device code), [`device_suite!`] which instantiates a suite for both, and
//!   [`ptx_params`], the NVRTC check of kernel parameter sizes;
//! - [`mirror`]: host mirrors of the device structs tests hand to kernels;
//! - [`heap_history`]: the batched heap's history checker;
//! - [`splitmix`]: deterministic random choices for stress tests;
//! - [`program_gen`]: the generator of random `#[gpu_cilk]` programs (`tests/generated/`);
//! - `programs` (feature `programs`, the root crate's tests): the `#[gpu_cilk]` fixtures and the
//!   backends every differential test runs on.
//!
//! Depends on the runtime with its `test-support` feature (the Rust models of device algorithms
//! and the public API of the host simulation); must not be a dependency of any product crate.

pub mod gate;
pub mod heap_history;
pub mod mirror;
pub mod program_gen;
#[cfg(feature = "programs")]
pub mod programs;
pub mod splitmix;
pub mod target;

pub use target::{ptx_params, DeviceMem, Launch, Target};

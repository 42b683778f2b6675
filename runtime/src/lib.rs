//! # gpu-cilk-runtime
//!
//! The runtime half of gpu-cilk: [`Runtime`] and its backends, the levelized scheduler, the
//! host twins of the device data structures, errors and statistics. Code emitted by the
//! `#[gpu_cilk]` compiler talks to it only through the [`task`] module's contract.
//!
//! Layout (one job per module):
//! - [`task`]: the contract with generated code ([`CilkTask`], [`Step`], [`Place`], [`Spawn`]).
//! - [`channel`]: the array channel of Orr et al. (Rust twin of `kernels/channel.cuh`).
//! - [`backend`]: `serial`, `cpu` (channel stacks + levelized scheduler on rayon), `cuda`.
//! - [`slice`](mod@slice): `&[T]`/`&mut [T]` parameters across the task boundary ([`RawSlice`]).
//! - [`view`]: strided 2-D sub-blocks of a matrix ([`Mat`], [`MatMut`]) across the task boundary.
//! - [`priority`]: the keys of priority spawns ([`Priority`]).
//! - [`bound`]: shared monotone bounds ([`Max`], [`Min`], [`Sum`]).
//! - [`temp`]: task-scoped temporaries (`alloc!`): [`Temp`] and its host storage.
//! - [`runtime`], [`config`], [`stats`], [`error`]: the public face.
//!
//! Test-only code sits behind the `test-support` feature, which only the dev-only crate
//! `gpu-cilk-test-support` enables (so tests and benchmarks see it, product builds do not): the
//! Rust models of device algorithms, `heap` (the generalized batched heap of Chen et al., twin of
//! `kernels/heap.cuh`) and `ticket_queue` (twin of `kernels/ticket_queue.cuh`), and the public
//! face of the host simulation of device code (`backend::cuda::sim`; the `cuda-sim` backend uses
//! it inside the crate either way).
#![deny(missing_docs)]
#![deny(clippy::undocumented_unsafe_blocks)]

pub mod alloc;
pub mod backend;
#[cfg(feature = "test-support")]
mod backoff;
pub mod bound;
pub mod channel;
pub mod config;
pub mod device_struct;
pub mod error;
#[cfg(feature = "test-support")]
pub mod heap;
pub mod key;
pub mod priority;
pub mod resident;
pub mod runtime;
pub mod slice;
pub mod stats;
pub mod task;
pub mod temp;
#[cfg(feature = "test-support")]
pub mod ticket_queue;
pub mod view;

pub use bound::{BoundValue, Max, Min, Sum};
pub use config::{BackendKind, Config, SchedulerKind};
pub use device_struct::{DeviceStruct, StructDef, StructField};
pub use error::{Error, Result};
pub use key::Key;
pub use priority::Priority;
pub use resident::ResidentBuffer;
pub use runtime::Runtime;
pub use slice::{RawSlice, SliceField};
pub use stats::{DeviceProfile, Report, Stats, TaskStats};
pub use task::{
    ArgsLayout, Call, CilkTask, CudaFragment, DeviceFn, DeviceFunction, FieldLayout, IntoCall, OwnedArgs, Place,
    Registrar, Registry, Spawn, Step, TaskFunction,
};
pub use temp::{Scalar, Temp, TempElem, TempScope};
pub use view::{Mat, MatMut, RawMat};

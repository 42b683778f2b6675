//! The cpu backend (work in progress).
use crate::config::Config;
use crate::error::Result;
use crate::runtime::Report;
use crate::task::{Call, CilkTask};

/// Sizes for one task's channel stacks.
pub struct StoreConfig;
/// A task's channel stacks with the task type erased.
pub trait ErasedStore: Send + Sync {}
struct Store<T>(std::marker::PhantomData<T>);
impl<T: CilkTask> ErasedStore for Store<T> {}
/// Builds `T`'s channel stacks.
pub fn new_store<T: CilkTask>(_c: &StoreConfig) -> Box<dyn ErasedStore> {
    Box::new(Store::<T>(std::marker::PhantomData))
}
/// The cpu backend.
pub struct CpuBackend;
impl CpuBackend {
    /// New.
    pub fn new(_c: &Config) -> Result<Self> { Ok(CpuBackend) }
    /// Threads.
    pub fn threads(&self) -> usize { 1 }
    /// Run.
    pub fn run<T: CilkTask>(&self, call: Call<T>) -> Result<Report<T::Output>> { crate::backend::serial::run(call) }
}

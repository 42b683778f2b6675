//! Host mirrors of device structs that only tests and benchmarks hand to kernels (the runtime's
//! own mirrors stay in `gpu_cilk_runtime::backend::cuda`). Owns their `#[repr(C)]` layouts and
//! size checks; must not touch the runtime's mirrors.

pub mod channel;
pub mod heap;
pub mod ticket_queue;

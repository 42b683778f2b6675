//! The backends: `serial` (the plain function), `cpu` (levelized channel stacks on host threads)
//! and `cuda` (the generated kernels on an NVIDIA GPU). Each owns how it runs a root call and
//! fills [`crate::Stats`]; none of them chooses which backend runs (that is [`crate::Runtime`]).

pub mod cpu;
pub mod cuda;
pub mod serial;

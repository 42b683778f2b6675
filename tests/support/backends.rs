//! The backends every differential test runs on: serial (the oracle's own backend), cpu, cpu with
//! capacities so small that every level spills, and — where a GPU is usable — cuda and cuda with
//! tiny device channels (many chunks per level, rings that wrap, spills). Without a GPU the cuda
//! entries are skipped with a printed reason, unless `GPU_CILK_REQUIRE_GPU=1` (set by
//! scripts/gpu-check.sh), which makes their absence a failure.

#![allow(dead_code)]

use gpu_cilk::prelude::*;

/// The cuda backend with `config`, when this machine has a usable GPU.
pub fn cuda(config: Config) -> Option<Runtime> {
    match Runtime::with_config(config.backend(BackendKind::Cuda)) {
        Ok(rt) => Some(rt),
        Err(e) if std::env::var_os("GPU_CILK_REQUIRE_GPU").is_some() => panic!("GPU required: {e}"),
        Err(e) => {
            eprintln!("skipping the cuda backend: {e}");
            None
        }
    }
}

/// Every backend this machine has, each also in a small-capacity configuration, from `base`.
pub fn all(base: Config) -> Vec<Runtime> {
    let mut rts = vec![
        Runtime::with_config(base.clone().backend(BackendKind::Serial)).expect("serial backend"),
        Runtime::with_config(base.clone().backend(BackendKind::Cpu)).expect("cpu backend"),
        Runtime::with_config(base.clone().backend(BackendKind::Cpu).threads(3).level_capacity(5).segment_capacity(2))
            .expect("cpu backend"),
    ];
    if let Some(rt) = cuda(base.clone()) {
        rts.push(rt);
        rts.extend(cuda(base.device_level_capacity(64)));
    }
    rts
}

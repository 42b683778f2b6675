//! The backends every differential test runs on. Host: serial (the oracle's own backend); cpu
//! with the stealing scheduler on all cores, on 1 thread, on 2 threads with every spawn a task,
//! and on 7 threads with tasks only while the deque is empty and short inline nesting; cpu with
//! the levelized scheduler, also with capacities so small that every level spills; and the cuda
//! backend's persistent scheduler on the host simulation of device code (`cuda-sim`: the same
//! device program and scheduler as on a GPU, run on host threads), with its depth-first cutoff,
//! with every spawn a task, and with a frame pool so small that spawns run inline when it runs
//! out. Device: cuda with both schedulers and small capacities — used only by GPU tests, which are
//! `#[ignore]`d and fail when asked to run without a usable GPU (see `gate.rs`).

pub use crate::gate;

use gpu_cilk::prelude::*;
use gpu_cilk::runtime::SchedulerKind;

/// The host backends: serial, every [`cpu`] configuration and every [`sim`] one, from `base`.
pub fn host(base: Config) -> Vec<Runtime> {
    let mut rts = vec![Runtime::with_config(base.clone().backend(BackendKind::Serial)).expect("serial backend")];
    rts.extend(cpu(base.clone()));
    rts.extend(sim(base));
    rts
}

/// The persistent device scheduler on the host simulation (`cuda-sim`), from `base`: as it is,
/// and with lane stacks of 16 entries (a path deeper than 8 levels of two children spills its stack
/// into the frame pool and the global pool) and a ready heap of 3 item slots with a window of 1 (priority spawns
/// fall back to plain spawns once 3 wait). Empty, after printing why, when no C++ compiler can be
/// run (a failure under `GPU_CILK_REQUIRE_SIM=1`).
pub fn sim(base: Config) -> Vec<Runtime> {
    let sim = base.backend(BackendKind::CudaSim).scheduler(SchedulerKind::Persistent);
    let mut rts = Vec::new();
    let tiny = sim.clone().device_lane_stack(16).device_priority_slots(3).device_priority_window(1);
    for c in [sim, tiny] {
        match Runtime::with_config(c) {
            Ok(rt) => rts.push(rt),
            Err(e) => {
                gate::sim_missing("the cuda-sim backends", &e);
                return Vec::new();
            }
        }
    }
    rts
}

/// The cuda backend with `config`.
///
/// # Panics
/// When the cuda backend cannot be used here (GPU tests run only on request).
pub fn cuda(config: Config) -> Runtime {
    Runtime::with_config(config.backend(BackendKind::Cuda)).unwrap_or_else(|e| gate::no_gpu("this GPU test", &e))
}

/// The cuda backends, from `base`: the persistent scheduler (the default), with lane stacks of 16
/// entries (deep paths spill) and a ready heap of 3 item slots;
/// and the levelized scheduler with default device channels and 64-element ones.
pub fn cuda_all(base: Config) -> Vec<Runtime> {
    vec![
        cuda(base.clone().scheduler(SchedulerKind::Persistent)),
        cuda(
            base.clone()
                .scheduler(SchedulerKind::Persistent)
                .device_lane_stack(16)
                .device_priority_slots(3)
                .device_priority_window(1),
        ),
        cuda(base.clone().scheduler(SchedulerKind::Levels)),
        cuda(base.scheduler(SchedulerKind::Levels).device_level_capacity(64)),
    ]
}

/// The cpu backend's configurations: the stealing scheduler on all cores, on 1 thread, on 2
/// threads with every spawn a task, on 7 threads (more than this machine's cores) with tasks
/// only while the deque is empty and short inline nesting; the levelized scheduler, also with
/// capacities so small that every level spills.
pub fn cpu(base: Config) -> Vec<Runtime> {
    let cpu = base.backend(BackendKind::Cpu);
    let stealing = cpu.clone().scheduler(SchedulerKind::Stealing);
    let levels = cpu.scheduler(SchedulerKind::Levels);
    [
        stealing.clone(),
        stealing.clone().threads(1),
        stealing.clone().threads(2).spawn_queue(usize::MAX),
        stealing.threads(7).spawn_queue(1).spawn_queue_idle(64).inline_nesting(2),
        levels.clone(),
        levels.threads(3).level_capacity(5).segment_capacity(2),
    ]
    .into_iter()
    .map(|c| Runtime::with_config(c).expect("cpu backend"))
    .collect()
}

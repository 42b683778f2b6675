//! The cuda backend's persistent scheduler on the host simulation of device code
//! (`BackendKind::CudaSim`, `GPU_CILK_BACKEND=cuda-sim`): the same assembled program, the same
//! device scheduler and the same host protocol as on a GPU, with the device code compiled by g++
//! and run on host threads (warps of one lane; see [`super::sim`]). It is slow and exists for
//! testing: CI runs every differential test on it, so the device scheduler's protocol (spawning,
//! joining, donating, termination, faults) is exercised without a GPU.
//!
//! Owns: the programs loaded on the simulation and their scheduler state. The scheduler itself is
//! [`super::persistent`], the same code that drives a GPU.

use super::abi::DeviceScheduler;
use super::persistent::{PersistentRun, PersistentState};
use super::program::{assemble_for, AssembledProgram};
use super::sim::{compiler_version, SimDevice, SimProgram};
use super::{device_scheduler, task_names, verify_layout, ProgramSource};
use crate::config::{Config, SchedulerKind};
use crate::error::{Error, Result};
use crate::stats::Report;
use crate::task::{Call, CilkTask, Registry};
use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The frame pool the simulation gets at most (its memory is the host's).
const SIM_FRAME_POOL_BYTES: usize = 16 << 20;

/// The persistent device scheduler on the host simulation.
pub struct SimBackend {
    config: Config,
    device: SimDevice,
    /// This backend's identity for resident buffers (`super::resident`).
    owner: usize,
    programs: Mutex<HashMap<TypeId, Arc<Loaded>>>,
}

/// A program loaded for one root task, with its scheduler state (kept across runs).
struct Loaded {
    asm: AssembledProgram,
    program: SimProgram,
    state: Mutex<Option<PersistentState<SimDevice>>>,
}

impl SimBackend {
    /// The simulation, when a C++ compiler can be run; only the persistent scheduler runs on it.
    pub fn new(config: &Config) -> Result<Self> {
        if device_scheduler(config)? != DeviceScheduler::Persistent {
            return Err(Error::Config(format!(
                "the host simulation runs the persistent device scheduler, not `{}`",
                SchedulerKind::Levels
            )));
        }
        compiler_version()?;
        let mut config = config.clone();
        config.device_frame_pool_bytes = config.device_frame_pool_bytes.min(SIM_FRAME_POOL_BYTES);
        Ok(SimBackend {
            config,
            device: SimDevice::new(),
            owner: super::resident::fresh_owner(),
            programs: Mutex::new(HashMap::new()),
        })
    }

    /// "host simulation of the device (g++ ...)".
    pub fn description(&self) -> String {
        format!("host simulation of the device ({})", compiler_version().unwrap_or_else(|e| e.to_string()))
    }

    /// Runs a root call through the persistent scheduler on the simulation.
    pub fn run<T: CilkTask>(&self, call: Call<'_, T>) -> Result<Report<T::Output>> {
        let loaded = self.program_for::<T>()?;
        let mut state = loaded
            .state
            .lock()
            .map_err(|_| Error::Internal("simulation state poisoned by an earlier failure".into()))?;
        let result = (|| {
            if state.is_none() {
                *state = Some(PersistentState::new(&self.device, &loaded.program, &loaded.asm, &self.config)?);
            }
            let st = state.as_mut().ok_or_else(|| Error::Internal("simulation state missing".into()))?;
            super::slices::with_device_slices(&self.device, self.owner, call.args, T::SLICES, |args| {
                PersistentRun::new(&self.device, &loaded.asm, st).run::<T::Args, T::Output>(args, &self.config)
            })
        })();
        if result.is_err() {
            *state = None;
        }
        let ((value, mut stats), transfer) = result?;
        stats.transfer = transfer;
        stats.scheduler = Some(SchedulerKind::Persistent);
        Ok(Report { value, stats })
    }

    /// `bytes` of simulated device memory for a resident buffer of this backend.
    pub(crate) fn resident(&self, bytes: usize) -> Result<Box<dyn super::resident::ResidentStore>> {
        let store = super::resident::Stored::new(self.device.clone(), |d: &SimDevice| d, self.owner, bytes)?;
        Ok(Box::new(store))
    }

    fn program_for<T: CilkTask>(&self) -> Result<Arc<Loaded>> {
        let id = TypeId::of::<T>();
        let mut programs = self.programs.lock().map_err(|_| Error::Internal("program table poisoned".into()))?;
        if let Some(p) = programs.get(&id) {
            return Ok(p.clone());
        }
        let asm = assemble_for(&Registry::of::<T>(), DeviceScheduler::Persistent)?;
        let source = ProgramSource::new(format!("gpu_cilk_{}", T::NAME), asm.source.clone());
        let program = self.device.load_program(&source).map_err(|e| match e {
            Error::Compile { compiler, log, .. } => Error::Compile {
                compiler,
                task_or_program: format!("the simulated program of `{}` (tasks: {})", T::NAME, task_names(&asm)),
                log,
            },
            e => e,
        })?;
        verify_layout(&self.device, &program, &asm)?;
        let entry = Arc::new(Loaded { asm, program, state: Mutex::new(None) });
        programs.insert(id, entry.clone());
        Ok(entry)
    }
}

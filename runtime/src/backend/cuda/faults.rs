//! Device fault records to [`Error`]s: a `gc_fault` (the first device-side check that failed in a
//! run) becomes the error a user reads, naming the `#[gpu_cilk]` function, the Rust source location
//! and the recursion level. Shared by both device schedulers; owns the wording, not the detection
//! (that is `gc_raise` in `runtime.cuh`).

use super::abi::{FaultCode, GcFault};
use super::program::{AssembledProgram, DEVICE_SITE_BASE};
use crate::error::Error;

/// The stack each device thread gets (both device schedulers). Serial device forms recurse on it:
/// plain calls of tasks and `#[gpu_cilk::device]` helpers on both, and on the levels scheduler
/// every spawn below a level's element too.
pub(crate) const DEVICE_STACK_BYTES: usize = 16 << 10;
/// The part of [`DEVICE_STACK_BYTES`] serial recursion may use: 4 KiB stay for the scheduler's and
/// the segment's own frames and the last call's. A guard past it fails the run with
/// `GC_FAULT_DEV_STACK` naming the function (never a stack overflow).
pub(crate) const SERIAL_STACK_BUDGET: u32 = (DEVICE_STACK_BYTES - (4 << 10)) as u32;

/// What a scheduler knows about its pools when a fault names one.
pub(crate) struct PoolSizes {
    /// Bytes per spill-pool record (levelized scheduler), for converting the pool's bytes to records.
    pub(crate) spill_stride: u64,
    /// Bytes in the device temporary heap, 0 when the program has none.
    pub(crate) temp_heap: u64,
}

/// The error for fault record `f` of a run of `asm`.
pub(crate) fn fault_error(asm: &AssembledProgram, pools: &PoolSizes, f: &GcFault) -> Error {
    let task = asm.tasks.get(f.task as usize);
    // A site of a device function (a helper, or a task's serial form run inline) names that
    // function; a segment's site is the task's own.
    let (name, location) = match f.site.checked_sub(DEVICE_SITE_BASE) {
        Some(i) => match asm.device_sites.get(i as usize) {
            Some(&(func, at)) => (func, at.to_string()),
            None => (task.map_or("?", |t| t.name), format!("fault site {}", f.site)),
        },
        None => (
            task.map_or("?", |t| t.name),
            task.and_then(|t| t.fragment.sites.get(f.site as usize))
                .map_or_else(|| format!("fault site {}", f.site), |s| (*s).to_string()),
        ),
    };
    let device_fault = |message: String| Error::DeviceFault {
        task: name,
        location: location.clone(),
        level: f.level as usize,
        message,
    };
    match f.fault_code() {
        Some(FaultCode::SpillPool) => Error::PoolExhausted {
            pool: "device spill pool",
            task: name,
            level: f.level as usize + 1,
            capacity: (f.detail / pools.spill_stride.max(1)) as usize,
            knob: "device_spill_capacity",
        },
        Some(FaultCode::TempPool) => Error::TempHeapExhausted {
            heap: "device temporary heap",
            task: name,
            level: f.level as usize,
            elements: f.detail & ((1 << 56) - 1),
            bytes: (f.detail & ((1 << 56) - 1)).saturating_mul(f.detail >> 56),
            capacity: pools.temp_heap,
        },
        Some(FaultCode::ChannelFull) => Error::Internal(format!(
            "a frame of `{name}` at level {} found its continuation channel ({} slots) full",
            f.level, f.detail
        )),
        Some(FaultCode::Index) => device_fault(format!("index out of bounds: the index is {}", f.detail)),
        Some(FaultCode::DivZero) => device_fault("attempt to divide by zero".to_string()),
        Some(FaultCode::DivOverflow) => device_fault("attempt to divide with overflow".to_string()),
        Some(FaultCode::Shift) => device_fault("shift amount out of range".to_string()),
        Some(FaultCode::Depth) => Error::DepthExceeded { task: name, limit: f.detail as usize },
        Some(FaultCode::DevDepth) => {
            device_fault(format!("serial recursion through task calls deeper than {} levels on the device", f.detail))
        }
        Some(FaultCode::DevStack) => {
            // The persistent scheduler says in the detail's high word what could not hold the
            // work (`enum gc_forced`, persistent.cuh); the levels scheduler's serial recursion
            // leaves it 0.
            let low = f.detail & 0xffff_ffff;
            match f.detail >> 32 {
                1 => device_fault(format!(
                    "the device frame pool ({low} frames) is used up: more tasks wait for children at once \
                     than it holds (raise GPU_CILK_DEVICE_FRAME_POOL_BYTES)"
                )),
                2 => device_fault(format!(
                    "a lane's task stack ({low} entries) overflowed into a full global pool: more \
                     spawned work waits at once than the device holds"
                )),
                _ => device_fault(format!(
                    "serial recursion through plain calls of tasks or device helpers needs more than its \
                     {low} bytes of device stack; spawn! the recursive calls instead (a spawn runs from the \
                     lane's task stack, any depth)"
                )),
            }
        }
        Some(FaultCode::PrioHeap) => Error::Internal(format!(
            "the persistent scheduler's ready heap of priority spawns failed (detail {:#x}: {}); \
             a bug in gpu-cilk, please report it",
            f.detail,
            if f.detail >> 32 == 1 { "an insert found the heap full" } else { "a heap invariant broke" }
        )),
        None => device_fault(format!("unknown device fault code {}", f.code)),
    }
}

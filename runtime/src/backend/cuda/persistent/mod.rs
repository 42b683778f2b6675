//! The host side of the device-resident scheduler (`GPU_CILK_SCHEDULER=persistent`, the cuda
//! backend's default): it sizes and allocates what the scheduler needs on the device (the frame
//! pool and its free ring, the global item pool, the control block, the statistics), launches the
//! one persistent kernel `gc_persistent` per run, waits for it (with `Config::timeout`) and reads
//! back the result, the fault record and the statistics. Everything else — spawning, joining,
//! balancing, termination — happens on the device (`kernels/include/gpu_cilk/persistent.cuh`).
//!
//! Owns: sizing (shared memory per warp, pool capacities, the launch shape) and the per-run
//! protocol with the kernel. Must not own: what the device does between the launch and the end.
//! Generic over the [`Target`] the kernel runs on: a GPU, or the host simulation (where CI runs
//! the whole scheduler).

mod prio;
mod ring;

use super::abi::{pctl, pstat, GcFault, GcPSched, PRIO_SMEM_BYTES};
use super::faults::{fault_error, PoolSizes, DEVICE_STACK_BYTES, SERIAL_STACK_BUDGET};
use super::memory::DevicePtr;
use super::module::LaunchDims;
use super::program::AssembledProgram;
use super::target::Target;
use super::temps::TempHeap;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::stats::{DeviceProfile, Stats, TaskStats};
use prio::PrioState;
use ring::Ring;
use std::time::Instant;

/// Threads per block of `gc_persistent` on a GPU (`GC_PERSISTENT_THREADS`): 8 warps.
const THREADS: u32 = 256;
/// Bytes of `struct gc_pwarp_hdr` (each warp's shared memory: this header, then 32 items).
const WARP_HDR_BYTES: u64 = 16;
/// Bytes of `struct gc_pblock_hdr` (the block's join state for block items, after the warps'
/// areas rounded up to 16 bytes; the block tasks' scratch follows it).
const BLOCK_HDR_BYTES: u64 = 16;
/// Bytes of every lane's stack together, in global memory, and the most and fewest bytes one lane
/// gets: a lane's stack holds [`MIN_LANE_ENTRIES`] to [`MAX_LANE_ENTRIES`] entries of the
/// program's largest frame slot, as many as its share of [`LANE_STACKS_BYTES`] allows. A path
/// deeper than its stack spills its oldest frames into the frame pool (persistent.cuh, OVERFLOW),
/// so this trades memory for spills and bounds nothing a program can do. 64 KiB holds queens'
/// widest paths (about 70 entries of 304 bytes for n = 15) without a spill.
const LANE_STACKS_BYTES: u64 = 4 << 30;
const MAX_LANE_BYTES: u64 = 64 << 10;
const MIN_LANE_BYTES: u64 = 4 << 10;
const MAX_LANE_ENTRIES: u64 = 256;
const MIN_LANE_ENTRIES: u64 = 8;

/// The device state of one persistent program, kept across runs (a run resets its counters).
pub(crate) struct PersistentState<D: Target> {
    kernel: D::Kernel<GcPSched>,
    dims: LaunchDims,
    warps: u64,
    frame_bytes: u64,
    frame_count: u64,
    frames: D::Buffer<u8>,
    /// Indices of freed frame slots (u32).
    free: Ring<D>,
    /// The global pool of items.
    pool: Ring<D>,
    /// `[0]` the pool's published-item count, `[16]` the free ring's, `[32]` the next never-used
    /// frame slot (each on its own 128-byte line).
    counters: D::Buffer<u64>,
    ctl: D::Buffer<u32>,
    fault: D::Buffer<GcFault>,
    result: D::Buffer<u64>,
    stats: D::Buffer<u64>,
    root_args: D::Buffer<u8>,
    /// Every lane's stack: `lane_cap` entries of `entry_bytes` each.
    lanes: D::Buffer<u8>,
    lane_cap: u32,
    entry_bytes: u64,
    temps: Option<TempHeap<D>>,
    /// The ready heap of priority spawns (programs that have them, on a grid of 2 blocks or more).
    prio: Option<PrioState<D>>,
    idle_max_ns: u32,
}

/// Sizes of the program's device types, from its `gc_playout` kernel.
struct Layout {
    item_bytes: u64,
    frame_bytes: u64,
    args_bytes: u64,
    /// The largest `SCRATCH` of the program's block tasks (`shared!` arrays; 0 without any).
    scratch_bytes: u64,
}

impl<D: Target> PersistentState<D> {
    pub(crate) fn new(dev: &D, program: &D::Program, asm: &AssembledProgram, config: &Config) -> Result<Self> {
        let layout = {
            let out = dev.alloc_zeroed::<u64>(4)?;
            // SAFETY: `gc_playout(gc_u64* out)` writes out[0..4), which `out` holds.
            let k = unsafe { dev.kernel::<DevicePtr<u64>>(program, "gc_playout")? };
            dev.launch(&k, LaunchDims::cover(1, 1), &DevicePtr::from_addr(D::addr(&out)))?;
            let v = dev.dtoh(&out)?;
            Layout {
                item_bytes: v[0],
                frame_bytes: v[1].next_multiple_of(16),
                args_bytes: v[2].max(8),
                scratch_bytes: v[3],
            }
        };
        // SAFETY: `gc_persistent(gc_psched)` (written by the assembler around
        // `gc_persistent_loop`) takes one `gc_psched`, mirrored by `GcPSched` (checked by the
        // program's ABI asserts and layout probe); every launch below passes buffers of the sizes
        // the parameters announce and the dynamic shared memory the loop computes from them.
        let kernel = unsafe { dev.kernel::<GcPSched>(program, "gc_persistent")? };
        let warp_bytes = WARP_HDR_BYTES + 32 * layout.item_bytes;
        let warp_size = dev.warp_size().max(1);
        // Programs with priority spawns: the grid's last blocks serve the ready heap, whose
        // operations need their own workspace (every block gets the larger of the two).
        let prio = asm.uses_priorities();
        let prio_smem = if prio { PRIO_SMEM_BYTES as usize } else { 0 };
        // Per block: the warps' areas, then the join state and scratch of block items.
        let block_bytes = BLOCK_HDR_BYTES + layout.scratch_bytes;
        let smem_for = |threads: u32| {
            let warps = (threads / warp_size) as u64 * warp_bytes;
            ((warps.next_multiple_of(16) + block_bytes) as usize).max(prio_smem)
        };
        let max_per_sm = config.device_blocks_per_sm.min(u32::MAX as usize) as u32;
        let (blocks, threads) = dev.resident_grid(&kernel, THREADS, smem_for(THREADS), max_per_sm)?;
        let smem = smem_for(threads);
        let warps = blocks as u64 * (threads / warp_size) as u64;
        let dims = LaunchDims::linear(blocks, threads).shared_mem(smem as u32);
        // Plain calls of tasks and device helpers recurse on the thread stack (nothing else does).
        dev.set_stack_size(DEVICE_STACK_BYTES)?;
        // A lane-stack entry holds a frame slot or an item (a FRESH entry's arguments).
        let entry_bytes = layout.frame_bytes.max(layout.item_bytes).next_multiple_of(16);
        let lanes = blocks as u64 * threads as u64;
        let lane_cap = match config.device_lane_stack {
            0 => {
                let per_lane = (LANE_STACKS_BYTES / lanes.max(1)).clamp(MIN_LANE_BYTES, MAX_LANE_BYTES);
                (per_lane / entry_bytes).clamp(MIN_LANE_ENTRIES, MAX_LANE_ENTRIES)
            }
            n => n as u64,
        };
        // A power of two (the ring's index mask), rounded down.
        let lane_cap = (1u64 << (63 - lane_cap.leading_zeros())).max(2);
        let lane_bytes = lanes
            .checked_mul(lane_cap * entry_bytes)
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| Error::Config(format!("lane stacks of {lane_cap} entries overflow")))?;
        // The pool holds what lanes hand to hungry warps (bounded by the hunger) and what full
        // lane stacks spill (at most a stack's entries at a time); a slack of 32 per warp keeps
        // producers from ever waiting.
        let pool_capacity = (64 * warps + 32 * warps + 4 * lane_cap * warps).max(1 << 16).next_power_of_two();
        let frame_count =
            ((config.device_frame_pool_bytes as u64) / layout.frame_bytes).clamp(1024, u32::MAX as u64 / 2);
        let free_capacity = frame_count.next_power_of_two();
        Ok(PersistentState {
            kernel,
            dims,
            warps,
            frame_bytes: layout.frame_bytes,
            frame_count,
            frames: dev.alloc_zeroed::<u8>((frame_count * layout.frame_bytes) as usize)?,
            free: Ring::new(dev, free_capacity, 4)?,
            pool: Ring::new(dev, pool_capacity, layout.item_bytes)?,
            counters: dev.alloc_zeroed::<u64>(48)?,
            ctl: dev.alloc_zeroed::<u32>(pctl::WORDS)?,
            fault: dev.alloc_zeroed::<GcFault>(1)?,
            result: dev.alloc_zeroed::<u64>(8)?,
            stats: dev.alloc_zeroed::<u64>(pstat::TASKS + 2 * asm.tasks.len())?,
            root_args: dev.alloc_zeroed::<u8>(layout.args_bytes as usize)?,
            lanes: dev.alloc_zeroed::<u8>(lane_bytes.max(1))?,
            lane_cap: lane_cap as u32,
            entry_bytes,
            temps: TempHeap::for_program(dev, program, asm, config)?,
            prio: if prio { PrioState::new(dev, blocks, layout.item_bytes, config)? } else { None },
            idle_max_ns: config.device_idle_max_ns.min(u32::MAX as usize) as u32,
        })
    }

    /// Empties both ticket queues and zeroes every counter (the frame slots keep their bytes: a
    /// slot's join counter is set when it is handed out).
    fn reset(&mut self, dev: &D) -> Result<()> {
        dev.zero(&mut self.ctl)?;
        dev.zero(&mut self.counters)?;
        dev.zero(&mut self.stats)?;
        dev.zero(&mut self.result)?;
        dev.zero(&mut self.fault)?;
        self.pool.reset(dev)?;
        self.free.reset(dev)?;
        if let Some(p) = &mut self.prio {
            p.reset(dev)?;
        }
        Ok(())
    }
}

/// One run over a program's [`PersistentState`].
pub(crate) struct PersistentRun<'a, D: Target> {
    dev: &'a D,
    asm: &'a AssembledProgram,
    state: &'a mut PersistentState<D>,
}

impl<'a, D: Target> PersistentRun<'a, D> {
    pub(crate) fn new(dev: &'a D, asm: &'a AssembledProgram, state: &'a mut PersistentState<D>) -> Self {
        PersistentRun { dev, asm, state }
    }

    /// Runs the root call `args` to completion on the device and returns the root's result.
    pub(crate) fn run<A: Copy + Send + Sync + 'static, O: Copy + Default>(
        &mut self,
        args: A,
        config: &Config,
    ) -> Result<(O, Stats)> {
        let result_bytes = 8 * D::len(&self.state.result);
        if std::mem::size_of::<O>() > result_bytes {
            return Err(Error::Internal(format!(
                "task results larger than {result_bytes} bytes are not supported on the device"
            )));
        }
        let start = Instant::now();
        let (dev, st) = (self.dev, &mut *self.state);
        st.reset(dev)?;
        dev.write_value(&args, &mut st.root_args)?;
        let counters = D::addr(&st.counters);
        let mut params = GcPSched {
            pool: st.pool.addr(),
            pool_avail: counters,
            frames: D::addr(&st.frames),
            frame_bytes: st.frame_bytes,
            frame_count: st.frame_count,
            free_ring: st.free.addr(),
            free_avail: counters + 16 * 8,
            fresh: counters + 32 * 8,
            ctl: D::addr(&st.ctl),
            fault: D::addr(&st.fault),
            result: D::addr(&st.result),
            stats: D::addr(&st.stats),
            temps: st.temps.as_ref().map_or(0, TempHeap::heap_addr),
            root_args: D::addr(&st.root_args),
            pool_slack: 32 * st.warps + 32,
            lanes: D::addr(&st.lanes),
            entry_bytes: st.entry_bytes,
            lane_cap: st.lane_cap,
            max_depth: config.max_depth.min(u32::MAX as usize) as u32,
            dev_stack_budget: SERIAL_STACK_BUDGET,
            idle_max_ns: st.idle_max_ns,
            ..GcPSched::default()
        };
        if let Some(p) = &st.prio {
            p.fill(&mut params);
        }
        dev.launch_resident(&st.kernel, st.dims, &params)?;
        dev.sync()?;
        let ctl = dev.dtoh(&st.ctl)?;
        let fault = dev.dtoh(&st.fault)?[0];
        if fault.code != 0 {
            let pools = PoolSizes { spill_stride: 1, temp_heap: st.temps.as_ref().map_or(0, TempHeap::capacity) };
            return Err(fault_error(self.asm, &pools, &fault));
        }
        if ctl[pctl::DONE] == 0 {
            return Err(Error::Internal("the persistent scheduler stopped before the root task returned".into()));
        }
        let counts = dev.dtoh(&st.stats)?;
        let cell = dev.dtoh(&st.result)?;
        // SAFETY: the root task's delivery stored a value of `<root>_ret`, the C type the compiler
        // emits for `O` with the identical layout (checked by the layout probe for arguments; a
        // scalar, bool 0/1, array or the empty unit), at the start of this 64-byte, 8-aligned,
        // zero-initialized cell; `O` fits (checked above).
        let value = unsafe { std::ptr::read_unaligned(cell.as_ptr().cast::<O>()) };
        let mut stats = Stats {
            tasks: self
                .asm
                .tasks
                .iter()
                .enumerate()
                .map(|(i, t)| TaskStats {
                    name: t.name,
                    // The persistent scheduler counts per task, not per level: one entry.
                    tasks_per_level: vec![counts[pstat::TASKS + 2 * i]],
                    continuations_per_level: vec![counts[pstat::TASKS + 2 * i + 1]],
                })
                .collect(),
            levels: counts[pstat::MAX_DEPTH] as usize + 1,
            dispatches: 1,
            ..Stats::default()
        };
        stats.steals = counts[pstat::TAKEN];
        stats.donated = counts[pstat::DONATED];
        stats.shared = counts[pstat::SHARED];
        stats.promoted = counts[pstat::PROMOTED];
        stats.spills = counts[pstat::SPILLS];
        stats.prioritized = counts[pstat::PRIO];
        stats.priority_fallbacks = counts[pstat::PRIO_FULL];
        stats.peak_live_frames = counts[pstat::FRAMES] as usize;
        stats.peak_frame_bytes = counts[pstat::FRAMES] as usize * st.frame_bytes as usize;
        stats.device_profile = Some(DeviceProfile {
            warps: st.warps,
            rounds: counts[pstat::ROUNDS],
            steps: counts[pstat::STEPS],
            idle_cycles: counts[pstat::CYC_IDLE],
            run_cycles: counts[pstat::CYC_RUN],
            all_cycles: counts[pstat::CYC_ALL],
        });
        stats.wall = start.elapsed();
        Ok((value, stats))
    }
}

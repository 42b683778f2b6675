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
use super::faults::{fault_error, PoolSizes};
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
/// Frame indices in each warp's free list.
const FREE_CAP: u32 = 64;
/// Shared memory a warp's stack and lists may take: 8 blocks of 8 warps fill an SM's 227 KiB.
const SMEM_PER_WARP: u64 = 3 * 1024 + 512;
/// Most items a warp's stack holds.
const MAX_LOCAL_CAP: u64 = 256;
/// Fewest items a warp's stack holds (one full batch of children for a batch of 32 tasks).
const MIN_LOCAL_CAP: u64 = 32;
/// Bytes of `struct gc_pwarp_hdr`.
const WARP_HDR_BYTES: u64 = 32;

/// The device state of one persistent program, kept across runs (a run resets its counters).
pub(crate) struct PersistentState<D: Target> {
    kernel: D::Kernel<GcPSched>,
    dims: LaunchDims,
    local_cap: u32,
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
    /// Every warp's deep stack part: `deep_cap` items each (one byte when `deep_cap` is 0).
    deep: D::Buffer<u8>,
    deep_cap: u64,
    inline_budget: u32,
    temps: Option<TempHeap<D>>,
    /// The ready heap of priority spawns (programs that have them, on a grid of 2 blocks or more).
    prio: Option<PrioState<D>>,
    inline_threshold: u32,
    idle_max_ns: u32,
}

/// Sizes of the program's device types, from its `gc_playout` kernel.
struct Layout {
    item_bytes: u64,
    frame_bytes: u64,
    args_bytes: u64,
}

impl<D: Target> PersistentState<D> {
    pub(crate) fn new(dev: &D, program: &D::Program, asm: &AssembledProgram, config: &Config) -> Result<Self> {
        let layout = {
            let out = dev.alloc_zeroed::<u64>(3)?;
            // SAFETY: `gc_playout(gc_u64* out)` writes out[0..3), which `out` holds.
            let k = unsafe { dev.kernel::<DevicePtr<u64>>(program, "gc_playout")? };
            dev.launch(&k, LaunchDims::cover(1, 1), &DevicePtr::from_addr(D::addr(&out)))?;
            let v = dev.dtoh(&out)?;
            Layout { item_bytes: v[0], frame_bytes: v[1].next_multiple_of(16), args_bytes: v[2].max(8) }
        };
        // SAFETY: `gc_persistent(gc_psched)` (written by the assembler around
        // `gc_persistent_loop`) takes one `gc_psched`, mirrored by `GcPSched` (checked by the
        // program's ABI asserts and layout probe); every launch below passes buffers of the sizes
        // the parameters announce and the dynamic shared memory the loop computes from them.
        let kernel = unsafe { dev.kernel::<GcPSched>(program, "gc_persistent")? };
        let local_cap = ((SMEM_PER_WARP - WARP_HDR_BYTES - 4 * FREE_CAP as u64) / layout.item_bytes.max(1))
            .clamp(MIN_LOCAL_CAP, MAX_LOCAL_CAP);
        let warp_bytes = (WARP_HDR_BYTES + 4 * FREE_CAP as u64).next_multiple_of(16) + local_cap * layout.item_bytes;
        let warp_size = dev.warp_size().max(1);
        // Programs with priority spawns: the grid's last blocks serve the ready heap, whose
        // operations need their own workspace (every block gets the larger of the two).
        let prio = asm.uses_priorities();
        let prio_smem = if prio { PRIO_SMEM_BYTES as usize } else { 0 };
        let smem_for = |threads: u32| ((threads / warp_size) as usize * warp_bytes as usize).max(prio_smem);
        let max_per_sm = config.device_blocks_per_sm.min(u32::MAX as usize) as u32;
        let (blocks, threads) = dev.resident_grid(&kernel, THREADS, smem_for(THREADS), max_per_sm)?;
        let smem = smem_for(threads);
        let warps = blocks as u64 * (threads / warp_size) as u64;
        let dims = LaunchDims::linear(blocks, threads).shared_mem(smem as u32);
        let inline_threshold = if config.device_inline {
            (config.device_inline_threshold.min(local_cap as usize / 2) as u32).max(1)
        } else {
            0
        };
        // Also without the cutoff: a lane with no frame slot, or a spawn that finds its warp's
        // stack and the pool full, runs the callee inline.
        // Inline recursion is bounded in bytes of this stack (Config::device_inline_stack_bytes).
        dev.set_stack_size(config.device_stack_bytes)?;
        // The pool holds what warps donate; a warp has at most 32 items in flight, so a pool of
        // 64 items per warp with a slack of 32 per warp never blocks a producer.
        let pool_capacity = (64 * warps).max(4096).next_power_of_two();
        let frame_count =
            ((config.device_frame_pool_bytes as u64) / layout.frame_bytes).clamp(1024, u32::MAX as u64 / 2);
        let free_capacity = frame_count.next_power_of_two();
        let deep_cap = match config.device_warp_stack_items {
            0 => 0,
            n => (n as u64).next_power_of_two(),
        };
        let deep_bytes = warps
            .checked_mul(deep_cap)
            .and_then(|n| n.checked_mul(layout.item_bytes))
            .and_then(|n| usize::try_from(n).ok())
            .ok_or_else(|| Error::Config(format!("device_warp_stack_items ({deep_cap}) × {warps} warps overflows")))?;
        Ok(PersistentState {
            kernel,
            dims,
            local_cap: local_cap as u32,
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
            deep: dev.alloc_zeroed::<u8>(deep_bytes.max(1))?,
            deep_cap,
            inline_budget: config.device_inline_budget.min(u32::MAX as usize) as u32,
            temps: TempHeap::for_program(dev, program, asm, config)?,
            prio: if prio { PrioState::new(dev, blocks, layout.item_bytes, config)? } else { None },
            inline_threshold,
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
            deep: D::addr(&st.deep),
            deep_cap: st.deep_cap,
            local_cap: st.local_cap,
            free_cap: FREE_CAP,
            inline_threshold: st.inline_threshold,
            max_depth: config.max_depth.min(u32::MAX as usize) as u32,
            dev_stack_budget: config.device_inline_stack_budget(),
            idle_max_ns: st.idle_max_ns,
            inline_budget: st.inline_budget,
            inline_abort: if config.device_inline {
                config.device_inline_abort.min(u32::MAX as usize) as u32
            } else {
                0
            },
            inline_unwind_limit: config.device_inline_unwind_limit.min(u32::MAX as usize) as u32,
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
        stats.calls_inlined = counts[pstat::INLINE];
        stats.steals = counts[pstat::TAKEN];
        stats.donated = counts[pstat::DONATED];
        stats.pool_full_inlined = counts[pstat::POOL_FULL];
        stats.inline_unwound = counts[pstat::UNWOUND];
        stats.inline_aborted = counts[pstat::ABORTED];
        stats.prioritized = counts[pstat::PRIO];
        stats.priority_fallbacks = counts[pstat::PRIO_FULL];
        stats.peak_live_frames = counts[pstat::FRAMES] as usize;
        stats.peak_frame_bytes = counts[pstat::FRAMES] as usize * st.frame_bytes as usize;
        stats.device_profile = Some(DeviceProfile {
            warps: st.warps,
            batches: counts[pstat::BATCHES],
            items: counts[pstat::ITEMS],
            local_joins: counts[pstat::LOCAL_JOINS],
            idle_cycles: counts[pstat::CYC_IDLE],
            run_cycles: counts[pstat::CYC_RUN],
            all_cycles: counts[pstat::CYC_ALL],
        });
        stats.wall = start.elapsed();
        Ok((value, stats))
    }
}

//! The host-driven levelized scheduler of the cuda backend (`GPU_CILK_SCHEDULER=levels`): the GPU
//! twin of the cpu backend's levelized loop. It owns the device channel table (one ring per
//! (level, queue), allocated as depth is reached), the per-channel counters it reads back after
//! every launch, and the choice of the next (channel, chunk) to launch. The device side is `gc_run`
//! in `kernels/include/gpu_cilk/runtime.cuh`; chunk sizes come from [`plan`], spilled elements are
//! moved back into channels by [`spill`].
//!
//! Each step: find the deepest level `L` with pending elements; pick a continuation queue of `L`
//! if one has work (every child of its frames is done, since nothing deeper is pending), else a
//! pre-spawn queue; launch `gc_<task>_q<k>` over a chunk of it sized so that the children fit in
//! level `L + 1`; read the counters and the fault record back. A spawn that finds no room goes to
//! the spill pool and is moved into a grown channel after the launch; only an exhausted pool fails
//! the run (`Error::PoolExhausted`), so no element is ever dropped.

mod plan;
mod spill;

use super::abi::{self, GcChan, GcCtl, GcFault, GcLaunch, GcRoot};
use super::faults::{fault_error, PoolSizes, DEVICE_STACK_BYTES, SERIAL_STACK_BUDGET};
use super::memory::{DeviceBuffer, DevicePtr};
use super::module::{Kernel, LaunchDims, Program};
use super::program::AssembledProgram;
use super::temps::TempHeap;
use super::CudaDevice;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::stats::{Stats, TaskStats};
use plan::FanoutStats;
use std::time::Instant;

/// Words of the root's result cell (64 bytes: a `[u32; 16]` or a `(u64, [u64; 7])` fits).
const RESULT_WORDS: usize = 8;

/// Threads per block of every levelized launch.
const THREADS: u32 = 256;
/// Index of the first channel's counters in the counter buffer (0: the fault record, 1: the spill
/// pool's bytes in use).
const FIRST_CHANNEL_CTL: usize = 2;
/// Smallest channel allocated (elements): room for a first task's loop of spawns.
const MIN_CAPACITY: u64 = 1 << 10;
/// Most levels the channel table can describe (the persistent scheduler has no such limit).
pub(crate) const MAX_LEVELS: usize = 1 << 14;

/// One (level, queue) channel's device storage.
#[derive(Default)]
struct Channel {
    capacity: u64,
    buf: Option<DeviceBuffer<u8>>,
}

/// The device state of one program, kept across runs: channels keep their capacity, so a second
/// run of the same program allocates nothing.
pub(crate) struct LevelsState {
    /// (pre-spawn element size, continuation element size) per task, as the device lays them out.
    element_sizes: Vec<(u64, u64)>,
    queues_per_level: usize,
    max_capacity: u64,
    max_levels: usize,
    channels: Vec<Channel>,
    table: DeviceBuffer<GcChan>,
    table_dirty: bool,
    /// Element 0: the fault record (a `gc_fault`, same size); element 1: the spill pool's bytes in
    /// use (its first word); element `FIRST_CHANNEL_CTL + level * queues + q`: the counters of
    /// channel (level, q). One read-back per launch brings all three.
    ctl: DeviceBuffer<GcCtl>,
    spill: DeviceBuffer<u8>,
    spill_stride: u64,
    /// Element size of each queue of a level, on the device (for `gc_unspill`).
    queue_sizes: DeviceBuffer<u64>,
    host_ctl: Vec<GcCtl>,
    /// Next ticket to consume per (level, queue).
    heads: Vec<u64>,
    result: DeviceBuffer<u64>,
    root_args: DeviceBuffer<u8>,
    /// Levels with channels in the table.
    levels: usize,
    fanout: Vec<FanoutStats>,
    /// `gc_<task>_q<k>` per task and queue, looked up once.
    kernels: Vec<Vec<Kernel<GcLaunch>>>,
    /// The temporary heap, made when some task of the program uses `alloc!`.
    temps: Option<TempHeap<CudaDevice>>,
}

impl LevelsState {
    pub(crate) fn new(dev: &CudaDevice, program: &Program, asm: &AssembledProgram, config: &Config) -> Result<Self> {
        let n = asm.tasks.len();
        let layout = dev.alloc_zeroed::<u64>(3 * n)?;
        // SAFETY: `gc_layout(gc_u64* out)` writes out[0 .. 3 * tasks), which `layout` holds.
        let k = unsafe { program.kernel::<DevicePtr<u64>>("gc_layout")? };
        k.launch(LaunchDims::cover(1, 1), &layout.ptr())?;
        let raw = dev.dtoh(&layout)?;
        let queues_per_level = asm.queues_per_level as usize;
        let max_levels = config.max_depth.clamp(2, MAX_LEVELS);
        // Serial recursion through task device forms (a plain call of a task in device code) runs
        // on this stack, bounded in bytes (faults::SERIAL_STACK_BUDGET).
        dev.set_stack_size(DEVICE_STACK_BYTES)?;
        let element_sizes: Vec<(u64, u64)> = (0..n).map(|i| (raw[3 * i], raw[3 * i + 1])).collect();
        let mut queue_sizes = vec![8u64; queues_per_level.max(1)];
        for (t, &(pre, cont)) in asm.tasks.iter().zip(&element_sizes) {
            let base = t.qbase as usize;
            queue_sizes[base] = pre;
            for k in 1..=t.syncs + 1 {
                queue_sizes[base + k] = cont;
            }
        }
        // 8-byte header + the largest pre-spawn element (they are 8-aligned: they end in a pointer).
        let spill_stride = 8 + element_sizes.iter().map(|s| s.0).max().unwrap_or(8).next_multiple_of(8);
        let args_bytes = (0..n).map(|i| raw[3 * i + 2]).max().unwrap_or(1).max(8);
        let kernels = asm
            .tasks
            .iter()
            .map(|t| {
                (0..=t.syncs + 1)
                    .map(|q| {
                        // SAFETY: every `gc_<task>_q<k>` kernel of an assembled program takes one
                        // `gc_launch` (written by `gc_run`, see runtime.cuh), mirrored by
                        // `GcLaunch` (checked by the program's ABI asserts); launches below give it
                        // only channels of the table and counts the host planned.
                        unsafe { program.kernel::<GcLaunch>(&abi::queue_kernel(&t.c_name, q)) }
                    })
                    .collect::<Result<Vec<_>>>()
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(LevelsState {
            temps: TempHeap::for_program(dev, program, asm, config)?,
            element_sizes,
            queues_per_level,
            max_capacity: (config.device_level_capacity.max(1) as u64).next_power_of_two(),
            max_levels,
            channels: Vec::new(),
            table: dev.alloc_zeroed::<GcChan>(queues_per_level)?,
            table_dirty: true,
            ctl: dev.alloc_zeroed::<GcCtl>(FIRST_CHANNEL_CTL + queues_per_level * max_levels)?,
            host_ctl: vec![GcCtl::default(); FIRST_CHANNEL_CTL + queues_per_level * max_levels],
            spill: dev.alloc_zeroed::<u8>(config.device_spill_capacity.max(8))?,
            spill_stride,
            queue_sizes: dev.htod(&queue_sizes)?,
            heads: vec![0; queues_per_level * max_levels],
            result: dev.alloc_zeroed::<u64>(RESULT_WORDS)?,
            root_args: dev.alloc_zeroed::<u8>(args_bytes as usize)?,
            levels: 0,
            fanout: asm.tasks.iter().map(|t| FanoutStats::new(t.fanout)).collect(),
            kernels,
        })
    }
}

/// One run over a program's [`LevelsState`].
pub(crate) struct LevelsRun<'a> {
    dev: &'a CudaDevice,
    program: &'a Program,
    asm: &'a AssembledProgram,
    state: &'a mut LevelsState,
}

impl<'a> LevelsRun<'a> {
    pub(crate) fn new(
        dev: &'a CudaDevice,
        program: &'a Program,
        asm: &'a AssembledProgram,
        state: &'a mut LevelsState,
    ) -> Self {
        LevelsRun { dev, program, asm, state }
    }

    fn queues(&self) -> usize {
        self.state.queues_per_level
    }

    /// (task index, the task's own queue number) of queue `queue` of a level.
    fn owner(&self, queue: usize) -> (usize, usize) {
        for (task, t) in self.asm.tasks.iter().enumerate() {
            let base = t.qbase as usize;
            if queue >= base && queue <= base + t.syncs + 1 {
                return (task, queue - base);
            }
        }
        (0, 0)
    }

    fn element_size(&self, queue: usize) -> u64 {
        let (task, own) = self.owner(queue);
        if own == 0 {
            self.state.element_sizes[task].0
        } else {
            self.state.element_sizes[task].1
        }
    }

    /// Makes room for `levels` levels in the table.
    fn ensure_levels(&mut self, levels: usize) -> Result<()> {
        if levels > self.state.max_levels {
            return Err(Error::DepthExceeded { task: self.asm.tasks[0].name, limit: self.state.max_levels });
        }
        while self.state.channels.len() < levels * self.queues() {
            self.state.channels.push(Channel::default());
        }
        if levels > self.state.levels {
            self.state.levels = levels;
            self.state.table_dirty = true;
        }
        Ok(())
    }

    /// Makes channel (level, queue) hold at least `needed` elements. An empty channel is
    /// reallocated (power of two, at most `device_level_capacity`); a non-empty one keeps its
    /// storage. Returns its capacity.
    fn ensure_capacity(&mut self, level: usize, queue: usize, needed: u64) -> Result<u64> {
        let i = level * self.queues() + queue;
        let cap = self.state.channels[i].capacity;
        if cap >= needed || (cap > 0 && self.pending(level, queue) > 0) {
            return Ok(cap);
        }
        let want = needed.max(MIN_CAPACITY).next_power_of_two().min(self.state.max_capacity).max(cap);
        if want == cap {
            return Ok(cap);
        }
        let bytes = (want * self.element_size(queue)) as usize;
        self.state.channels[i] = Channel { capacity: want, buf: Some(self.dev.alloc_zeroed::<u8>(bytes)?) };
        self.state.table_dirty = true;
        Ok(want)
    }

    fn upload_table(&mut self) -> Result<()> {
        if !self.state.table_dirty {
            return Ok(());
        }
        let ctl_base = self.state.ctl.ptr();
        let table: Vec<GcChan> = (0..self.state.levels * self.queues())
            .map(|i| {
                let c = &self.state.channels[i];
                GcChan {
                    data: c.buf.as_ref().map_or(0, |b| b.ptr().addr()),
                    mask: c.capacity.saturating_sub(1),
                    ctl: ctl_base.offset(FIRST_CHANNEL_CTL + i).addr(),
                }
            })
            .collect();
        if self.state.table.len() < table.len() {
            self.state.table = self.dev.alloc_zeroed::<GcChan>(table.len().next_power_of_two())?;
        }
        self.dev.copy_htod(&table, &mut self.state.table)?;
        self.state.table_dirty = false;
        Ok(())
    }

    fn pending(&self, level: usize, queue: usize) -> u64 {
        let i = level * self.queues() + queue;
        self.state.host_ctl.get(FIRST_CHANNEL_CTL + i).map_or(0, |c| c.reserved - self.state.heads[i])
    }

    /// Reads back the counters of the levels in use, and the fault record.
    fn refresh(&mut self) -> Result<()> {
        let used = FIRST_CHANNEL_CTL + self.state.levels * self.queues();
        let (ctl, host) = (&self.state.ctl, &mut self.state.host_ctl[..used]);
        self.dev.dtoh_into(ctl, host)?;
        let fault = GcFault::from_ctl_slot(&self.state.host_ctl[0]);
        if fault.code != 0 {
            let pools = PoolSizes {
                spill_stride: self.state.spill_stride,
                temp_heap: self.state.temps.as_ref().map_or(0, TempHeap::<CudaDevice>::capacity),
            };
            return Err(fault_error(self.asm, &pools, &fault));
        }
        Ok(())
    }

    /// Elements ever reserved in the pre-spawn channels of `level` (all tasks).
    fn children_at(&self, level: usize) -> u64 {
        let queues = self.queues();
        self.asm
            .tasks
            .iter()
            .map(|t| self.state.host_ctl[FIRST_CHANNEL_CTL + level * queues + t.qbase as usize].reserved)
            .sum()
    }

    /// Runs the root call `args` to completion and returns the root's result.
    pub(crate) fn run<A: Copy + Send + Sync + 'static, O: Copy + Default>(
        &mut self,
        args: A,
        config: &Config,
    ) -> Result<(O, Stats)> {
        if std::mem::size_of::<O>() > 8 * RESULT_WORDS {
            return Err(Error::Internal(format!(
                "task results larger than {} bytes are not supported on the device",
                8 * RESULT_WORDS
            )));
        }
        let start = Instant::now();
        // Reset the counters of the previous run (channels keep their storage).
        self.dev.zero(&mut self.state.ctl)?;
        self.dev.zero(&mut self.state.result)?;
        self.state.host_ctl.iter_mut().for_each(|c| *c = GcCtl::default());
        self.state.heads.iter_mut().for_each(|h| *h = 0);
        self.ensure_levels(2)?;
        self.ensure_capacity(0, 0, 1)?;
        self.upload_table()?;
        self.dev.write_value(&args, &mut self.state.root_args)?;
        // SAFETY: `gc_root(gc_root_params)` copies `sizeof(<root>_args)` bytes from `args` (a
        // buffer at least that large: the layout kernel reported the largest argument struct) into
        // one element of the channel given: table entry 0 = (level 0, queue 0) = the root task's
        // pre-spawn channel, just allocated.
        let k = unsafe { self.program.kernel::<GcRoot>("gc_root")? };
        let root = GcRoot {
            args: self.state.root_args.ptr().addr(),
            dest: self.state.result.ptr().addr(),
            chan: self.state.table.ptr().addr(),
        };
        k.launch(LaunchDims::cover(1, 1), &root)?;
        self.refresh()?;

        let mut stats = Stats {
            tasks: self.asm.tasks.iter().map(|t| TaskStats { name: t.name, ..TaskStats::default() }).collect(),
            ..Stats::default()
        };
        let queues = self.queues();
        let mut hint = 0usize;
        loop {
            if let Some(limit) = config.timeout {
                if start.elapsed() > limit {
                    return Err(Error::Timeout(limit));
                }
            }
            let Some(level) = (0..=hint).rev().find(|&l| (0..queues).any(|q| self.pending(l, q) > 0)) else { break };
            let (task, own_queue, queue) = self.pick(level).ok_or_else(|| Error::Internal("no queue to run".into()))?;
            self.ensure_levels(level + 2)?;
            // Continuations plan for the largest fan-out: their statistics are not kept.
            let stats_of = &self.state.fanout[task];
            let (fanout, largest) =
                (if own_queue == 0 { stats_of.plan(level) } else { stats_of.largest() }, stats_of.largest());
            let spill_records = self.state.spill.len() as u64 / self.state.spill_stride;
            let mut n =
                plan::chunk(self.pending(level, queue), fanout, largest, self.state.max_capacity, spill_records);
            // Children: every pre-spawn channel one level down is empty (deepest level first).
            for t in 0..self.asm.tasks.len() {
                let q = self.asm.tasks[t].qbase as usize;
                let cap = self.ensure_capacity(level + 1, q, n * fanout)?;
                n = n.min((cap / fanout).max(1));
            }
            // Frames (and deferred returns) of this chunk go to the later queues of this level:
            // the next one, or a later one when a segment that spawned nothing ran on inline.
            let t = &self.asm.tasks[task];
            for frames_q in queue + 1..=t.qbase as usize + t.syncs + 1 {
                let waiting = self.pending(level, frames_q);
                let cap = self.ensure_capacity(level, frames_q, waiting + n)?;
                n = n.min(cap.saturating_sub(waiting));
            }
            if n == 0 {
                return Err(Error::Internal(format!("no room for frames of `{}` at level {level}", t.name)));
            }
            self.upload_table()?;
            let idx = level * queues + queue;
            let children_before = self.children_at(level + 1);
            let params = GcLaunch {
                table: self.state.table.ptr().addr(),
                nq: queues as u32,
                level: level as u32,
                levels: self.state.levels as u32,
                task: task as u32,
                first: self.state.heads[idx],
                count: n,
                fault: self.state.ctl.ptr().addr(),
                spill: self.state.spill.ptr().addr(),
                spill_used: self.state.ctl.ptr().offset(1).addr(),
                spill_capacity: self.state.spill.len() as u64,
                spill_stride: self.state.spill_stride,
                temps: self.state.temps.as_ref().map_or(0, TempHeap::<CudaDevice>::heap_addr),
                dev_stack_budget: SERIAL_STACK_BUDGET,
                pad0: 0,
            };
            // The kernel reads `count` elements from ticket `first` of a channel the host filled,
            // and writes only into allocated channels of the table (reservations are checked
            // against capacity, overflow spills) and into result slots inside frames of those
            // channels or the result cell.
            self.state.kernels[task][own_queue].launch(LaunchDims::cover(n as usize, THREADS), &params)?;
            self.state.heads[idx] += n;
            self.refresh()?;
            let spilled = self.state.host_ctl[1].reserved;
            if spilled > 0 {
                stats.spilled_segments += self.unspill(level + 1, spilled)?;
            }
            let seen = self.state.host_ctl[FIRST_CHANNEL_CTL + idx].max_fanout as u64;
            let children = self.children_at(level + 1) - children_before;
            let fan = &mut self.state.fanout[task];
            if own_queue == 0 {
                // Only pre-spawn launches feed the per-level mean fan-out.
                fan.record(level, n, children, seen);
            } else {
                fan.max_seen = fan.max_seen.max(seen);
            }
            stats.dispatches += 1;
            let ts = &mut stats.tasks[task];
            let per = if own_queue == 0 { &mut ts.tasks_per_level } else { &mut ts.continuations_per_level };
            if per.len() <= level {
                per.resize(level + 1, 0);
            }
            per[level] += n;
            stats.levels = stats.levels.max(level + 1);
            let used = &self.state.host_ctl[FIRST_CHANNEL_CTL..FIRST_CHANNEL_CTL + self.state.levels * queues];
            let live = used.iter().map(|c| c.reserved - c.freed);
            stats.peak_channel_occupancy = stats.peak_channel_occupancy.max(live.clone().max().unwrap_or(0) as usize);
            stats.peak_occupancy = stats.peak_occupancy.max(live.sum::<u64>() as usize);
            hint = level + 1;
        }
        let mut cell = [0u64; RESULT_WORDS];
        self.dev.dtoh_into(&self.state.result, &mut cell)?;
        // SAFETY: the root task's `gc_deliver` stored a value of `<root>_ret`, the C type the
        // compiler emits for `O` with the identical layout (a scalar, bool 0/1, an array, a tuple
        // whose size and offsets the program checks, or the empty unit), at the start of this
        // 64-byte, 8-aligned, zero-initialized cell; `O` fits (checked above).
        let value = unsafe { std::ptr::read_unaligned(cell.as_ptr().cast::<O>()) };
        stats.wall = start.elapsed();
        Ok((value, stats))
    }

    /// (task index, the task's own queue number, queue of the level) to run at `level`:
    /// continuations first.
    fn pick(&self, level: usize) -> Option<(usize, usize, usize)> {
        let conts = self.asm.tasks.iter().enumerate().find_map(|(task, t)| {
            // Latest segment first: its queue drains before an earlier segment's launch can send
            // frames into it, so those queues are empty (and can grow) whenever a launch needs them.
            (1..=t.syncs + 1).rev().find_map(|k| {
                let queue = t.qbase as usize + k;
                (self.pending(level, queue) > 0).then_some((task, k, queue))
            })
        });
        conts.or_else(|| {
            self.asm.tasks.iter().enumerate().find_map(|(task, t)| {
                let queue = t.qbase as usize;
                (self.pending(level, queue) > 0).then_some((task, 0, queue))
            })
        })
    }
}

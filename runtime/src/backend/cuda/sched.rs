//! The host-driven levelized scheduler of the cuda backend: the GPU twin of the cpu backend's
//! loop (`backend/cpu/mod.rs`). It owns the device channel table (one ring per (level, queue),
//! allocated as depth is reached), the per-channel counters it reads back after every launch, and
//! the choice of the next (channel, chunk) to launch. The device side is `gc_run` in
//! `kernels/include/gpu_cilk/runtime.cuh`.
//!
//! Each step: find the deepest level `L` with pending elements; pick a continuation queue of `L`
//! if one has work (every child of its frames is done, since nothing deeper is pending), else a
//! pre-spawn queue; launch `gc_<task>_q<k>` over at most `capacity / fan-out` of its elements, so
//! that the children fit in level `L + 1`; read the counters and the fault record back. A spawn
//! that still finds no room fails the run with `Error::PoolExhausted` (the element is never
//! silently dropped).

use super::memory::{DeviceBuffer, DeviceCopy, DevicePtr};
use super::module::{Kernel, LaunchDims, Program};
use super::program::AssembledProgram;
use super::CudaDevice;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::stats::{Stats, TaskStats};
use std::time::Instant;

/// `struct gc_ctl`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct GcCtl {
    reserved: u64,
    freed: u64,
    max_fanout: u32,
    overflow: u32,
}
// SAFETY: repr(C) integers, every bit pattern valid; mirrors `struct gc_ctl` in runtime.cuh.
unsafe impl DeviceCopy for GcCtl {}

/// `struct gc_chan`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub(crate) struct GcChan {
    data: u64,
    mask: u64,
    ctl: u64,
}
// SAFETY: repr(C) integers (device addresses), mirrors `struct gc_chan`.
unsafe impl DeviceCopy for GcChan {}

/// `struct gc_fault`.
#[repr(C)]
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct GcFault {
    code: u32,
    site: u32,
    task: u32,
    level: u32,
    detail: u64,
}
impl GcFault {
    /// Reads the fault record out of element 0 of the counter buffer, where the device wrote a
    /// `gc_fault` (24 bytes, like `gc_ctl`): `code`/`site` share the first word, `task`/`level`
    /// the second, `detail` the third (native byte order on both sides).
    fn from_ctl_slot(c: &GcCtl) -> GcFault {
        let w0 = c.reserved.to_ne_bytes();
        let w1 = c.freed.to_ne_bytes();
        let mut w2 = [0u8; 8];
        w2[..4].copy_from_slice(&c.max_fanout.to_ne_bytes());
        w2[4..].copy_from_slice(&c.overflow.to_ne_bytes());
        let half = |w: [u8; 8], i: usize| u32::from_ne_bytes([w[4 * i], w[4 * i + 1], w[4 * i + 2], w[4 * i + 3]]);
        GcFault {
            code: half(w0, 0),
            site: half(w0, 1),
            task: half(w1, 0),
            level: half(w1, 1),
            detail: u64::from_ne_bytes(w2),
        }
    }
}

const _: () = assert!(std::mem::size_of::<GcFault>() == std::mem::size_of::<GcCtl>());

/// `struct gc_launch`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
struct GcLaunch {
    table: u64,
    nq: u32,
    level: u32,
    levels: u32,
    task: u32,
    first: u64,
    count: u64,
    fault: u64,
    spill: u64,
    spill_used: u64,
    spill_capacity: u64,
    spill_stride: u64,
    /// The temporary heap (`gc_xheap*`, `alloc!`), 0 when no task allocates.
    temps: u64,
}
// SAFETY: repr(C) integers, mirrors `struct gc_launch`.
unsafe impl DeviceCopy for GcLaunch {}

/// `struct gc_temp_heap_params` (temp.cuh).
#[repr(C)]
#[derive(Clone, Copy)]
struct GcTempHeapInit {
    heap: u64,
    region: u64,
    bytes: u64,
}
// SAFETY: repr(C) integers (device addresses and a size), mirrors `gc_temp_heap_params`.
unsafe impl DeviceCopy for GcTempHeapInit {}

/// The device temporary heap of `alloc!`: the `gc_xheap` struct and its region.
struct TempHeap {
    heap: DeviceBuffer<u8>,
    region: DeviceBuffer<u8>,
}

/// `struct gc_regrow_params`.
#[repr(C)]
#[derive(Clone, Copy)]
struct GcRegrow {
    old_data: u64,
    new_data: u64,
    old_mask: u64,
    new_mask: u64,
    first: u64,
    count: u64,
    words: u64,
}
// SAFETY: repr(C) integers (device addresses and counts), mirrors `gc_regrow_params`.
unsafe impl DeviceCopy for GcRegrow {}

/// `struct gc_unspill_params`.
#[repr(C)]
#[derive(Clone, Copy)]
struct GcUnspill {
    table: u64,
    nq: u32,
    pad: u32,
    spill: u64,
    stride: u64,
    records: u64,
    sizes: u64,
    fault: u64,
}
// SAFETY: repr(C) integers, mirrors `gc_unspill_params`.
unsafe impl DeviceCopy for GcUnspill {}

/// `struct gc_spill_reset_params`.
#[repr(C)]
#[derive(Clone, Copy)]
struct GcSpillReset {
    table: u64,
    nq: u32,
    level: u32,
    spill_used: u64,
}
// SAFETY: repr(C) integers, mirrors `gc_spill_reset_params`.
unsafe impl DeviceCopy for GcSpillReset {}

/// `gc_root_params<T>`: the root's arguments, its result address and its channel.
#[repr(C)]
#[derive(Clone, Copy)]
struct RootParams<A: Copy> {
    args: A,
    dest: u64,
    chan: u64,
}
// SAFETY: only ever sent to the device as a kernel parameter (never read back); `A` is the
// `#[repr(C)]` Args struct the compiler emits with the identical layout as `<task>_args`, and
// `dest`/`chan` are device addresses, matching `gc_root_params<Task>` field for field.
unsafe impl<A: Copy + Send + Sync + 'static> DeviceCopy for RootParams<A> {}

const THREADS: u32 = 256;
/// First channel's index in the counter buffer (0: fault record, 1: spill pool usage).
const CTL0: usize = 2;
/// Smallest channel allocated (elements): room for a first task's loop of spawns.
const MIN_CAPACITY: u64 = 1 << 10;

/// One (level, queue) channel's device storage.
#[derive(Default)]
struct Chan {
    capacity: u64,
    buf: Option<DeviceBuffer<u8>>,
}

/// The device state of one program, kept across runs: channels keep their capacity, so a second
/// run of the same program allocates nothing.
pub(crate) struct GpuState {
    /// (pre-spawn element size, continuation element size) per task, as the device lays them out.
    sizes: Vec<(u64, u64)>,
    nq: usize,
    max_capacity: u64,
    max_levels: usize,
    chans: Vec<Chan>,
    table: DeviceBuffer<GcChan>,
    table_dirty: bool,
    /// Element 0: the fault record (a `gc_fault`, same size); element 1: the spill pool's bytes in
    /// use (its first word); element `CTL0 + level * nq + q`: the counters of channel (level, q).
    /// One read-back per launch brings all three.
    ctl: DeviceBuffer<GcCtl>,
    spill: DeviceBuffer<u8>,
    spill_stride: u64,
    /// Element size of each global queue, on the device (for `gc_unspill`).
    queue_sizes: DeviceBuffer<u64>,
    host_ctl: Vec<GcCtl>,
    heads: Vec<u64>,
    result: DeviceBuffer<u64>,
    /// Levels with channels in the table.
    levels: usize,
    /// Largest fan-out seen per task (all levels, all runs); the compiler's bound when it has one.
    fanout: Vec<u64>,
    /// Whether `fanout` is the compiler's static bound (else it is observed).
    static_fanout: Vec<bool>,
    /// Children spawned and tasks run per task and level (all runs): the mean fan-out of dynamic
    /// tasks, which varies with depth (queens: many children near the root, few near the leaves).
    spawned: Vec<Vec<(u64, u64)>>,
    /// `gc_<task>_q<k>` per task and queue, looked up once.
    kernels: Vec<Vec<Kernel<GcLaunch>>>,
    /// The temporary heap, made when some task of the program uses `alloc!`.
    temps: Option<TempHeap>,
}

impl GpuState {
    pub(crate) fn new(dev: &CudaDevice, program: &Program, asm: &AssembledProgram, config: &Config) -> Result<Self> {
        let n = asm.tasks.len();
        let layout = dev.alloc_zeroed::<u64>(2 * n)?;
        // SAFETY: `gc_layout(gc_u64* out)` writes out[0 .. 2 * tasks), which `layout` holds.
        let k = unsafe { program.kernel::<DevicePtr<u64>>("gc_layout")? };
        k.launch(LaunchDims::cover(1, 1), &layout.ptr())?;
        let raw = dev.dtoh(&layout)?;
        let nq = asm.queues_per_level as usize;
        let max_levels = config.max_depth.clamp(2, 1 << 14);
        let sizes: Vec<(u64, u64)> = (0..n).map(|i| (raw[2 * i], raw[2 * i + 1])).collect();
        let mut queue_sizes = vec![8u64; nq.max(1)];
        for (t, &(pre, cont)) in asm.tasks.iter().zip(&sizes) {
            let base = t.qbase as usize;
            queue_sizes[base] = pre;
            for k in 1..=t.syncs + 1 {
                queue_sizes[base + k] = cont;
            }
        }
        // 8-byte header + the largest pre-spawn element (they are 8-aligned: they end in a pointer).
        let spill_stride = 8 + sizes.iter().map(|s| s.0).max().unwrap_or(8).next_multiple_of(8);
        let temps = if asm.tasks.iter().any(|t| t.fragment.defs.contains("gc_alloc_temp<")) {
            let bytes = config.temp_heap_bytes.max(1 << 16);
            let th = TempHeap { heap: dev.alloc_zeroed::<u8>(1024)?, region: dev.alloc_zeroed::<u8>(bytes)? };
            let p = GcTempHeapInit { heap: th.heap.ptr().addr(), region: th.region.ptr().addr(), bytes: bytes as u64 };
            // SAFETY: `gc_temp_heap_init(gc_temp_heap_params)` (temp.cuh) initializes the 960-byte
            // `gc_xheap` at `heap` over the `bytes` bytes at `region`; both buffers are that large.
            let k = unsafe { program.kernel::<GcTempHeapInit>("gc_temp_heap_init")? };
            k.launch(LaunchDims::cover(1 << 16, 256), &p)?;
            Some(th)
        } else {
            None
        };
        Ok(GpuState {
            temps,
            sizes,
            nq,
            max_capacity: (config.device_level_capacity.max(1) as u64).next_power_of_two(),
            max_levels,
            chans: Vec::new(),
            table: dev.alloc_zeroed::<GcChan>(nq)?,
            table_dirty: true,
            ctl: dev.alloc_zeroed::<GcCtl>(CTL0 + nq * max_levels)?,
            host_ctl: vec![GcCtl::default(); CTL0 + nq * max_levels],
            spill: dev.alloc_zeroed::<u8>(config.device_spill_capacity.max(8))?,
            spill_stride,
            queue_sizes: dev.htod(&queue_sizes)?,
            heads: vec![0; nq * max_levels],
            result: dev.alloc_zeroed::<u64>(1)?,
            levels: 0,
            fanout: asm.tasks.iter().map(|t| t.fanout.map_or(0, |f| f as u64)).collect(),
            static_fanout: asm.tasks.iter().map(|t| t.fanout.is_some()).collect(),
            spawned: vec![Vec::new(); n],
            kernels: asm
                .tasks
                .iter()
                .map(|t| {
                    (0..=t.syncs + 1)
                        .map(|q| {
                            // SAFETY: every `gc_<task>_q<k>` kernel of an assembled program takes
                            // one `gc_launch` (written by `gc_run`, see runtime.cuh), mirrored by
                            // `GcLaunch`; launches below give it only channels of the table and
                            // counts the host planned (see the launch site).
                            unsafe { program.kernel::<GcLaunch>(&format!("gc_{}_q{}", t.fragment.name, q)) }
                        })
                        .collect::<Result<Vec<_>>>()
                })
                .collect::<Result<Vec<_>>>()?,
        })
    }
}

/// One run over a program's [`GpuState`].
pub(crate) struct GpuRun<'a> {
    dev: &'a CudaDevice,
    program: &'a Program,
    asm: &'a AssembledProgram,
    st: &'a mut GpuState,
}

impl<'a> GpuRun<'a> {
    pub(crate) fn new(
        dev: &'a CudaDevice,
        program: &'a Program,
        asm: &'a AssembledProgram,
        st: &'a mut GpuState,
    ) -> Self {
        GpuRun { dev, program, asm, st }
    }

    fn nq(&self) -> usize {
        self.st.nq
    }

    /// (task index, local queue) of global queue `q`.
    fn owner(&self, q: usize) -> (usize, usize) {
        for (ti, t) in self.asm.tasks.iter().enumerate() {
            let base = t.qbase as usize;
            if q >= base && q <= base + t.syncs + 1 {
                return (ti, q - base);
            }
        }
        (0, 0)
    }

    fn elem_size(&self, q: usize) -> u64 {
        let (ti, local) = self.owner(q);
        if local == 0 {
            self.st.sizes[ti].0
        } else {
            self.st.sizes[ti].1
        }
    }

    /// Makes room for `levels` levels in the table.
    fn ensure_levels(&mut self, levels: usize) -> Result<()> {
        if levels > self.st.max_levels {
            return Err(Error::DepthExceeded { task: self.asm.tasks[0].name, limit: self.st.max_levels });
        }
        while self.st.chans.len() < levels * self.nq() {
            self.st.chans.push(Chan::default());
        }
        if levels > self.st.levels {
            self.st.levels = levels;
            self.st.table_dirty = true;
        }
        Ok(())
    }

    /// Makes channel (level, q) hold at least `needed` elements. An empty channel is reallocated
    /// (power of two, at most `device_level_capacity`); a non-empty one keeps its storage.
    /// Returns its capacity.
    fn ensure_capacity(&mut self, level: usize, q: usize, needed: u64) -> Result<u64> {
        let i = level * self.nq() + q;
        let cap = self.st.chans[i].capacity;
        if cap >= needed || (cap > 0 && self.pending(level, q) > 0) {
            return Ok(cap);
        }
        let want = needed.max(MIN_CAPACITY).next_power_of_two().min(self.st.max_capacity).max(cap);
        if want == cap {
            return Ok(cap);
        }
        let bytes = (want * self.elem_size(q)) as usize;
        self.st.chans[i] = Chan { capacity: want, buf: Some(self.dev.alloc_zeroed::<u8>(bytes)?) };
        self.st.table_dirty = true;
        Ok(want)
    }

    fn upload_table(&mut self) -> Result<()> {
        if !self.st.table_dirty {
            return Ok(());
        }
        let nq = self.nq();
        let ctl_base = self.st.ctl.ptr();
        let table: Vec<GcChan> = (0..self.st.levels * nq)
            .map(|i| {
                let c = &self.st.chans[i];
                GcChan {
                    data: c.buf.as_ref().map_or(0, |b| b.ptr().addr()),
                    mask: c.capacity.saturating_sub(1),
                    ctl: ctl_base.offset(CTL0 + i).addr(),
                }
            })
            .collect();
        if self.st.table.len() < table.len() {
            self.st.table = self.dev.alloc_zeroed::<GcChan>(table.len().next_power_of_two())?;
        }
        self.dev.copy_htod(&table, &mut self.st.table)?;
        self.st.table_dirty = false;
        Ok(())
    }

    fn pending(&self, level: usize, q: usize) -> u64 {
        let i = level * self.nq() + q;
        self.st.host_ctl.get(CTL0 + i).map_or(0, |c| c.reserved - self.st.heads[i])
    }

    /// Reads back the counters of the levels in use, and the fault record.
    fn refresh(&mut self) -> Result<()> {
        let used = CTL0 + self.st.levels * self.nq();
        let (ctl, host) = (&self.st.ctl, &mut self.st.host_ctl[..used]);
        self.dev.dtoh_into(ctl, host)?;
        let fault = GcFault::from_ctl_slot(&self.st.host_ctl[0]);
        if fault.code != 0 {
            return Err(self.fault_error(&fault));
        }
        Ok(())
    }
    /// Children to plan per task when sizing a chunk at `level`: the compiler's bound when it has
    /// one; otherwise, since a spawn that finds no room spills instead of failing, the mean
    /// fan-out seen at this level with 50% headroom once 1024 tasks of it have run (the largest
    /// seen anywhere before that), so wide levels of a dynamic task are not cut into needlessly
    /// small chunks by one large fan-out near the root.
    fn plan_fanout(&self, ti: usize, level: usize) -> u64 {
        let max = self.st.fanout[ti].max(1);
        if self.st.static_fanout[ti] {
            return max;
        }
        match self.st.spawned[ti].get(level) {
            Some(&(children, tasks)) if tasks >= 1024 => (children * 3 / (2 * tasks)).clamp(1, max),
            _ => max,
        }
    }

    /// Elements ever reserved in the pre-spawn channels of `level` (all tasks).
    fn children_at(&self, level: usize) -> u64 {
        let nq = self.nq();
        self.asm.tasks.iter().map(|t| self.st.host_ctl[CTL0 + level * nq + t.qbase as usize].reserved).sum()
    }

    /// Moves the spilled elements of one launch into their channels at `level`: every channel
    /// that overflowed is grown (its live tickets copied into a ring big enough for them and all
    /// the records), then `gc_unspill` reserves and copies each record. Returns the channels grown.
    fn unspill(&mut self, level: usize, bytes: u64) -> Result<u64> {
        let records = bytes / self.st.spill_stride;
        let nq = self.nq();
        let mut grown = 0;
        for q in 0..nq {
            let i = level * nq + q;
            let c = self.st.host_ctl[CTL0 + i];
            if c.overflow == 0 {
                continue;
            }
            let live = c.reserved - c.freed;
            let old_cap = self.st.chans[i].capacity;
            let cap = (live + records).next_power_of_two().max(2 * old_cap);
            let words = self.elem_size(q) / 8;
            let new = self.dev.alloc_zeroed::<u8>((cap * words * 8) as usize)?;
            if let Some(old) = &self.st.chans[i].buf {
                let p = GcRegrow {
                    old_data: old.ptr().addr(),
                    new_data: new.ptr().addr(),
                    old_mask: old_cap - 1,
                    new_mask: cap - 1,
                    first: c.freed,
                    count: live,
                    words,
                };
                // SAFETY: `gc_regrow` reads tickets [first, first + count) of the old ring (its
                // live range, within its capacity) and writes them into the new ring of `cap >=
                // count` slots of the same element size; both buffers live until the kernel ends
                // (frees are ordered after it on the stream).
                let k = unsafe { self.program.kernel::<GcRegrow>("gc_regrow")? };
                k.launch(LaunchDims::cover((live * words).max(1) as usize, THREADS), &p)?;
            }
            self.st.chans[i] = Chan { capacity: cap, buf: Some(new) };
            self.st.table_dirty = true;
            grown += 1;
        }
        self.upload_table()?;
        let p = GcUnspill {
            table: self.st.table.ptr().addr(),
            nq: nq as u32,
            pad: 0,
            spill: self.st.spill.ptr().addr(),
            stride: self.st.spill_stride,
            records,
            sizes: self.st.queue_sizes.ptr().addr(),
            fault: self.st.ctl.ptr().addr(),
        };
        // SAFETY: `gc_unspill` reads `records` records of `stride` bytes from the pool (all
        // written by the finished launch) and copies each into a reserved slot of its channel,
        // whose element size `sizes[q]` it copies; reservations are checked against capacity.
        let k = unsafe { self.program.kernel::<GcUnspill>("gc_unspill")? };
        k.launch(LaunchDims::cover(records.max(1) as usize, THREADS), &p)?;
        let r = GcSpillReset {
            table: self.st.table.ptr().addr(),
            nq: nq as u32,
            level: level as u32,
            spill_used: self.st.ctl.ptr().offset(1).addr(),
        };
        // SAFETY: `gc_spill_reset` clears the overflow flags of the `nq` channels of `level` (all
        // in the table) and the pool counter; one block of `nq` threads.
        let k = unsafe { self.program.kernel::<GcSpillReset>("gc_spill_reset")? };
        k.launch(LaunchDims::cover(nq, nq.next_power_of_two().clamp(32, 1024) as u32), &r)?;
        self.refresh()?;
        Ok(grown)
    }

    fn fault_error(&self, f: &GcFault) -> Error {
        let task = self.asm.tasks.get(f.task as usize);
        let name = task.map_or("?", |t| t.name);
        let location = task
            .and_then(|t| t.fragment.sites.get(f.site as usize))
            .map_or_else(|| format!("fault site {}", f.site), |s| (*s).to_string());
        match f.code {
            6 => Error::PoolExhausted {
                pool: "device spill pool",
                task: name,
                level: f.level as usize + 1,
                capacity: (f.detail / self.st.spill_stride) as usize,
                knob: "device_spill_capacity",
            },
            7 => Error::TempHeapExhausted {
                heap: "device temporary heap",
                task: name,
                level: f.level as usize,
                elements: f.detail & ((1 << 56) - 1),
                bytes: (f.detail & ((1 << 56) - 1)).saturating_mul(f.detail >> 56),
                capacity: self.st.temps.as_ref().map_or(0, |t| t.region.len() as u64),
            },
            4 => Error::Internal(format!(
                "a frame of `{name}` at level {} found its continuation channel ({} slots) full",
                f.level, f.detail
            )),
            code => Error::DeviceFault {
                task: name,
                location,
                level: f.level as usize,
                message: match code {
                    1 => format!("index out of bounds: the index is {}", f.detail),
                    2 => "attempt to divide by zero".to_string(),
                    3 => "attempt to divide with overflow".to_string(),
                    5 => "shift amount out of range".to_string(),
                    c => format!("unknown device fault code {c}"),
                },
            },
        }
    }

    /// Runs the root call `args` to completion and returns the root's result.
    pub(crate) fn run<A: Copy + Send + Sync + 'static, O: Copy + Default>(
        &mut self,
        args: A,
        config: &Config,
    ) -> Result<(O, Stats)> {
        if std::mem::size_of::<O>() > 8 {
            return Err(Error::Internal("task results larger than 8 bytes are not supported on the device".into()));
        }
        let start = Instant::now();
        // Reset the counters of the previous run (channels keep their storage).
        self.dev.zero(&mut self.st.ctl)?;
        self.dev.zero(&mut self.st.result)?;
        self.st.host_ctl.iter_mut().for_each(|c| *c = GcCtl::default());
        self.st.heads.iter_mut().for_each(|h| *h = 0);
        self.ensure_levels(2)?;
        self.ensure_capacity(0, 0, 1)?;
        self.upload_table()?;
        // SAFETY: `gc_root(gc_root_params<root_task>)` writes one element into the channel given:
        // table entry 0 = (level 0, queue 0) = the root task's pre-spawn channel, just allocated.
        let k = unsafe { self.program.kernel::<RootParams<A>>("gc_root")? };
        let root = RootParams { args, dest: self.st.result.ptr().addr(), chan: self.st.table.ptr().addr() };
        k.launch(LaunchDims::cover(1, 1), &root)?;
        self.refresh()?;

        let mut stats = Stats {
            tasks: self.asm.tasks.iter().map(|t| TaskStats { name: t.name, ..TaskStats::default() }).collect(),
            ..Stats::default()
        };
        let nq = self.nq();
        let mut hint = 0usize;
        loop {
            if let Some(limit) = config.timeout {
                if start.elapsed() > limit {
                    return Err(Error::Timeout(limit));
                }
            }
            let Some(level) = (0..=hint).rev().find(|&l| (0..nq).any(|q| self.pending(l, q) > 0)) else { break };
            let (ti, local_q, gq) = self.pick(level).ok_or_else(|| Error::Internal("no queue to run".into()))?;
            self.ensure_levels(level + 2)?;
            // Continuations plan for the largest fan-out: their statistics are not kept.
            let fanout = if local_q == 0 { self.plan_fanout(ti, level) } else { self.st.fanout[ti].max(1) };
            let mut n = self.pending(level, gq).min((self.st.max_capacity / fanout).max(1));
            // Even at the largest fan-out seen, the children must fit in a full channel plus the
            // spill pool, so a planning error costs a spill, never the run.
            let spill_records = self.st.spill.len() as u64 / self.st.spill_stride;
            n = n.min(((self.st.max_capacity + spill_records) / self.st.fanout[ti].max(1)).max(1));
            // Children: every pre-spawn channel one level down is empty (deepest level first).
            for t in 0..self.asm.tasks.len() {
                let q = self.asm.tasks[t].qbase as usize;
                let cap = self.ensure_capacity(level + 1, q, n * fanout)?;
                n = n.min((cap / fanout).max(1));
            }
            // Frames (and deferred returns) of this chunk go to the later queues of this level:
            // the next one, or a later one when a segment that spawned nothing ran on inline.
            let t = &self.asm.tasks[ti];
            for frames_q in gq + 1..=t.qbase as usize + t.syncs + 1 {
                let waiting = self.pending(level, frames_q);
                let cap = self.ensure_capacity(level, frames_q, waiting + n)?;
                n = n.min(cap.saturating_sub(waiting));
            }
            if n == 0 {
                return Err(Error::Internal(format!("no room for frames of `{}` at level {level}", t.name)));
            }
            self.upload_table()?;
            let idx = level * nq + gq;
            let children_before = self.children_at(level + 1);
            let params = GcLaunch {
                table: self.st.table.ptr().addr(),
                nq: nq as u32,
                level: level as u32,
                levels: self.st.levels as u32,
                task: ti as u32,
                first: self.st.heads[idx],
                count: n,
                fault: self.st.ctl.ptr().addr(),
                spill: self.st.spill.ptr().addr(),
                spill_used: self.st.ctl.ptr().offset(1).addr(),
                spill_capacity: self.st.spill.len() as u64,
                spill_stride: self.st.spill_stride,
                temps: self.st.temps.as_ref().map_or(0, |t| t.heap.ptr().addr()),
            };
            // The kernel reads `count` elements from ticket `first` of a channel the host filled,
            // and writes only into allocated channels of the table (reservations are checked
            // against capacity, overflow spills) and into result slots inside frames of those
            // channels or the result cell.
            let k = &self.st.kernels[ti][local_q];
            k.launch(LaunchDims::cover(n as usize, THREADS), &params)?;
            self.st.heads[idx] += n;
            self.refresh()?;
            let spilled = self.st.host_ctl[1].reserved;
            if spilled > 0 {
                stats.spilled_segments += self.unspill(level + 1, spilled)?;
            }
            let seen = self.st.host_ctl[CTL0 + idx].max_fanout as u64;
            self.st.fanout[ti] = self.st.fanout[ti].max(seen);
            let children = self.children_at(level + 1) - children_before;
            if local_q == 0 {
                // Only pre-spawn launches feed the per-level mean fan-out.
                let per_level = &mut self.st.spawned[ti];
                if per_level.len() <= level {
                    per_level.resize(level + 1, (0, 0));
                }
                per_level[level].0 += children;
                per_level[level].1 += n;
            }
            stats.dispatches += 1;
            let ts = &mut stats.tasks[ti];
            let per = if local_q == 0 { &mut ts.tasks_per_level } else { &mut ts.continuations_per_level };
            if per.len() <= level {
                per.resize(level + 1, 0);
            }
            per[level] += n;
            stats.levels = stats.levels.max(level + 1);
            let used = &self.st.host_ctl[CTL0..CTL0 + self.st.levels * nq];
            let live = used.iter().map(|c| c.reserved - c.freed);
            stats.peak_channel_occupancy = stats.peak_channel_occupancy.max(live.clone().max().unwrap_or(0) as usize);
            stats.peak_occupancy = stats.peak_occupancy.max(live.sum::<u64>() as usize);
            hint = level + 1;
        }
        let mut cell = [0u64];
        self.dev.dtoh_into(&self.st.result, &mut cell)?;
        let raw = cell[0].to_ne_bytes();
        // SAFETY: the root task's `gc_deliver` stored a value of `<root>_ret`, the C type the
        // compiler emits for `O` with the identical layout (a scalar, bool 0/1, or the empty
        // unit), at the start of this 8-byte, 8-aligned, zero-initialized cell; `O` fits (checked).
        let value = unsafe { std::ptr::read_unaligned(raw.as_ptr().cast::<O>()) };
        stats.wall = start.elapsed();
        Ok((value, stats))
    }

    /// (task index, local queue, global queue) to run at `level`: continuations first.
    fn pick(&self, level: usize) -> Option<(usize, usize, usize)> {
        let conts = self.asm.tasks.iter().enumerate().find_map(|(ti, t)| {
            // Latest segment first: its queue drains before an earlier segment's launch can send
            // frames into it, so those queues are empty (and can grow) whenever a launch needs them.
            (1..=t.syncs + 1).rev().find_map(|k| {
                let gq = t.qbase as usize + k;
                (self.pending(level, gq) > 0).then_some((ti, k, gq))
            })
        });
        conts.or_else(|| {
            self.asm.tasks.iter().enumerate().find_map(|(ti, t)| {
                let gq = t.qbase as usize;
                (self.pending(level, gq) > 0).then_some((ti, 0, gq))
            })
        })
    }
}

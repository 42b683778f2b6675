//! The typed Rust↔CUDA contract of the cuda backend: one home for everything both sides must
//! agree on.
//!
//! - **Mirror structs** of the device library's parameter and record structs (`gc_ctl`,
//!   `gc_launch`, ...), each declared once with [`mirror!`], which also records its C name and
//!   field offsets. They are checked twice: [`layout_asserts`] turns sizes into C++
//!   `static_assert`s that every assembled program carries, so NVRTC (in CI too, without a GPU)
//!   rejects a program whose struct or field sizes differ from the Rust mirror (NVRTC has no
//!   constant `offsetof`); and [`layout_probe`] is a kernel that reports every offset as the
//!   device sees it, which [`check_layout`] compares with Rust when a program's state is made, so
//!   a moved field fails the first run loudly instead of corrupting memory.
//! - **Fault codes**: [`FaultCode`], the Rust side of `enum gc_fault_code` in `runtime.cuh`, also
//!   checked by `static_assert`s in every program.
//! - **Kernel names**: the one function that names a task's kernels ([`queue_kernel`]).
//! - **Task layouts**: what a generated task's argument struct looks like in Rust
//!   ([`crate::task::ArgsLayout`]), turned into `static_assert`s against `<task>_args` too.
//!
//! Owns the contract; must not own scheduling, memory management or program assembly (those
//! read it).

use super::memory::DeviceCopy;
use crate::error::{Error, Result};
use crate::task::ArgsLayout;
use std::fmt::Write as _;

/// A Rust struct that mirrors a C struct of the device library field for field.
pub(crate) trait Mirror {
    /// The C struct's name.
    const C_NAME: &'static str;
    /// `(field name, byte offset)` in declaration order.
    fn fields() -> Vec<(&'static str, usize)>;
    /// `size_of::<Self>()`.
    fn size() -> usize;
}

/// Declares a `#[repr(C)]` mirror of a device struct: the struct, its [`DeviceCopy`] and
/// [`Mirror`] impls. Field names must be the C field names.
macro_rules! mirror {
    ($(#[$m:meta])* $cname:literal => struct $name:ident { $($(#[$fm:meta])* $f:ident : $t:ty),* $(,)? }) => {
        mirror! { $(#[$m])* $cname => pub(crate) struct $name { $($(#[$fm])* $f: $t),* } }
    };
    ($(#[$m:meta])* $cname:literal => $vis:vis struct $name:ident { $($(#[$fm:meta])* $f:ident : $t:ty),* $(,)? }) => {
        $(#[$m])*
        #[repr(C)]
        #[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
        $vis struct $name { $($(#[$fm])* $vis $f: $t),* }
        // SAFETY: a `#[repr(C)]` struct of integers (device addresses are `u64`): plain data, every
        // bit pattern valid; `layout_asserts` makes every program check that the C side agrees.
        unsafe impl DeviceCopy for $name {}
        impl Mirror for $name {
            const C_NAME: &'static str = $cname;
            fn fields() -> Vec<(&'static str, usize)> {
                vec![$((stringify!($f), ::core::mem::offset_of!($name, $f))),*]
            }
            fn size() -> usize {
                ::core::mem::size_of::<$name>()
            }
        }
    };
}

mirror! {
    /// `struct gc_ctl`: one channel's counters, read back after every launch.
    "gc_ctl" => struct GcCtl { reserved: u64, freed: u64, max_fanout: u32, overflow: u32 }
}

mirror! {
    /// `struct gc_chan`: one (level, queue) channel in the table the host keeps on the device.
    "gc_chan" => struct GcChan { data: u64, mask: u64, ctl: u64 }
}

mirror! {
    /// `struct gc_fault`: the first fault of a run (the device writes it where the first counter
    /// block would be: same size as `gc_ctl`).
    "gc_fault" => struct GcFault { code: u32, site: u32, task: u32, level: u32, detail: u64 }
}

mirror! {
    /// `struct gc_launch`: the parameter of every levelized queue kernel `gc_<task>_q<k>`.
    "gc_launch" => struct GcLaunch {
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
        /// Stack bytes serial recursion through task device forms may use.
        dev_stack_budget: u32,
        pad0: u32,
    }
}

mirror! {
    /// `struct gc_regrow_params` of `gc_regrow`.
    "gc_regrow_params" => struct GcRegrow {
        old_data: u64, new_data: u64, old_mask: u64, new_mask: u64, first: u64, count: u64, words: u64,
    }
}

mirror! {
    /// `struct gc_unspill_params` of `gc_unspill`.
    "gc_unspill_params" => struct GcUnspill {
        table: u64, nq: u32, pad: u32, spill: u64, stride: u64, records: u64, sizes: u64, fault: u64,
    }
}

mirror! {
    /// `struct gc_spill_reset_params` of `gc_spill_reset`.
    "gc_spill_reset_params" => struct GcSpillReset { table: u64, nq: u32, level: u32, spill_used: u64 }
}

mirror! {
    /// `struct gc_temp_heap_params` of `gc_temp_heap_init` (temp.cuh).
    "gc_temp_heap_params" => struct GcTempHeapInit { heap: u64, region: u64, bytes: u64 }
}

mirror! {
    /// `struct gc_root_params` of `gc_root`: the root call's argument bytes (a device buffer of
    /// at least `sizeof(<root>_args)` bytes), where its result goes, and its channel.
    "gc_root_params" => struct GcRoot { args: u64, dest: u64, chan: u64 }
}

mirror! {
    /// `struct gc_psched`: the parameter of the persistent scheduler's kernel `gc_persistent`;
    /// its fields are `gc_psched`'s, documented there.
    "gc_psched" => pub(crate) struct GcPSched {
        pool: u64,
        pool_avail: u64,
        frames: u64,
        frame_bytes: u64,
        frame_count: u64,
        free_ring: u64,
        free_avail: u64,
        fresh: u64,
        ctl: u64,
        fault: u64,
        result: u64,
        stats: u64,
        temps: u64,
        root_args: u64,
        pool_slack: u64,
        lanes: u64,
        entry_bytes: u64,
        prio_heap: u64,
        prio_items: u64,
        prio_free: u64,
        prio_inbox: u64,
        prio_ready: u64,
        prio_stage: u64,
        prio_counters: u64,
        prio_slots: u64,
        lane_cap: u32,
        max_depth: u32,
        dev_stack_budget: u32,
        idle_max_ns: u32,
        prio_servers: u32,
        prio_window: u32,
        prio_reserve: u32,
        pad: u32,
    }
}

mirror! {
    /// `gc_heap<gc_prio_key>` (heap.cuh), the header of the persistent scheduler's ready heap of
    /// priority spawns (ready_heap.cuh): its node, state and partial-buffer arrays, the node size
    /// and capacity, the slot count (the power of two above the highest target index), then the
    /// words the device moves (zero in an empty heap, except `next_owner`: 1). The one host
    /// mirror of `gc_heap<Key>` (its layout does not depend on the key): public (doc-hidden,
    /// re-exported by `backend::cuda`) for the heap's GPU tests and benchmark too.
    #[allow(missing_docs)]
    "gc_heap<gc_prio_key>" => pub struct GcHeap {
        nodes: u64,
        states: u64,
        pbuf: u64,
        k: u64,
        capacity: u64,
        slots: u64,
        count: u64,
        pbuf_len: u64,
        /// 0 free, else the holder's `blockIdx.x + 1`.
        hlock: u64,
        next_owner: u64,
        error: u64,
        /// Device address of the per-block trace words (`GC_HEAP_TRACE_WORDS` each), 0: off.
        trace: u64,
        /// Heap-lock acquisitions so far (written under the heap lock).
        hlocks: u64,
        /// heap.cuh's TUNING word (0: its defaults).
        tune: u64,
        /// heap.cuh's PROFILE counters (null: off; only builds with -DGC_HEAP_PROFILE read it).
        prof: u64,
        pad0: u64,
        mode: u64,
        pad1: [u64; 15],
    }
}

impl GcHeap {
    /// An empty heap of `capacity` nodes of `k` keys over device arrays at `nodes` (`slots * k`
    /// keys, [`GcHeap::slots`]), `states` (`slots` zeroed words) and `pbuf` (`k` keys).
    pub fn empty(nodes: u64, states: u64, pbuf: u64, k: u64, capacity: u64) -> Self {
        GcHeap { nodes, states, pbuf, k, capacity, slots: Self::slots(capacity), next_owner: 1, ..Default::default() }
    }

    /// Node slots for `capacity` nodes: the power of two above the highest target index.
    pub fn slots(capacity: u64) -> u64 {
        1u64 << (64 - capacity.leading_zeros())
    }
}

/// Keys per node of the persistent scheduler's ready heap (`GC_PRIO_K`, ready_heap.cuh).
pub(crate) const PRIO_K: u64 = 256;
/// Bytes of one key of the ready heap (`gc_prio_key`: a u64 priority, a u32 slot, padding).
pub(crate) const PRIO_KEY_BYTES: u64 = 16;
/// Dynamic shared memory a server block of the ready heap needs: the heap's workspace
/// (`gc_heap_smem_bytes<GC_PRIO_K, gc_prio_key>()`: 64 bytes of control words and 5 K keys)
/// and the server's 8 control words.
pub(crate) const PRIO_SMEM_BYTES: u64 = 64 + 5 * PRIO_K * PRIO_KEY_BYTES + 64;

/// The C++ checks of programs with priority spawns (assembled after ready_heap.cuh): the heap
/// header's layout, the node size and the server's shared memory.
pub(crate) fn prio_asserts() -> String {
    let mut s = String::from("// ---- gpu-cilk ABI checks of the ready heap (runtime/src/backend/cuda/abi.rs)\n");
    mirror_asserts(GcHeap::C_NAME, GcHeap::size(), &GcHeap::fields(), &mut s);
    let _ = writeln!(s, "static_assert(GC_PRIO_K == {PRIO_K}, \"gpu-cilk ABI: GC_PRIO_K is not PRIO_K\");");
    let _ = writeln!(
        s,
        "static_assert(sizeof(gc_prio_key) == {PRIO_KEY_BYTES}, \"gpu-cilk ABI: gc_prio_key is not PRIO_KEY_BYTES\");"
    );
    let _ = writeln!(
        s,
        "static_assert(gc_heap_smem_bytes<GC_PRIO_K, gc_prio_key>() + 64 == {PRIO_SMEM_BYTES}, \
         \"gpu-cilk ABI: the ready heap's shared memory is not PRIO_SMEM_BYTES\");"
    );
    for (n, v) in [
        ("GC_PRIO_CTR_FREE", prio_ctr::FREE),
        ("GC_PRIO_CTR_IN", prio_ctr::IN),
        ("GC_PRIO_CTR_READY", prio_ctr::READY),
        ("GC_PRIO_CTR_FRESH", prio_ctr::FRESH),
        ("GC_PRIO_CTR_HELD", prio_ctr::HELD),
        ("GC_PRIO_CTR_WORDS", prio_ctr::WORDS),
    ] {
        let _ = writeln!(s, "static_assert({n} == {v}, \"gpu-cilk ABI: {n} is not {v} as in abi.rs\");");
    }
    s
}

/// The ready heap's counter words (`enum gc_prio_ctr`, ready_heap.cuh); word `i` lives at
/// `prio_counters + 16 * i` (its own 128-byte line).
pub(crate) mod prio_ctr {
    /// Freed item slots published and not yet claimed.
    pub const FREE: usize = 0;
    /// Keys published in the inbox and not yet claimed.
    pub const IN: usize = 1;
    /// Slots published in the ready queue and not yet claimed.
    pub const READY: usize = 2;
    /// Never-used slots handed out.
    pub const FRESH: usize = 3;
    /// Keys in the heap.
    pub const HELD: usize = 4;
    /// Counter words.
    pub const WORDS: usize = 5;
}

mirror! {
    /// `gc_tq<T>` (ticket_queue.cuh), the header of a ticket queue: its element and turn arrays,
    /// `capacity - 1`, the closed flag and the two ticket counters, each counter on its own line.
    "gc_tq<gc_u32>" => struct GcTq {
        data: u64,
        turns: u64,
        mask: u64,
        closed: u64,
        pad0: [u64; 12],
        tail: u64,
        pad1: [u64; 15],
        head: u64,
        pad2: [u64; 15],
    }
}

const _: () = assert!(std::mem::size_of::<GcFault>() == std::mem::size_of::<GcCtl>());
const _: () = assert!(std::mem::size_of::<GcTq>() == 384);

/// The word indices of `gc_psched::ctl` (`enum gc_pctl_word`).
pub(crate) mod pctl {
    /// The root has returned.
    pub(crate) const DONE: usize = 0;
    /// A fault was raised: stop.
    pub(crate) const ABORT: usize = 1;
    /// Warps that found no work.
    pub(crate) const HUNGRY: usize = 32;
    /// Words in the control block: two 128-byte lines, the polled stop words and the counters.
    pub(crate) const WORDS: usize = 64;
}

/// The counter indices of `gc_psched::stats` (`enum gc_pstat`).
pub(crate) mod pstat {
    /// Lane-stack entries promoted to pool frames.
    pub(crate) const PROMOTED: usize = 0;
    /// Items sent to the pool.
    pub(crate) const DONATED: usize = 1;
    /// Items taken from the pool (and the ready heap).
    pub(crate) const TAKEN: usize = 2;
    /// Deepest recursion level of a task.
    pub(crate) const MAX_DEPTH: usize = 3;
    /// Frame slots handed out from the never-used part of the pool (peak live frames, at most).
    pub(crate) const FRAMES: usize = 4;
    /// Entries handed to an idle lane of the same warp.
    pub(crate) const SHARED: usize = 5;
    /// Warp rounds that ran steps.
    pub(crate) const ROUNDS: usize = 6;
    /// Lane steps those rounds ran.
    pub(crate) const STEPS: usize = 7;
    /// Warp cycles spent finding no work, summed over warps.
    pub(crate) const CYC_IDLE: usize = 8;
    /// Warp cycles spent running steps.
    pub(crate) const CYC_RUN: usize = 9;
    /// Warp cycles in the scheduler loop in total.
    pub(crate) const CYC_ALL: usize = 10;
    /// Lane stacks that overflowed and spilled.
    pub(crate) const SPILLS: usize = 11;
    /// Priority spawns queued in the ready heap.
    pub(crate) const PRIO: usize = 12;
    /// Priority spawns that found every heap slot taken and were plain spawns.
    pub(crate) const PRIO_FULL: usize = 13;
    /// First per-task counter: `[TASKS + 2 t]` tasks started, `[TASKS + 2 t + 1]` resumed.
    pub(crate) const TASKS: usize = 14;
}

impl GcFault {
    /// Reads the fault record out of element 0 of the counter buffer, where the device wrote a
    /// `gc_fault` (24 bytes, like `gc_ctl`): `code`/`site` share the first word, `task`/`level`
    /// the second, `detail` the third (native byte order on both sides).
    pub(crate) fn from_ctl_slot(c: &GcCtl) -> GcFault {
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

    /// The fault's code, `None` for "no fault" (0) and for a code this runtime does not know.
    pub(crate) fn fault_code(&self) -> Option<FaultCode> {
        FaultCode::ALL.iter().copied().find(|c| *c as u32 == self.code)
    }
}

/// `enum gc_fault_code` (runtime.cuh): why a device-side check stopped a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum FaultCode {
    /// Index out of bounds (detail: the index).
    Index = 1,
    /// Division or remainder by zero.
    DivZero = 2,
    /// `MIN / -1`.
    DivOverflow = 3,
    /// A frame found its continuation channel full (the levelized scheduler under-planned).
    ChannelFull = 4,
    /// Shift amount out of range.
    Shift = 5,
    /// The spill pool is exhausted (detail: its bytes).
    SpillPool = 6,
    /// `alloc!` found no room in the temporary heap (detail: element size << 56 | count).
    TempPool = 7,
    /// A spawn deeper than `Config::max_depth` (detail: the limit).
    Depth = 8,
    /// Serial recursion through task device forms deeper than the device allows (detail: the limit).
    /// No longer raised (the limit is in bytes now: [`FaultCode::DevStack`]); kept for its number.
    DevDepth = 9,
    /// Serial recursion through task device forms used more stack than its budget and could not
    /// be restarted as a task (detail: the budget in bytes).
    DevStack = 10,
    /// The persistent scheduler's ready heap of priority spawns broke (detail: the heap's error
    /// word, or `1 << 32 | insert result`); an internal error, never a user's.
    PrioHeap = 11,
}

impl FaultCode {
    /// Every code, for lookups and the C++ checks.
    pub(crate) const ALL: [FaultCode; 11] = [
        FaultCode::Index,
        FaultCode::DivZero,
        FaultCode::DivOverflow,
        FaultCode::ChannelFull,
        FaultCode::Shift,
        FaultCode::SpillPool,
        FaultCode::TempPool,
        FaultCode::Depth,
        FaultCode::DevDepth,
        FaultCode::DevStack,
        FaultCode::PrioHeap,
    ];

    /// The C enumerator.
    pub(crate) fn c_name(self) -> &'static str {
        match self {
            FaultCode::Index => "GC_FAULT_INDEX",
            FaultCode::DivZero => "GC_FAULT_DIV_ZERO",
            FaultCode::DivOverflow => "GC_FAULT_DIV_OVERFLOW",
            FaultCode::ChannelFull => "GC_FAULT_CHANNEL_FULL",
            FaultCode::Shift => "GC_FAULT_SHIFT",
            FaultCode::SpillPool => "GC_FAULT_SPILL_POOL",
            FaultCode::TempPool => "GC_FAULT_TEMP_POOL",
            FaultCode::Depth => "GC_FAULT_DEPTH",
            FaultCode::DevDepth => "GC_FAULT_DEV_DEPTH",
            FaultCode::DevStack => "GC_FAULT_DEV_STACK",
            FaultCode::PrioHeap => "GC_FAULT_PRIO_HEAP",
        }
    }
}

/// The levelized kernel that consumes queue `queue` of the task whose C name is `task`:
/// `gc_<task>_q<queue>` (queue 0: pre-spawn elements; `k >= 1`: frames waiting for segment `k`).
pub(crate) fn queue_kernel(task: &str, queue: usize) -> String {
    format!("gc_{task}_q{queue}")
}

/// `static_assert`s of one mirror's size and field sizes.
fn mirror_asserts(c: &str, size: usize, fields: &[(&str, usize)], out: &mut String) {
    let _ = writeln!(
        out,
        "static_assert(sizeof({c}) == {size}, \"gpu-cilk ABI: sizeof({c}) differs from its Rust mirror ({size} bytes)\");"
    );
    for (i, (f, off)) in fields.iter().enumerate() {
        if f.starts_with("pad") {
            continue;
        }
        // A field's size is the distance to the next field (or the end), less padding: only an
        // upper bound in general, exact for these mirrors (each field is followed by one of no
        // stricter alignment, or ends on an 8-byte boundary).
        let end = fields.get(i + 1).map_or(size, |n| n.1);
        let _ = writeln!(
            out,
            "static_assert(sizeof((({c}*)0)->{f}) <= {}, \"gpu-cilk ABI: {c}::{f} is larger than in its Rust mirror\");",
            end - off
        );
    }
}

/// Which device scheduler a program is assembled for (each has its own device structs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceScheduler {
    /// The host-driven levelized scheduler (`levels.cuh`).
    Levels,
    /// The device-resident scheduler (`persistent.cuh`).
    Persistent,
}

/// Calls `f` with every mirror a program of `sched` has, as (C name, size, fields).
fn each_mirror(sched: DeviceScheduler, f: &mut dyn FnMut(&'static str, usize, Vec<(&'static str, usize)>)) {
    fn one<M: Mirror>(f: &mut dyn FnMut(&'static str, usize, Vec<(&'static str, usize)>)) {
        f(M::C_NAME, M::size(), M::fields());
    }
    one::<GcFault>(f);
    one::<GcTempHeapInit>(f);
    match sched {
        DeviceScheduler::Levels => {
            one::<GcCtl>(f);
            one::<GcChan>(f);
            one::<GcLaunch>(f);
            one::<GcRegrow>(f);
            one::<GcUnspill>(f);
            one::<GcSpillReset>(f);
            one::<GcRoot>(f);
        }
        DeviceScheduler::Persistent => {
            one::<GcPSched>(f);
            one::<GcTq>(f);
        }
    }
}

/// C++ `static_assert`s that the device library's structs and fault codes are laid out and
/// numbered as this runtime expects. Assembled into every program after the library headers.
pub(crate) fn layout_asserts(sched: DeviceScheduler) -> String {
    let mut s = String::from("// ---- gpu-cilk ABI checks (runtime/src/backend/cuda/abi.rs)\n");
    each_mirror(sched, &mut |c, size, fields| mirror_asserts(c, size, &fields, &mut s));
    for code in FaultCode::ALL {
        let (n, v) = (code.c_name(), code as u32);
        let _ = writeln!(s, "static_assert({n} == {v}, \"gpu-cilk ABI: {n} is not {v} as in FaultCode\");");
    }
    if sched == DeviceScheduler::Persistent {
        let words = [
            ("GC_PCTL_DONE", pctl::DONE),
            ("GC_PCTL_ABORT", pctl::ABORT),
            ("GC_PCTL_HUNGRY", pctl::HUNGRY),
            ("GC_PCTL_WORDS", pctl::WORDS),
            ("GC_PSTAT_PROMOTED", pstat::PROMOTED),
            ("GC_PSTAT_DONATED", pstat::DONATED),
            ("GC_PSTAT_TAKEN", pstat::TAKEN),
            ("GC_PSTAT_MAX_DEPTH", pstat::MAX_DEPTH),
            ("GC_PSTAT_FRAMES", pstat::FRAMES),
            ("GC_PSTAT_SHARED", pstat::SHARED),
            ("GC_PSTAT_ROUNDS", pstat::ROUNDS),
            ("GC_PSTAT_STEPS", pstat::STEPS),
            ("GC_PSTAT_CYC_IDLE", pstat::CYC_IDLE),
            ("GC_PSTAT_CYC_RUN", pstat::CYC_RUN),
            ("GC_PSTAT_CYC_ALL", pstat::CYC_ALL),
            ("GC_PSTAT_SPILLS", pstat::SPILLS),
            ("GC_PSTAT_PRIO", pstat::PRIO),
            ("GC_PSTAT_PRIO_FULL", pstat::PRIO_FULL),
            ("GC_PSTAT_TASKS", pstat::TASKS),
        ];
        for (n, v) in words {
            let _ = writeln!(s, "static_assert({n} == {v}, \"gpu-cilk ABI: {n} is not {v} as in abi.rs\");");
        }
    }
    s
}

/// `static_assert`s that a task's C argument struct `<c_name>_args` has the size of the Rust
/// `Args` (`layout`) and each field the Rust field's size. A struct with no fields is 0 bytes in
/// Rust and 1 in C++ (C++ has no empty objects); the runtime never relies on either size for it
/// (root arguments travel as bytes), so only fields are compared then. Offsets are compared by
/// [`check_layout`].
pub(crate) fn args_asserts(task: &str, c_name: &str, layout: &ArgsLayout) -> String {
    let mut s = String::new();
    let c = format!("{c_name}_args");
    if !layout.fields.is_empty() {
        let size = layout.size;
        let _ = writeln!(
            s,
            "static_assert(sizeof({c}) == {size}, \"gpu-cilk ABI: the arguments of `{task}` are {size} bytes in Rust but a different size in CUDA\");"
        );
    }
    for f in layout.fields {
        let (name, size) = (f.name, f.size);
        let _ = writeln!(
            s,
            "static_assert(sizeof((({c}*)0)->{name}) == {size}, \"gpu-cilk ABI: argument `{name}` of `{task}` is {size} bytes in Rust but not in CUDA\");"
        );
    }
    s
}

/// `static_assert`s that a task's C result type `<c_name>_ret` has the size of the Rust `Output`
/// (`layout`; unit is 0 bytes in Rust and 1 in C++, so a 0 is not compared) and, for a tuple,
/// each element `f<i>` the Rust element's size (offsets are probed: [`probes`]).
pub(crate) fn output_asserts(task: &str, c_name: &str, layout: &ArgsLayout) -> String {
    let mut s = String::new();
    let c = format!("{c_name}_ret");
    if layout.size > 0 {
        let size = layout.size;
        let _ = writeln!(
            s,
            "static_assert(sizeof({c}) == {size}, \"gpu-cilk ABI: the result of `{task}` is {size} bytes in Rust but a different size in CUDA\");"
        );
    }
    for f in layout.fields {
        let (name, size) = (f.name, f.size);
        let _ = writeln!(
            s,
            "static_assert(sizeof((({c}*)0)->{name}) == {size}, \"gpu-cilk ABI: element `{name}` of the result of `{task}` is {size} bytes in Rust but not in CUDA\");"
        );
    }
    s
}

/// One value the layout probe reports, with what it means.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Probe {
    /// e.g. "offset of gc_launch::count" or "offset of argument `n` of `fib`".
    pub(crate) what: String,
    /// The C++ expression the probe kernel stores.
    pub(crate) cxx: String,
    /// The value Rust expects.
    pub(crate) expected: u64,
}

/// Every layout fact the device must agree with, for the mirrors of `sched` and the arguments
/// and results of `tasks` (`(task name, C name, Rust layout of the arguments, of the result)`).
pub(crate) fn probes<'a>(
    sched: DeviceScheduler,
    tasks: impl IntoIterator<Item = (&'a str, &'a str, &'a ArgsLayout, &'a ArgsLayout)>,
) -> Vec<Probe> {
    let mut p = Vec::new();
    each_mirror(sched, &mut |c, size, fields| {
        p.push(Probe { what: format!("sizeof({c})"), cxx: format!("sizeof({c})"), expected: size as u64 });
        for (f, off) in fields {
            if f.starts_with("pad") {
                continue;
            }
            p.push(Probe {
                what: format!("offset of {c}::{f}"),
                cxx: format!("GC_OFFSETOF({c}, {f})"),
                expected: off as u64,
            });
        }
    });
    for (task, c_name, layout, output) in tasks {
        for f in layout.fields {
            p.push(Probe {
                what: format!("offset of argument `{}` of `{task}`", f.name),
                cxx: format!("GC_OFFSETOF({c_name}_args, {})", f.name),
                expected: f.offset as u64,
            });
        }
        // A tuple result: Rust chooses its element order, the C struct declares it.
        for f in output.fields {
            p.push(Probe {
                what: format!("offset of element `{}` of the result of `{task}`", f.name),
                cxx: format!("GC_OFFSETOF({c_name}_ret, {})", f.name),
                expected: f.offset as u64,
            });
        }
    }
    p
}

/// The probe kernel `gc_abi_layout(gc_u64* out)`, which stores every probe's value in order.
pub(crate) fn layout_probe(probes: &[Probe]) -> String {
    let mut s = String::from("extern \"C\" __global__ void gc_abi_layout(gc_u64* out) {\n");
    for (i, p) in probes.iter().enumerate() {
        let _ = writeln!(s, "  out[{i}] = (gc_u64)({});", p.cxx);
    }
    s.push_str("}\n");
    s
}

/// Compares what the probe kernel reported with what Rust expects: the first disagreement is an
/// error naming it (a gpu-cilk bug, or a `#[gpu_cilk]` argument type whose C translation has a
/// different layout).
pub(crate) fn check_layout(probes: &[Probe], device: &[u64]) -> Result<()> {
    for (p, &got) in probes.iter().zip(device) {
        if got != p.expected {
            return Err(Error::Internal(format!(
                "the CUDA program's layout differs from Rust's: {} is {got} on the device but {} in Rust",
                p.what, p.expected
            )));
        }
    }
    if device.len() < probes.len() {
        return Err(Error::Internal("the layout probe reported fewer values than asked".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_names() {
        assert_eq!(queue_kernel("fib", 2), "gc_fib_q2");
        assert_eq!(queue_kernel("queens_bits", 0), "gc_queens_bits_q0");
    }

    #[test]
    fn mirrors_record_their_fields() {
        assert_eq!(GcLaunch::C_NAME, "gc_launch");
        let f = GcLaunch::fields();
        assert_eq!(f.first(), Some(&("table", 0)));
        assert_eq!(f.iter().find(|(n, _)| *n == "count").map(|x| x.1), Some(32));
        assert_eq!(GcLaunch::size(), 96);
    }

    /// The fault codes in `runtime.cuh`'s enum are exactly [`FaultCode::ALL`] (the programs also
    /// check each value with a `static_assert`; this also catches a code added on one side only).
    #[test]
    fn fault_codes_match_the_header() {
        let h = gpu_cilk_kernels::RUNTIME_CUH;
        let start = h.find("enum gc_fault_code").expect("enum in runtime.cuh");
        let body = &h[start..start + h[start..].find("};").expect("end of enum")];
        let mut found = Vec::new();
        for line in body.lines() {
            let line = line.split("//").next().unwrap_or("").trim().trim_end_matches(',');
            if let Some((name, value)) = line.split_once('=') {
                let (name, value) = (name.trim(), value.trim());
                if name.starts_with("GC_FAULT_") {
                    found.push((name.to_string(), value.parse::<u32>().expect("numeric code")));
                }
            }
        }
        let ours: Vec<(String, u32)> = FaultCode::ALL.iter().map(|c| (c.c_name().to_string(), *c as u32)).collect();
        assert_eq!(found, ours);
    }

    #[test]
    fn layout_checks_name_the_first_difference() {
        let p = probes(DeviceScheduler::Levels, []);
        let good: Vec<u64> = p.iter().map(|x| x.expected).collect();
        assert!(check_layout(&p, &good).is_ok());
        let mut bad = good.clone();
        let i = p.iter().position(|x| x.what == "offset of gc_launch::count").expect("probe");
        bad[i] = 40;
        let e = check_layout(&p, &bad).expect_err("moved field").to_string();
        assert!(e.contains("offset of gc_launch::count is 40 on the device but 32 in Rust"), "{e}");
        assert!(layout_probe(&p).contains("] = (gc_u64)(sizeof(gc_ctl));"));
    }

    #[test]
    fn tuple_results_are_probed_and_sized() {
        use crate::task::FieldLayout;
        const FIELDS: &[FieldLayout] =
            &[FieldLayout { name: "f0", offset: 8, size: 4 }, FieldLayout { name: "f1", offset: 0, size: 8 }];
        let out = ArgsLayout { size: 16, fields: FIELDS };
        let none = ArgsLayout::UNCHECKED;
        let p = probes(DeviceScheduler::Persistent, [("mm", "mm", &none, &out)]);
        let f0 = p.iter().find(|x| x.what == "offset of element `f0` of the result of `mm`").expect("probe");
        assert_eq!((f0.cxx.as_str(), f0.expected), ("GC_OFFSETOF(mm_ret, f0)", 8));
        let a = output_asserts("mm", "mm", &out);
        assert!(a.contains("static_assert(sizeof(mm_ret) == 16"), "{a}");
        assert!(a.contains("sizeof(((mm_ret*)0)->f1) == 8"), "{a}");
        assert!(output_asserts("unit", "unit", &ArgsLayout { size: 0, fields: &[] }).is_empty());
    }

    #[test]
    fn fault_records_decode() {
        let f = GcFault { code: 2, site: 7, task: 1, level: 3, detail: 99 };
        // SAFETY: (test) both are 24-byte repr(C) plain-data structs.
        let c: GcCtl = unsafe { std::mem::transmute(f) };
        assert_eq!(GcFault::from_ctl_slot(&c), f);
        assert_eq!(f.fault_code(), Some(FaultCode::DivZero));
    }
}

//! Runtime configuration: which backend and scheduler, how many threads, how much channel memory,
//! which limits.
//! Values come from code ([`Config`]'s fields and builder methods) or from `GPU_CILK_*`
//! environment variables ([`Config::from_env`]); this module parses and validates them and owns
//! nothing else.

use crate::error::{Error, Result};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// Which backend runs the task tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// The plain recursive function on the calling thread: the oracle.
    Serial,
    /// The generated sub-kernels over levelized channel stacks on all host cores.
    Cpu,
    /// The generated CUDA sub-kernels on an NVIDIA GPU.
    Cuda,
    /// The cuda backend's persistent scheduler and generated device code on the host simulation
    /// of device code (g++, host threads, one-lane warps): slow, for testing the device scheduler
    /// without a GPU.
    CudaSim,
    /// CUDA when a usable GPU, driver and NVRTC are present, otherwise cpu (with one log line).
    Auto,
}

impl BackendKind {
    /// The lower-case name used by `GPU_CILK_BACKEND` and `--backend`.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Serial => "serial",
            BackendKind::Cpu => "cpu",
            BackendKind::Cuda => "cuda",
            BackendKind::CudaSim => "cuda-sim",
            BackendKind::Auto => "auto",
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for BackendKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "serial" => Ok(BackendKind::Serial),
            "cpu" => Ok(BackendKind::Cpu),
            "cuda" | "gpu" => Ok(BackendKind::Cuda),
            "cuda-sim" | "sim" => Ok(BackendKind::CudaSim),
            "auto" | "" => Ok(BackendKind::Auto),
            _ => Err(Error::UnknownBackend(s.to_string())),
        }
    }
}

/// Which scheduler a backend runs the task tree with (`GPU_CILK_SCHEDULER`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum SchedulerKind {
    /// The backend's default: `stealing` on the cpu backend, `persistent` on the cuda backend.
    #[default]
    Auto,
    /// Level-synchronous: drain the deepest level with work, one dispatch per (channel, chunk).
    /// The cpu backend's levelized scheduler is the host twin of the cuda backend's host-driven
    /// loop (kept for differential tests).
    Levels,
    /// Work stealing (cpu backend): per-worker deques, frames with join counters, lazy task
    /// creation.
    Stealing,
    /// One resident grid runs the whole tree (cuda backend only).
    Persistent,
}

impl SchedulerKind {
    /// The lower-case name used by `GPU_CILK_SCHEDULER`.
    pub fn name(self) -> &'static str {
        match self {
            SchedulerKind::Auto => "auto",
            SchedulerKind::Levels => "levels",
            SchedulerKind::Stealing => "stealing",
            SchedulerKind::Persistent => "persistent",
        }
    }
}

impl fmt::Display for SchedulerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SchedulerKind {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.trim().to_ascii_lowercase().as_str() {
            "auto" | "" => Ok(SchedulerKind::Auto),
            "levels" | "levelized" => Ok(SchedulerKind::Levels),
            "stealing" | "steal" | "work-stealing" => Ok(SchedulerKind::Stealing),
            "persistent" => Ok(SchedulerKind::Persistent),
            _ => Err(Error::Config(format!(
                "unknown scheduler `{s}`: expected one of auto, levels, stealing, persistent (GPU_CILK_SCHEDULER)"
            ))),
        }
    }
}

/// Tunables of a [`crate::Runtime`]. `Config::default()` suits most programs.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The backend (`GPU_CILK_BACKEND`, default `auto`).
    pub backend: BackendKind,
    /// The scheduler (`GPU_CILK_SCHEDULER`, default `auto`: `stealing` on the cpu backend).
    pub scheduler: SchedulerKind,
    /// Host worker threads for the cpu backend; 0 = one per core (`GPU_CILK_THREADS`).
    pub threads: usize,
    /// Stack size of each cpu worker thread in bytes (`GPU_CILK_STACK_BYTES`, default 64 MiB).
    /// The stealing scheduler runs spawns it does not turn into tasks as plain calls on the
    /// worker's stack (the serial function, for the deepest of them), so a deep recursion below
    /// such a call needs stack like the serial function does.
    pub stack_bytes: usize,
    /// Stealing scheduler: a spawn becomes a stealable task while the spawning worker's own deque
    /// holds fewer than this many tasks; otherwise it runs at once on the spawning worker
    /// (`GPU_CILK_SPAWN_QUEUE`, default 2; `usize::MAX` makes every spawn a task).
    pub spawn_queue: usize,
    /// Stealing scheduler: while some worker is idle, a spawn in the splitting region (the first
    /// [`Config::inline_nesting`] levels below the last stolen task) becomes a task while the own
    /// deque holds fewer than this many (at least [`Config::spawn_queue`]): wide spawners (queens' loop
    /// of up to 15 children) then leave thieves more than two pieces, and narrow ones (fib) are
    /// unaffected once every worker is busy (`GPU_CILK_SPAWN_QUEUE_IDLE`, default 4; measured with
    /// scripts/cpu-tune.sh on 16 cores, docs/notes/benchmark-history.md).
    pub spawn_queue_idle: usize,
    /// Stealing scheduler: how many levels of spawns, below the last task a worker stole (counted
    /// on through the tasks it spawned and runs itself; the `i`-th spawn of a segment counts as
    /// the bits of `i`, so a loop of `k` spawns like a binary splitting of `k`), a spawn that runs
    /// at once still runs as sub-kernels (so its own spawns can still become tasks for idle
    /// workers); deeper ones call the generated serial function, which has no scheduling cost but
    /// cannot be split (`GPU_CILK_INLINE_NESTING`, default 8; none on one worker; swept on the
    /// H100 host's 16 cores and on 2 cores, docs/notes/benchmark-history.md). This is where a run's splitting
    /// region starts: it deepens during the run after a serial call that starved another worker,
    /// and no spawn becomes a serial call while a worker starves (docs/architecture.md, "The
    /// stealing scheduler").
    pub inline_nesting: usize,
    /// cpu stealing scheduler: how long a pool thread stays awake after a run, in microseconds
    /// (spinning, then yielding its core), ready to join the backend's next run at once instead
    /// of sleeping until that run's broadcast wakes it (`GPU_CILK_LINGER_US`, default 200; 0 =
    /// off; at most 10,000). Back-to-back runs start without waiting for thread wake-ups;
    /// an idle program pays at most this much CPU per thread after each run.
    pub linger_us: u64,
    /// cpu stealing scheduler: how long an idle worker keeps looking for work during a run, in
    /// microseconds, before it parks (`GPU_CILK_IDLE_AWAKE_US`, default 0: after 7 rounds of
    /// spinning and 32 of yielding, as rayon's workers do; at most 10,000). A parked worker is
    /// woken by the next task pushed while no idle worker is awake, or after 100 µs.
    pub idle_awake_us: u64,
    /// cpu stealing scheduler, programs with priority spawns: how many prioritized tasks the run's
    /// best-first queue holds at most (`GPU_CILK_PRIORITY_QUEUE_CAPACITY`, default 1024; at
    /// least 1). A priority spawn that finds it full is a plain spawn: it runs depth-first on the
    /// spawning worker (a stealable task, an inline call or a serial call, as lazy task creation
    /// decides), so memory stays proportional to the live work (this many queued tasks plus, per
    /// worker, a depth-first path), never to every pending node of a best-first search.
    /// `knapsack --kind sc --n 200 --r 7000` on 2 cores: 1024 → 5.9 s, 9 MB resident; 65536 →
    /// 44 s, 249 MB (the same 1.1e8 nodes; each through the queue costs its lock and heap).
    pub priority_queue_capacity: usize,
    /// Channel elements one recursion level may hold before the scheduler stops dispatching more
    /// of the level above it (`GPU_CILK_LEVEL_CAPACITY`). The scheduler dispatches at most
    /// `level_capacity / fan-out` tasks at a time, so children always fit.
    pub level_capacity: usize,
    /// Elements per channel segment; channels grow and shrink by whole segments
    /// (`GPU_CILK_SEGMENT_CAPACITY`). Small values exercise spilling.
    pub segment_capacity: usize,
    /// Total channel elements (channel elements and frames, all tasks and levels) the run may hold
    /// at once before it stops with [`Error::PoolExhausted`] (`GPU_CILK_POOL_CAPACITY`).
    pub pool_capacity: usize,
    /// Elements per device channel (one per task, queue and level) on the cuda backend
    /// (`GPU_CILK_DEVICE_LEVEL_CAPACITY`); the scheduler launches at most `capacity / fan-out`
    /// elements at a time so children fit.
    pub device_level_capacity: usize,
    /// Bytes of the device spill pool (`GPU_CILK_DEVICE_SPILL_CAPACITY`): a spawn that finds its
    /// channel full goes there, and the scheduler grows the channel and moves it in after the
    /// launch; only an exhausted pool stops a run.
    pub device_spill_capacity: usize,
    /// Deepest recursion level allowed (`GPU_CILK_MAX_DEPTH`).
    pub max_depth: usize,
    /// Persistent device scheduler: resident blocks of 8 warps per multiprocessor
    /// (`GPU_CILK_DEVICE_BLOCKS_PER_SM`, default 1; 0 = as many as fit). One block per
    /// multiprocessor halves the warps that poll for work and share the pool; measured on an H100
    /// it took fib(35) from 7.0 to 3.1 ms together with the threshold of 16.
    pub device_blocks_per_sm: usize,
    /// Persistent device scheduler: the longest an idle warp sleeps between two looks for work,
    /// in nanoseconds (`GPU_CILK_DEVICE_IDLE_MAX_NS`, default 2048; it backs off from 64). Longer
    /// sleeps take load off the memory system when few warps have work (deep, narrow trees);
    /// shorter ones spread new work faster.
    pub device_idle_max_ns: usize,
    /// Persistent device scheduler: entries of each lane's task stack in global memory (0, the
    /// default: the lane's share of 4 GiB, between 4 and 64 KiB, as entries of the program's
    /// largest frame, between 8 and 256; rounded down to a power of two).
    /// A path deeper than its stack spills its oldest frames into the frame pool and its pending
    /// spawns into the global pool, so this trades memory (lanes × entries × the largest frame)
    /// for spills and limits nothing a program can do; the tests set it tiny to exercise the
    /// spill, and a program with very large frames may lower it to save device memory.
    pub device_lane_stack: usize,
    /// Persistent device scheduler, programs with priority spawns: item slots of the ready heap
    /// (`GPU_CILK_DEVICE_PRIORITY_SLOTS`, default 2097152 = 2^21). Every priority spawn waiting
    /// in the heap holds one; a spawn that finds none left becomes a plain spawn (counted in
    /// [`Stats::priority_fallbacks`](crate::Stats::priority_fallbacks)). Memory: slots × (item
    /// bytes + about 56 bytes of keys and queue entries).
    pub device_priority_slots: usize,
    /// Persistent device scheduler, programs with priority spawns: blocks that serve the ready
    /// heap instead of running tasks (`GPU_CILK_DEVICE_PRIORITY_SERVERS`, default 2): each moves
    /// spawned keys into the heap and the best keys out, one heap operation of 256 keys at a
    /// time; two let one insert while the other deletes. 0: no heap, priority spawns are plain
    /// spawns (the order of the levels scheduler and of programs without priorities).
    pub device_priority_servers: usize,
    /// Persistent device scheduler, programs with priority spawns: the servers keep at least this
    /// many prioritized items taken out of the heap, best first, ready for idle warps
    /// (`GPU_CILK_DEVICE_PRIORITY_WINDOW`, default 2048). Larger keeps more warps busy; smaller
    /// keeps the order closer to strictly best first.
    pub device_priority_window: usize,
    /// Persistent device scheduler, programs with priority spawns: a priority spawn goes into
    /// the ready heap while no warp is idle and fewer than this many prioritized items wait
    /// there; otherwise it runs depth-first on its lane like a plain spawn
    /// (`GPU_CILK_DEVICE_PRIORITY_RESERVE`, default 0). Measured on an H100 (docs/notes/benchmark-history.md, knapsack): every node through
    /// the heap made knapsack 40× slower; a reserve of 8192 made sc 800 bimodal (half the runs
    /// explored 15–50× more nodes, up to 8.4 s against 0.45 s) and was slower on every type than
    /// 0. At or above [`Config::device_priority_slots`]: every priority spawn goes through the
    /// heap (best first in batches).
    pub device_priority_reserve: usize,
    /// Persistent device scheduler: bytes of the device frame pool, which holds one frame per
    /// task waiting for children (`GPU_CILK_DEVICE_FRAME_POOL_BYTES`, default 1 GiB).
    pub device_frame_pool_bytes: usize,
    /// Bytes of the heap that task-scoped temporaries (`alloc!`) come from, per run on the cpu
    /// backend and per runtime on the device (`GPU_CILK_TEMP_HEAP_BYTES`). Made only when a
    /// program uses `alloc!`.
    pub temp_heap_bytes: usize,
    /// Longest a run may take; `None` = no limit (`GPU_CILK_TIMEOUT_MS`).
    pub timeout: Option<Duration>,
    /// cpu stealing scheduler: check that the slice ranges a segment hands to its children do
    /// not overlap where one of them is `&mut` (a determinacy race), and fail the run with
    /// `Error::SliceRace` naming both spawn sites (`GPU_CILK_CHECK_RACES=1`, default off). See
    /// "Slices" in `docs/dsl.md` for what it covers.
    pub check_races: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            backend: BackendKind::Auto,
            scheduler: SchedulerKind::Auto,
            threads: 0,
            stack_bytes: 64 << 20,
            spawn_queue: 2,
            spawn_queue_idle: 4,
            inline_nesting: 8,
            linger_us: 200,
            idle_awake_us: 0,
            priority_queue_capacity: 1 << 10,
            level_capacity: 1 << 14,
            segment_capacity: 1 << 14,
            pool_capacity: 1 << 26,
            device_level_capacity: 1 << 23,
            device_spill_capacity: 1 << 30,
            max_depth: 1 << 21,
            device_blocks_per_sm: 1,
            device_idle_max_ns: 2048,
            device_lane_stack: 0,
            device_frame_pool_bytes: 1 << 30,
            device_priority_slots: 1 << 21,
            device_priority_servers: 2,
            device_priority_window: 2048,
            device_priority_reserve: 0,
            temp_heap_bytes: 1 << 26,
            timeout: None,
            check_races: false,
        }
    }
}

impl Config {
    /// Defaults overridden by any `GPU_CILK_*` variables that are set.
    pub fn from_env() -> Result<Self> {
        let mut c = Config::default();
        if let Ok(v) = std::env::var("GPU_CILK_BACKEND") {
            c.backend = v.parse()?;
        }
        fn num(name: &str) -> Result<Option<usize>> {
            match std::env::var(name) {
                Ok(v) => v
                    .trim()
                    .parse::<usize>()
                    .map(Some)
                    .map_err(|_| Error::Config(format!("{name}={v:?} is not a non-negative integer"))),
                Err(_) => Ok(None),
            }
        }
        if let Ok(v) = std::env::var("GPU_CILK_SCHEDULER") {
            c.scheduler = v.parse()?;
        }
        if let Some(v) = num("GPU_CILK_THREADS")? {
            c.threads = v;
        }
        if let Some(v) = num("GPU_CILK_STACK_BYTES")? {
            c.stack_bytes = v;
        }
        if let Some(v) = num("GPU_CILK_SPAWN_QUEUE")? {
            c.spawn_queue = v;
        }
        if let Some(v) = num("GPU_CILK_SPAWN_QUEUE_IDLE")? {
            c.spawn_queue_idle = v;
        }
        if let Some(v) = num("GPU_CILK_INLINE_NESTING")? {
            c.inline_nesting = v;
        }
        if let Some(v) = num("GPU_CILK_LINGER_US")? {
            c.linger_us = v as u64;
        }
        if let Some(v) = num("GPU_CILK_IDLE_AWAKE_US")? {
            c.idle_awake_us = v as u64;
        }
        if let Some(v) = num("GPU_CILK_PRIORITY_QUEUE_CAPACITY")? {
            c.priority_queue_capacity = v;
        }
        if let Some(v) = num("GPU_CILK_LEVEL_CAPACITY")? {
            c.level_capacity = v;
        }
        if let Some(v) = num("GPU_CILK_SEGMENT_CAPACITY")? {
            c.segment_capacity = v;
        }
        if let Some(v) = num("GPU_CILK_POOL_CAPACITY")? {
            c.pool_capacity = v;
        }
        if let Some(v) = num("GPU_CILK_DEVICE_LEVEL_CAPACITY")? {
            c.device_level_capacity = v;
        }
        if let Some(v) = num("GPU_CILK_DEVICE_SPILL_CAPACITY")? {
            c.device_spill_capacity = v;
        }
        if let Some(v) = num("GPU_CILK_MAX_DEPTH")? {
            c.max_depth = v;
        }
        if let Ok(v) = std::env::var("GPU_CILK_CHECK_RACES") {
            c.check_races = match v.trim().to_ascii_lowercase().as_str() {
                "1" | "true" | "yes" | "on" => true,
                "0" | "false" | "no" | "off" => false,
                _ => return Err(Error::Config(format!("GPU_CILK_CHECK_RACES={v:?} is not 0 or 1"))),
            };
        }
        if let Some(v) = num("GPU_CILK_DEVICE_BLOCKS_PER_SM")? {
            c.device_blocks_per_sm = v;
        }
        if let Some(v) = num("GPU_CILK_DEVICE_IDLE_MAX_NS")? {
            c.device_idle_max_ns = v;
        }
        if let Some(v) = num("GPU_CILK_DEVICE_LANE_STACK")? {
            c.device_lane_stack = v;
        }
        if let Some(v) = num("GPU_CILK_DEVICE_FRAME_POOL_BYTES")? {
            c.device_frame_pool_bytes = v;
        }
        if let Some(v) = num("GPU_CILK_DEVICE_PRIORITY_SLOTS")? {
            c.device_priority_slots = v;
        }
        if let Some(v) = num("GPU_CILK_DEVICE_PRIORITY_SERVERS")? {
            c.device_priority_servers = v;
        }
        if let Some(v) = num("GPU_CILK_DEVICE_PRIORITY_WINDOW")? {
            c.device_priority_window = v;
        }
        if let Some(v) = num("GPU_CILK_DEVICE_PRIORITY_RESERVE")? {
            c.device_priority_reserve = v;
        }
        if let Some(v) = num("GPU_CILK_TEMP_HEAP_BYTES")? {
            c.temp_heap_bytes = v;
        }
        if let Some(v) = num("GPU_CILK_TIMEOUT_MS")? {
            c.timeout = Some(Duration::from_millis(v as u64));
        }
        c.validate()?;
        Ok(c)
    }

    /// Sets the backend.
    pub fn backend(mut self, backend: BackendKind) -> Self {
        self.backend = backend;
        self
    }

    /// Sets the scheduler.
    pub fn scheduler(mut self, scheduler: SchedulerKind) -> Self {
        self.scheduler = scheduler;
        self
    }

    /// Sets the stack size of the cpu worker threads in bytes.
    pub fn stack_bytes(mut self, bytes: usize) -> Self {
        self.stack_bytes = bytes;
        self
    }

    /// Sets the stealing scheduler's task-creation threshold ([`Config::spawn_queue`]).
    pub fn spawn_queue(mut self, n: usize) -> Self {
        self.spawn_queue = n;
        self
    }

    /// Sets the stealing scheduler's task-creation threshold while a worker is idle
    /// ([`Config::spawn_queue_idle`]).
    pub fn spawn_queue_idle(mut self, n: usize) -> Self {
        self.spawn_queue_idle = n;
        self
    }

    /// Sets the stealing scheduler's sub-kernel inline depth ([`Config::inline_nesting`]).
    pub fn inline_nesting(mut self, n: usize) -> Self {
        self.inline_nesting = n;
        self
    }

    /// Sets how long the stealing scheduler's pool threads stay awake after a run, in
    /// microseconds ([`Config::linger_us`]; 0 = off).
    pub fn linger_us(mut self, us: u64) -> Self {
        self.linger_us = us;
        self
    }

    /// Sets how long an idle worker of the stealing scheduler keeps looking for work before it
    /// parks, in microseconds ([`Config::idle_awake_us`]).
    pub fn idle_awake_us(mut self, us: u64) -> Self {
        self.idle_awake_us = us;
        self
    }

    /// Sets the number of host worker threads (0 = one per core).
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// Sets the per-level capacity the scheduler sizes chunks by.
    pub fn level_capacity(mut self, n: usize) -> Self {
        self.level_capacity = n;
        self
    }

    /// Sets the channel segment size.
    pub fn segment_capacity(mut self, n: usize) -> Self {
        self.segment_capacity = n;
        self
    }

    /// Sets the total element pool.
    pub fn pool_capacity(mut self, n: usize) -> Self {
        self.pool_capacity = n;
        self
    }

    /// Sets the device channel capacity (cuda backend).
    pub fn device_level_capacity(mut self, n: usize) -> Self {
        self.device_level_capacity = n;
        self
    }

    /// Sets the device spill pool size in bytes (cuda backend).
    pub fn device_spill_capacity(mut self, bytes: usize) -> Self {
        self.device_spill_capacity = bytes;
        self
    }

    /// Sets whether the cpu stealing scheduler checks the slice ranges given to parallel children
    /// for overlaps ([`Config::check_races`]).
    pub fn check_races(mut self, on: bool) -> Self {
        self.check_races = on;
        self
    }

    /// Sets the deepest recursion level allowed.
    pub fn max_depth(mut self, n: usize) -> Self {
        self.max_depth = n;
        self
    }

    /// Sets the persistent device scheduler's blocks per multiprocessor (0 = as many as fit).
    pub fn device_blocks_per_sm(mut self, blocks: usize) -> Self {
        self.device_blocks_per_sm = blocks;
        self
    }

    /// Sets the longest sleep of an idle warp of the persistent device scheduler, in ns.
    pub fn device_idle_max_ns(mut self, ns: usize) -> Self {
        self.device_idle_max_ns = ns;
        self
    }

    /// Sets the entries of each lane's task stack on the device ([`Config::device_lane_stack`]).
    pub fn device_lane_stack(mut self, entries: usize) -> Self {
        self.device_lane_stack = entries;
        self
    }

    /// Sets the cpu stealing scheduler's best-first queue capacity
    /// ([`Config::priority_queue_capacity`]).
    pub fn priority_queue_capacity(mut self, tasks: usize) -> Self {
        self.priority_queue_capacity = tasks;
        self
    }

    /// Sets the ready heap's item slots ([`Config::device_priority_slots`]).
    pub fn device_priority_slots(mut self, slots: usize) -> Self {
        self.device_priority_slots = slots;
        self
    }

    /// Sets the ready heap's server blocks ([`Config::device_priority_servers`]).
    pub fn device_priority_servers(mut self, blocks: usize) -> Self {
        self.device_priority_servers = blocks;
        self
    }

    /// Sets the ready heap's reserve ([`Config::device_priority_reserve`]).
    pub fn device_priority_reserve(mut self, items: usize) -> Self {
        self.device_priority_reserve = items;
        self
    }

    /// Sets the ready heap's window ([`Config::device_priority_window`]).
    pub fn device_priority_window(mut self, items: usize) -> Self {
        self.device_priority_window = items;
        self
    }

    /// Sets the size of the persistent device scheduler's frame pool in bytes.
    pub fn device_frame_pool_bytes(mut self, bytes: usize) -> Self {
        self.device_frame_pool_bytes = bytes;
        self
    }

    /// Sets the size of the temporary heap (`alloc!`) in bytes.
    pub fn temp_heap_bytes(mut self, bytes: usize) -> Self {
        self.temp_heap_bytes = bytes;
        self
    }

    /// Sets the run timeout.
    pub fn timeout(mut self, t: Option<Duration>) -> Self {
        self.timeout = t;
        self
    }

    /// Checks that every value is usable.
    pub fn validate(&self) -> Result<()> {
        if self.priority_queue_capacity == 0 {
            return Err(Error::Config("priority_queue_capacity must be at least 1".into()));
        }
        if self.level_capacity == 0 {
            return Err(Error::Config("level_capacity must be at least 1".into()));
        }
        if self.segment_capacity == 0 {
            return Err(Error::Config("segment_capacity must be at least 1".into()));
        }
        if self.pool_capacity < self.segment_capacity {
            return Err(Error::Config(format!(
                "pool_capacity ({}) must hold at least one segment ({})",
                self.pool_capacity, self.segment_capacity
            )));
        }
        if self.max_depth == 0 {
            return Err(Error::Config("max_depth must be at least 1".into()));
        }
        if !(64..=1_000_000).contains(&self.device_idle_max_ns) {
            return Err(Error::Config(format!(
                "device_idle_max_ns ({}) must be between 64 and 1000000",
                self.device_idle_max_ns
            )));
        }
        if self.device_lane_stack == 1 || self.device_lane_stack > 1 << 16 {
            return Err(Error::Config(format!(
                "device_lane_stack ({}) must be 0 (automatic) or between 2 and 65536",
                self.device_lane_stack
            )));
        }
        if !(1..=1 << 30).contains(&self.device_priority_slots) {
            return Err(Error::Config(format!(
                "device_priority_slots ({}) must be between 1 and 1073741824",
                self.device_priority_slots
            )));
        }
        if self.device_priority_servers > 64 {
            return Err(Error::Config(format!(
                "device_priority_servers ({}) must be at most 64",
                self.device_priority_servers
            )));
        }
        // Knobs the device reads as 32-bit words.
        for (name, value) in [
            ("device_priority_reserve", self.device_priority_reserve),
            ("device_priority_window", self.device_priority_window),
        ] {
            if value > u32::MAX as usize {
                return Err(Error::Config(format!("{name} ({value}) must be at most 4294967295")));
            }
        }
        if self.stack_bytes < 64 << 10 {
            return Err(Error::Config(format!("stack_bytes ({}) must be at least 64 KiB", self.stack_bytes)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backend_names_round_trip() {
        for b in [BackendKind::Serial, BackendKind::Cpu, BackendKind::Cuda, BackendKind::CudaSim, BackendKind::Auto] {
            assert_eq!(b.name().parse::<BackendKind>().unwrap(), b);
        }
        assert!(matches!("tpu".parse::<BackendKind>(), Err(Error::UnknownBackend(s)) if s == "tpu"));
    }

    #[test]
    fn scheduler_names_round_trip() {
        for s in [SchedulerKind::Auto, SchedulerKind::Levels, SchedulerKind::Stealing, SchedulerKind::Persistent] {
            assert_eq!(s.name().parse::<SchedulerKind>().unwrap(), s);
        }
        assert!(matches!("fifo".parse::<SchedulerKind>(), Err(Error::Config(m)) if m.contains("GPU_CILK_SCHEDULER")));
        assert_eq!(Config::default().scheduler, SchedulerKind::Auto);
    }

    #[test]
    fn validation_rejects_zero_sizes() {
        assert!(Config::default().validate().is_ok());
        assert!(Config::default().level_capacity(0).validate().is_err());
        assert!(Config::default().segment_capacity(0).validate().is_err());
        assert!(Config::default().max_depth(0).validate().is_err());
        assert!(Config::default().priority_queue_capacity(0).validate().is_err());
        assert!(Config::default().stack_bytes(1024).validate().is_err());
        assert!(Config::default().segment_capacity(64).pool_capacity(8).validate().is_err());
    }

    #[test]
    fn lane_stacks_are_automatic_or_at_least_two_entries() {
        let c = Config::default();
        assert!(c.clone().device_lane_stack(0).validate().is_ok());
        assert!(c.clone().device_lane_stack(1).validate().is_err());
        assert!(c.clone().device_lane_stack(2).validate().is_ok());
        assert!(c.device_lane_stack(1 << 17).validate().is_err());
    }
}

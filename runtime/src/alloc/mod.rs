//! The warp-coalesced allocator (XMalloc, Huang 2010): the host twin of
//! `kernels/include/gpu_cilk/xmalloc.cuh` for the cpu backend and for tests.
//!
//! Same structure as the device heap, over an arena of [`AtomicU64`] words with byte
//! [`Offset`]s instead of pointers (safe Rust, but for `zeroed::words`, which takes the arena
//! from the allocator's zeroed pages):
//!
//! - **Pages** (the paper's Memoryblocks, §2.2.2): the arena is `npages` pages of `2^page_shift`
//!   bytes with a bitmap (bit set = taken). Runs of pages serve *large* requests (combined size
//!   over 4 KiB); single pages become superblocks. A run is claimed word by word with CAS and
//!   rolled back when a later word is taken (claim-check-rollback).
//! - **Second level** (§2.2): a FIFO of cached free superblocks, refilled with up to
//!   [`SB_BATCH`] pages of one bitmap word per CAS.
//! - **First level** (§2.2, Fig. 2.6): per size class (32 B .. 4 KiB, powers of two) a FIFO of
//!   ready blocks; when empty, a superblock is carved into blocks of that class. A class owns at
//!   most `queue_capacity / blocks_per_superblock` superblocks so its FIFO cannot overflow; an
//!   exhausted (or bounded) class is served by the next larger one.
//! - **Coalescing** (§2.1.1, §2.1.3, Fig. 2.1): [`XHeap::alloc_many`] is the host twin of a
//!   warp's combined request: one block holds every piece; each piece has an 8-byte header
//!   `(MAGIC << 32) | back` (`back` = its distance from the block start in words) and the block
//!   an 8-byte header `(kind << 32) | live pieces`. [`XHeap::free`] takes the piece header
//!   (swap to 0, so a double free is detected) and decrements the count; the last piece returns
//!   the block (to its class FIFO, or its pages to the bitmap).
//! - **Trim**: [`XHeap::trim`] (`&mut self`: no concurrent use) returns wholly free superblocks
//!   and the cached ones to the bitmap, after which the whole heap can be one allocation
//!   ([`XHeap::max_alloc`]). Deviation from the paper, which returns a block to its superblock
//!   when the first level is full: we bound the first level per class instead.
//!
//! Orderings: FIFO slots release/acquire (see `queue`); the block count's decrement is `AcqRel`
//! (each piece's writes happen-before the block's reuse); bitmap claims `AcqRel`, frees `Release`.
//! Exhaustion returns `None`, never panics.

mod queue;
pub(crate) mod zeroed;

use queue::TicketQueue;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Size classes: 32, 64, ..., 4096 bytes (the smallest piece with its headers is 24 bytes).
pub const CLASSES: usize = 8;
/// The largest class; bigger (combined) requests take whole pages.
pub const MAX_CLASS: usize = 4096;
/// Pages claimed from the bitmap per refill of the second level.
pub const SB_BATCH: u32 = 8;
const MIN_SHIFT: u32 = 5;
const MAGIC: u64 = 0xA11C_0C8D;
const LARGE: u64 = 0x8000_0000;

/// A byte offset into the arena of an [`XHeap`] (8-byte aligned).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Offset(u64);

impl Offset {
    /// The byte offset.
    pub fn get(self) -> u64 {
        self.0
    }
}

/// Why a [`XHeap::free`] or [`XHeap::new`] was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllocError {
    /// The offset is not a live piece (double free, or never allocated).
    NotAllocated(u64),
    /// The configuration cannot make a heap.
    BadConfig(String),
}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AllocError::NotAllocated(o) => write!(f, "xmalloc free: offset {o} is not a live allocation"),
            AllocError::BadConfig(s) => write!(f, "xmalloc heap: {s}"),
        }
    }
}

impl std::error::Error for AllocError {}

/// Heap geometry.
#[derive(Clone, Debug)]
pub struct XHeapConfig {
    /// Arena size in bytes (rounded down to whole pages).
    pub heap_bytes: usize,
    /// log2 of the page (= superblock) size, 12..=24.
    pub page_shift: u32,
    /// First-level FIFO entries per class; `None`: `nextpow2(heap_bytes / 1024)`, at least one
    /// superblock of the 32-byte class (the device default).
    pub queue_capacity: Option<usize>,
}

impl XHeapConfig {
    /// `heap_bytes` with 64 KiB pages (the device default).
    pub fn new(heap_bytes: usize) -> Self {
        XHeapConfig { heap_bytes, page_shift: 16, queue_capacity: None }
    }

    /// Sets the page (superblock) size to `2^shift` bytes.
    pub fn page_shift(mut self, shift: u32) -> Self {
        self.page_shift = shift;
        self
    }
}

/// Counters of an [`XHeap`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct XHeapStats {
    /// Bytes of blocks held by live pieces (class sizes, whole pages for large runs).
    pub bytes_in_use: u64,
    /// The largest `bytes_in_use` seen.
    pub high_water: u64,
    /// Blocks held by live pieces.
    pub live_blocks: u64,
    /// Requests answered `None`.
    pub failed: u64,
    /// Frees of offsets that were not live pieces.
    pub bad_frees: u64,
    /// Superblocks owned per class.
    pub superblocks: [u64; CLASSES],
    /// Free superblocks cached in the second level.
    pub cached_superblocks: u64,
    /// Pages taken in the bitmap (superblocks, cached ones and large runs).
    pub pages_taken: u64,
    /// Superblocks carved into class blocks (cumulative).
    pub carves: u64,
    /// Acquisitions that waited for another thread's refill of a class (cumulative).
    pub gate_waits: u64,
}

/// The warp-coalesced, two-level buffered allocator over an owned arena.
#[derive(Debug)]
pub struct XHeap {
    arena: Box<[AtomicU64]>,
    page_shift: u32,
    npages: u64,
    bitmap: Box<[AtomicU64]>,
    hint: AtomicU64,
    sbq: TicketQueue,
    cls: Vec<TicketQueue>,
    sb_count: [AtomicU64; CLASSES],
    sb_limit: [u64; CLASSES],
    /// Per class: a refill (carve) is in progress; only its holder carves (the refill gate).
    refilling: [AtomicBool; CLASSES],
    carves: AtomicU64,
    gate_waits: AtomicU64,
    bytes_in_use: AtomicU64,
    high_water: AtomicU64,
    live_blocks: AtomicU64,
    failed: AtomicU64,
    bad_frees: AtomicU64,
}

fn round8(n: u64) -> u64 {
    (n + 7) & !7
}

/// The smallest class holding `bytes`, or `CLASSES` when larger than 4 KiB.
fn class_of(bytes: u64) -> usize {
    if bytes > MAX_CLASS as u64 {
        CLASSES
    } else if bytes <= 32 {
        0
    } else {
        (64 - (bytes - 1).leading_zeros() - MIN_SHIFT) as usize
    }
}

fn class_bytes(c: usize) -> u64 {
    32 << c
}

fn run_mask(lo: u32, n: u32) -> u64 {
    (if n >= 64 { !0 } else { (1u64 << n) - 1 }) << lo
}

/// What a block acquisition found: the block and, when a superblock was carved, the carved blocks
/// (all published before returning in the host twin).
struct Grant {
    block: u64,
    kind: u64,
}

impl XHeap {
    /// A heap over a fresh zeroed arena.
    pub fn new(config: XHeapConfig) -> Result<Self, AllocError> {
        if !(12..=24).contains(&config.page_shift) {
            return Err(AllocError::BadConfig(format!("page_shift {} is not in 12..=24", config.page_shift)));
        }
        let page = 1u64 << config.page_shift;
        let npages = config.heap_bytes as u64 / page;
        if npages == 0 {
            return Err(AllocError::BadConfig(format!("{} bytes hold no {page}-byte page", config.heap_bytes)));
        }
        if (npages << config.page_shift) >> 4 > u64::from(u32::MAX) {
            return Err(AllocError::BadConfig("heaps are limited to 64 GiB".into()));
        }
        let qcap = config
            .queue_capacity
            .unwrap_or_else(|| (config.heap_bytes / 1024).max(1).next_power_of_two())
            .max((page >> MIN_SHIFT) as usize)
            .next_power_of_two();
        let nwords = npages.div_ceil(64);
        let bitmap: Box<[AtomicU64]> = (0..nwords)
            .map(|w| {
                let lo = w * 64;
                AtomicU64::new(if npages - lo < 64 { !0u64 << (npages - lo) } else { 0 })
            })
            .collect();
        let mut sb_limit = [0u64; CLASSES];
        for (c, l) in sb_limit.iter_mut().enumerate() {
            *l = qcap as u64 / (page >> (MIN_SHIFT + c as u32)).max(1);
        }
        let words = usize::try_from((npages << config.page_shift) / 8).ok();
        let arena = words
            .and_then(zeroed::words)
            .ok_or_else(|| AllocError::BadConfig(format!("{} bytes do not fit in memory", config.heap_bytes)))?;
        Ok(XHeap {
            arena,
            page_shift: config.page_shift,
            npages,
            bitmap,
            hint: AtomicU64::new(0),
            sbq: TicketQueue::new(npages as usize),
            cls: (0..CLASSES).map(|_| TicketQueue::new(qcap)).collect(),
            sb_count: Default::default(),
            sb_limit,
            refilling: Default::default(),
            carves: AtomicU64::new(0),
            gate_waits: AtomicU64::new(0),
            bytes_in_use: AtomicU64::new(0),
            high_water: AtomicU64::new(0),
            live_blocks: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            bad_frees: AtomicU64::new(0),
        })
    }

    /// Arena bytes (whole pages).
    pub fn capacity(&self) -> u64 {
        self.npages << self.page_shift
    }

    /// The page (superblock) size.
    pub fn page_size(&self) -> u64 {
        1 << self.page_shift
    }

    /// The largest single request an empty, trimmed heap serves (the arena less two headers).
    pub fn max_alloc(&self) -> u64 {
        self.capacity() - 16
    }

    /// First-level FIFO entries per class.
    pub fn queue_capacity(&self) -> u64 {
        self.cls[0].capacity()
    }

    /// The 8-byte word at byte `off + 8 * i` of the arena (`None` outside it). Pieces are 8-byte
    /// aligned; a piece of `size` bytes owns words `0..size.div_ceil(8)` (the last one partly).
    pub fn word(&self, off: Offset, i: u64) -> Option<&AtomicU64> {
        self.arena.get(usize::try_from(off.0 / 8 + i).ok()?)
    }

    /// The first byte of the `bytes` bytes at `off` (`None` unless all lie in the arena), with the
    /// whole arena's provenance: the host temporaries (`temp::RunHeap`) address a piece through
    /// it in their element type.
    pub(crate) fn piece_ptr(&self, off: Offset, bytes: u64) -> Option<std::ptr::NonNull<u8>> {
        let end = off.0.checked_add(bytes)?;
        if end > self.arena.len() as u64 * 8 {
            return None;
        }
        // `off.0 <= end <= arena bytes`: in bounds of the arena allocation (or one past its end).
        let p = self.arena.as_ptr().cast::<u8>().wrapping_add(off.0 as usize);
        std::ptr::NonNull::new(p.cast_mut())
    }

    /// The offset of a pointer made by [`piece_ptr`](Self::piece_ptr) (`None` outside the arena).
    pub(crate) fn offset_of(&self, p: *const u8) -> Option<Offset> {
        let off = (p as usize).checked_sub(self.arena.as_ptr() as usize)?;
        (off as u64 <= self.arena.len() as u64 * 8).then_some(Offset(off as u64))
    }

    fn w(&self, byte: u64) -> &AtomicU64 {
        &self.arena[(byte / 8) as usize]
    }

    /// Counters (a snapshot).
    pub fn stats(&self) -> XHeapStats {
        let mut superblocks = [0; CLASSES];
        for (s, c) in superblocks.iter_mut().zip(&self.sb_count) {
            *s = c.load(Ordering::Relaxed);
        }
        XHeapStats {
            bytes_in_use: self.bytes_in_use.load(Ordering::Relaxed),
            high_water: self.high_water.load(Ordering::Relaxed),
            live_blocks: self.live_blocks.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            bad_frees: self.bad_frees.load(Ordering::Relaxed),
            superblocks,
            cached_superblocks: self.sbq.len(),
            pages_taken: self.bitmap.iter().map(|w| u64::from(w.load(Ordering::Relaxed).count_ones())).sum::<u64>()
                - (self.bitmap.len() as u64 * 64 - self.npages),
            carves: self.carves.load(Ordering::Relaxed),
            gate_waits: self.gate_waits.load(Ordering::Relaxed),
        }
    }

    /// One request of `size` bytes (`alloc_many(&[size])` without the vector).
    pub fn alloc(&self, size: usize) -> Option<Offset> {
        let mut out = None;
        self.alloc_coalesced(std::slice::from_ref(&size), |_, o| out = Some(o));
        out
    }

    /// The host twin of a warp's coalesced request, lane for lane: `sizes[i]` is lane i's request,
    /// the answer lane i's piece (`None`: its segment's block could not be had). The pieces share
    /// ONE block when the combined size (8 + sum of 8 + round8(size)) fits the 4 KiB class;
    /// otherwise greedy segments of consecutive lanes share one class block each, and a lane that
    /// alone needs more than 4 KiB gets its own page run (as the device's `gc_xmalloc`). Each
    /// piece is freed on its own with [`free`](Self::free). Zero sizes get 8-byte pieces.
    pub fn alloc_lanes(&self, sizes: &[usize]) -> Vec<Option<Offset>> {
        let mut out = vec![None; sizes.len()];
        self.alloc_coalesced(sizes, |i, o| out[i] = Some(o));
        out
    }

    /// A warp's coalesced request, all or nothing: `None` (nothing held) when any segment of
    /// [`alloc_lanes`](Self::alloc_lanes) failed. A single segment (combined size up to 4 KiB)
    /// is one block, as in the paper.
    pub fn alloc_many(&self, sizes: &[usize]) -> Option<Vec<Offset>> {
        let got = self.alloc_lanes(sizes);
        if got.iter().all(Option::is_some) {
            return Some(got.into_iter().flatten().collect());
        }
        let mut rolled_back = 0;
        for o in got.into_iter().flatten() {
            self.free(o).expect("rolling back a fresh piece");
            rolled_back += 1;
        }
        self.failed.fetch_add(rolled_back, Ordering::Relaxed);
        None
    }

    fn alloc_coalesced(&self, sizes: &[usize], mut each: impl FnMut(usize, Offset)) -> bool {
        let need = |s: usize| 8 + round8((s as u64).max(1));
        let total = sizes.iter().fold(0u64, |t, &s| t.saturating_add(need(s)));
        if 8 + total <= MAX_CLASS as u64 {
            return self.serve(sizes, 0, total, &mut each);
        }
        // Greedy segments of consecutive lanes, each one class block (or one lane's page run).
        let (mut first, mut seg_total, mut all) = (0, 0u64, true);
        for (i, &s) in sizes.iter().enumerate() {
            let v = need(s);
            if i > first && 8 + seg_total + v > MAX_CLASS as u64 {
                all &= self.serve(&sizes[first..i], first, seg_total, &mut each);
                (first, seg_total) = (i, 0);
            }
            seg_total = seg_total.saturating_add(v);
        }
        all & self.serve(&sizes[first..], first, seg_total, &mut each)
    }

    /// One segment: lanes `lane0..lane0 + sizes.len()` from one block of 8 + `total` bytes.
    fn serve(&self, sizes: &[usize], lane0: usize, total: u64, each: &mut impl FnMut(usize, Offset)) -> bool {
        if sizes.is_empty() {
            return true;
        }
        let Some(g) = (total < (1 << 40)).then(|| self.acquire(8 + total)).flatten() else {
            self.failed.fetch_add(sizes.len() as u64, Ordering::Relaxed);
            return false;
        };
        self.w(g.block).store((g.kind << 32) | sizes.len() as u64, Ordering::Relaxed);
        let mut at = 8u64;
        for (i, &s) in sizes.iter().enumerate() {
            self.w(g.block + at).store((MAGIC << 32) | (at / 8), Ordering::Relaxed);
            each(lane0 + i, Offset(g.block + at + 8));
            at += 8 + round8((s as u64).max(1));
        }
        true
    }

    fn stat_add(&self, bytes: u64) {
        let now = self.bytes_in_use.fetch_add(bytes, Ordering::Relaxed) + bytes;
        self.high_water.fetch_max(now, Ordering::Relaxed);
        self.live_blocks.fetch_add(1, Ordering::Relaxed);
    }

    fn stat_sub(&self, bytes: u64) {
        self.bytes_in_use.fetch_sub(bytes, Ordering::Relaxed);
        self.live_blocks.fetch_sub(1, Ordering::Relaxed);
    }

    /// A ready block of class `c` (`Ok(Some)`), or `Ok(None)` when the caller now holds the
    /// class's refill gate (empty queue, the class may own another superblock: refill it, then
    /// [`gate_open`](Self::gate_open)), or `Err(())` when the class is empty and at its bound.
    /// Only the gate holder carves: a burst of threads finding the queue empty (a fresh heap, or
    /// a spurious `empty`) takes one superblock per class at a time, not one per thread; the
    /// others wait for the holder's blocks (published before the gate opens) or for it to give up.
    fn class_take(&self, c: usize) -> Result<Option<u32>, ()> {
        let (q, gate) = (&self.cls[c], &self.refilling[c]);
        let mut waited = false;
        loop {
            if let Some(v) = q.pop() {
                return Ok(Some(v));
            }
            if self.sb_count[c].load(Ordering::Relaxed) >= self.sb_limit[c] {
                return Err(());
            }
            if !gate.load(Ordering::Relaxed)
                && gate.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed).is_ok()
            {
                // Blocks published between our pop and the gate, or the bound reached meanwhile.
                if let Some(v) = q.pop() {
                    self.gate_open(c);
                    return Ok(Some(v));
                }
                if self.sb_count[c].load(Ordering::Relaxed) >= self.sb_limit[c] {
                    self.gate_open(c);
                    return Err(());
                }
                return Ok(None);
            }
            if !waited {
                self.gate_waits.fetch_add(1, Ordering::Relaxed);
                waited = true;
            }
            let mut spins = 0;
            while gate.load(Ordering::Acquire) && q.len() == 0 {
                queue::backoff(&mut spins);
            }
        }
    }

    /// Opens class `c`'s refill gate (`Release`: the holder's published blocks and `sb_count`
    /// are seen by whoever takes the gate next).
    fn gate_open(&self, c: usize) {
        self.refilling[c].store(false, Ordering::Release);
    }

    /// The leader's path: a block of at least `bytes`.
    fn acquire(&self, bytes: u64) -> Option<Grant> {
        let c0 = class_of(bytes);
        for c in c0..CLASSES {
            match self.class_take(c) {
                Ok(Some(v)) => {
                    self.stat_add(class_bytes(c));
                    return Some(Grant { block: u64::from(v) << 4, kind: c as u64 });
                }
                Err(()) => continue, // at its bound: the next larger class serves
                Ok(None) => {}
            }
            // We hold class c's gate: refill it with a superblock carved into class-c blocks.
            let Some(page) = self.superblock() else {
                self.gate_open(c);
                continue; // no page: maybe a larger class still has ready blocks
            };
            self.sb_count[c].fetch_add(1, Ordering::Relaxed); // only the gate holder raises it
            self.carves.fetch_add(1, Ordering::Relaxed);
            // Carve: block 0 for the caller, the rest into the class FIFO (one ticket FAA),
            // counted in `avail` before the slots are written (a dequeuer waits for its slot).
            let base = page << self.page_shift;
            let per = self.page_size() >> (MIN_SHIFT + c as u32);
            let q = &self.cls[c];
            let t = (per > 1).then(|| {
                let t = q.reserve(per - 1);
                q.publish(per - 1);
                t
            });
            self.gate_open(c);
            if let Some(t) = t {
                for i in 1..per {
                    q.put(t + i - 1, ((base + i * class_bytes(c)) >> 4) as u32);
                }
            }
            self.stat_add(class_bytes(c));
            return Some(Grant { block: base, kind: c as u64 });
        }
        if c0 < CLASSES {
            return None;
        }
        let n = bytes.div_ceil(self.page_size());
        let first = self.pages_alloc(n).or_else(|| {
            if self.sbq.len() == 0 {
                return None;
            }
            self.drain_superblocks();
            self.pages_alloc(n)
        })?;
        self.stat_add(n << self.page_shift);
        Some(Grant { block: first << self.page_shift, kind: LARGE | n })
    }

    /// Frees one piece. Offsets that are not live pieces are refused (and counted).
    pub fn free(&self, off: Offset) -> Result<(), AllocError> {
        let bad = || {
            self.bad_frees.fetch_add(1, Ordering::Relaxed);
            Err(AllocError::NotAllocated(off.0))
        };
        if off.0 < 16 || off.0 % 8 != 0 || off.0 / 8 > self.arena.len() as u64 {
            return bad();
        }
        let hdr = off.0 - 8;
        let word = self.w(hdr).swap(0, Ordering::AcqRel);
        let back = (word & 0xffff_ffff) * 8;
        if word >> 32 != MAGIC || back > hdr {
            return bad();
        }
        let block = hdr - back;
        if self.w(block).fetch_sub(1, Ordering::AcqRel) & 0xffff_ffff != 1 {
            return Ok(());
        }
        let kind = self.w(block).load(Ordering::Acquire) >> 32;
        if kind & LARGE != 0 {
            let n = kind & !LARGE;
            self.stat_sub(n << self.page_shift);
            self.pages_free(block >> self.page_shift, n);
        } else {
            self.stat_sub(class_bytes(kind as usize));
            self.cls[kind as usize].push((block >> 4) as u32);
        }
        Ok(())
    }

    /// Returns wholly free superblocks and the cached ones to the page bitmap. Exclusive access
    /// (no concurrent alloc/free), like the device's one-thread `gc_xheap_trim`.
    pub fn trim(&mut self) {
        let mut count = vec![0u64; self.npages as usize];
        for c in 0..CLASSES {
            let per = self.page_size() >> (MIN_SHIFT + c as u32);
            let n = self.cls[c].len();
            let mut held = Vec::with_capacity(n as usize);
            while let Some(v) = self.cls[c].pop() {
                count[((u64::from(v) << 4) >> self.page_shift) as usize] += 1;
                held.push(v);
            }
            for v in held {
                if count[((u64::from(v) << 4) >> self.page_shift) as usize] != per {
                    self.cls[c].push(v);
                }
            }
            for (pg, k) in count.iter_mut().enumerate() {
                if *k == per {
                    self.pages_free(pg as u64, 1);
                    self.sb_count[c].fetch_sub(1, Ordering::Relaxed);
                }
                *k = 0;
            }
        }
        self.drain_superblocks();
    }

    // ---- pages -------------------------------------------------------------------------------

    fn pages_free(&self, mut first: u64, mut n: u64) {
        while n > 0 {
            let lo = (first & 63) as u32;
            let k = (64 - u64::from(lo)).min(n) as u32;
            self.bitmap[(first >> 6) as usize].fetch_and(!run_mask(lo, k), Ordering::Release);
            first += u64::from(k);
            n -= u64::from(k);
        }
    }

    /// Claims `n` contiguous free pages, first fit from the lowest page (claim-check-rollback).
    /// Deviation from the device, which starts each scan at a rotating hint to spread thousands
    /// of warps over the bitmap: this twin serves a few host threads, and lowest-first keeps the
    /// pages it ever touches about as many as its largest live set. With the rotating start,
    /// successive large requests walked through the whole arena and the OS faulted in every
    /// page of it: `strassen 2048 --backend cpu` (a 3.6 GB heap whose live temporaries are a
    /// small part of it) ended at 2.4 GB resident on 2 cores, paying the page faults as it went.
    fn pages_alloc(&self, n: u64) -> Option<u64> {
        if n == 0 || n > self.npages {
            return None;
        }
        for w in 0..self.bitmap.len() as u64 {
            let mut word = self.bitmap[w as usize].load(Ordering::Relaxed);
            let mut lo = 0u64;
            while lo < 64 && word != !0 {
                if (word >> lo) & 1 == 1 {
                    lo += 1;
                    continue;
                }
                let first = w * 64 + lo;
                if first + n > self.npages {
                    break;
                }
                let (mut p, mut left) = (first, n);
                let mut ok = true;
                while left > 0 {
                    let plo = (p & 63) as u32;
                    let k = (64 - u64::from(plo)).min(left) as u32;
                    let m = run_mask(plo, k);
                    let wp = &self.bitmap[(p >> 6) as usize];
                    let mut cur = wp.load(Ordering::Relaxed);
                    let got = loop {
                        if cur & m != 0 {
                            break false;
                        }
                        match wp.compare_exchange_weak(cur, cur | m, Ordering::AcqRel, Ordering::Relaxed) {
                            Ok(_) => break true,
                            Err(now) => cur = now,
                        }
                    };
                    if !got {
                        ok = false;
                        break;
                    }
                    p += u64::from(k);
                    left -= u64::from(k);
                }
                if ok {
                    return Some(first);
                }
                if p > first {
                    self.pages_free(first, p - first); // rollback
                }
                word = self.bitmap[w as usize].load(Ordering::Relaxed);
                lo += 1;
            }
        }
        None
    }

    /// A free superblock: from the second level, else up to SB_BATCH pages of one bitmap word
    /// (one CAS), the rest cached in the second level.
    fn superblock(&self) -> Option<u64> {
        if let Some(v) = self.sbq.pop() {
            return Some(u64::from(v));
        }
        let nw = self.bitmap.len() as u64;
        let start = self.hint.fetch_add(1, Ordering::Relaxed) % nw;
        for i in 0..nw {
            let w = (start + i) % nw;
            let word = &self.bitmap[w as usize];
            let mut cur = word.load(Ordering::Relaxed);
            while cur != !0 {
                let (mut want, mut free) = (0u64, !cur);
                for _ in 0..SB_BATCH {
                    if free == 0 {
                        break;
                    }
                    want |= free & free.wrapping_neg();
                    free &= free - 1;
                }
                match word.compare_exchange_weak(cur, cur | want, Ordering::AcqRel, Ordering::Relaxed) {
                    Ok(_) => {
                        let mine = w * 64 + u64::from(want.trailing_zeros());
                        let mut rest = want & (want - 1);
                        let k = u64::from(rest.count_ones());
                        if k > 0 {
                            let t = self.sbq.reserve(k);
                            let mut j = 0;
                            while rest != 0 {
                                self.sbq.put(t + j, (w * 64 + u64::from(rest.trailing_zeros())) as u32);
                                rest &= rest - 1;
                                j += 1;
                            }
                            self.sbq.publish(k);
                        }
                        return Some(mine);
                    }
                    Err(now) => cur = now,
                }
            }
        }
        None
    }

    fn drain_superblocks(&self) {
        while let Some(v) = self.sbq.pop() {
            self.pages_free(u64::from(v), 1);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heap(bytes: usize, shift: u32) -> XHeap {
        XHeap::new(XHeapConfig::new(bytes).page_shift(shift)).unwrap()
    }

    #[test]
    fn classes() {
        assert_eq!(class_of(1), 0);
        assert_eq!(class_of(32), 0);
        assert_eq!(class_of(33), 1);
        assert_eq!(class_of(4096), 7);
        assert_eq!(class_of(4097), CLASSES);
    }

    #[test]
    fn alloc_free_roundtrip_and_stats() {
        let mut h = heap(1 << 20, 12);
        let a = h.alloc(8).unwrap();
        assert_eq!(a.get() % 8, 0);
        let s = h.stats();
        assert_eq!((s.bytes_in_use, s.live_blocks), (32, 1)); // 8 header + 8 piece header + 8 → 32-byte class
        h.free(a).unwrap();
        assert_eq!(h.free(a), Err(AllocError::NotAllocated(a.get())));
        assert_eq!(h.stats().bytes_in_use, 0);
        assert_eq!(h.stats().bad_frees, 1);
        h.trim();
        assert_eq!(h.stats().pages_taken, 0);
        let whole = h.alloc(h.max_alloc() as usize).unwrap();
        assert!(h.alloc(1).is_none(), "the whole heap is taken");
        h.free(whole).unwrap();
        assert_eq!(h.stats().bytes_in_use, 0);
    }

    #[test]
    fn coalesced_pieces_share_one_block_and_free_separately() {
        let mut h = heap(1 << 20, 12);
        let sizes = [8usize, 64, 0, 200, 13];
        let pieces = h.alloc_many(&sizes).unwrap();
        assert_eq!(h.stats().live_blocks, 1, "one block for the whole request");
        for w in pieces.windows(2) {
            assert!(w[1].get() > w[0].get());
        }
        for (p, &s) in pieces.iter().zip(&sizes) {
            for i in 0..(s as u64).div_ceil(8) {
                h.word(*p, i).unwrap().store(p.get(), Ordering::Relaxed);
            }
        }
        for (p, &s) in pieces.iter().zip(&sizes) {
            for i in 0..(s as u64).div_ceil(8) {
                assert_eq!(h.word(*p, i).unwrap().load(Ordering::Relaxed), p.get());
            }
        }
        for (i, p) in pieces.iter().enumerate() {
            assert_eq!(h.stats().live_blocks, 1);
            h.free(*p).unwrap();
            assert_eq!(h.stats().live_blocks, u64::from(i + 1 < pieces.len()));
        }
        h.trim();
        assert_eq!(h.stats().pages_taken, 0);
    }

    #[test]
    fn large_runs_and_exhaustion() {
        let mut h = heap(64 << 10, 12); // 16 pages
        let big: Vec<_> = (0..3).map(|_| h.alloc(5 * 4096 - 16).unwrap()).collect(); // 5 pages each
        assert!(h.alloc(2 * 4096).is_none(), "one page left");
        let small = h.alloc(100).unwrap(); // the last page as a superblock
        assert!(h.stats().failed >= 1);
        for b in big {
            h.free(b).unwrap();
        }
        h.free(small).unwrap();
        h.trim();
        let s = h.stats();
        assert_eq!(
            s,
            XHeapStats {
                high_water: s.high_water,
                failed: 1,
                carves: s.carves,
                gate_waits: s.gate_waits,
                ..Default::default()
            }
        );
        assert!(h.alloc(h.max_alloc() as usize).is_some());
    }

    #[test]
    fn coalesced_over_4k_is_segmented_into_class_blocks() {
        // 32 lanes of 200 bytes (208 with the piece header, 6656 in all): not one 64 KiB page run
        // but two 4 KiB class blocks (19 + 13 lanes); a lane of 5000 bytes gets a page run alone.
        let mut h = heap(1 << 20, 16);
        let sizes = [200usize; 32];
        let pieces = h.alloc_lanes(&sizes);
        assert!(pieces.iter().all(Option::is_some));
        let s = h.stats();
        assert_eq!((s.live_blocks, s.bytes_in_use, s.superblocks[7]), (2, 2 * 4096, 1), "{s:?}");
        let mut sizes2 = vec![8usize; 10];
        sizes2[4] = 5000;
        let more = h.alloc_many(&sizes2).unwrap();
        // [8 x4] one 128-byte block (8 + 4 * 16), [5000] a page run, [8 x5] another (8 + 5 * 16).
        assert_eq!(h.stats().live_blocks, 5);
        assert_eq!(h.stats().bytes_in_use, 2 * 4096 + (1 << 16) + 2 * 128);
        for (i, o) in more.iter().enumerate() {
            h.free(*o).unwrap();
            assert_eq!(
                h.stats().live_blocks,
                if i < 3 {
                    5
                } else if i < 4 {
                    4
                } else if i < 9 {
                    3
                } else {
                    2
                }
            );
        }
        for o in pieces.into_iter().flatten() {
            h.free(o).unwrap();
        }
        assert_eq!((h.stats().bytes_in_use, h.stats().live_blocks), (0, 0));
        h.trim();
        assert_eq!(h.stats().pages_taken, 0);
    }

    #[test]
    fn alloc_many_is_all_or_nothing_across_segments() {
        // Two pages of 4 KiB: a request of three 4000-byte lanes needs three blocks; the third
        // fails, the first two are rolled back.
        let h = heap(8 << 10, 12);
        assert!(h.alloc_many(&[4000, 4000, 4000]).is_none());
        let s = h.stats();
        assert_eq!((s.bytes_in_use, s.live_blocks, s.failed), (0, 0, 3), "{s:?}");
        let lanes = h.alloc_lanes(&[4000, 4000, 4000]);
        assert_eq!(lanes.iter().filter(|o| o.is_some()).count(), 2);
        for o in lanes.into_iter().flatten() {
            h.free(o).unwrap();
        }
    }

    #[test]
    fn class_fallback_when_bounded() {
        // A 32-byte class bound of one superblock (128 blocks of 4 KiB / 32): the 129th small
        // request (8 + 8 + 8 = 24 bytes) is served by the 64-byte class.
        let h = XHeap::new(XHeapConfig { heap_bytes: 1 << 20, page_shift: 12, queue_capacity: Some(128) }).unwrap();
        assert_eq!(h.queue_capacity(), 128);
        let mut v = Vec::new();
        for _ in 0..129 {
            v.push(h.alloc(0).unwrap());
        }
        assert_eq!(h.stats().superblocks[0], 1);
        assert!(h.stats().superblocks[1] >= 1);
        for o in v {
            h.free(o).unwrap();
        }
        assert_eq!(h.stats().bytes_in_use, 0);
    }

    #[test]
    fn bad_config_and_bad_free() {
        assert!(XHeap::new(XHeapConfig::new(1000)).is_err());
        assert!(XHeap::new(XHeapConfig::new(1 << 20).page_shift(5)).is_err());
        let h = heap(1 << 16, 12);
        assert!(h.free(Offset(0)).is_err());
        assert!(h.free(Offset(12345)).is_err());
        assert!(h.free(Offset(1 << 40)).is_err());
    }
}

//! The array channel of Orr et al. ("Fine-grain task aggregation and coordination on GPUs",
//! §3.2): the host twin of `kernels/include/gpu_cilk/channel.cuh`, used by the cpu backend and by
//! tests that pin the protocol both sides share.
//!
//! A channel is a fixed ring of `capacity` slots (a power of two) with a control word per slot and
//! four monotone counters:
//!
//! | counter     | advanced by | meaning                                                    |
//! |-------------|-------------|------------------------------------------------------------|
//! | `reserved`  | [`Channel::talloc`]/[`Channel::talloc_n`] (fetch-and-add) | tickets handed to producers |
//! | `published` | [`Channel::enq`]/[`Channel::enq_n`] | *done count* of writes: elements consumers may take |
//! | `claimed`   | [`Channel::deq`]/[`Channel::deq_n`] (fetch-and-add) | tickets handed to consumers |
//! | `freed`     | [`Channel::deq`]/[`Claim`]'s drop, after the reads (`tfree`) | *done count* of slots free again |
//!
//! Ticket `t` lives in slot `t % capacity`. Reservation is one fetch-and-add per request (never a
//! compare-and-swap loop); [`Channel::talloc_n`] reserves a run of tickets with one fetch-and-add,
//! the host twin of the warp-aggregated reservation on the device.
//!
//! # Batched operations
//!
//! Every counter has a run form that touches it once per run instead of once per element, so that
//! many threads sharing a channel do not all hammer its counters' cache line: [`Channel::talloc_n`]
//! (one `reserved` add), [`Channel::enq_n`] (one `published` add for a run of writes),
//! [`Channel::deq_n`] (one `claimed` add; the returned [`Claim`] adds its `freed` once when
//! dropped). The control words still go through every transition per element, so the runs are
//! exactly as checked as single operations; only the done counts move in steps of more than one,
//! which the protocol allows because a done count is only read across a phase boundary (or, by
//! `len`/`occupancy`, as a snapshot that is exact at a quiescent point). A run's tickets are
//! consecutive, so its slots and control words are adjacent in memory: one thread's run stays
//! in that thread's cache lines.
//!
//! # Protocol (the invariant the scheduler keeps)
//!
//! The channel serves many producers at once and many consumers at once, in *phases*: between two
//! quiescent points (a dispatch barrier of the scheduler, a kernel boundary on the device) a
//! channel is either produced into or consumed from, never both, and every ticket reserved in a
//! producer phase is published with [`Channel::enq`] before the phase ends.
//!
//! Within a producer phase no slot is freed, so `limit = freed + capacity` is constant and "full"
//! is monotone: once the ticket counter reaches `limit`, every ticket below `limit` has been handed
//! out, and every request from then on fails. A request `[first, first + n)` keeps the tickets
//! below `limit` and gives the rest back with a fetch-and-sub (the *undo*). The counter is then
//! `limit` plus the excess of requests that have not undone yet, so it never drops below `limit`
//! again and no ticket below `limit` is handed out twice; when the phase ends it is exactly
//! `limit`: no holes. The same argument with `limit = published` holds for claims in a consumer
//! phase. (With overlapping phases `limit` moves under the undo and a ticket may be handed out
//! twice; the control words below turn that into a reported error instead of a data race.)
//!
//! Both fast paths read the ticket counter first and answer "full"/"empty" without touching it
//! when it is already at `limit` (exact by the monotonicity above); that keeps a full channel
//! cheap for producers that spill and an empty one cheap for polling consumers.
//!
//! # Control words
//!
//! Slot `i`'s control word is `lap << 3 | state`, with `lap = t / capacity` for the ticket `t` it
//! currently serves (the paper's control array, tagged against ABA: a stale ticket of an earlier
//! lap can never match). States, after the paper's five:
//!
//! | state      | paper      | owner                 | next                                    |
//! |------------|------------|-----------------------|-----------------------------------------|
//! | `EMPTY`    | available  | —                     | `RESERVED` by `talloc` (CAS)             |
//! | `RESERVED` | reserved   | the ticket's producer | `WRITING` by `enq` (CAS)                 |
//! | `WRITING`  | reserved   | the ticket's producer | `READY` by `enq` (store)                 |
//! | `READY`    | ready      | —                     | `TAKEN` by `deq` (CAS)                   |
//! | `TAKEN`    | dispatched | the ticket's consumer | `EMPTY` of the next lap by `deq` (store) |
//!
//! The paper's *done* state is the `freed` done count. Every transition into an owned state is a
//! compare-and-swap from the exact expected word, so at most one thread owns a slot at a time,
//! whatever the callers do: a protocol violation (overlapping phases, a ticket enqueued twice or
//! named past its grant with [`Channel::ticket`]) becomes [`ChannelError::NotPublished`] from
//! `deq`, or a panic in `talloc`/`enq`, never two threads touching one slot. Under the protocol
//! every one of these compare-and-swaps succeeds at its first try: none is a retry loop.
//!
//! A zeroed control array with zeroed counters is an empty channel (every slot `EMPTY`, lap 0);
//! the device allocates channels with `cudaMemset` on that basis.
//!
//! # Counters
//!
//! Counters and tickets are `usize` and wrap: every comparison is on the signed distance
//! `a.wrapping_sub(b) as isize`, exact while the distances involved (capacity plus the excess of
//! in-flight requests, each at most `capacity`) stay below `isize::MAX`. Since `capacity` is a
//! power of two it divides `2^usize::BITS`, so `t % capacity` and the laps stay consistent across
//! the wrap. (On 64-bit hosts a wrap takes centuries; the unit tests force one.)
//!
//! # Memory ordering
//!
//! - `talloc` moves `EMPTY → RESERVED` with an `Acquire` CAS; it reads the `EMPTY` word the
//!   slot's previous consumer stored with `Release` after reading its element, so that read
//!   happens-before the new element is written. `enq` moves `RESERVED → WRITING` with an `Acquire`
//!   CAS (the same chain, also when the ticket was handed to another thread: `talloc`'s CAS
//!   continues the consumer's release sequence).
//! - `enq` writes the element, then stores `READY` with `Release`; `deq` moves `READY → TAKEN`
//!   with an `Acquire` CAS before reading, so the element's bytes happen-before its read.
//! - The done counts `published` and `freed` are bumped with `Release` and read with `Acquire`
//!   (here and by [`Channel::len`]/[`Channel::occupancy`]): a thread that observes a done count
//!   also observes the writes (reads) it counts, which is what a scheduler polling done counts
//!   instead of joining threads needs. Slot safety does not rest on them: it rests on the
//!   control words.
//! - The ticket counters `reserved` and `claimed` only need atomicity (`Relaxed` fetch-and-add,
//!   fetch-and-sub and loads): what a ticket may touch is decided by the done counts and the
//!   control words, never by the ticket counter's value alone.
//!
//! Slots have stable addresses for the channel's lifetime: [`Channel::slot_ptr`] lets a producer
//! hand out the address of a reserved slot (children write their results into a parent's frame
//! there) before the element is taken. Writes through it after `enq` reach the consumer when they
//! happen-before its `deq`, i.e. when they are done before the phase barrier that starts the
//! consumer phase (the channel itself does not order them).

use std::mem::MaybeUninit;

#[cfg(loom)]
use loom::sync::atomic::{AtomicUsize, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicUsize, Ordering};

const EMPTY: usize = 0;
const RESERVED: usize = 1;
const WRITING: usize = 2;
const READY: usize = 3;
const TAKEN: usize = 4;
const STATE_BITS: u32 = 3;
const STATE_MASK: usize = (1 << STATE_BITS) - 1;

/// `true` when counter value `a` is at or past `b` (signed distance, correct across the wrap).
#[inline]
fn reached(a: usize, b: usize) -> bool {
    a.wrapping_sub(b) as isize >= 0
}

/// One slot: `std`'s `UnsafeCell`, or `loom`'s (which checks every access for data races).
struct Slot<T>(
    #[cfg(not(loom))] std::cell::UnsafeCell<MaybeUninit<T>>,
    #[cfg(loom)] loom::cell::UnsafeCell<MaybeUninit<T>>,
);

#[cfg(not(loom))]
impl<T> Slot<T> {
    fn new() -> Self {
        Slot(std::cell::UnsafeCell::new(MaybeUninit::uninit()))
    }

    /// Runs `f` on the slot's pointer; the caller must own the slot (see the control words).
    #[inline]
    fn with_mut<R>(&self, f: impl FnOnce(*mut MaybeUninit<T>) -> R) -> R {
        f(self.0.get())
    }
}

#[cfg(loom)]
impl<T> Slot<T> {
    fn new() -> Self {
        Slot(loom::cell::UnsafeCell::new(MaybeUninit::uninit()))
    }

    /// Runs `f` on the slot's pointer, recording a write access for loom's race detector.
    fn with_mut<R>(&self, f: impl FnOnce(*mut MaybeUninit<T>) -> R) -> R {
        self.0.with_mut(f)
    }
}

/// A reserved slot, to be filled with [`Channel::enq`].
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a reserved slot must be published with Channel::enq"]
pub struct Ticket(usize);

impl Ticket {
    /// The ticket number (position in the channel's history).
    pub fn index(&self) -> usize {
        self.0
    }
}

/// A protocol violation detected by the control array.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ChannelError {
    /// A consumer claimed a ticket whose slot was not published (or was taken by another
    /// consumer): producers and consumers ran in the same phase, or a reserved ticket was never
    /// enqueued. The channel is unusable afterwards.
    #[error("channel ticket {0} was claimed but its slot was not published (producer/consumer phases overlapped, or a reserved slot was never enqueued)")]
    NotPublished(usize),
}

/// A run of consecutive tickets claimed by [`Channel::deq_n`]: yields their elements in ticket
/// order (`Err(NotPublished)` for a ticket whose slot was not published: a protocol violation),
/// and adds the elements it took to the channel's `freed` done count once, when dropped. Dropping
/// it early takes and drops the elements not yet yielded.
#[must_use = "a claim takes its elements as it is iterated, and drops the rest when dropped"]
pub struct Claim<'c, T> {
    ch: &'c Channel<T>,
    first: usize,
    next: usize,
    end: usize,
    taken: usize,
}

impl<T> Claim<'_, T> {
    /// The first claimed ticket's number.
    pub fn first(&self) -> usize {
        self.first
    }
}

impl<T> Iterator for Claim<'_, T> {
    type Item = Result<T, ChannelError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.next == self.end {
            return None;
        }
        let t = self.next;
        self.next = t.wrapping_add(1);
        let r = self.ch.take(t);
        if r.is_ok() {
            self.taken += 1;
        }
        Some(r)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.end.wrapping_sub(self.next);
        (left, Some(left))
    }
}

impl<T> ExactSizeIterator for Claim<'_, T> {}

impl<T> Drop for Claim<'_, T> {
    fn drop(&mut self) {
        // Take (and drop) what was not yielded, so the claim leaves no hole; counted like the rest.
        // Errors are protocol violations already reported to whoever took the earlier elements.
        for r in self.by_ref() {
            drop(r);
        }
        if self.taken > 0 {
            // Release: done count, after every read of the claim in program order (module docs).
            self.ch.counters.freed.fetch_add(self.taken, Ordering::Release);
        }
    }
}

/// A bounded array channel: lock-free, fetch-and-add reservation, done counts. See the module docs.
pub struct Channel<T> {
    mask: usize,
    /// `log2(capacity)`: `t >> shift` is ticket `t`'s lap.
    shift: u32,
    slots: Box<[Slot<T>]>,
    control: Box<[AtomicUsize]>,
    /// The four counters, on their own cache lines (see [`Counters`]).
    counters: Counters,
}

/// The ticket counters and done counts, aligned to 128 bytes (two cache lines, for adjacent-line
/// prefetchers): the read-only fields every operation reads (`mask`, `shift`, the slot and
/// control pointers) never share a line with the counters that producers and consumers write, and
/// neither do the counters of two channels allocated next to each other.
#[repr(align(128))]
struct Counters {
    reserved: AtomicUsize,
    published: AtomicUsize,
    claimed: AtomicUsize,
    freed: AtomicUsize,
}

// SAFETY: elements move between threads through the channel (`T: Send`); a slot is accessed only
// by the one thread that owns it through its control word (`RESERVED`/`WRITING`/`TAKEN`, entered by
// CAS), and the Release/Acquire pairs on the control words order those accesses (module docs).
unsafe impl<T: Send> Send for Channel<T> {}
// SAFETY: as above: shared references reach a slot's bytes only while owning its control word,
// and ownership is exclusive because every owned state is entered by a compare-and-swap.
unsafe impl<T: Send> Sync for Channel<T> {}

impl<T> Channel<T> {
    /// A channel with room for `capacity` elements, rounded up to a power of two (at least 1).
    ///
    /// # Panics
    ///
    /// When `capacity` exceeds `isize::MAX as usize / 2 + 1` (no power of two above it is usable).
    pub fn new(capacity: usize) -> Self {
        Self::starting_at(capacity, 0)
    }

    /// A channel whose first ticket is `first` (tests use it to force the counters to wrap).
    fn starting_at(capacity: usize, first: usize) -> Self {
        assert!(capacity <= (isize::MAX as usize) / 2 + 1, "channel capacity {capacity} too large");
        let cap = capacity.max(1).next_power_of_two();
        let shift = cap.trailing_zeros();
        let mask = cap - 1;
        let mut words = vec![0; cap];
        for k in 0..cap {
            let t = first.wrapping_add(k);
            words[t & mask] = ((t >> shift) << STATE_BITS) | EMPTY;
        }
        Channel {
            mask,
            shift,
            slots: (0..cap).map(|_| Slot::new()).collect(),
            control: words.into_iter().map(AtomicUsize::new).collect(),
            counters: Counters {
                reserved: AtomicUsize::new(first),
                published: AtomicUsize::new(first),
                claimed: AtomicUsize::new(first),
                freed: AtomicUsize::new(first),
            },
        }
    }

    /// The number of slots.
    pub fn capacity(&self) -> usize {
        self.mask + 1
    }

    /// Ticket `t`'s control word in `state`.
    #[inline]
    fn word(&self, t: usize, state: usize) -> usize {
        ((t >> self.shift) << STATE_BITS) | state
    }

    /// Moves ticket `t`'s slot from `from` to `to` with one CAS (`Acquire` on success: see the
    /// module docs); `Err(actual word)` when the slot is not in the expected state.
    #[inline]
    fn transition(&self, t: usize, from: usize, to: usize) -> Result<(), usize> {
        self.control[t & self.mask]
            .compare_exchange(self.word(t, from), self.word(t, to), Ordering::Acquire, Ordering::Relaxed)
            .map(drop)
    }

    /// Reserves one slot with one fetch-and-add; `None` when the channel is full.
    ///
    /// # Panics
    ///
    /// When the protocol was violated (see [`Channel::talloc_n`]).
    pub fn talloc(&self) -> Option<Ticket> {
        self.talloc_n(1).map(|(t, _)| t)
    }

    /// Reserves up to `n` consecutive slots with one fetch-and-add (the host twin of a warp's
    /// aggregated reservation). Returns the first ticket and how many were granted
    /// (`1..=min(n, capacity)`); `None` when `n == 0` or not even one slot is free. Tickets
    /// `first..first + granted` must each be published with [`Channel::enq`] before the producer
    /// phase ends (use [`Channel::ticket`] to name the later ones).
    ///
    /// # Panics
    ///
    /// When a granted slot is not free: the protocol was violated earlier (consumers ran during
    /// this producer phase, or a consumer phase ended with an unpublished ticket, which `deq`
    /// reported as [`ChannelError::NotPublished`]). Panicking here is what keeps two producers out
    /// of one slot.
    pub fn talloc_n(&self, n: usize) -> Option<(Ticket, usize)> {
        if n == 0 {
            return None;
        }
        let cap = self.capacity();
        // More than `capacity` can never be granted; clamping bounds the counter's transient
        // excess (and so the distances the signed comparisons need) by threads × capacity.
        let n = n.min(cap);
        // Acquire: a done count (module docs). Constant within a producer phase.
        let limit = self.counters.freed.load(Ordering::Acquire).wrapping_add(cap);
        // Relaxed: ticket counter, atomicity only. Full stays full for the phase (module docs).
        if reached(self.counters.reserved.load(Ordering::Relaxed), limit) {
            return None;
        }
        // Relaxed: ticket counter, atomicity only.
        let first = self.counters.reserved.fetch_add(n, Ordering::Relaxed);
        let room = limit.wrapping_sub(first) as isize;
        let granted = if room <= 0 { 0 } else { (room as usize).min(n) };
        if granted < n {
            // The undo: give back the tickets at or past `limit` (module docs: no holes).
            // Relaxed: ticket counter, atomicity only.
            self.counters.reserved.fetch_sub(n - granted, Ordering::Relaxed);
        }
        if granted == 0 {
            return None;
        }
        for k in 0..granted {
            let t = first.wrapping_add(k);
            if let Err(actual) = self.transition(t, EMPTY, RESERVED) {
                panic!(
                    "channel protocol violated: ticket {t} granted but its slot is not free (control word {actual:#x}, \
                     expected {:#x}): producers overlapped consumers, or an earlier deq reported an error",
                    self.word(t, EMPTY)
                );
            }
        }
        Some((Ticket(first), granted))
    }

    /// Names ticket `first + k` of a run granted by [`Channel::talloc_n`] (`k < granted`).
    pub fn ticket(&self, first: &Ticket, k: usize) -> Ticket {
        Ticket(first.0.wrapping_add(k))
    }

    /// The address of a ticket's slot. It stays valid (and is not moved) for the channel's
    /// lifetime; it holds the ticket's element from `enq` until `deq` takes it. Writing through it
    /// before `enq` is overwritten by `enq`; writes after `enq` are seen by the consumer when they
    /// happen-before its `deq` (module docs). Dereferencing it is the caller's `unsafe`.
    pub fn slot_ptr(&self, ticket: &Ticket) -> *mut T {
        self.slots[ticket.0 & self.mask].with_mut(|p| p.cast::<T>())
    }

    /// Writes `value` into the reserved slot and publishes it.
    ///
    /// # Panics
    ///
    /// When the ticket's slot is not `RESERVED` for it: the ticket was already enqueued, or it was
    /// named past its grant with [`Channel::ticket`].
    pub fn enq(&self, ticket: Ticket, value: T) {
        self.write(ticket.0, value);
        // Release: done count (module docs).
        self.counters.published.fetch_add(1, Ordering::Release);
    }

    /// Writes `n` values into the run of tickets `first..first + n` (all of one grant of
    /// [`Channel::talloc_n`]; `value(k)` is ticket `first + k`'s element) and publishes them with
    /// *one* `published` add: the host twin of a warp's aggregated publish. The control words go
    /// through the same `RESERVED → WRITING → READY` transitions as [`Channel::enq`], element by
    /// element; only the done count is batched. That is sound because consumers never read
    /// `published` in a producer phase: it bounds claims in the *next* consumer phase, which starts
    /// after this call returned (a phase barrier), and the one `Release` add comes after every
    /// `READY` store of the run in program order, so a thread that acquires the count sees them all.
    ///
    /// If `value` panics, the elements already written are still published (a drop guard adds
    /// them) and the rest of the run stays reserved: a protocol violation that the next consumer
    /// phase reports as [`ChannelError::NotPublished`], never an unpublished element taken.
    ///
    /// # Panics
    ///
    /// As [`Channel::enq`], when a ticket of the run is not `RESERVED` for it (the run reaches past
    /// its grant, or a ticket was already enqueued); the elements written before it are published.
    pub fn enq_n(&self, first: Ticket, n: usize, mut value: impl FnMut(usize) -> T) {
        /// Publishes the elements written so far when dropped, also on unwind.
        struct Publish<'c, T> {
            ch: &'c Channel<T>,
            written: usize,
        }
        impl<T> Drop for Publish<'_, T> {
            fn drop(&mut self) {
                if self.written > 0 {
                    // Release: done count, after every READY store of the run (see above).
                    self.ch.counters.published.fetch_add(self.written, Ordering::Release);
                }
            }
        }
        let mut publish = Publish { ch: self, written: 0 };
        for k in 0..n {
            let t = first.0.wrapping_add(k);
            let v = value(k);
            self.write(t, v);
            publish.written += 1;
        }
    }

    /// `enq` without the done count: `RESERVED → WRITING` (CAS), write, `READY` (store).
    #[inline]
    fn write(&self, t: usize, value: T) {
        let i = t & self.mask;
        if let Err(actual) = self.transition(t, RESERVED, WRITING) {
            panic!(
                "channel protocol violated: enq of ticket {t} whose slot is not reserved for it (control word \
                 {actual:#x}, expected {:#x}): enqueued twice, or named past its grant",
                self.word(t, RESERVED)
            );
        }
        // SAFETY: the CAS above made this thread the slot's only owner (WRITING is entered only
        // from this ticket's RESERVED, by CAS), and Acquire ordered the previous occupant's read
        // before this write.
        self.slots[i].with_mut(|p| unsafe { (*p).write(value) });
        // Release: the element's bytes happen-before a consumer's Acquire CAS of READY.
        self.control[i].store(self.word(t, READY), Ordering::Release);
    }

    /// Claims the oldest published element and moves it out (`deq` + `tfree`); `Ok(None)` when
    /// nothing is published. Within a consumer phase elements come out in ticket order.
    pub fn deq(&self) -> Result<Option<T>, ChannelError> {
        match self.deq_n(1) {
            None => Ok(None),
            // A claim of one ticket yields exactly once; dropping it adds the one `freed`.
            Some(mut claim) => claim.next().map_or(Ok(None), |r| r.map(Some)),
        }
    }

    /// Claims up to `n` consecutive published elements with *one* `claimed` fetch-and-add (the
    /// consumer-side twin of [`Channel::talloc_n`]); `None` when `n == 0` or nothing is published.
    /// The returned [`Claim`] yields the elements in ticket order, each moved out with the same
    /// `READY → TAKEN → EMPTY` control-word transitions as [`Channel::deq`], and adds everything it
    /// took to the `freed` done count with *one* `Release` add when it is dropped (after every read,
    /// in program order, so a producer that acquires the count, or the next lap's `talloc` through
    /// the control words, sees the reads done). Dropping a claim before it is exhausted takes and
    /// drops the elements it did not yield (like `Vec::drain`), so a claim never leaves a hole.
    ///
    /// Grants follow `talloc_n`'s argument with `limit = published`, which is constant within a
    /// consumer phase: the claim counter never drops below `limit` again once it reached it, so no
    /// ticket is claimed twice, and a partial grant gives the excess back (the undo).
    pub fn deq_n(&self, n: usize) -> Option<Claim<'_, T>> {
        if n == 0 {
            return None;
        }
        // At most `capacity` elements are ever published and unclaimed; the clamp bounds the
        // counter's transient excess as in `talloc_n`.
        let n = n.min(self.capacity());
        // Acquire: a done count (module docs). Constant within a consumer phase.
        let limit = self.counters.published.load(Ordering::Acquire);
        // Relaxed: ticket counter, atomicity only. Empty stays empty for the phase (module docs).
        if reached(self.counters.claimed.load(Ordering::Relaxed), limit) {
            return None;
        }
        // Relaxed: ticket counter, atomicity only.
        let first = self.counters.claimed.fetch_add(n, Ordering::Relaxed);
        let room = limit.wrapping_sub(first) as isize;
        let granted = if room <= 0 { 0 } else { (room as usize).min(n) };
        if granted < n {
            // The undo (module docs: no holes). Relaxed: ticket counter, atomicity only.
            self.counters.claimed.fetch_sub(n - granted, Ordering::Relaxed);
        }
        if granted == 0 {
            return None;
        }
        Some(Claim { ch: self, first, next: first, end: first.wrapping_add(granted), taken: 0 })
    }

    /// Moves ticket `t`'s element out: `READY → TAKEN` (CAS), read, `EMPTY` of the next lap
    /// (store). Does not touch the `freed` done count (the caller adds it).
    #[inline]
    fn take(&self, t: usize) -> Result<T, ChannelError> {
        if self.transition(t, READY, TAKEN).is_err() {
            return Err(ChannelError::NotPublished(t));
        }
        let i = t & self.mask;
        // SAFETY: the CAS above made this thread the slot's only owner (TAKEN is entered only from
        // this ticket's READY, by CAS); READY means `enq` initialized it, and the Acquire pairs
        // with enq's Release store, so the element's bytes are visible.
        let value = self.slots[i].with_mut(|p| unsafe { (*p).assume_init_read() });
        // Release: our read happens-before the next lap's producer (its Acquire CAS on this word).
        self.control[i].store(self.word(t.wrapping_add(self.capacity()), EMPTY), Ordering::Release);
        Ok(value)
    }

    /// Elements published and not yet claimed.
    pub fn len(&self) -> usize {
        // Acquire/Relaxed: a done count and a ticket counter (module docs); the claim counter may
        // run ahead transiently by the consumers about to undo, hence the clamp.
        let published = self.counters.published.load(Ordering::Acquire);
        let claimed = self.counters.claimed.load(Ordering::Relaxed);
        (published.wrapping_sub(claimed) as isize).max(0) as usize
    }

    /// `true` when no published element is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Slots in use: reserved or published, and not yet freed (at most `capacity`).
    pub fn occupancy(&self) -> usize {
        // Relaxed/Acquire: a ticket counter and a done count (module docs); the ticket counter may
        // run ahead transiently by the producers about to undo, hence the clamp.
        let reserved = self.counters.reserved.load(Ordering::Relaxed);
        let freed = self.counters.freed.load(Ordering::Acquire);
        ((reserved.wrapping_sub(freed) as isize).max(0) as usize).min(self.capacity())
    }
}

impl<T> Drop for Channel<T> {
    fn drop(&mut self) {
        // Drop every element published and never taken. Scanning the control words rather than
        // `claimed..published` also catches elements behind a hole left by a protocol violation.
        for (word, slot) in self.control.iter().zip(self.slots.iter()) {
            // Relaxed: `&mut self` means no other thread can reach the channel any more.
            if word.load(Ordering::Relaxed) & STATE_MASK == READY {
                // SAFETY: READY slots hold an initialized element that nothing else can reach
                // (`&mut self`), and each slot is dropped at most once.
                slot.with_mut(|p| unsafe { (*p).assume_init_drop() });
            }
        }
    }
}

impl<T> std::fmt::Debug for Channel<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel")
            .field("capacity", &self.capacity())
            .field("len", &self.len())
            .field("occupancy", &self.occupancy())
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn fifo_and_wraparound_single_thread() {
        let ch = Channel::new(4);
        for round in 0..10 {
            for k in 0..4 {
                let t = ch.talloc().expect("room");
                ch.enq(t, round * 10 + k);
            }
            assert!(ch.talloc().is_none(), "full after 4");
            for k in 0..4 {
                assert_eq!(ch.deq().unwrap(), Some(round * 10 + k));
            }
            assert_eq!(ch.deq().unwrap(), None);
            assert_eq!(ch.occupancy(), 0);
        }
    }

    #[test]
    fn talloc_n_grants_what_fits() {
        let ch = Channel::<u32>::new(8);
        let (first, got) = ch.talloc_n(5).unwrap();
        assert_eq!(got, 5);
        for k in 0..got {
            ch.enq(ch.ticket(&first, k), k as u32);
        }
        let (first, got) = ch.talloc_n(5).unwrap();
        assert_eq!(got, 3, "only three slots left");
        for k in 0..got {
            ch.enq(ch.ticket(&first, k), 10 + k as u32);
        }
        assert!(ch.talloc_n(1).is_none());
        let all: Vec<u32> = std::iter::from_fn(|| ch.deq().unwrap()).collect();
        assert_eq!(all, vec![0, 1, 2, 3, 4, 10, 11, 12]);
    }

    #[test]
    fn talloc_n_zero_and_huge_requests() {
        let ch = Channel::<u8>::new(4);
        assert!(ch.talloc_n(0).is_none());
        let (first, got) = ch.talloc_n(usize::MAX).unwrap();
        assert_eq!((first.index(), got), (0, 4), "clamped to capacity, counter not wrapped");
        for k in 0..got {
            ch.enq(ch.ticket(&first, k), k as u8);
        }
        assert!(ch.talloc_n(usize::MAX).is_none());
        assert_eq!(ch.occupancy(), 4);
        assert_eq!(ch.len(), 4);
    }

    #[test]
    fn enq_n_and_deq_n_runs() {
        let ch = Channel::<u32>::new(8);
        let (first, got) = ch.talloc_n(5).unwrap();
        ch.enq_n(first, got, |k| k as u32);
        let (first, got) = ch.talloc_n(5).unwrap();
        assert_eq!(got, 3, "only three slots left");
        ch.enq_n(first, got, |k| 10 + k as u32);
        assert_eq!((ch.len(), ch.occupancy()), (8, 8));
        let claim = ch.deq_n(3).unwrap();
        assert_eq!((claim.first(), claim.len()), (0, 3));
        assert_eq!(claim.map(Result::unwrap).collect::<Vec<_>>(), vec![0, 1, 2]);
        assert_eq!((ch.len(), ch.occupancy()), (5, 5), "the claim's drop freed its three slots");
        let claim = ch.deq_n(100).unwrap();
        assert_eq!(claim.len(), 5, "a partial claim gets what is published");
        assert_eq!(claim.map(Result::unwrap).collect::<Vec<_>>(), vec![3, 4, 10, 11, 12]);
        assert!(ch.deq_n(1).is_none());
        assert!(ch.deq_n(0).is_none());
        assert_eq!((ch.len(), ch.occupancy()), (0, 0));
        // The undo of the partial claim left no hole: the next lap reserves whole.
        let (first, got) = ch.talloc_n(8).unwrap();
        assert_eq!((first.index(), got), (8, 8));
        ch.enq_n(first, got, |k| k as u32);
        assert_eq!(ch.deq().unwrap(), Some(0));
    }

    #[test]
    fn dropped_claim_takes_and_drops_the_rest() {
        let ch = Channel::new(4);
        let rc = std::rc::Rc::new(());
        let (first, got) = ch.talloc_n(4).unwrap();
        ch.enq_n(first, got, |_| rc.clone());
        let mut claim = ch.deq_n(3).unwrap();
        drop(claim.next().unwrap().unwrap());
        drop(claim);
        assert_eq!(std::rc::Rc::strong_count(&rc), 2, "three taken and dropped, one left");
        assert_eq!((ch.len(), ch.occupancy()), (1, 1));
        let (first, got) = ch.talloc_n(4).unwrap();
        assert_eq!((first.index(), got), (4, 3), "the dropped claim's slots are free again");
        ch.enq_n(first, got, |_| rc.clone());
    }

    #[test]
    fn claim_reports_an_unpublished_ticket_and_goes_on() {
        let ch = Channel::new(4);
        let hole = ch.talloc().unwrap();
        let (first, got) = ch.talloc_n(2).unwrap();
        ch.enq_n(first, got, |k| k as u32);
        // published = 2 but ticket 0 was never enqueued: the claim covers tickets 0 and 1.
        let r: Vec<_> = ch.deq_n(2).unwrap().collect();
        assert_eq!(r, vec![Err(ChannelError::NotPublished(hole.index())), Ok(0)]);
        assert_eq!(ch.occupancy(), 2, "only the taken element was freed");
    }

    #[test]
    fn enq_n_publishes_what_it_wrote_when_it_panics() {
        let ch = Channel::<u32>::new(4);
        let (first, got) = ch.talloc_n(3).unwrap();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            ch.enq_n(first, got, |k| if k == 2 { panic!("value failed") } else { k as u32 })
        }));
        assert!(r.is_err());
        assert_eq!(ch.len(), 2, "the two written elements are published");
        let mut claim = ch.deq_n(2).unwrap();
        assert_eq!((claim.next(), claim.next()), (Some(Ok(0)), Some(Ok(1))));
    }

    #[test]
    #[should_panic(expected = "named past its grant")]
    fn enq_n_past_grant_panics() {
        let ch = Channel::new(4);
        let (first, got) = ch.talloc_n(1).unwrap();
        ch.enq_n(first, got + 1, |_| 1u32);
    }

    #[test]
    fn runs_wrap_around_usize_max() {
        for cap in [1usize, 2, 4] {
            let ch = Channel::starting_at(cap, usize::MAX - 5);
            let (mut next, mut expect) = (0u32, 0u32);
            for _round in 0..8 {
                while let Some((first, got)) = ch.talloc_n(3) {
                    ch.enq_n(first, got, |k| next + k as u32);
                    next += got as u32;
                }
                assert_eq!((ch.occupancy(), ch.len()), (cap, cap));
                while let Some(claim) = ch.deq_n(3) {
                    for v in claim {
                        assert_eq!(v.unwrap(), expect);
                        expect += 1;
                    }
                }
                assert_eq!(ch.occupancy(), 0);
            }
            assert_eq!(next, expect);
            assert!(next as usize > 6, "the ticket counter wrapped");
        }
    }

    #[test]
    fn drops_unconsumed_elements() {
        let ch = Channel::new(4);
        let rc = std::rc::Rc::new(());
        for _ in 0..3 {
            let t = ch.talloc().unwrap();
            ch.enq(t, rc.clone());
        }
        drop(ch.deq().unwrap());
        assert_eq!(std::rc::Rc::strong_count(&rc), 3);
        drop(ch);
        assert_eq!(std::rc::Rc::strong_count(&rc), 1);
    }

    #[test]
    fn drop_skips_reserved_and_finds_elements_behind_a_hole() {
        let ch = Channel::new(4);
        let rc = std::rc::Rc::new(());
        let hole = ch.talloc().unwrap(); // reserved, never written
        let t = ch.talloc().unwrap();
        ch.enq(t, rc.clone());
        assert_eq!(hole.index(), 0);
        drop(ch);
        assert_eq!(std::rc::Rc::strong_count(&rc), 1, "the element behind the hole was dropped");
    }

    #[test]
    fn counters_wrap_around_usize_max() {
        for cap in [1usize, 2, 4] {
            let start = usize::MAX - 5;
            let ch = Channel::starting_at(cap, start);
            let mut next = 0u32;
            let mut expect = 0u32;
            for _round in 0..8 {
                let mut produced = 0;
                while let Some((first, got)) = ch.talloc_n(3) {
                    for k in 0..got {
                        ch.enq(ch.ticket(&first, k), next);
                        next += 1;
                        produced += 1;
                    }
                }
                assert_eq!(produced, cap, "a full capacity per round, also across the wrap");
                assert_eq!(ch.occupancy(), cap);
                assert_eq!(ch.len(), cap);
                while let Some(v) = ch.deq().unwrap() {
                    assert_eq!(v, expect);
                    expect += 1;
                }
                assert_eq!(ch.occupancy(), 0);
                assert!(ch.is_empty());
            }
            assert_eq!(next, expect);
            assert!(next as usize > 6, "the ticket counter wrapped");
        }
    }

    #[test]
    fn unpublished_claim_is_reported() {
        let ch = Channel::new(4);
        let hole = ch.talloc().unwrap();
        let t = ch.talloc().unwrap();
        ch.enq(t, 7u32);
        // published = 1 but ticket 0 was never enqueued.
        assert_eq!(ch.deq(), Err(ChannelError::NotPublished(hole.index())));
    }

    #[test]
    #[should_panic(expected = "enqueued twice")]
    fn double_enq_panics_instead_of_racing() {
        let ch = Channel::new(2);
        let (first, _) = ch.talloc_n(1).unwrap();
        let alias = ch.ticket(&first, 0);
        ch.enq(first, 1u32);
        ch.enq(alias, 2u32);
    }

    #[test]
    #[should_panic(expected = "named past its grant")]
    fn ticket_past_grant_panics() {
        let ch = Channel::new(4);
        let (first, got) = ch.talloc_n(1).unwrap();
        assert_eq!(got, 1);
        let beyond = ch.ticket(&first, 1);
        ch.enq(beyond, 1u32);
    }

    #[test]
    fn stale_ticket_of_an_earlier_lap_does_not_match() {
        let ch = Channel::new(1);
        let t0 = ch.talloc().unwrap();
        let stale = ch.ticket(&t0, 0);
        ch.enq(t0, 1u32);
        assert_eq!(ch.deq().unwrap(), Some(1));
        let t1 = ch.talloc().unwrap(); // same slot, next lap
        assert_eq!(t1.index(), 1);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| ch.enq(stale, 9)));
        assert!(r.is_err(), "a ticket of lap 0 must not publish into lap 1's reservation");
        ch.enq(t1, 2);
        assert_eq!(ch.deq().unwrap(), Some(2));
    }
}

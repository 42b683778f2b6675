//! The fetch-and-add ticket queue of Scogland & Feng ("Design and Evaluation of Scalable
//! Concurrent Queues for Many-Core Architectures", ICPE 2015, §5–6): the host twin of
//! `kernels/include/gpu_cilk/ticket_queue.cuh`, whose counted interface (below) is the persistent
//! device scheduler's global item pool and frame free ring (`persistent.cuh`). This twin pins the
//! protocol both sides share in tests, loom models and stress tests.
//!
//! A bounded array queue of `capacity` slots (a power of two) with two monotone 64-bit ticket
//! counters, `tail` (producers) and `head` (consumers), a per-slot *turn* word and a `closed`
//! flag. Ticket `t` lives in slot `t % capacity`. Three interfaces, as in the paper:
//!
//! - **blocking** ([`TicketQueue::enqueue`], [`TicketQueue::dequeue`]): one fetch-and-add takes a
//!   ticket (never a compare-and-swap loop), then the caller waits for its slot's turn; returns
//!   only on success or when the queue is [closed](TicketQueue::close).
//! - **non-waiting** ([`TicketQueue::try_enqueue`], [`TicketQueue::try_dequeue`]): never waits;
//!   answers `Full`/`Empty`/`Busy`/`Closed` instead.
//! - **status** ([`TicketQueue::len`], [`TicketQueue::is_empty`], [`TicketQueue::is_full`],
//!   [`TicketQueue::waiting_producers`], [`TicketQueue::waiting_consumers`],
//!   [`TicketQueue::status`]) from one consistent snapshot of the two counters.
//! - **counted** ([`TicketQueue::push_batch`], [`TicketQueue::take`]): not in the paper; the form
//!   the device scheduler uses. A third counter, `avail`, counts elements *published* and not yet
//!   *claimed*. A producer takes `n` tail tickets with one fetch-and-add, waits for and writes
//!   each slot, then adds `n` to `avail` (Release). A consumer first claims: it subtracts what it
//!   wants from `avail` with one fetch-and-add and gives back what was not there (so `take` never
//!   waits on an empty queue and may report empty spuriously while others race, never wrongly
//!   returns an element); then it takes as many head tickets and reads their slots. Because claims
//!   never exceed publications, every head ticket a consumer takes was already taken by a producer
//!   (`head ≤ published ≤ tail`), so its wait is only for that producer to finish writing. A
//!   producer waits for a slot only while the previous lap's consumer finishes reading; the device
//!   scheduler never lets a queue hold more than its capacity (it checks the distance, with
//!   slack for the reservations in flight, before pushing).
//!
//! # Turn words (the paper's per-slot ids)
//!
//! The paper's id is `2 · lap` while a slot waits for the enqueue of lap `lap` and `2 · lap + 1`
//! while it waits for the dequeue, `lap = ticket / capacity`, reduced modulo `MAX_ID`. Here the
//! lap is kept in ticket units, `base(t) = t − t % capacity = capacity · lap`, and the turn word is
//! `2 · base(t) (mod 2^64)`:
//!
//! | turn word                 | meaning                                  | set by                           |
//! |---------------------------|------------------------------------------|----------------------------------|
//! | `2·base(t)`               | empty, ticket `t`'s producer may write   | init, or the dequeue of `t − cap` |
//! | `2·base(t) + 1`           | full with ticket `t`'s element           | the enqueue of `t`               |
//! | `2·base(t) + 2·capacity`  | empty for the next lap (`t + capacity`)  | the dequeue of `t`               |
//!
//! A zeroed turn array with zeroed counters is an empty queue (the device allocates with
//! `cudaMemset(0)`). Because `capacity` divides `2^64`, `base` and the slot `t % capacity` are
//! continuous across the counters' wrap, and doubling is a ring homomorphism of `Z/2^64`, so "the
//! dequeue of `t` stores the word the producer of `t + capacity` waits for" holds across the wrap
//! without the paper's `MAX_ID` reduction. Words of tickets `2^63` apart coincide, so the scheme is
//! exact while fewer than `2^62` operations are in flight on one queue (the paper's
//! `MAX_DISTANCE` bound, with room).
//!
//! # Invariants
//!
//! - Every ticket is handed out once: blocking calls take theirs with a fetch-and-add; non-waiting
//!   calls take one only with a compare-and-swap from the exact value whose slot they checked to
//!   be ready, so a non-waiting call either owns a ready slot or took nothing. **No non-waiting
//!   call ever takes a ticket it then abandons** (the paper's CAS approach; an unconditional
//!   fetch-and-add after the check could take a different, unready ticket).
//! - A slot is written only by the holder of the ticket whose empty turn `2·base(t)` it
//!   observed, and read only by the holder of the ticket whose full turn `2·base(t) + 1` it
//!   observed; the turn word moves only forward, by the owner, so at most one thread touches a
//!   slot's element at a time.
//! - Elements leave in ticket order: the `k`-th dequeue ticket takes the `k`-th enqueue ticket's
//!   element. Tickets of one thread increase, so each consumer sees each producer's elements in
//!   the order that producer enqueued them (per-producer FIFO), and a dequeue that starts after
//!   an enqueue completed gets that element or an earlier one.
//! - Closing only sets a flag: every call made after [`TicketQueue::close`] returns `Closed`, and
//!   blocked calls return `Closed` at their next check unless their slot became ready first (the
//!   paper's semantics: close is for "all work is done, wake the waiters"). A blocked call that
//!   returns `Closed` abandons its ticket; that is harmless only because everything after close
//!   answers `Closed`, so after a close the counters (and the status interface) no longer
//!   describe the contents. Elements still in the queue are dropped with it.
//!
//! # Guarantees of the non-waiting interface
//!
//! - `try_enqueue` returns `Full` only if at its linearization point (the `head` load) the
//!   distance `tail − head` reached `capacity` (elements plus producers holding tickets);
//!   `try_dequeue` returns `Empty` only if at its `tail` load `tail − head ≤ 0`. At a quiescent
//!   point (no call in flight) both are exact: `try_enqueue` succeeds iff `len() < capacity`,
//!   `try_dequeue` succeeds iff `len() > 0`.
//! - `Busy` means the call would have had to wait: the slot of the next ticket is still owned by
//!   an operation in flight (a producer that has not published, a consumer that has not
//!   released), or another call took the ticket between the check and the compare-and-swap. A
//!   failed compare-and-swap means another operation took a ticket, so among non-waiting calls on
//!   a queue that is neither full nor empty some call always succeeds; a blocked blocking call
//!   may make the other side `Busy` for as long as it is descheduled (the paper's trade-off).
//! - Non-waiting and blocking calls mix freely: both use the same tickets and turns.
//!
//! # Counters and status
//!
//! Counters wrap modulo `2^64`; the *distance* `tail − head` is read as a signed 64-bit value
//! (the paper's rollover rule: exact while `capacity` plus the concurrent callers stays below
//! `2^63`). `tail` and `head` are separate words, so a snapshot loads `tail`, `head`, `tail` and
//! retries until both `tail` loads agree: the pair then held at the `head` load (the counters only
//! move forward). Distance `d`: `len = clamp(d, 0, capacity)`, waiting producers
//! `max(d − capacity, 0)`, waiting consumers `max(−d, 0)`. Elements being written or read count as
//! present, so between quiescent points these are a linearizable snapshot of the tickets, not of
//! the slots.
//!
//! # Memory ordering
//!
//! - An element's bytes are ordered by the turn words: the producer writes, then stores
//!   `2·base(t) + 1` with `Release`; the consumer loads it with `Acquire`, reads, then stores
//!   `2·base(t + capacity)` with `Release`; the next lap's producer loads that with `Acquire` before
//!   writing, so the previous read happens-before the new write. These pairs alone make the slot
//!   accesses race-free (loom checks them with its `UnsafeCell`).
//! - The ticket counters are `SeqCst` (fetch-and-add, compare-and-swap and loads): uniqueness only
//!   needs atomicity, but the `Full`/`Empty` answers and the status snapshot compare two counters,
//!   and the single total order is what makes those comparisons linearizable (on x86 the RMWs are
//!   locked anyway and `SeqCst` loads are plain loads).
//! - `closed` is stored with `Release` and loaded with `Acquire`; it carries no data.

use crate::backoff::Backoff;
use std::fmt;
use std::mem::MaybeUninit;

#[cfg(loom)]
use loom::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

/// One element cell: `std`'s `UnsafeCell`, or `loom`'s (which checks every access for data races).
struct Cell<T>(
    #[cfg(not(loom))] std::cell::UnsafeCell<MaybeUninit<T>>,
    #[cfg(loom)] loom::cell::UnsafeCell<MaybeUninit<T>>,
);

#[cfg(not(loom))]
impl<T> Cell<T> {
    fn new() -> Self {
        Cell(std::cell::UnsafeCell::new(MaybeUninit::uninit()))
    }

    /// Runs `f` on the cell's pointer; the caller must own the slot (see the turn words).
    #[inline]
    fn with_mut<R>(&self, f: impl FnOnce(*mut MaybeUninit<T>) -> R) -> R {
        f(self.0.get())
    }
}

#[cfg(loom)]
impl<T> Cell<T> {
    fn new() -> Self {
        Cell(loom::cell::UnsafeCell::new(MaybeUninit::uninit()))
    }

    /// Runs `f` on the cell's pointer, recording a write access for loom's race detector.
    fn with_mut<R>(&self, f: impl FnOnce(*mut MaybeUninit<T>) -> R) -> R {
        self.0.with_mut(f)
    }
}

/// A slot: its turn word and its element.
struct Slot<T> {
    turn: AtomicU64,
    value: Cell<T>,
}

/// Keeps `head` and `tail` on separate cache lines (128 bytes: adjacent-line prefetch on x86).
#[repr(align(128))]
struct Padded<A>(A);

/// The queue was closed. Blocking [`TicketQueue::enqueue`] hands the element back in it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Closed<T = ()>(pub T);

impl<T> fmt::Debug for Closed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Closed(..)")
    }
}

impl<T> fmt::Display for Closed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ticket queue closed")
    }
}

impl<T> std::error::Error for Closed<T> {}

/// Why [`TicketQueue::try_enqueue`] did not enqueue; each variant hands the element back.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum TryEnqueueError<T> {
    /// `tail − head` had reached the capacity (module docs, "Guarantees").
    Full(T),
    /// Not full, but enqueueing now would have to wait for an operation in flight.
    Busy(T),
    /// The queue is closed.
    Closed(T),
}

impl<T> TryEnqueueError<T> {
    /// The element that was not enqueued.
    pub fn into_inner(self) -> T {
        match self {
            TryEnqueueError::Full(v) | TryEnqueueError::Busy(v) | TryEnqueueError::Closed(v) => v,
        }
    }
}

impl<T> fmt::Debug for TryEnqueueError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TryEnqueueError::Full(_) => "Full(..)",
            TryEnqueueError::Busy(_) => "Busy(..)",
            TryEnqueueError::Closed(_) => "Closed(..)",
        })
    }
}

impl<T> fmt::Display for TryEnqueueError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TryEnqueueError::Full(_) => "ticket queue full",
            TryEnqueueError::Busy(_) => "ticket queue busy",
            TryEnqueueError::Closed(_) => "ticket queue closed",
        })
    }
}

impl<T> std::error::Error for TryEnqueueError<T> {}

/// Why [`TicketQueue::try_dequeue`] returned no element.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TryDequeueError {
    /// `tail − head ≤ 0`: no element and no producer holding a ticket (module docs).
    #[error("ticket queue empty")]
    Empty,
    /// An element is on its way (a producer holds the ticket) or another consumer took it.
    #[error("ticket queue busy")]
    Busy,
    /// The queue is closed.
    #[error("ticket queue closed")]
    Closed,
}

/// A consistent snapshot of the queue's counters (see [`TicketQueue::status`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueStatus {
    /// Consumer ticket counter.
    pub head: u64,
    /// Producer ticket counter.
    pub tail: u64,
    /// Slots.
    pub capacity: usize,
    /// `tail − head` as a signed distance.
    pub distance: i64,
    /// The closed flag (read after the counters).
    pub closed: bool,
}

impl QueueStatus {
    /// Elements in the queue (including ones being written or read): `clamp(distance, 0, capacity)`.
    pub fn len(&self) -> usize {
        self.distance.clamp(0, self.capacity as i64) as usize
    }

    /// `distance ≤ 0`.
    pub fn is_empty(&self) -> bool {
        self.distance <= 0
    }

    /// `distance ≥ capacity`.
    pub fn is_full(&self) -> bool {
        self.distance >= self.capacity as i64
    }

    /// Producers holding a ticket beyond the capacity: `max(distance − capacity, 0)`.
    pub fn waiting_producers(&self) -> usize {
        (self.distance - self.capacity as i64).max(0) as usize
    }

    /// Consumers holding a ticket no element has reached yet: `max(−distance, 0)`.
    pub fn waiting_consumers(&self) -> usize {
        (-self.distance).max(0) as usize
    }
}

/// A bounded MPMC fetch-and-add ticket queue with blocking, non-waiting and status interfaces.
/// See the module docs.
pub struct TicketQueue<T> {
    tail: Padded<AtomicU64>,
    head: Padded<AtomicU64>,
    /// Counted interface: elements published and not yet claimed (may dip below zero while
    /// claims race; the claimers give back what they took in excess).
    avail: Padded<AtomicI64>,
    closed: AtomicBool,
    mask: u64,
    slots: Box<[Slot<T>]>,
}

// SAFETY: elements move between threads through the queue (`T: Send`); a slot's element is
// touched only by the one ticket holder whose turn it is, and the Release/Acquire pairs on the turn
// words order successive owners' accesses (module docs).
unsafe impl<T: Send> Send for TicketQueue<T> {}
// SAFETY: as above: shared references reach an element only while its turn word says the caller's
// ticket owns it, and tickets are unique (fetch-and-add, or compare-and-swap from a checked value).
unsafe impl<T: Send> Sync for TicketQueue<T> {}

/// Ticket `t`'s empty turn word, `2 · (t − t % capacity) mod 2^64` (module docs); `+ 1` is full.
/// Always even, so `+ 1` never wraps.
#[inline]
fn turn_of(t: u64, mask: u64) -> u64 {
    (t & !mask).wrapping_mul(2)
}

impl<T> TicketQueue<T> {
    /// A queue with room for `capacity` elements, rounded up to a power of two (at least 1).
    ///
    /// # Panics
    ///
    /// When `capacity` exceeds `2^62` (the turn-word scheme's bound, module docs).
    pub fn new(capacity: usize) -> Self {
        Self::with_initial_ticket(capacity, 0)
    }

    /// Like [`TicketQueue::new`], with both counters starting at `start` instead of 0: an empty
    /// queue whose history is `start` operations long. For tests of the counters' wrap (start
    /// near `u64::MAX`); behaviour is otherwise identical.
    ///
    /// # Panics
    ///
    /// When `capacity` exceeds `2^62`.
    pub fn with_initial_ticket(capacity: usize, start: u64) -> Self {
        let cap = capacity.max(1).checked_next_power_of_two().filter(|&c| c as u64 <= 1 << 62);
        let cap = cap.unwrap_or_else(|| panic!("ticket queue capacity {capacity} exceeds 2^62"));
        let mask = cap as u64 - 1;
        let slots = (0..cap as u64)
            .map(|i| {
                // The first ticket at or after `start` that lives in slot `i`.
                let t = start.wrapping_add(i.wrapping_sub(start) & mask);
                Slot { turn: AtomicU64::new(turn_of(t, mask)), value: Cell::new() }
            })
            .collect();
        TicketQueue {
            tail: Padded(AtomicU64::new(start)),
            head: Padded(AtomicU64::new(start)),
            avail: Padded(AtomicI64::new(0)),
            closed: AtomicBool::new(false),
            mask,
            slots,
        }
    }

    /// Number of slots (a power of two).
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    #[inline]
    fn slot(&self, t: u64) -> &Slot<T> {
        &self.slots[(t & self.mask) as usize]
    }

    /// Closes the queue: every later call returns `Closed`, and blocked calls return `Closed` at
    /// their next check (module docs, "Invariants"). Returns `true` for the call that closed it.
    pub fn close(&self) -> bool {
        !self.closed.swap(true, Ordering::AcqRel)
    }

    /// Whether [`TicketQueue::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Blocking enqueue: takes a tail ticket with one fetch-and-add and waits (spin, then yield)
    /// until its slot is free. `Err(Closed(value))` when the queue is or gets closed first.
    pub fn enqueue(&self, value: T) -> Result<(), Closed<T>> {
        if self.is_closed() {
            return Err(Closed(value));
        }
        let t = self.tail.0.fetch_add(1, Ordering::SeqCst);
        let slot = self.slot(t);
        let turn = turn_of(t, self.mask);
        let mut backoff = Backoff::new();
        while slot.turn.load(Ordering::Acquire) != turn {
            if self.is_closed() {
                return Err(Closed(value));
            }
            backoff.snooze();
        }
        self.write(slot, turn, value);
        Ok(())
    }

    /// Blocking dequeue: takes a head ticket with one fetch-and-add and waits (spin, then yield)
    /// until its element arrives. `Err(Closed)` when the queue is or gets closed first.
    pub fn dequeue(&self) -> Result<T, Closed> {
        if self.is_closed() {
            return Err(Closed(()));
        }
        let t = self.head.0.fetch_add(1, Ordering::SeqCst);
        let slot = self.slot(t);
        let turn = turn_of(t, self.mask) + 1;
        let mut backoff = Backoff::new();
        while slot.turn.load(Ordering::Acquire) != turn {
            if self.is_closed() {
                return Err(Closed(()));
            }
            backoff.snooze();
        }
        Ok(self.read(slot, turn))
    }

    /// Non-waiting enqueue (module docs, "Guarantees"): checks that the next tail ticket's slot
    /// is free, then takes exactly that ticket with a compare-and-swap.
    pub fn try_enqueue(&self, value: T) -> Result<(), TryEnqueueError<T>> {
        if self.is_closed() {
            return Err(TryEnqueueError::Closed(value));
        }
        let t = self.tail.0.load(Ordering::SeqCst);
        let slot = self.slot(t);
        let turn = turn_of(t, self.mask);
        if slot.turn.load(Ordering::Acquire) != turn {
            let h = self.head.0.load(Ordering::SeqCst);
            return Err(if t.wrapping_sub(h) as i64 >= self.capacity() as i64 {
                TryEnqueueError::Full(value)
            } else {
                TryEnqueueError::Busy(value)
            });
        }
        if self.tail.0.compare_exchange(t, t.wrapping_add(1), Ordering::SeqCst, Ordering::Relaxed).is_err() {
            return Err(TryEnqueueError::Busy(value));
        }
        self.write(slot, turn, value);
        Ok(())
    }

    /// Non-waiting dequeue (module docs, "Guarantees"): checks that the next head ticket's
    /// element is there, then takes exactly that ticket with a compare-and-swap.
    pub fn try_dequeue(&self) -> Result<T, TryDequeueError> {
        if self.is_closed() {
            return Err(TryDequeueError::Closed);
        }
        let h = self.head.0.load(Ordering::SeqCst);
        let slot = self.slot(h);
        let turn = turn_of(h, self.mask) + 1;
        if slot.turn.load(Ordering::Acquire) != turn {
            let t = self.tail.0.load(Ordering::SeqCst);
            return Err(if t.wrapping_sub(h) as i64 <= 0 { TryDequeueError::Empty } else { TryDequeueError::Busy });
        }
        if self.head.0.compare_exchange(h, h.wrapping_add(1), Ordering::SeqCst, Ordering::Relaxed).is_err() {
            return Err(TryDequeueError::Busy);
        }
        Ok(self.read(slot, turn))
    }

    /// Counted interface (module docs): enqueues every element of `values` under consecutive
    /// tickets taken with one fetch-and-add, then makes them claimable. Waits only while a slot's
    /// previous element is being read; the caller keeps the queue within its capacity.
    pub fn push_batch(&self, values: Vec<T>) {
        let n = values.len() as u64;
        if n == 0 {
            return;
        }
        let t0 = self.tail.0.fetch_add(n, Ordering::SeqCst);
        for (k, value) in values.into_iter().enumerate() {
            let t = t0.wrapping_add(k as u64);
            let slot = self.slot(t);
            let turn = turn_of(t, self.mask);
            let mut backoff = Backoff::new();
            while slot.turn.load(Ordering::Acquire) != turn {
                backoff.snooze();
            }
            self.write(slot, turn, value);
        }
        // Release: the elements are written before anyone can claim them.
        self.avail.0.fetch_add(n as i64, Ordering::Release);
    }

    /// Counted interface (module docs): claims up to `want` published elements with one
    /// fetch-and-add (giving back the excess) and reads them in ticket order. Returns at once with
    /// nothing when nothing is published now.
    pub fn take(&self, want: usize) -> Vec<T> {
        let want = want as i64;
        if want == 0 || self.avail.0.load(Ordering::Acquire) <= 0 {
            return Vec::new();
        }
        let had = self.avail.0.fetch_sub(want, Ordering::AcqRel);
        let got = had.clamp(0, want);
        if got < want {
            self.avail.0.fetch_add(want - got, Ordering::AcqRel);
        }
        if got == 0 {
            return Vec::new();
        }
        let h0 = self.head.0.fetch_add(got as u64, Ordering::SeqCst);
        (0..got as u64)
            .map(|k| {
                let t = h0.wrapping_add(k);
                let slot = self.slot(t);
                let turn = turn_of(t, self.mask) + 1;
                let mut backoff = Backoff::new();
                while slot.turn.load(Ordering::Acquire) != turn {
                    backoff.snooze();
                }
                self.read(slot, turn)
            })
            .collect()
    }

    /// Counted interface: elements published and not yet claimed (a snapshot).
    pub fn published(&self) -> usize {
        self.avail.0.load(Ordering::Acquire).max(0) as usize
    }

    /// Writes the element of the ticket whose empty turn `turn` the caller observed, and publishes.
    #[inline]
    fn write(&self, slot: &Slot<T>, turn: u64, value: T) {
        // SAFETY: the caller holds the slot's ticket and observed its empty turn with Acquire, so
        // the previous lap's read happened-before; no other thread touches the element until the
        // Release store below hands it to the ticket's consumer.
        slot.value.with_mut(|p| unsafe { (*p).write(value) });
        slot.turn.store(turn.wrapping_add(1), Ordering::Release);
    }

    /// Reads the element of the ticket whose full turn `turn` the caller observed, and frees the
    /// slot for the next lap's producer.
    #[inline]
    fn read(&self, slot: &Slot<T>, turn: u64) -> T {
        // SAFETY: the caller holds the slot's ticket and observed its full turn (`2·base(t) + 1`) with
        // Acquire: the element was initialized by ticket t's producer, which happened-before, and
        // nobody else reads it (tickets are unique) or writes it before the Release store below.
        let value = slot.value.with_mut(|p| unsafe { (*p).assume_init_read() });
        // 2·base(t) + 1 − 1 + 2·capacity = 2·base(t + capacity): the next lap's producer's turn.
        slot.turn.store(turn.wrapping_sub(1).wrapping_add(2 * self.capacity() as u64), Ordering::Release);
        value
    }

    /// A consistent snapshot of the counters (module docs, "Counters and status").
    pub fn status(&self) -> QueueStatus {
        let mut tail = self.tail.0.load(Ordering::SeqCst);
        let mut head;
        let mut tries = 0;
        loop {
            head = self.head.0.load(Ordering::SeqCst);
            let again = self.tail.0.load(Ordering::SeqCst);
            tries += 1;
            if again == tail || tries == 64 {
                // After 64 torn reads (a producer storm): the pair of the last try, whose distance
                // is off by at most the tail's movement during one head load.
                tail = again;
                break;
            }
            tail = again;
        }
        QueueStatus {
            head,
            tail,
            capacity: self.capacity(),
            distance: tail.wrapping_sub(head) as i64,
            closed: self.is_closed(),
        }
    }

    /// Elements in the queue, counting ones being written or read (module docs).
    pub fn len(&self) -> usize {
        self.status().len()
    }

    /// No element and no producer holding a ticket.
    pub fn is_empty(&self) -> bool {
        self.status().is_empty()
    }

    /// Every slot taken by an element or a producer holding a ticket.
    pub fn is_full(&self) -> bool {
        self.status().is_full()
    }

    /// Blocking producers waiting for a free slot.
    pub fn waiting_producers(&self) -> usize {
        self.status().waiting_producers()
    }

    /// Blocking consumers waiting for an element.
    pub fn waiting_consumers(&self) -> usize {
        self.status().waiting_consumers()
    }
}

impl<T> Drop for TicketQueue<T> {
    fn drop(&mut self) {
        // Drop every element written and never read: exactly the slots with an odd turn word
        // (also behind tickets abandoned at close).
        for slot in self.slots.iter() {
            // Relaxed: `&mut self` means no other thread can reach the queue any more.
            if slot.turn.load(Ordering::Relaxed) & 1 == 1 {
                // SAFETY: an odd turn word is stored only after the element was written, and is
                // replaced by an even one right after it is read; `&mut self` excludes everyone
                // else, and each slot is dropped once.
                slot.value.with_mut(|p| unsafe { (*p).assume_init_drop() });
            }
        }
    }
}

impl<T> fmt::Debug for TicketQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TicketQueue").field("status", &self.status()).finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn fifo_full_empty_single_thread() {
        let q = TicketQueue::new(3);
        assert_eq!(q.capacity(), 4);
        for round in 0..5u32 {
            assert_eq!(q.try_dequeue(), Err(TryDequeueError::Empty));
            for k in 0..4 {
                q.try_enqueue(round * 10 + k).unwrap();
            }
            assert!(matches!(q.try_enqueue(99), Err(TryEnqueueError::Full(99))));
            assert!(q.is_full() && q.len() == 4);
            for k in 0..4 {
                assert_eq!(q.dequeue().unwrap(), round * 10 + k);
            }
            assert!(q.is_empty());
        }
    }

    #[test]
    fn wraps_at_u64_max() {
        for cap in [1usize, 2, 8] {
            let start = u64::MAX - 5;
            let q = TicketQueue::with_initial_ticket(cap, start);
            let mut expect = std::collections::VecDeque::new();
            for i in 0..40u64 {
                q.enqueue(i).unwrap();
                expect.push_back(i);
                assert_eq!(q.len(), expect.len());
                if expect.len() == cap || i % 3 == 0 {
                    assert!(q.is_full() == (expect.len() == cap));
                    assert_eq!(q.try_dequeue().ok(), expect.pop_front());
                    while let Some(v) = expect.pop_front() {
                        assert_eq!(q.dequeue().unwrap(), v);
                    }
                    assert!(q.is_empty());
                }
            }
            let st = q.status();
            assert_eq!(st.head, start.wrapping_add(40));
            assert_eq!(st.distance, 0);
        }
    }

    #[test]
    fn close_rejects_and_drops_leftovers() {
        let q = TicketQueue::new(2);
        let item = std::sync::Arc::new(());
        q.enqueue(item.clone()).unwrap();
        assert!(q.close());
        assert!(!q.close());
        assert!(matches!(q.try_enqueue(item.clone()), Err(TryEnqueueError::Closed(_))));
        assert!(q.enqueue(item.clone()).is_err());
        assert_eq!(q.try_dequeue().unwrap_err(), TryDequeueError::Closed);
        assert_eq!(q.dequeue().unwrap_err(), Closed(()));
        assert_eq!(std::sync::Arc::strong_count(&item), 2);
        drop(q);
        assert_eq!(std::sync::Arc::strong_count(&item), 1);
    }
}

//! The array channel of Orr et al. ("Fine-grain task aggregation and coordination on GPUs",
//! §3.2): the host twin of `kernels/include/gpu_cilk/channel.cuh`, used by the cpu backend and by
//! tests that pin the protocol both sides share.
//!
//! A channel is a fixed ring of `capacity` slots (a power of two) with a control word per slot and
//! four monotone counters:
//!
//! | counter     | advanced by | meaning                                                    |
//! |-------------|-------------|------------------------------------------------------------|
//! | `reserved`  | [`Channel::talloc`] (fetch-and-add) | tickets handed to producers        |
//! | `published` | [`Channel::enq`]    | *done count* of writes: elements consumers may take |
//! | `claimed`   | [`Channel::deq`] (fetch-and-add)    | tickets handed to consumers        |
//! | `freed`     | [`Channel::deq`] after the read (`tfree`) | *done count* of slots free again |
//!
//! Ticket `t` lives in slot `t % capacity`. Reservation is one fetch-and-add per request (never a
//! compare-and-swap loop); [`Channel::talloc_n`] reserves a run of tickets with one fetch-and-add,
//! the host twin of the warp-aggregated reservation on the device.
//!
//! # Protocol (the invariant the scheduler keeps)
//!
//! The channel serves many producers at once and many consumers at once, in *phases*: between two
//! quiescent points (a dispatch barrier of the scheduler, a kernel boundary on the device) a
//! channel is either produced into or consumed from, never both. Within a producer phase no slot
//! is freed, so "full" is monotone: every ticket below `freed + capacity` succeeds and every
//! ticket at or above it fails and is returned (its fetch-and-add is undone), leaving no hole.
//! Within a consumer phase nothing is published, so every claim below `published` succeeds and
//! every claim at or above it is undone the same way. A control word per slot checks the protocol
//! (`EMPTY → RESERVED → READY → EMPTY`); a violation is reported by [`Channel::deq`] as
//! [`ChannelError::NotPublished`] instead of reading an unwritten slot.
//!
//! # Memory ordering
//!
//! - `enq` writes the element, then stores `READY` with `Release` and bumps `published` with
//!   `Release`; `deq` loads `published` and the slot's control word with `Acquire` before reading
//!   the element, so the element's bytes happen-before its read.
//! - `deq` reads the element, stores `EMPTY` with `Release`, then bumps `freed` with `Release`;
//!   `talloc` loads `freed` with `Acquire`, so a slot's previous read happens-before its reuse.
//! - The ticket counters themselves only need atomicity (`Relaxed` fetch-and-add): ordering between
//!   data and counters goes through the done counts above.
//!
//! Slots have stable addresses for the channel's lifetime: [`Channel::slot_ptr`] lets a producer
//! hand out the address of a reserved slot (children write their results into a parent's frame
//! there) before the element itself is published.

use std::cell::UnsafeCell;
use std::mem::MaybeUninit;

#[cfg(loom)]
use loom::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};

const EMPTY: u8 = 0;
const RESERVED: u8 = 1;
const READY: u8 = 2;

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
    /// A consumer claimed a ticket whose slot was never published: producers and consumers ran
    /// in the same phase.
    #[error("channel slot {0} was claimed before it was published (producer/consumer phases overlapped)")]
    NotPublished(usize),
}

/// A bounded array channel: lock-free, fetch-and-add reservation, done counts. See the module docs.
pub struct Channel<T> {
    mask: usize,
    slots: Box<[UnsafeCell<MaybeUninit<T>>]>,
    control: Box<[AtomicU8]>,
    reserved: AtomicUsize,
    published: AtomicUsize,
    claimed: AtomicUsize,
    freed: AtomicUsize,
}

// SAFETY: elements move between threads through the channel (`T: Send`); the slots are accessed
// only by the one thread holding the slot's ticket, and the control word / done counts order those
// accesses (see "Memory ordering" above).
unsafe impl<T: Send> Send for Channel<T> {}
// SAFETY: as above: shared references only reach a slot through a ticket, and a ticket is handed
// to exactly one producer (fetch-and-add) and then exactly one consumer.
unsafe impl<T: Send> Sync for Channel<T> {}

impl<T> Channel<T> {
    /// A channel with room for `capacity` elements, rounded up to a power of two (at least 1).
    pub fn new(capacity: usize) -> Self {
        let cap = capacity.max(1).next_power_of_two();
        Channel {
            mask: cap - 1,
            slots: (0..cap).map(|_| UnsafeCell::new(MaybeUninit::uninit())).collect(),
            control: (0..cap).map(|_| AtomicU8::new(EMPTY)).collect(),
            reserved: AtomicUsize::new(0),
            published: AtomicUsize::new(0),
            claimed: AtomicUsize::new(0),
            freed: AtomicUsize::new(0),
        }
    }

    /// The number of slots.
    pub fn capacity(&self) -> usize {
        self.mask + 1
    }

    /// Reserves one slot with one fetch-and-add; `None` when the channel is full.
    pub fn talloc(&self) -> Option<Ticket> {
        self.talloc_n(1).map(|(t, _)| t)
    }

    /// Reserves up to `n` consecutive slots with one fetch-and-add (the host twin of a warp's
    /// aggregated reservation). Returns the first ticket and how many were granted (`1..=n`);
    /// `None` when not even one slot is free. Tickets `first..first + granted` must each be
    /// published with [`Channel::enq`] (use [`Channel::ticket`] to name the later ones).
    pub fn talloc_n(&self, n: usize) -> Option<(Ticket, usize)> {
        if n == 0 {
            return None;
        }
        // Relaxed: the ticket counter only needs atomicity; room is decided by `freed` below.
        let first = self.reserved.fetch_add(n, Ordering::Relaxed);
        // Acquire: pairs with the Release increment in `deq`, so the slot's last read is done.
        let limit = self.freed.load(Ordering::Acquire) + self.capacity();
        let granted = limit.saturating_sub(first).min(n);
        if granted < n {
            // Give back what we could not use. Within a producer phase `limit` cannot grow, so
            // every later reservation fails too and the counter returns to `limit`: no holes.
            self.reserved.fetch_sub(n - granted, Ordering::Relaxed);
        }
        if granted == 0 {
            return None;
        }
        for t in first..first + granted {
            let prev = self.control[t & self.mask].swap(RESERVED, Ordering::Relaxed);
            debug_assert_eq!(prev, EMPTY, "slot {t} reserved while still occupied");
        }
        Some((Ticket(first), granted))
    }

    /// Names ticket `first + k` of a run granted by [`Channel::talloc_n`].
    pub fn ticket(&self, first: &Ticket, k: usize) -> Ticket {
        Ticket(first.0 + k)
    }

    /// The address of a reserved slot. It stays valid (and is not moved) until the element is
    /// taken by [`Channel::deq`]; writing through it before `enq` is overwritten by `enq`.
    pub fn slot_ptr(&self, ticket: &Ticket) -> *mut T {
        self.slots[ticket.0 & self.mask].get().cast::<T>()
    }

    /// Writes `value` into the reserved slot and publishes it.
    pub fn enq(&self, ticket: Ticket, value: T) {
        let i = ticket.0 & self.mask;
        // SAFETY: the ticket was granted by `talloc_n` to this caller only (fetch-and-add), the
        // slot is EMPTY→RESERVED (no consumer reads it before READY), so we have exclusive access.
        unsafe { (*self.slots[i].get()).write(value) };
        // Release: the element's bytes happen-before a consumer's Acquire of READY.
        self.control[i].store(READY, Ordering::Release);
        self.published.fetch_add(1, Ordering::Release);
    }

    /// Claims the oldest published element and moves it out (`deq` + `tfree`); `Ok(None)` when
    /// nothing is published.
    pub fn deq(&self) -> Result<Option<T>, ChannelError> {
        let t = self.claimed.fetch_add(1, Ordering::Relaxed);
        // Acquire: pairs with the Release increment in `enq`.
        if t >= self.published.load(Ordering::Acquire) {
            // Within a consumer phase nothing is published, so undoing is exact (no holes).
            self.claimed.fetch_sub(1, Ordering::Relaxed);
            return Ok(None);
        }
        let i = t & self.mask;
        if self.control[i].load(Ordering::Acquire) != READY {
            return Err(ChannelError::NotPublished(t));
        }
        // SAFETY: ticket `t` was claimed by this caller only (fetch-and-add), its slot is READY,
        // i.e. written and published (Acquire above), and no producer touches it until `freed`
        // passes it.
        let value = unsafe { (*self.slots[i].get()).assume_init_read() };
        self.control[i].store(EMPTY, Ordering::Release);
        // Release: our read happens-before a producer's reuse of the slot (Acquire in talloc).
        self.freed.fetch_add(1, Ordering::Release);
        Ok(Some(value))
    }

    /// Elements published and not yet claimed.
    pub fn len(&self) -> usize {
        self.published.load(Ordering::Acquire).saturating_sub(self.claimed.load(Ordering::Acquire))
    }

    /// `true` when no published element is waiting.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Slots in use: reserved or published, and not yet freed.
    pub fn occupancy(&self) -> usize {
        self.reserved.load(Ordering::Acquire).saturating_sub(self.freed.load(Ordering::Acquire))
    }
}

impl<T> Drop for Channel<T> {
    fn drop(&mut self) {
        // Drop the elements still published and never taken.
        let claimed = *self.claimed.get_mut();
        let published = *self.published.get_mut();
        for t in claimed..published {
            let i = t & self.mask;
            if *self.control[i].get_mut() == READY {
                // SAFETY: READY slots hold an initialized element nobody else can reach (&mut self).
                unsafe { self.slots[i].get_mut().assume_init_drop() };
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
}

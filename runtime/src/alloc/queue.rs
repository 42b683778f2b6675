//! The ticket FIFO behind both buffer levels (Rust twin of `gc_xqueue` in `xmalloc.cuh`).
//!
//! A bounded ring of `capacity` (a power of two) 64-bit slots, each `(turn << 32) | value`.
//! Enqueue ticket `t` (lap `t / capacity`) waits for turn `2 * lap` (the slot's previous lap was
//! consumed) and stores turn `2 * lap + 1` with the value; dequeue waits for `2 * lap + 1` and
//! stores `2 * lap + 2`. Tickets come from fetch-and-add on `tail` / `head`, never from a CAS loop.
//! `avail` counts published values: a dequeuer takes one with fetch-and-add and undoes it when the
//! count went negative, so `pop` may report empty spuriously while others race (never wrongly
//! returns a value). The owner of the ring guarantees it never holds more than `capacity` values
//! (the allocator bounds the blocks of each class), so an enqueuer waits at most for a dequeuer
//! that already holds the slot's previous ticket.
//!
//! Orderings: the slot store is `Release` (the previous owner's use of the block happens-before
//! the next owner's), the slot load that sees the expected turn is `Acquire`; the counters need
//! atomicity only (`Relaxed`).

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// A bounded multi-producer/multi-consumer ticket FIFO of `u32` values.
#[derive(Debug)]
pub(crate) struct TicketQueue {
    slots: Box<[AtomicU64]>,
    mask: u64,
    tail: AtomicU64,
    head: AtomicU64,
    avail: AtomicI64,
}

/// Spins politely: busy for a while, then yields the core (the waited-for thread may be descheduled).
pub(crate) fn backoff(spins: &mut u32) {
    *spins += 1;
    if *spins < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

impl TicketQueue {
    /// An empty queue of `capacity` slots (rounded up to a power of two, at least 1).
    pub(crate) fn new(capacity: usize) -> Self {
        let cap = capacity.max(1).next_power_of_two();
        TicketQueue {
            // Zeroed pages, touched as the ring is used (a heap's eight class rings take a
            // sixteenth of its bytes: see `zeroed::words`); a capacity beyond any layout cannot be
            // allocated either way, and the plain path says so.
            slots: super::zeroed::words(cap).unwrap_or_else(|| (0..cap).map(|_| AtomicU64::new(0)).collect()),
            mask: cap as u64 - 1,
            tail: AtomicU64::new(0),
            head: AtomicU64::new(0),
            avail: AtomicI64::new(0),
        }
    }

    fn lap_shift(&self) -> u32 {
        self.mask.count_ones()
    }

    /// Reserves `n` consecutive enqueue tickets; fill each with [`put`](Self::put), then
    /// [`publish`](Self::publish) `n`.
    pub(crate) fn reserve(&self, n: u64) -> u64 {
        self.tail.fetch_add(n, Ordering::Relaxed)
    }

    /// Writes `v` at enqueue ticket `t`.
    pub(crate) fn put(&self, t: u64, v: u32) {
        let turn = (2 * (t >> self.lap_shift())) as u32;
        let slot = &self.slots[(t & self.mask) as usize];
        let mut spins = 0;
        while (slot.load(Ordering::Acquire) >> 32) as u32 != turn {
            backoff(&mut spins);
        }
        slot.store((u64::from(turn.wrapping_add(1)) << 32) | u64::from(v), Ordering::Release);
    }

    /// Makes `n` written values available to dequeuers.
    pub(crate) fn publish(&self, n: u64) {
        self.avail.fetch_add(n as i64, Ordering::Relaxed);
    }

    /// Enqueues one value.
    pub(crate) fn push(&self, v: u32) {
        let t = self.reserve(1);
        self.put(t, v);
        self.publish(1);
    }

    /// Dequeues one value; `None` when (possibly spuriously) empty.
    pub(crate) fn pop(&self) -> Option<u32> {
        if self.avail.load(Ordering::Relaxed) <= 0 {
            return None;
        }
        if self.avail.fetch_sub(1, Ordering::Relaxed) <= 0 {
            self.avail.fetch_add(1, Ordering::Relaxed); // undo
            return None;
        }
        let t = self.head.fetch_add(1, Ordering::Relaxed);
        let turn = (2 * (t >> self.lap_shift()) + 1) as u32;
        let slot = &self.slots[(t & self.mask) as usize];
        let mut spins = 0;
        loop {
            let w = slot.load(Ordering::Acquire);
            if (w >> 32) as u32 == turn {
                slot.store(u64::from(turn.wrapping_add(1)) << 32, Ordering::Release);
                return Some(w as u32);
            }
            backoff(&mut spins);
        }
    }

    /// Published values (a snapshot; exact when quiescent).
    pub(crate) fn len(&self) -> u64 {
        self.avail.load(Ordering::Relaxed).max(0) as u64
    }

    /// Slots.
    pub(crate) fn capacity(&self) -> u64 {
        self.mask + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn fifo_order_and_wrap() {
        let q = TicketQueue::new(4);
        assert_eq!(q.capacity(), 4);
        for round in 0..10u32 {
            for i in 0..4 {
                q.push(round * 10 + i);
            }
            assert_eq!(q.len(), 4);
            for i in 0..4 {
                assert_eq!(q.pop(), Some(round * 10 + i));
            }
            assert_eq!(q.pop(), None);
        }
    }

    #[test]
    fn concurrent_exactly_once() {
        let q = Arc::new(TicketQueue::new(4096)); // holds all 4000 values: pushes never wait
        let seen = Arc::new((0..4000).map(|_| AtomicU64::new(0)).collect::<Vec<_>>());
        let handles: Vec<_> = (0..4u32)
            .map(|w| {
                let (q, seen) = (q.clone(), seen.clone());
                std::thread::spawn(move || {
                    // Each thread pushes its 1000 values while popping, the ring holds them all.
                    let mut held = 0;
                    for i in 0..1000u32 {
                        q.push(w * 1000 + i);
                        held += 1;
                        if i % 2 == 1 {
                            while held > 0 {
                                match q.pop() {
                                    Some(v) => {
                                        seen[v as usize].fetch_add(1, Ordering::Relaxed);
                                        held -= 1;
                                    }
                                    None => break,
                                }
                            }
                        }
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        while let Some(v) = q.pop() {
            seen[v as usize].fetch_add(1, Ordering::Relaxed);
        }
        assert!(seen.iter().all(|s| s.load(Ordering::Relaxed) == 1));
    }
}

//! Which pool threads take part in a run: [`Gate`]. A run asks every pool thread to join it
//! without waiting for all of them (`spawn_broadcast`, not `broadcast`): the run ends when its
//! root has delivered (or it failed), whichever threads joined by then. A thread that comes later
//! (asleep, or not scheduled on a loaded machine) finds the gate closed and returns without
//! touching the run, so the run's state may be gone by then. It owns this admission protocol
//! only (no scheduling, no run state); `runtime/tests/gate_loom.rs` model-checks it with loom.
//!
//! # Protocol
//!
//! One atomic word holds the number of admitted threads inside the run and a `CLOSED` bit, so
//! the threads of a run, which arrive together at its start and leave together at its end, never
//! queue on a lock (a contended `Mutex` puts late arrivals to sleep, and each then needs a
//! wake-up: tens of microseconds of a millisecond-long run):
//!
//! - [`enter`](Gate::enter) adds 1 and is admitted if `CLOSED` was not set; otherwise it takes its
//!   1 back (as a leave) and returns `None`;
//! - leaving ([`Inside`] dropped) subtracts 1; the one that leaves the word at `CLOSED` with
//!   nobody inside tells the run's thread (under the lock, so the signal cannot be lost);
//! - the run's thread [`wait`](Gate::wait)s (lock and condition variable) until
//!   [`end`](Gate::end) is called (root delivered, or failure), then sets `CLOSED` and waits until
//!   the word is `CLOSED` alone, checking it under the lock before each sleep.
//!
//! Since every operation is a read-modify-write of the one word, they are totally ordered: a
//! thread whose add came before the `CLOSED` bit is counted, and `wait` does not return before
//! its leave; a thread whose add came after it sees `CLOSED` and never touches the run. The adds
//! are `Acquire` and the subtracts `Release`, and all of them are in the word's release
//! sequence, so the `Acquire` load by which `wait` sees nobody inside synchronizes with every
//! admitted thread's leave: nothing a worker did to the run's state comes after `wait` returns.

#[cfg(loom)]
use loom::sync::atomic::{AtomicUsize, Ordering};
#[cfg(loom)]
use loom::sync::{Condvar, Mutex, MutexGuard};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicUsize, Ordering};
#[cfg(not(loom))]
use std::sync::{Condvar, Mutex, MutexGuard};

/// The word's flag: the run ended and admits nobody any more.
const CLOSED: usize = 1 << (usize::BITS - 1);

/// Looks at the word (yielding in between) before `wait` sleeps on the condition variable: the
/// workers leave within microseconds of the end, and a wake-up would add its latency to every
/// run. (None under loom, whose models must not spin.)
const LOOKS: usize = if cfg!(loom) { 0 } else { 64 };

/// The admission state of one run (shared with the pool threads through an `Arc`, since a late
/// thread may hold it after the run is over).
#[derive(Debug)]
pub struct Gate {
    /// Threads inside, and [`CLOSED`].
    word: AtomicUsize,
    /// Whether [`Gate::end`] was called; the lock `wait` sleeps under.
    ended: Mutex<bool>,
    changed: Condvar,
}

impl Default for Gate {
    fn default() -> Self {
        Self::new()
    }
}

/// An admitted thread; dropping it leaves the run (also when the thread unwinds).
pub struct Inside<'g>(&'g Gate);

impl Gate {
    /// An open gate with nobody inside.
    pub fn new() -> Self {
        Gate { word: AtomicUsize::new(0), ended: Mutex::new(false), changed: Condvar::new() }
    }

    fn lock(&self) -> MutexGuard<'_, bool> {
        self.ended.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Admits the calling thread while the run is still open.
    pub fn enter(&self) -> Option<Inside<'_>> {
        if self.word.fetch_add(1, Ordering::Acquire) & CLOSED != 0 {
            self.leave();
            return None;
        }
        Some(Inside(self))
    }

    /// Takes one thread out; the last one out of a closed gate tells `wait`.
    fn leave(&self) {
        if self.word.fetch_sub(1, Ordering::Release) == CLOSED | 1 {
            // Under the lock: `wait` checks the word under it before it sleeps.
            let _ended = self.lock();
            self.changed.notify_all();
        }
    }

    /// The run is over (its root delivered, or it failed): wakes [`Gate::wait`].
    pub fn end(&self) {
        *self.lock() = true;
        self.changed.notify_all();
    }

    /// Waits for [`Gate::end`], closes the gate, and waits until every admitted thread has left.
    pub fn wait(&self) {
        let mut ended = self.lock();
        while !*ended {
            ended = self.changed.wait(ended).unwrap_or_else(|p| p.into_inner());
        }
        drop(ended);
        if self.word.fetch_or(CLOSED, Ordering::AcqRel) == 0 {
            return;
        }
        for _ in 0..LOOKS {
            if self.word.load(Ordering::Acquire) == CLOSED {
                return;
            }
            std::thread::yield_now();
        }
        let mut ended = self.lock();
        while self.word.load(Ordering::Acquire) != CLOSED {
            ended = self.changed.wait(ended).unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        self.0.leave();
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::Gate;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn late_threads_are_turned_away_and_the_wait_outlasts_the_admitted_ones() {
        let gate = Arc::new(Gate::default());
        let left = Arc::new(AtomicBool::new(false));
        let (entered_tx, entered) = std::sync::mpsc::channel();
        let (g, l) = (Arc::clone(&gate), Arc::clone(&left));
        let member = std::thread::spawn(move || {
            let inside = g.enter().expect("the gate is open");
            entered_tx.send(()).unwrap();
            g.end();
            // Still inside after the end: `wait` must not return yet.
            std::thread::sleep(Duration::from_millis(20));
            l.store(true, Ordering::SeqCst);
            drop(inside);
        });
        entered.recv().unwrap();
        gate.wait();
        assert!(left.load(Ordering::SeqCst), "wait returned while a thread was inside");
        assert!(gate.enter().is_none(), "a thread was admitted after the wait");
        member.join().unwrap();
        // A turned-away thread leaves nothing behind.
        assert!(gate.enter().is_none());
    }

    #[test]
    fn many_threads_entering_and_leaving_at_once() {
        for _ in 0..20 {
            let gate = Arc::new(Gate::default());
            let inside_now = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let threads: Vec<_> = (0..8)
                .map(|_| {
                    let (g, n) = (Arc::clone(&gate), Arc::clone(&inside_now));
                    std::thread::spawn(move || {
                        if let Some(_inside) = g.enter() {
                            n.fetch_add(1, Ordering::SeqCst);
                            std::thread::yield_now();
                            n.fetch_sub(1, Ordering::SeqCst);
                        }
                    })
                })
                .collect();
            gate.end();
            gate.wait();
            // Nobody admitted is still inside, and nobody gets in any more.
            assert_eq!(inside_now.load(Ordering::SeqCst), 0);
            assert!(gate.enter().is_none());
            for t in threads {
                t.join().unwrap();
            }
        }
    }
}

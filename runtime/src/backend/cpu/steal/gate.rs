//! Which pool threads take part in a run: [`Gate`]. A run asks every pool thread to join it
//! without waiting for all of them (`spawn_broadcast`, not `broadcast`): the run ends when its
//! root has delivered (or it failed), whichever threads joined by then. A thread that comes later
//! (asleep, or not scheduled on a loaded machine) finds the gate closed and returns without
//! touching the run, so the run's state may be gone by then. It owns this admission protocol
//! only (no scheduling, no run state).
//!
//! Protocol: the run's thread [`wait`](Gate::wait)s until [`end`](Gate::end) is called (root
//! delivered, or failure), then closes the gate and waits until every admitted thread has left
//! ([`Inside`] dropped). A thread is admitted ([`enter`](Gate::enter)) only while the gate is
//! open, under the same lock, so after `wait` returns no thread is inside the run or can enter
//! it.

use std::sync::{Condvar, Mutex, MutexGuard};

/// The admission state of one run (shared with the pool threads through an `Arc`, since a late
/// thread may hold it after the run is over).
#[derive(Default)]
pub(super) struct Gate {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Default)]
struct State {
    closed: bool,
    ended: bool,
    inside: usize,
}

/// An admitted thread; dropping it leaves the run (also when the thread unwinds).
pub(super) struct Inside<'g>(&'g Gate);

impl Gate {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Admits the calling thread while the run is still open.
    pub(super) fn enter(&self) -> Option<Inside<'_>> {
        let mut s = self.lock();
        if s.closed {
            return None;
        }
        s.inside += 1;
        Some(Inside(self))
    }

    /// The run is over (its root delivered, or it failed): wakes [`Gate::wait`].
    pub(super) fn end(&self) {
        self.lock().ended = true;
        self.changed.notify_all();
    }

    /// Waits for [`Gate::end`], closes the gate, and waits until every admitted thread has left.
    pub(super) fn wait(&self) {
        let mut s = self.lock();
        while !s.ended {
            s = self.changed.wait(s).unwrap_or_else(|p| p.into_inner());
        }
        s.closed = true;
        // The workers leave within microseconds of the end (the last one to finish, or waking
        // from a park): look again a few times before sleeping on the condition variable, whose
        // wake-up would add its latency to every run.
        for _ in 0..64 {
            if s.inside == 0 {
                return;
            }
            drop(s);
            std::thread::yield_now();
            s = self.lock();
        }
        while s.inside > 0 {
            s = self.changed.wait(s).unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Drop for Inside<'_> {
    fn drop(&mut self) {
        let mut s = self.0.lock();
        s.inside -= 1;
        if s.inside == 0 {
            drop(s);
            self.0.changed.notify_all();
        }
    }
}

#[cfg(test)]
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
    }
}

//! Loom model checks of the stealing scheduler's run admission (`runtime/src/backend/cpu/steal/gate.rs`):
//! pool threads enter a run while it is open (one `fetch_add` on a word with a `CLOSED` bit), the
//! run's thread waits for the end, closes the gate and waits until every admitted thread has
//! left; a late thread is turned away. Loom's `UnsafeCell` stands for the run's state: each
//! admitted thread writes its own part, and the run's thread "frees" every part after `wait`
//! returns, so loom flags any access of an admitted thread that is not ordered before that, and a
//! lost wake-up shows as a deadlock.
//!
//! Run with `scripts/loom.sh` (`RUSTFLAGS="--cfg loom"`, release, `LOOM_MAX_PREEMPTIONS=2`).
#![cfg(loom)]

use gpu_cilk_runtime::backend::cpu::steal::Gate;
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

/// A run: its gate and one part of its state per pool thread.
struct Run {
    gate: Gate,
    parts: Vec<UnsafeCell<u32>>,
}

impl Run {
    fn new(threads: usize) -> Arc<Self> {
        Arc::new(Run { gate: Gate::new(), parts: (0..threads).map(|_| UnsafeCell::new(0)).collect() })
    }

    /// A pool thread: if admitted, touches its part of the run (and ends the run when `ends`).
    fn member(&self, i: usize, ends: bool) -> bool {
        let Some(_inside) = self.gate.enter() else { return false };
        // SAFETY: part `i` is this thread's alone while it is inside (loom checks the order).
        self.parts[i].with_mut(|p| unsafe { *p = i as u32 + 1 });
        if ends {
            self.gate.end();
        }
        true
    }

    /// The run's thread after `wait`: frees the state (writes every part).
    fn free(&self) {
        for p in &self.parts {
            // SAFETY: nobody is inside any more (what loom checks).
            p.with_mut(|p| unsafe { *p = 0 });
        }
    }
}

/// The thread that delivers the root ends the run from inside; another comes early or late.
#[test]
fn the_finisher_and_a_thread_that_may_be_late() {
    loom::model(|| {
        let run = Run::new(2);
        let (a, b) = (Arc::clone(&run), Arc::clone(&run));
        let finisher = thread::spawn(move || assert!(a.member(0, true)));
        let other = thread::spawn(move || b.member(1, false));
        run.gate.wait();
        run.free();
        // Closed for good: nobody else is admitted.
        assert!(run.gate.enter().is_none());
        finisher.join().unwrap();
        other.join().unwrap();
    });
}

/// Two threads that may both be turned away (the run ended without them, as a failing run does
/// from the run's side here): their undo must not lose the run's wake-up, nor let them in.
#[test]
fn two_threads_racing_the_close() {
    loom::model(|| {
        let run = Run::new(2);
        let (a, b) = (Arc::clone(&run), Arc::clone(&run));
        let first = thread::spawn(move || a.member(0, false));
        let second = thread::spawn(move || b.member(1, false));
        run.gate.end();
        run.gate.wait();
        run.free();
        first.join().unwrap();
        second.join().unwrap();
    });
}

/// Two members inside when the run ends, leaving in either order while the run's thread closes
/// the gate and goes to sleep.
#[test]
fn two_members_leave_while_the_run_closes() {
    loom::model(|| {
        let run = Run::new(2);
        let a = Arc::clone(&run);
        // Both are admitted before anything ends: `second` starts inside `first`'s admission.
        let first = thread::spawn(move || {
            let inside = a.gate.enter().expect("open");
            let c = Arc::clone(&a);
            let second = thread::spawn(move || c.member(1, true));
            // SAFETY: part 0 is this thread's alone while it is inside.
            a.parts[0].with_mut(|p| unsafe { *p = 1 });
            drop(inside);
            second.join().unwrap()
        });
        run.gate.wait();
        run.free();
        assert!(first.join().unwrap(), "the second member was admitted: the gate was open");
    });
}

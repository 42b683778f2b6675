//! Between runs: [`Lobby`], where a pool thread that just left a run stays awake for a short
//! while (`Config::linger_us`) and joins the backend's next run directly, instead of going back
//! to the pool to sleep and being woken by the next run's broadcast (a wake-up that costs the run
//! tens to hundreds of microseconds: the run's thread notifies the sleeping threads one after
//! another, and each then needs the scheduler to put it on a core). Back-to-back runs, as in a
//! loop or a benchmark, then find their workers awake. It owns this hand-over only (no
//! scheduling, no run state); admission to a run stays the [`Gate`]'s.
//!
//! Protocol: a run [`open`](Lobby::open)s itself (its gate and the address of its shared state)
//! under the lobby's lock and bumps the epoch; a lingering thread spins on the epoch, then takes
//! the entry under the same lock and asks the run's gate to admit it, exactly as the run's own
//! broadcast job does, so a run that ended in between turns it away and its state is never
//! touched after the run returned. A thread lingers at most once per broadcast job it ran, so the
//! job the joined run broadcast to it is still waiting for it in the pool and runs (finding its
//! gate closed, then lingering in turn) as soon as it returns: no thread ever has more than one
//! such job queued. Lingering is bounded: looking, a few `spin_loop` hints and a
//! `yield_now` (never holding a core that another thread wants: the run's own thread needs one to
//! return) for at most `linger` in all; then the thread returns to the pool, which parks it
//! after its own short spin. `linger_us = 0` turns it off.

use super::gate::Gate;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// The longest a pool thread stays awake after a run (`Config::linger_us` is capped here, and so
/// is an idle worker's `Config::idle_awake_us` within one): a library must not keep cores busy
/// when nobody runs anything.
pub(super) const MAX_LINGER_US: u64 = 10_000;

/// `spin_loop` hints between two looks at the epoch, each followed by a `yield_now`.
const SPINS: u32 = 16;

/// An open run: its number, its gate, the address of its shared state.
pub(super) type Entry = (u64, Arc<Gate>, usize);

/// The hand-over point between one backend's runs (one per cpu backend, shared by its pool's
/// threads through an `Arc`).
#[derive(Default)]
pub struct Lobby {
    /// Runs opened so far (`Release` after the entry is stored; lingering threads spin on it).
    epoch: AtomicU64,
    /// The latest open run, if it has not ended (read by every lingering thread at once when a
    /// run opens: a read lock, so they never queue behind each other).
    open: RwLock<Option<Entry>>,
    /// Threads lingering now.
    lingering: AtomicUsize,
}

impl Lobby {
    /// Opens a run (its `gate`, its shared state at `at`) for lingering threads; returns its
    /// number.
    pub(super) fn open(&self, gate: &Arc<Gate>, at: usize) -> u64 {
        let mut open = self.open.write().unwrap_or_else(|p| p.into_inner());
        let n = self.epoch.load(Ordering::Relaxed) + 1;
        *open = Some((n, Arc::clone(gate), at));
        self.epoch.store(n, Ordering::Release);
        n
    }

    /// Run `n` ended: lingering threads no longer look at it (its gate turns them away anyway).
    pub(super) fn close(&self, n: u64) {
        let mut open = self.open.write().unwrap_or_else(|p| p.into_inner());
        if open.as_ref().is_some_and(|e| e.0 == n) {
            *open = None;
        }
    }

    /// Threads lingering now (tests: they all go back to the pool within `linger`).
    pub fn lingering(&self) -> usize {
        self.lingering.load(Ordering::Relaxed)
    }

    /// Stays awake for at most `linger`, waiting for a run later than run `seen`; returns it if
    /// one opened (the caller still has to pass its gate).
    pub(super) fn wait(&self, seen: u64, linger: Duration) -> Option<Entry> {
        if linger.is_zero() {
            return None;
        }
        self.lingering.fetch_add(1, Ordering::Relaxed);
        let since = Instant::now();
        let found = loop {
            if self.epoch.load(Ordering::Acquire) > seen {
                let open = self.open.read().unwrap_or_else(|p| p.into_inner());
                match open.as_ref() {
                    Some(e) if e.0 > seen => break Some((e.0, Arc::clone(&e.1), e.2)),
                    // It opened and ended already: wait for the next one.
                    _ => {}
                }
            }
            // Yield at every round: the run's thread, just woken to return the run's value,
            // may need this core (a spinning thread would hold it until the next tick).
            for _ in 0..SPINS {
                std::hint::spin_loop();
            }
            std::thread::yield_now();
            if since.elapsed() >= linger {
                break None;
            }
        };
        self.lingering.fetch_sub(1, Ordering::Relaxed);
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lingering_thread_finds_the_next_run_or_gives_up_in_time() {
        let lobby = Arc::new(Lobby::default());
        let gate = Arc::new(Gate::default());
        // Nothing opens: back after the linger, not before.
        let t = Instant::now();
        assert!(lobby.wait(0, Duration::from_millis(2)).is_none());
        assert!(t.elapsed() >= Duration::from_millis(2));
        assert_eq!(lobby.lingering(), 0);
        // Off: back at once.
        assert!(lobby.wait(0, Duration::ZERO).is_none());
        // A run opened later is found (a long linger: the test hangs for 60 s if not).
        let l = Arc::clone(&lobby);
        let waiter = std::thread::spawn(move || l.wait(0, Duration::from_secs(60)).map(|e| (e.0, e.2)));
        while lobby.lingering() == 0 {
            std::thread::yield_now();
        }
        let n = lobby.open(&gate, 42);
        assert_eq!(waiter.join().unwrap(), Some((n, 42)));
        // A run that is already open counts for a thread that saw an older one only.
        assert_eq!(lobby.wait(n - 1, Duration::from_secs(60)).map(|e| e.0), Some(n));
        assert!(lobby.wait(n, Duration::from_millis(1)).is_none());
        // A closed run is not handed out.
        lobby.close(n);
        assert!(lobby.wait(n - 1, Duration::from_millis(1)).is_none());
    }
}

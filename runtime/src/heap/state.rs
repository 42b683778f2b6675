//! The node-level multi-state locks of the heap (Chen et al. §3.3.1, §3.3.4) and the heap lock:
//! one 64-bit state word per node, `owner << 3 | LOCKED | kind`, and one 32-bit word for the
//! heap lock. The device twin is `gc_heap_lock` / `gc_heap_release` in `heap.cuh`, same encoding.
//!
//! Owns the encoding and the acquire/release protocol; must not touch node contents (the heap
//! module reads and writes those only while it holds the covering lock).
//!
//! # Memory ordering
//!
//! Acquire is a compare-and-swap from an unlocked word `s` to `s | LOCKED` with `Acquire`; release
//! is a plain store of the new unlocked word with `Release`. Every access to a node's keys (and,
//! for the heap lock, to `count`, the partial buffer and its length) happens between an acquire
//! and the matching release, so each holder's accesses happen-before the next holder's: the
//! release store is read by the next successful compare-and-swap (a release/acquire pair), and
//! nothing else writes the word while it is locked. Failed attempts load `Relaxed`: they only
//! decide whether to try again. The `kind` and `owner` bits travel in the same word as the lock
//! bit, so a holder always sees the state the previous holder left.

use crate::backoff::Backoff;
#[cfg(loom)]
use loom::sync::atomic::{AtomicU32, AtomicU64, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// No batch here: beyond `count`, or taken by a delete. Zero, so a zeroed state array is an empty
/// heap.
pub(crate) const EMPTY: u64 = 0;
/// A full node in heap order with its parent (paper: AVAIL).
pub(crate) const AVAIL: u64 = 1;
/// A full node carrying a bottom-up insert's batch that may still be smaller than its parent
/// (paper: INSHOLD); the owner bits name the insert that must keep moving it up.
pub(crate) const INSHOLD: u64 = 2;
/// Allocated to a top-down insert that has not arrived yet (paper: TARGET): absent for a sifting
/// delete, waited for by a delete that wants it as its last node.
pub(crate) const TARGET: u64 = 3;
/// Held by an operation (paper: INUSE); the kind and owner bits stay as they were.
pub(crate) const LOCKED: u64 = 4;
const KIND_MASK: u64 = 3;
const OWNER_SHIFT: u32 = 3;

/// The kind bits of an (unlocked) state word.
#[inline]
pub(crate) fn kind(s: u64) -> u64 {
    s & KIND_MASK
}

/// The owner of an `INSHOLD` word.
#[inline]
pub(crate) fn owner(s: u64) -> u64 {
    s >> OWNER_SHIFT
}

/// `INSHOLD` owned by `owner` (owners are below `2^61`).
#[inline]
pub(crate) fn inshold(owner: u64) -> u64 {
    (owner << OWNER_SHIFT) | INSHOLD
}

/// Whether `s` is `INSHOLD` owned by `owner`.
#[inline]
pub(crate) fn held_by(s: u64, owner: u64) -> bool {
    kind(s) == INSHOLD && self::owner(s) == owner
}

#[cfg(all(test, not(loom)))]
thread_local! {
    /// Unit tests: the state word this thread watches (its address) and how many times this
    /// thread has locked it while it was `TARGET` ([`watch_target_locks`]).
    static WATCHED: std::cell::Cell<(usize, u64)> = const { std::cell::Cell::new((0, 0)) };
}

/// Unit tests: from now on, counts this thread's locks of `w` that find it `TARGET`.
#[cfg(all(test, not(loom)))]
pub(crate) fn watch_target_locks(w: &AtomicU64) {
    WATCHED.with(|c| c.set((w as *const AtomicU64 as usize, 0)));
}

/// Unit tests: how many times this thread has locked the word given to [`watch_target_locks`]
/// while it was `TARGET`.
#[cfg(all(test, not(loom)))]
pub(crate) fn watched_target_locks() -> u64 {
    WATCHED.with(|c| c.get().1)
}

/// Locks the node whose state word is `w`; returns the word as it was (unlocked form).
#[inline]
pub(crate) fn lock(w: &AtomicU64) -> u64 {
    let mut backoff = Backoff::new();
    loop {
        let s = w.load(Ordering::Relaxed);
        if s & LOCKED == 0 && w.compare_exchange(s, s | LOCKED, Ordering::Acquire, Ordering::Relaxed).is_ok() {
            #[cfg(all(test, not(loom)))]
            WATCHED.with(|c| {
                let (at, n) = c.get();
                if at == w as *const AtomicU64 as usize && kind(s) == TARGET {
                    c.set((at, n + 1));
                }
            });
            return s;
        }
        backoff.snooze();
    }
}

/// One attempt to lock the state word `w` guessing that it holds the unlocked word `guess`:
/// `Some(guess)` when the compare-and-swap took the lock, else `None` (heap.cuh's guessing CAS;
/// the device issues one at each child of a node at once, [`super::Heap`]'s `lock_children`).
#[inline]
pub(crate) fn try_lock_as(w: &AtomicU64, guess: u64) -> Option<u64> {
    debug_assert_eq!(guess & LOCKED, 0, "guessing a locked word");
    w.compare_exchange(guess, guess | LOCKED, Ordering::Acquire, Ordering::Relaxed).ok()
}

/// Unlocks the node whose state word is `w`, leaving the unlocked word `s`.
#[inline]
pub(crate) fn release(w: &AtomicU64, s: u64) {
    debug_assert_eq!(s & LOCKED, 0, "releasing with the lock bit set");
    w.store(s, Ordering::Release);
}

/// Takes the heap lock (0 free, 1 held; the device stores its holder's block index + 1 instead of
/// 1, which its watchdog prints: `heap.cuh`, DIAGNOSTICS).
#[inline]
pub(crate) fn lock_heap(w: &AtomicU32) {
    let mut backoff = Backoff::new();
    loop {
        if w.load(Ordering::Relaxed) == 0 && w.compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed).is_ok() {
            return;
        }
        backoff.snooze();
    }
}

/// Releases the heap lock.
#[inline]
pub(crate) fn unlock_heap(w: &AtomicU32) {
    w.store(0, Ordering::Release);
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn encoding_round_trips() {
        let s = inshold(12345);
        assert_eq!(kind(s), INSHOLD);
        assert_eq!(owner(s), 12345);
        assert!(held_by(s, 12345));
        assert!(!held_by(s, 12346));
        assert!(!held_by(AVAIL, 0));
        assert_eq!(s & LOCKED, 0);
    }

    #[test]
    fn lock_returns_the_previous_word_and_release_restores() {
        let w = AtomicU64::new(inshold(7));
        assert_eq!(lock(&w), inshold(7));
        assert_eq!(w.load(Ordering::Relaxed), inshold(7) | LOCKED);
        release(&w, AVAIL);
        assert_eq!(lock(&w), AVAIL);
        release(&w, EMPTY);
        let h = AtomicU32::new(0);
        lock_heap(&h);
        assert_eq!(h.load(Ordering::Relaxed), 1);
        unlock_heap(&h);
        assert_eq!(h.load(Ordering::Relaxed), 0);
    }
}

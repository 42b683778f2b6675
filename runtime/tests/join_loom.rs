//! Loom model checks of the stealing scheduler's join counter
//! (`runtime/src/backend/cpu/steal/join.rs`): children decrement it after writing their results,
//! the owner adds its final child count after writing the frame, and exactly one party sees 0 and
//! runs the continuation, having acquired every result and the frame. Loom's `UnsafeCell` stands
//! for the frame's bytes and flags any read not ordered after the matching write.
//!
//! Run with `scripts/loom.sh` (`RUSTFLAGS="--cfg loom"`, release, `LOOM_MAX_PREEMPTIONS=2`).
#![cfg(loom)]

use gpu_cilk_runtime::backend::cpu::steal::Join;
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

/// A frame: the owner's part and one result slot per child, each written by one party only.
struct Frame {
    join: Join,
    own: UnsafeCell<u32>,
    results: Vec<UnsafeCell<u32>>,
    /// How many parties ran the continuation.
    resumed: AtomicUsize,
}

impl Frame {
    fn new(children: usize) -> Arc<Self> {
        Arc::new(Frame {
            join: Join::new(),
            own: UnsafeCell::new(0),
            results: (0..children).map(|_| UnsafeCell::new(0)).collect(),
            resumed: AtomicUsize::new(0),
        })
    }

    /// The continuation: reads everything (a race here is a loom failure) and checks it.
    fn resume(&self) {
        self.resumed.fetch_add(1, Ordering::Relaxed);
        assert_eq!(self.own.with(|p| unsafe { *p }), 100);
        for (i, r) in self.results.iter().enumerate() {
            assert_eq!(r.with(|p| unsafe { *p }), i as u32 + 1);
        }
    }

    fn child(&self, i: usize) {
        self.results[i].with_mut(|p| unsafe { *p = i as u32 + 1 });
        if self.join.child_done() {
            self.resume();
        }
    }
}

/// Runs `children` children on their own threads while the calling thread, the owner, writes its
/// frame and seals (after trying the `all_done` shortcut when `shortcut`).
fn round(children: usize, shortcut: bool) {
    let f = Frame::new(children);
    let handles: Vec<_> = (0..children)
        .map(|i| {
            let f = f.clone();
            thread::spawn(move || f.child(i))
        })
        .collect();
    f.own.with_mut(|p| unsafe { *p = 100 });
    if shortcut && f.join.all_done(children) {
        f.resume();
    } else if f.join.seal(children) {
        f.resume();
    }
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(f.resumed.load(Ordering::Relaxed), 1, "exactly one party resumes");
}

#[test]
fn one_child_exactly_one_resumer() {
    loom::model(|| round(1, false));
}

#[test]
fn two_children_exactly_one_resumer() {
    loom::model(|| round(2, false));
}

#[test]
fn three_children_exactly_one_resumer() {
    loom::model(|| round(3, false));
}

#[test]
fn the_all_done_shortcut_never_double_resumes() {
    loom::model(|| round(2, true));
}

/// A resumed frame is reset and reused for the next segment's children (as the scheduler reuses
/// a cell): the second round must see its own children only.
#[test]
fn a_reset_counter_serves_the_next_segment() {
    loom::model(|| {
        let f = Frame::new(1);
        let g = f.clone();
        let h = thread::spawn(move || g.child(0));
        f.own.with_mut(|p| unsafe { *p = 100 });
        let owner_resumes = f.join.seal(1);
        h.join().unwrap();
        if owner_resumes {
            f.resume();
        }
        assert_eq!(f.resumed.load(Ordering::Relaxed), 1);
        // Second segment: the frame's single owner (after the join above) resets and reuses it.
        f.join.reset();
        f.resumed.store(0, Ordering::Relaxed);
        let g = f.clone();
        let h = thread::spawn(move || g.child(0));
        if f.join.seal(1) {
            f.resume();
        }
        h.join().unwrap();
        assert_eq!(f.resumed.load(Ordering::Relaxed), 1);
    });
}

//! Loom model checks of the persistent device scheduler's PROMOTION and JOIN protocol
//! (`kernels/include/gpu_cilk/persistent.cuh`: PROMOTION, JOIN COUNTERS OF POOL FRAMES,
//! OVERFLOW). The CUDA code cannot run under loom, so this file holds a Rust twin of the protocol
//! only; the models check the twin.
//!
//! What it stands for:
//! - A LANE STACK is owned by one thread: the parent's entry (header `pending` + frame bytes) and
//!   its FRESH children's entries are plain memory that only the owner touches. A child that
//!   returns into an entry writes its result and decrements `pending` with plain stores.
//! - PROMOTION (`gc_take_oldest` / `gc_promote`): before the owner hands its oldest FRESH child to
//!   another lane, it copies the parent's entry (header with its current `pending`, frame bytes
//!   with the results of children already finished) into a pool frame F, marks the entry DEAD,
//!   points the children still on its stack at F (`gc_repoint`) and publishes the child through a
//!   queue slot (`gc_tq_put`: fence; turn store — a Release store here; `gc_tq_get`: turn load;
//!   fence — an Acquire load). A second hand-off of the same parent finds the entry DEAD and
//!   promotes nothing.
//! - JOIN COUNTERS OF POOL FRAMES (`gc_child_done`, `gc_join_add`): every child of F writes its
//!   result into F, then does `fetch_add(-1, AcqRel)` on F's `pending`; the one that sees 1
//!   resumes F.
//! - OVERFLOW (`gc_lane_spill`, `gc_lfinish`): the running task's entry is promoted in the middle
//!   of its segment (header only, `pending = 0`, a plain store before anything is published); its
//!   children sent away are remote and may finish (driving `pending` negative) before the segment
//!   ends; the segment's end stores F's frame bytes except the remote children's result slots
//!   (the masked store) and adds all `n` children with `fetch_add(n, AcqRel)`: the owner resumes
//!   F when `old + n == 0`, else the child whose decrement sees 1 does. Children pushed after the
//!   spill stay local (parent F) and run on the owner after the add.
//!
//! Simplifications: F is one preallocated slot (`gc_alloc_frame` and the free ring are not
//! modelled); one queue slot per thief stands for the pool or the warp's shared-memory hand-off;
//! a thief's thread starts right before the owner's hand-off to it (see `Thieves::start`).
//!
//! What it checks: exactly one party resumes the parent, and the resumer reads every child's
//! result and the owner's frame value. Every frame field, header field and queue item is a loom
//! `UnsafeCell`, so loom also flags any access not ordered after the write it depends on (a
//! frame copy not published before the hand-off, a result not released to the resumer, a masked
//! store that writes a remote child's slot, a thief touching the owner's stack). `pending` of F is
//! an atomic whose promotion-time copy is a Relaxed store (plain memory in CUDA, ordered by the
//! hand-off). Each model also asserts, after exploring, which parties were seen resuming, so a
//! model whose interesting interleaving is never reached fails instead of passing vacuously.
//!
//! MUTATION CHECK. Each change below, made alone (in the constants `PUT`, `GET`, `JOIN`, `ADD`
//! or in the code named) and then restored, makes loom fail at bound 2 (verified; what loom
//! reported is given):
//! - `PUT` Release -> Relaxed, or `GET` Acquire -> Relaxed (the hand-off does not synchronise):
//!   all 5 models fail, a causality violation between the owner's write of the queue item and
//!   the thief's read of it.
//! - `JOIN` AcqRel -> Release (a child's decrement does not acquire), -> Acquire (it does not
//!   release its result) or -> Relaxed: models 1, 3, 4 and 5 fail, the resumer's read of another
//!   child's result (with Release, also of the owner's masked store) concurrent with its write.
//!   Model 2 passes: its only decrement is the thief's, and what it reads was ordered by the
//!   hand-off.
//! - `ADD` AcqRel -> Acquire (the segment end's add does not release the masked frame store):
//!   model 5 fails, the resuming thief's read of the owner's value concurrent with its write.
//!   Model 4 passes, rightly: its local child's decrement, later on the owner's thread, releases
//!   the store.
//! - `ADD` AcqRel -> Release (the add does not acquire): model 5 fails, the owner resuming from
//!   its add reads a thief's result concurrent with its write. (Model 4's owner resumes only
//!   through its local child's decrement, which acquires.)
//! - The masked store writing the remote children's slots too (`segment_end_pool`): models 4 and
//!   5 fail, concurrent writes of a remote child's result slot.
//! - The promotion's copy made after the hand-off (`hand_oldest` publishing first): models 1-3
//!   fail, the copy's write of a result slot concurrent with the thief's.
//! - The promotion not copying the count (F's `pending` left 0): models 1-3 fail, no party
//!   resumes.
//! - No repointing of the children at F: models 1-3 fail, a handed child still reports to the
//!   lane entry.
//!
//! Run with `scripts/loom.sh` (`RUSTFLAGS="--cfg loom"`, release, `LOOM_MAX_PREEMPTIONS=2`).
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

/// `gc_tq_put`'s publication of an item (fence; turn store).
const PUT: Ordering = Ordering::Release;
/// `gc_tq_get`'s take of an item (turn load; fence).
const GET: Ordering = Ordering::Acquire;
/// A child's `gc_join_add(&F.pending, -1)`.
const JOIN: Ordering = Ordering::AcqRel;
/// The segment end's `gc_join_add(&F.pending, n)` (OVERFLOW).
const ADD: Ordering = Ordering::AcqRel;

/// The value the parent's segment leaves in its frame (its own field).
const OWN: u32 = 100;

/// The result child `i` writes into its parent's frame.
fn result_of(i: usize) -> u32 {
    i as u32 + 1
}

/// Who resumed the parent, as a bit of the set of resumers seen over all executions.
const BY_OWNER_CHILD: usize = 1; // the owner, returning a local child into F
const BY_OWNER_ADD: usize = 2; // the owner's segment-end add (OVERFLOW: every child done)
const BY_OWNER_ENTRY: usize = 4; // the owner, the entry's plain count reaching 0 (no promotion)
const fn by_thief(q: usize) -> usize {
    8 << q
}

/// Where a child's result and count go: the parent's lane entry or the pool frame F.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Parent {
    Entry,
    Pool,
}

/// A frame's bytes: the parent's own field and one result slot per child.
struct Frame {
    own: UnsafeCell<u32>,
    results: Vec<UnsafeCell<u32>>,
}

impl Frame {
    fn new(children: usize) -> Self {
        Frame { own: UnsafeCell::new(0), results: (0..children).map(|_| UnsafeCell::new(0)).collect() }
    }

    /// The parent's continuation reads its whole frame: a read not ordered after a write is a
    /// loom failure, a wrong value an assertion failure.
    fn check(&self) {
        // SAFETY: the resumer reads the frame after the join; loom checks that every write to it
        // happens before this read.
        assert_eq!(self.own.with(|p| unsafe { *p }), OWN, "the resumer sees the owner's frame");
        for (i, r) in self.results.iter().enumerate() {
            // SAFETY: as above, for child `i`'s result slot.
            assert_eq!(r.with(|p| unsafe { *p }), result_of(i), "the resumer sees child {i}'s result");
        }
    }
}

/// A FRESH child entry on the owner's stack (owner-only plain memory).
#[derive(Clone, Copy)]
struct Child {
    parent: Parent,
    /// Still on the stack (not run, not handed away).
    fresh: bool,
}

/// One queue slot (`gc_tq`'s turn and item).
struct Slot {
    turn: AtomicUsize,
    item: UnsafeCell<(usize, Parent)>,
}

/// One lane stack (the parent's entry and its children's entries), one pool frame F, one queue
/// slot per thief.
struct World {
    /// The parent entry's `pending` (plain: owner only).
    entry_pending: UnsafeCell<i32>,
    /// The parent entry is DEAD (promoted: forwards to F).
    entry_dead: UnsafeCell<bool>,
    entry: Frame,
    children: Vec<UnsafeCell<Child>>,
    /// F's header count: joined with atomics once F is published.
    pool_pending: AtomicI32,
    pool: Frame,
    slots: Vec<Slot>,
    /// How many parties resumed the parent in this execution.
    resumed: AtomicUsize,
    /// Resumers seen over all executions (not a loom object: loom's executions run one at a time).
    seen: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl World {
    fn new(children: usize, thieves: usize, seen: &std::sync::Arc<std::sync::atomic::AtomicUsize>) -> Arc<Self> {
        Arc::new(World {
            entry_pending: UnsafeCell::new(0),
            entry_dead: UnsafeCell::new(false),
            entry: Frame::new(children),
            children: (0..children).map(|_| UnsafeCell::new(Child { parent: Parent::Entry, fresh: true })).collect(),
            pool_pending: AtomicI32::new(0),
            pool: Frame::new(children),
            slots: (0..thieves)
                .map(|_| Slot { turn: AtomicUsize::new(0), item: UnsafeCell::new((usize::MAX, Parent::Entry)) })
                .collect(),
            resumed: AtomicUsize::new(0),
            seen: seen.clone(),
        })
    }

    fn resume(&self, frame: &Frame, by: usize) {
        self.resumed.fetch_add(1, Ordering::Relaxed);
        self.seen.fetch_or(by, std::sync::atomic::Ordering::Relaxed);
        frame.check();
    }

    /// Child `i` has run (on the thread `by` names) and returns into `parent`.
    fn child_returns(&self, i: usize, parent: Parent, by: usize) {
        match parent {
            Parent::Entry => {
                // SAFETY: the entry is on the owner's stack and only the owner runs children
                // whose parent is the entry; loom checks that no other thread touches it.
                self.entry.results[i].with_mut(|p| unsafe { *p = result_of(i) });
                // SAFETY: as above (the plain decrement of a lane entry's count).
                let left = self.entry_pending.with_mut(|p| unsafe {
                    *p -= 1;
                    *p
                });
                if left == 0 {
                    // The entry is ready: the owner's next step runs its continuation.
                    self.resume(&self.entry, BY_OWNER_ENTRY);
                }
            }
            Parent::Pool => {
                // SAFETY: slot `i` of F is written by child `i` only; loom checks it is ordered
                // after the promotion's copy and before the resumer's read.
                self.pool.results[i].with_mut(|p| unsafe { *p = result_of(i) });
                if self.pool_pending.fetch_add(-1, JOIN) == 1 {
                    self.resume(&self.pool, by);
                }
            }
        }
    }

    /// The owner: the parent's segment ends with `n` FRESH children on the stack above its entry
    /// (`gc_lfinish` on a lane entry: the frame store, then a plain store of the count).
    fn segment_end_entry(&self) {
        // SAFETY: the owner's own stack (loom checks no other thread touches it).
        self.entry.own.with_mut(|p| unsafe { *p = OWN });
        for r in &self.entry.results {
            // SAFETY: as above; no child has started, so none has written its slot yet.
            r.with_mut(|p| unsafe { *p = 0 });
        }
        // SAFETY: as above.
        self.entry_pending.with_mut(|p| unsafe { *p = self.children.len() as i32 });
    }

    /// The owner runs FRESH child `i` (the top of its stack) and returns it into its parent.
    fn run_local(&self, i: usize) {
        // SAFETY: the owner's own stack.
        let c = self.children[i].with_mut(|p| unsafe {
            assert!((*p).fresh, "child {i} runs once");
            (*p).fresh = false;
            *p
        });
        self.child_returns(i, c.parent, BY_OWNER_CHILD);
    }

    /// The owner hands FRESH child `i` (the oldest) to thief `q` (`gc_take_oldest`): promotes the
    /// parent entry unless it is DEAD already, points the FRESH children at F, publishes child `i`.
    fn hand_oldest(&self, i: usize, q: usize) {
        // SAFETY: the owner's own stack.
        let dead = self.entry_dead.with(|p| unsafe { *p });
        if !dead {
            // gc_promote: the header (its current count) and the frame bytes, results included.
            // SAFETY: the owner's own stack.
            let pending = self.entry_pending.with(|p| unsafe { *p });
            // A plain copy in CUDA; no other thread can reach F before the hand-off below.
            self.pool_pending.store(pending, Ordering::Relaxed);
            // SAFETY: the owner reads its own entry and writes F before publishing it.
            let own = self.entry.own.with(|p| unsafe { *p });
            // SAFETY: F is not published yet: only the owner touches it.
            self.pool.own.with_mut(|p| unsafe { *p = own });
            for (from, to) in self.entry.results.iter().zip(&self.pool.results) {
                // SAFETY: as above, for each result slot.
                let v = from.with(|p| unsafe { *p });
                // SAFETY: as above.
                to.with_mut(|p| unsafe { *p = v });
            }
            // SAFETY: the owner's own stack.
            self.entry_dead.with_mut(|p| unsafe { *p = true });
        }
        // gc_repoint of every FRESH entry whose parent is the DEAD entry (the handed one too).
        for c in &self.children {
            // SAFETY: the owner's own stack.
            c.with_mut(|p| unsafe {
                if (*p).fresh && (*p).parent == Parent::Entry {
                    (*p).parent = Parent::Pool;
                }
            });
        }
        // SAFETY: the owner's own stack.
        let parent = self.children[i].with_mut(|p| unsafe {
            assert!((*p).fresh, "child {i} is handed once");
            (*p).fresh = false;
            (*p).parent
        });
        self.publish(q, i, parent);
    }

    /// `gc_tq_put`: writes the item, then releases it with the turn.
    fn publish(&self, q: usize, i: usize, parent: Parent) {
        // SAFETY: slot `q` is empty and written by the owner only; the thief reads it after the
        // turn below (loom checks the order).
        self.slots[q].item.with_mut(|p| unsafe { *p = (i, parent) });
        self.slots[q].turn.store(1, PUT);
    }

    /// Thief `q`: takes its item (`gc_tq_get`), runs the child and returns it into its parent.
    fn thief(&self, q: usize) {
        while self.slots[q].turn.load(GET) == 0 {
            thread::yield_now();
        }
        // SAFETY: the item was written before the turn this thread has acquired.
        let (i, parent) = self.slots[q].item.with(|p| unsafe { *p });
        assert_eq!(parent, Parent::Pool, "a handed child reports to a pool frame");
        self.child_returns(i, parent, by_thief(q));
    }

    /// OVERFLOW, `gc_lane_spill` on the running task: its entry moves to F with the header only
    /// (`pending = 0`); children spawned from now on report to F.
    fn spill(&self) {
        // A plain store in CUDA, before anything that names F is published.
        self.pool_pending.store(0, Ordering::Relaxed);
        // SAFETY: the owner's own stack.
        self.entry_dead.with_mut(|p| unsafe { *p = true });
        for c in &self.children {
            // SAFETY: the owner's own stack.
            c.with_mut(|p| unsafe { (*p).parent = Parent::Pool });
        }
    }

    /// OVERFLOW, the owner sends FRESH child `i` to thief `q` (it is remote from now on).
    fn send_remote(&self, i: usize, q: usize) {
        // SAFETY: the owner's own stack.
        let parent = self.children[i].with_mut(|p| unsafe {
            (*p).fresh = false;
            (*p).parent
        });
        self.publish(q, i, parent);
    }

    /// OVERFLOW, the segment's end on F (`gc_lfinish` with remote children): the masked frame
    /// store (every byte but the remote children's result slots), then the add of all `n`
    /// children; the owner resumes F when the add sees every child done.
    fn segment_end_pool(&self, remote: &[usize]) {
        // SAFETY: the owner writes its own field of F; no child writes it.
        self.pool.own.with_mut(|p| unsafe { *p = OWN });
        for (i, r) in self.pool.results.iter().enumerate() {
            if !remote.contains(&i) {
                // SAFETY: a local child's slot: it has not started (it runs on this thread).
                r.with_mut(|p| unsafe { *p = 0 });
            }
        }
        let n = self.children.len() as i32;
        if self.pool_pending.fetch_add(n, ADD) + n == 0 {
            self.resume(&self.pool, BY_OWNER_ADD);
        }
    }
}

/// The thief threads a model has started.
struct Thieves {
    w: Arc<World>,
    handles: Vec<thread::JoinHandle<()>>,
}

impl Thieves {
    /// Starts the next thief, right before the owner's hand-off to it. A thief waits for its item
    /// spinning with `yield_now`; two thieves waiting at once can yield to each other forever
    /// while the owner stays preempted, and loom reports its branch limit (tried: with a load or
    /// a compare-and-swap for the turn alike), so a thief starts only when its item is next. The spawn orders the owner's earlier steps before the thief's,
    /// which the hand-off orders anyway (its release follows them): the promotion's copy and the
    /// item, written after the spawn, are still ordered by the hand-off alone.
    fn start(&mut self) {
        let q = self.handles.len();
        let w = self.w.clone();
        self.handles.push(thread::spawn(move || w.thief(q)));
    }
}

/// Explores `owner` (the owner's part, on loom's main thread, starting the `thieves` thief
/// threads), checks exactly one resume per execution, and that the resumers seen over all
/// executions are `expect` (at a preemption bound of 2 or more: some resumers need two).
fn model(children: usize, thieves: usize, owner: fn(&World, &mut Thieves), expect: usize) {
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let s = seen.clone();
    loom::model(move || {
        let w = World::new(children, thieves, &s);
        let mut t = Thieves { w: w.clone(), handles: Vec::new() };
        owner(&w, &mut t);
        assert_eq!(t.handles.len(), thieves, "every thief started");
        for h in t.handles {
            h.join().unwrap();
        }
        assert_eq!(w.resumed.load(Ordering::Relaxed), 1, "exactly one party resumes the parent");
    });
    let bound = std::env::var("LOOM_MAX_PREEMPTIONS").ok().and_then(|v| v.parse::<usize>().ok());
    if !matches!(bound, Some(b) if b < 2) {
        assert_eq!(seen.load(std::sync::atomic::Ordering::Relaxed), expect, "the resumers explored");
    }
}

/// (1) Two children; the owner hands the oldest to a thief (promoting the parent with count 2)
/// before either runs, then runs the other, now reporting to F.
#[test]
fn promotion_before_any_child_runs() {
    model(
        2,
        1,
        |w, t| {
            w.segment_end_entry();
            t.start();
            w.hand_oldest(0, 0);
            w.run_local(1);
        },
        BY_OWNER_CHILD | by_thief(0),
    );
}

/// (2) Two children; the owner runs its top child first (into the entry: count 2 -> 1, result in
/// the entry's frame), then hands the other away: the copy carries count 1 and the finished
/// child's result, and the thief resumes, reading what the copy wrote.
#[test]
fn local_child_done_before_promotion() {
    model(
        2,
        1,
        |w, t| {
            w.segment_end_entry();
            w.run_local(1);
            t.start();
            w.hand_oldest(0, 0);
        },
        by_thief(0),
    );
}

/// (3) Three children; two are handed to two thieves in turn (the second hand-off finds the
/// parent promoted already and copies nothing), the owner runs the third.
#[test]
fn two_promotions_of_one_parent() {
    model(
        3,
        2,
        |w, t| {
            w.segment_end_entry();
            t.start();
            w.hand_oldest(0, 0);
            t.start();
            w.hand_oldest(1, 1);
            w.run_local(2);
        },
        BY_OWNER_CHILD | by_thief(0) | by_thief(1),
    );
}

/// (4) OVERFLOW: the running segment spawned child 0 and spills (its entry becomes F with count
/// 0, child 0 goes to a thief), spawns child 1 locally, ends (masked store, add 2), then runs
/// child 1.
#[test]
fn overflow_one_remote_one_local_child() {
    model(
        2,
        1,
        |w, t| {
            w.spill();
            t.start();
            w.send_remote(0, 0);
            w.segment_end_pool(&[0]);
            w.run_local(1);
        },
        BY_OWNER_CHILD | by_thief(0),
    );
}

/// (5) OVERFLOW with two remote children and no local one: both may finish (count -2) before the
/// segment end's add, which then sees every child done and the owner resumes; otherwise the last
/// thief does.
#[test]
fn overflow_two_remote_children() {
    model(
        2,
        2,
        |w, t| {
            w.spill();
            t.start();
            w.send_remote(0, 0);
            t.start();
            w.send_remote(1, 1);
            w.segment_end_pool(&[0, 1]);
        },
        BY_OWNER_ADD | by_thief(0) | by_thief(1),
    );
}

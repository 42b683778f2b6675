//! Loom model checks of the persistent device scheduler's SUM GROUPS protocol
//! (`kernels/include/gpu_cilk/persistent.cuh`: SUM GROUPS, `gc_sum_flush`, `gc_sum_leave`,
//! `gc_sum_handoff`, `gc_mstep`, the sum-root branch of `gc_lstep`, `gc_take_oldest`). The CUDA
//! code cannot run under loom, so this file holds a Rust twin of the protocol only; the models
//! check the twin (as `lane_loom.rs` does for promotion and the pool-frame join).
//!
//! What it stands for:
//! - The GROUP's ROOT starts on its lane's stack (`gc_lstep`'s sum-root branch): its entry holds
//!   the sum cell (starting at the root's constant) and the count `pending` (starting at 1, the
//!   root itself), both plain memory of the owner. The root's spawns push MEMBER entries (+1 each
//!   to the lane's delta); the root syncs and ends (-1).
//! - A LANE (a loom thread) runs the member on top of its stack (`gc_mstep`): pops it, pushes its
//!   children (+1 each), adds its value to the lane's `acc_sum` and ends it (-1). `acc_sum`,
//!   `acc_delta` and `acc_credit` are plain locals of the lane (registers in CUDA); so is its
//!   stack. Running a member of another group than the lane's flushes first.
//! - A FLUSH (`gc_sum_flush`) pays what the lane owes: on the lane-entry group, plain adds (only
//!   its lane sees it); on the pool frame, a relaxed atomic add of `acc_sum` into the sum cell,
//!   then `fetch_add(acc_delta - acc_credit, AcqRel)` on `pending` (`gc_join_add`), skipped when
//!   both are 0; the flush whose add brings `pending` to exactly 0 resumes the root, which reads
//!   the sum cell. Lanes flush when they go idle (stack empty), and before anything that is not a
//!   member of their group (`gc_sum_leave` in `gc_lstep`, `gc_presume`, `gc_lane_spill`).
//! - A HAND-OFF of the oldest member entry (`gc_take_oldest` -> `gc_sum_handoff`): on a lane-entry
//!   group, a flush (plain adds), then the PROMOTION of the root's entry into the pool frame (its
//!   count and sum cell copied with relaxed stores: plain copies in CUDA, ordered by the hand-off)
//!   and the repointing of the members still on the stack; on a pool-frame group, no flush: if
//!   `acc_credit == 0` the lane adds the credit to `pending` (a relaxed atomic add, `RESERVE`) and
//!   sets `acc_credit` to it; then `acc_credit -= 1; acc_delta -= 1`. With no group (the lane
//!   flushed since), every entry on its stack is counted already: nothing. The entry is then
//!   published through a queue slot (`gc_tq_put`: fence; turn store — a Release store here;
//!   `gc_tq_get`: turn load; fence — an Acquire load), which stands for the pool and for the
//!   warp's shared-memory hand-over alike.
//!
//! Simplifications: GC_SUM_CREDIT is a parameter of each model (1 or 2 instead of 64, so that a
//! second reservation, the reuse of a credit and the give-back of unused credit all happen in a
//! few steps); one queue slot per lane, used once; a thief's thread starts right before the
//! hand-off to it (as in `lane_loom.rs`: two threads spinning on empty slots at once can yield to
//! each other until loom's branch limit); a flush that makes the group ready resumes the root at
//! once (CUDA: at the lane's next step, `L->resume`, which reads nothing in between); the members'
//! values are distinct powers of two (any missing or doubled add shows in the sum); every model
//! hands a member away, so the group always ends on the pool frame (a lane-entry group's root runs
//! when its entry is back on top of its lane: no atomics, nothing to check).
//!
//! What it checks: exactly one party resumes the root; the sum cell it reads (a Relaxed load after
//! its AcqRel RMW, as the CUDA root's continuation reads the slot's deferred value) equals the
//! serial sum; and it reads every member's result from a loom `UnsafeCell` that the member's lane
//! wrote when it ran the member, so loom flags any member whose end is not ordered before the
//! resume (a count that reached 0 early, a flush that does not release or an RMW that does not
//! acquire). The items in the queue slots and the root's lane entry are `UnsafeCell`s too (a thief
//! reading an item not yet published, anyone but the owner touching its stack). After all lanes
//! ended, `pending` must be 0 (every credit given back). Each model also asserts, after exploring,
//! which lanes were seen resuming, so a model whose interesting interleaving is never reached fails
//! instead of passing vacuously (at bound 2 or more; below 2 that check is skipped).
//!
//! Why the count never reaches 0 early with credits (the argument the models exercise; the CUDA
//! comment's "an entry leaves its lane only after a flush" no longer holds for pool-frame groups):
//! per lane, let `owed` = `acc_delta - acc_credit` (what its next flush adds). A hand-off leaves
//! `owed` alone (both -1) and a reservation moves the credit from `owed` into `pending`, so at
//! every point of `pending`'s modification order, `pending` = (live members, the root included) -
//! (sum of every lane's `owed`) = (live members already counted in `pending`) + (per lane: the
//! members it ended since its last flush that it did not spawn in that window, plus the counted
//! entries it handed away in it, plus its unused credit). A lane's own unpaid spawns descend from a
//! member it ended in the window that it did not spawn there (or from its running member, counted),
//! so `pending` stays >= 1 while any member lives. Once none does, every lane that ran a member
//! since its flush owes a negative count, so `pending` reaches 0 at the last of their flushes and
//! at no other (a lane that owes a sum with delta 0 still holds a live member). What makes the
//! order of `pending` match this count is that a reservation, or the flush that counted an entry,
//! happens before the entry is published, hence before its taker's RMWs.
//!
//! MUTATION CHECK. Each change below was made alone (in the constants `FLUSH`, `PUT`, `GET` or in
//! the code named), run at bound 2 (each model on its own) and restored; what loom reported is
//! given:
//! - `FLUSH` AcqRel -> Release (the RMW that reaches 0 does not acquire), -> Acquire (a flush does
//!   not release its lane's results and sum) or -> Relaxed: all 6 models fail, a causality
//!   violation: the resumer's read of a member's result concurrent with its write on another lane.
//! - `PUT` Release -> Relaxed, or `GET` Acquire -> Relaxed (the hand-off does not synchronise): all
//!   6 fail, a causality violation between the hand-off's write of the queue item and the taker's
//!   read of it.
//! - The count flushed before the sum (`flush`: the RMW, then the sum add): all 6 fail, the resumer
//!   reads a sum cell short of another lane's values (model (a): 2^20 + 1 instead of 2^20 + 3):
//!   that lane's count let `pending` reach 0 before its sum was added.
//! - The hand-off without taking a credit (`hand_oldest`'s reservation removed: the lane's count of
//!   the handed member stays unpaid until its own flush, `acc_credit` goes negative): (b2) and (b3)
//!   fail, the taker's flush brings `pending` to 0 while member 3 has not run (the resumer reads
//!   its result as 0); (b1) and (d) fail, the resumer's read of a member's result concurrent with
//!   its write (the same early resume). (a) and (c) pass, rightly: their hand-offs find a
//!   lane-entry group (paid in full by its flush) or no group (the lane flushed since: every entry
//!   on its stack is counted), and take no credit.
//!
//! Further mutations, checked the same way:
//! - The reservation made after the publication (the credit added after the turn store): (b1)-(b3)
//!   and (d) fail, an early resume (member 3's result read as 0, or a sum short of member 0's
//!   value).
//! - The flush not giving back unused credit (`acc_delta` added without `- acc_credit`): (b1) and
//!   (d) fail, nobody resumes (`pending` stays at 1); (b2) and (b3) pass, rightly: lane 1 uses up
//!   every credit it reserves.
//! - A hand-off from a lane-entry group without paying it first: all 6 fail, a member's result read
//!   as 0: the promotion copies the count 1 (the root alone), so another lane's flush reaches 0
//!   with the owner's members unpaid.
//! - The flush skipping the RMW when its delta is 0 (the relaxed sum add kept): all 6 pass, and
//!   rightly so. A lane that owes a sum with delta 0 still holds an unpaid member it spawned (the
//!   child that took the ended member's place: model (c)), whose end is ordered after the sum add
//!   (program order, or the hand-off's release) and is paid by a release RMW that precedes the last
//!   one in `pending`'s order: the RMW of 0 carries nothing the resumer needs. (So `gc_sum_flush`
//!   could skip the join add when `delta == 0`; keeping it costs one atomic in a rare case.)
//!
//! Run with `scripts/loom.sh` (`RUSTFLAGS="--cfg loom"`, release, `LOOM_MAX_PREEMPTIONS=2`).
#![cfg(loom)]

use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicI32, AtomicU64, AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

/// `gc_tq_put`'s publication of an item (fence; turn store).
const PUT: Ordering = Ordering::Release;
/// `gc_tq_get`'s take of an item (turn load; fence).
const GET: Ordering = Ordering::Acquire;
/// The flush's `gc_join_add(&g->pending, acc_delta - acc_credit)`.
const FLUSH: Ordering = Ordering::AcqRel;
/// The flush's `atomicAdd` of `acc_sum` into the group's sum cell.
const SUM: Ordering = Ordering::Relaxed;
/// `gc_sum_handoff`'s `atomicAdd(&pending, GC_SUM_CREDIT)`.
const RESERVE: Ordering = Ordering::Relaxed;

/// The root's constant (the sum cell's first value).
const BASE: u64 = 1 << 20;

/// Member `m`'s value (its return value, or its constant when it synced).
fn value_of(m: usize) -> u64 {
    1 << m
}

/// A group's shape: the members the root spawns and, per member, the members it spawns (in spawn
/// order: the first spawned lies lowest on the stack, the oldest, handed away first).
struct Tree {
    root: &'static [usize],
    members: &'static [&'static [usize]],
}

impl Tree {
    /// The root's result in the serial order: its constant plus every member's value.
    fn serial_sum(&self) -> u64 {
        (0..self.members.len()).fold(BASE, |s, m| s.wrapping_add(value_of(m)))
    }
}

/// Where a member entry reports: the root's lane entry or the pool frame it was promoted to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Group {
    Entry,
    Pool,
}

/// One queue slot (`gc_tq`'s turn and item): the member and the group it reports to.
struct Slot {
    turn: AtomicUsize,
    item: UnsafeCell<(usize, Group)>,
}

/// The group's root (its lane entry and the pool frame it is promoted to), the members' results
/// and one queue slot per lane.
struct World {
    tree: &'static Tree,
    /// GC_SUM_CREDIT in this model.
    credit: i32,
    /// The root entry's count and sum cell (plain: the owner's stack).
    entry_pending: UnsafeCell<i32>,
    entry_sum: UnsafeCell<u64>,
    /// The root entry was promoted (DEAD, forwarding to the pool frame).
    entry_dead: UnsafeCell<bool>,
    /// The pool frame's count and sum cell.
    pool_pending: AtomicI32,
    pool_sum: AtomicU64,
    /// Member `m`'s result, written by the lane that runs it, read by the resumer.
    results: Vec<UnsafeCell<u64>>,
    slots: Vec<Slot>,
    /// How many parties resumed the root in this execution (not a loom object: loom runs an
    /// execution's threads one at a time, and counting needs no interleavings of its own).
    resumed: std::sync::atomic::AtomicUsize,
    /// Lanes seen resuming over all executions (a bit per lane).
    seen: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl World {
    /// The root's continuation (`gc_presume`: `ret = slot->deferred`): reads every member's result
    /// (a read not ordered after the write is a loom failure) and the sum cell.
    fn resume(&self, by: usize) {
        self.resumed.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.seen.fetch_or(1 << by, std::sync::atomic::Ordering::Relaxed);
        for (m, r) in self.results.iter().enumerate() {
            // SAFETY: member `m`'s lane wrote its result before paying the member's end; loom
            // checks that the write happens before this read.
            assert_eq!(r.with(|p| unsafe { *p }), value_of(m), "the resumer sees member {m}'s result");
        }
        assert_eq!(self.pool_sum.load(Ordering::Relaxed), self.tree.serial_sum(), "the resumer sees the whole sum");
    }
}

/// A lane: its stack of FRESH member entries and what it owes its group (plain locals: one
/// thread's stack and registers).
struct Lane {
    w: Arc<World>,
    /// The lane's index (its queue slot and its bit in `seen`).
    id: usize,
    /// Member entries, oldest first: (member, the group it reports to).
    stack: Vec<(usize, Group)>,
    /// `acc_group`: the group whose members this lane ran since its last flush.
    group: Option<Group>,
    acc_sum: u64,
    acc_delta: i32,
    acc_credit: i32,
    /// The thief threads this lane started.
    started: Vec<thread::JoinHandle<()>>,
}

impl Lane {
    fn new(w: Arc<World>, id: usize) -> Self {
        Lane { w, id, stack: Vec::new(), group: None, acc_sum: 0, acc_delta: 0, acc_credit: 0, started: Vec::new() }
    }

    /// `gc_lstep`'s sum-root branch: the root's entry gets the sum cell and the count, the root's
    /// first segment spawns its members into the group and syncs (the root ends: -1).
    fn root(&mut self) {
        // SAFETY: the root's entry is on this lane's stack; loom checks no other thread touches it.
        self.w.entry_sum.with_mut(|p| unsafe { *p = BASE });
        // SAFETY: as above.
        self.w.entry_pending.with_mut(|p| unsafe { *p = 1 });
        self.group = Some(Group::Entry);
        for &c in self.w.tree.root {
            self.stack.push((c, Group::Entry));
            self.acc_delta += 1;
        }
        self.acc_delta -= 1;
    }

    /// `gc_mstep` on the top entry: pays the lane's group first if the member's is another one,
    /// pops the member, pushes its children, adds its value and ends it.
    fn run_top(&mut self) {
        let (m, parent) = self.stack.pop().expect("a member on top");
        if self.group != Some(parent) {
            self.flush();
            self.group = Some(parent);
        }
        for &c in self.w.tree.members[m] {
            self.stack.push((c, parent));
            self.acc_delta += 1;
        }
        // SAFETY: member `m` runs once, on this lane; loom checks the resumer's read is ordered
        // after this write.
        self.w.results[m].with_mut(|p| unsafe { *p = value_of(m) });
        self.acc_sum = self.acc_sum.wrapping_add(value_of(m));
        self.acc_delta -= 1;
    }

    /// Runs members from the top until the stack is empty.
    fn run_all(&mut self) {
        while !self.stack.is_empty() {
            self.run_top();
        }
    }

    /// `gc_sum_flush` (and `gc_sum_leave`'s resume of the group it made ready).
    fn flush(&mut self) {
        let Some(g) = self.group.take() else { return };
        let sum = std::mem::take(&mut self.acc_sum);
        let delta = self.acc_delta - self.acc_credit;
        self.acc_delta = 0;
        self.acc_credit = 0;
        match g {
            Group::Entry => {
                // SAFETY: the root's entry lies on this lane's stack, below the members (only the
                // owner runs members that report to it); loom checks no other thread touches it.
                self.w.entry_sum.with_mut(|p| unsafe { *p = (*p).wrapping_add(sum) });
                // SAFETY: as above.
                self.w.entry_pending.with_mut(|p| unsafe { *p += delta });
            }
            Group::Pool => {
                if sum == 0 && delta == 0 {
                    return;
                }
                if sum != 0 {
                    self.w.pool_sum.fetch_add(sum, SUM);
                }
                if self.w.pool_pending.fetch_add(delta, FLUSH) + delta == 0 {
                    self.w.resume(self.id);
                }
            }
        }
    }

    /// The lane's stack is empty: it pays its group (the warp loop's `gc_sum_leave`).
    fn idle(&mut self) {
        assert!(self.stack.is_empty(), "an idle lane has nothing to run");
        self.flush();
    }

    /// `gc_take_oldest` of the oldest member entry and its hand-off to lane `q`:
    /// `gc_sum_handoff`, the promotion of the root's entry when the member reports to it, then
    /// `gc_tq_put`.
    fn hand_oldest(&mut self, q: usize) {
        let (m, parent) = self.stack[0];
        match self.group {
            // Every entry on the stack is counted (the lane flushed since it spawned them).
            None => {}
            // A lane-entry group is paid in full: it is about to be promoted with its count.
            Some(Group::Entry) => self.flush(),
            Some(Group::Pool) => {
                if self.acc_credit == 0 {
                    // Relaxed: the entry is published after it, so the taker's count updates come
                    // after this add.
                    self.w.pool_pending.fetch_add(self.w.credit, RESERVE);
                    self.acc_credit = self.w.credit;
                }
                self.acc_credit -= 1;
                self.acc_delta -= 1;
            }
        }
        if parent == Group::Entry {
            self.promote();
        }
        self.stack.remove(0);
        // SAFETY: slot `q` is empty and written by this lane only; its taker reads it after the
        // turn below (loom checks the order).
        self.w.slots[q].item.with_mut(|p| unsafe { *p = (m, Group::Pool) });
        self.w.slots[q].turn.store(1, PUT);
    }

    /// `gc_promote` of the root's entry (it lies below every member on the owner's stack): its
    /// count and sum cell go to the pool frame before anything names it; the members still on
    /// the stack are repointed at it.
    fn promote(&mut self) {
        // SAFETY: the owner's own stack.
        assert!(!self.w.entry_dead.with(|p| unsafe { *p }), "a member reports to a live entry");
        // SAFETY: the owner's own stack.
        let pending = self.w.entry_pending.with(|p| unsafe { *p });
        // SAFETY: the owner's own stack.
        let sum = self.w.entry_sum.with(|p| unsafe { *p });
        // Plain copies in CUDA: no other thread can reach the pool frame before the hand-off.
        self.w.pool_pending.store(pending, Ordering::Relaxed);
        self.w.pool_sum.store(sum, Ordering::Relaxed);
        // SAFETY: the owner's own stack.
        self.w.entry_dead.with_mut(|p| unsafe { *p = true });
        for e in &mut self.stack {
            e.1 = Group::Pool;
        }
    }

    /// `gc_tq_get` from this lane's slot: waits for its item and pushes it.
    fn take(&mut self) {
        let slot = &self.w.slots[self.id];
        while slot.turn.load(GET) == 0 {
            thread::yield_now();
        }
        // SAFETY: the item was written before the turn this thread has acquired.
        let (m, g) = slot.item.with(|p| unsafe { *p });
        assert_eq!(g, Group::Pool, "a handed member reports to the pool frame");
        self.stack.push((m, g));
    }

    /// Starts lane `q` running `script` (right before the hand-off to it).
    fn start(&mut self, q: usize, script: fn(&mut Lane)) {
        let w = self.w.clone();
        self.started.push(thread::spawn(move || {
            let mut l = Lane::new(w, q);
            script(&mut l);
            l.join_started();
        }));
    }

    fn join_started(&mut self) {
        for h in self.started.drain(..) {
            h.join().unwrap();
        }
    }
}

/// A thief that takes one member, runs everything it leads to and goes idle.
fn thief(l: &mut Lane) {
    l.take();
    l.run_all();
    l.idle();
}

/// Explores `owner` (lane 0's part, on loom's main thread, starting the other lanes) in a world of
/// `lanes` lanes with GC_SUM_CREDIT = `credit`, checks exactly one resume per execution and a
/// count of 0 at the end, and that the lanes seen resuming over all executions are `expect` (a
/// bit per lane; at a preemption bound of 2 or more).
fn model(tree: &'static Tree, credit: i32, lanes: usize, owner: fn(&mut Lane), expect: usize) {
    let seen = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let s = seen.clone();
    loom::model(move || {
        let w = Arc::new(World {
            tree,
            credit,
            entry_pending: UnsafeCell::new(0),
            entry_sum: UnsafeCell::new(0),
            entry_dead: UnsafeCell::new(false),
            pool_pending: AtomicI32::new(0),
            pool_sum: AtomicU64::new(0),
            results: (0..tree.members.len()).map(|_| UnsafeCell::new(0)).collect(),
            slots: (0..lanes)
                .map(|_| Slot { turn: AtomicUsize::new(0), item: UnsafeCell::new((usize::MAX, Group::Entry)) })
                .collect(),
            resumed: std::sync::atomic::AtomicUsize::new(0),
            seen: s.clone(),
        });
        let mut l = Lane::new(w.clone(), 0);
        owner(&mut l);
        l.join_started();
        assert_eq!(w.resumed.load(std::sync::atomic::Ordering::Relaxed), 1, "exactly one party resumes the root");
        assert_eq!(w.pool_pending.load(Ordering::Relaxed), 0, "every lane paid its count and credits");
    });
    let bound = std::env::var("LOOM_MAX_PREEMPTIONS").ok().and_then(|v| v.parse::<usize>().ok());
    if !matches!(bound, Some(b) if b < 2) {
        assert_eq!(seen.load(std::sync::atomic::Ordering::Relaxed), expect, "the resumers explored");
    }
}

const fn lane(i: usize) -> usize {
    1 << i
}

/// Root + two leaf members.
static TWO: Tree = Tree { root: &[0, 1], members: &[&[], &[]] };

/// (a) The root spawns two members and hands the oldest to a thief (paying its lane-entry group
/// in full and promoting it with count 2), runs the other itself; both lanes flush when idle,
/// in either order.
#[test]
fn one_member_handed_to_a_thief() {
    model(
        &TWO,
        2,
        2,
        |l| {
            l.root();
            l.start(1, thief);
            l.hand_oldest(1);
            l.run_all();
            l.idle();
        },
        lane(0) | lane(1),
    );
}

/// Root + members 0 and 1; member 0 spawns members 2 and 3.
static NESTED: Tree = Tree { root: &[0, 1], members: &[&[2, 3], &[], &[], &[]] };

/// The owner's part in the nested models: hands member 0 to lane 1 (running `lane1`), runs member
/// 1, flushes when idle, then waits for a member handed back to it, runs it and flushes again.
fn owner_takes_one_back(l: &mut Lane, lane1: fn(&mut Lane)) {
    l.root();
    l.start(1, lane1);
    l.hand_oldest(1);
    l.run_all();
    l.idle();
    l.take();
    l.run_all();
    l.idle();
}

/// Lane 1 runs member 0 (children 2 and 3), hands member 2 back to the owner (a pool-frame
/// group: the lane reserves the credit) and runs member 3 itself; its idle flush gives back the
/// unused credit.
fn thief_hands_back_one_runs_one(l: &mut Lane) {
    l.take();
    l.run_top();
    l.hand_oldest(0);
    l.run_all();
    l.idle();
}

/// (b1) A handed member spawns two members and hands one back to the owner, with credit 2: the
/// reservation (+2 before the hand-off) and the give-back of the unused credit at the flush
/// (-1 extra) both run.
#[test]
fn handed_member_hands_one_back_credit_2() {
    model(&NESTED, 2, 2, |l| owner_takes_one_back(l, thief_hands_back_one_runs_one), lane(0) | lane(1));
}

/// Lane 1 runs member 0 (children 2 and 3), hands member 2 back to the owner and member 3 onward
/// to lane 2, and goes idle owing only its end of member 0 less its credits.
fn thief_hands_both(l: &mut Lane) {
    l.take();
    l.run_top();
    l.hand_oldest(0);
    l.start(2, thief);
    l.hand_oldest(2);
    l.idle();
}

/// (b2) A handed member hands both its children away (back and onward), with credit 1: the lane
/// reserves at each hand-off.
#[test]
fn handed_member_hands_both_credit_1() {
    model(&NESTED, 1, 3, |l| owner_takes_one_back(l, thief_hands_both), lane(0) | lane(1) | lane(2));
}

/// (b3) As (b2) with credit 2: the second hand-off reuses the credit the first reserved.
#[test]
fn handed_member_hands_both_credit_2() {
    model(&NESTED, 2, 3, |l| owner_takes_one_back(l, thief_hands_both), lane(0) | lane(1) | lane(2));
}

/// Root + members 0 and 1; member 1 spawns member 2 (one child).
static ONE_CHILD: Tree = Tree { root: &[0, 1], members: &[&[], &[2], &[]] };

/// (c) The owner hands member 0 to lane 1, runs member 1, which spawns exactly one child (the
/// lane now owes member 1's value with delta 0), and pays its group before its next step is one
/// of another kind (`gc_sum_leave` in `gc_presume`, `gc_lstep` or `gc_lane_spill`): a relaxed add
/// of the sum and an RMW of 0 on the count, racing lane 1's flush. It then hands member 2 (counted
/// now: no credit) to lane 2; lanes 1 and 2 race for the last flush, and whichever resumes must
/// see the owner's sum.
#[test]
fn delta_zero_flush_races_the_last_flush() {
    model(
        &ONE_CHILD,
        2,
        3,
        |l| {
            l.root();
            l.start(1, thief);
            l.hand_oldest(1);
            l.run_top();
            l.flush();
            l.start(2, thief);
            l.hand_oldest(2);
            l.idle();
        },
        lane(1) | lane(2),
    );
}

/// Root + members 0 and 1; member 1 spawns members 2 and 3.
static SECOND_NESTED: Tree = Tree { root: &[0, 1], members: &[&[], &[2, 3], &[], &[]] };

/// (d) The root's own lane takes a credit: it hands member 0 to lane 1 (paying and promoting its
/// lane-entry group), runs member 1 (now of the pool frame; children 2 and 3), hands member 2 to
/// lane 2 (reserving credit 2), runs member 3 and gives back the unused credit at its idle flush,
/// racing both thieves' flushes.
#[test]
fn root_lane_hands_with_credit() {
    model(
        &SECOND_NESTED,
        2,
        3,
        |l| {
            l.root();
            l.start(1, thief);
            l.hand_oldest(1);
            l.run_top();
            l.start(2, thief);
            l.hand_oldest(2);
            l.run_all();
            l.idle();
        },
        lane(0) | lane(1) | lane(2),
    );
}

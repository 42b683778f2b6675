//! The generalized batched heap of Chen et al. ("Accelerating Concurrent Heap on GPUs", 2019):
//! the host twin of `kernels/include/gpu_cilk/heap.cuh`, the same algorithm step for step, with
//! threads in the role of the device's thread blocks. Used by tests that pin the protocol both
//! sides share (loom models, the history checker) and available to the cpu backend.
//!
//! Owns the heap's layout, its locks and its operations; must not know who inserts or why (the
//! scheduler decides what a key means). The helpers live in `state.rs` (lock words) and
//! `merge.rs` (the sequential merge and bit-reversal targets).
//!
//! # Structure (§3.1)
//!
//! A min-heap of *nodes*, each holding exactly `k` keys sorted ascending, stored as an implicit
//! binary tree (node `i` has children `2i` and `2i + 1`; the root is node 1), plus a *partial
//! buffer* of fewer than `k` sorted keys. `count` full nodes are allocated, at the tree indices
//! `target(1), ..., target(count)` of `merge.rs`'s `target` (bit-reversal order, §4.3), which always
//! form a tree containing the root. Keys are any `Ord + Copy` type; the device's are
//! [`HeapKey`] `(priority, payload)` pairs ordered by priority, then payload.
//!
//! Operations, each by one thread here (one thread block on the device):
//! - [`Heap::insert`] of `1..=k` keys. A full batch (`k` keys) into a non-empty heap takes a new
//!   leaf `target(count + 1)`: **bottom-up** (BU-INS, §3.3.4) while no delete is active,
//!   **top-down** (TD-INS, §3.3.2) otherwise. Anything else (a partial batch, the first node)
//!   merges into the partial buffer and the root; when the buffer overflows, the full batch it
//!   produces goes top-down.
//! - [`Heap::delete_min`] (TD-DEL, §3.2.1): the root's `k` keys, or, when no node is left, the
//!   partial buffer (a partial batch). The root is refilled from the last node and the partial
//!   buffer and sifted down.
//!
//! # Why bottom-up inserts and deletes take turns
//!
//! The paper runs BU-INS and TD-DEL concurrently (§3.3.4–3.3.5, after Hunt et al.'s k = 1 heap).
//! With k = 1 an INSHOLD node holds exactly the inserting key; with batches it also holds keys of
//! finished inserts (a merge with the parent keeps the `k` smallest of both). When a delete then
//! meets two INSHOLD siblings it must either merge two in-flight batches (whose tags then cannot
//! tell either insert when it is done) or merge one and leave the other, and in the latter case
//! the parent's new keys can exceed settled keys inside the sibling left alone: the history
//! checker found exactly that (a delete returned a key larger than one inserted and completed
//! before it began). So a *mode word* separates them: a full insert goes bottom-up only if no
//! delete is active (counting itself in), and a delete announces itself, then waits until the
//! bottom-up inserts in flight are done; meanwhile full inserts go top-down, which composes with
//! top-down deletes exactly as in §3.3.2–3.3.3. Insert-heavy phases keep the bottom-up path
//! (short paths, early stop, no root contention); with deletes in flight both run top-down.
//!
//! # Locks and states (§3.3.1)
//!
//! The *heap lock* covers `count`, the partial buffer and its length. Each node has a state word
//! (`state.rs`): `EMPTY`, `AVAIL`, `INSHOLD(owner)` (a bottom-up insert's batch, possibly smaller
//! than its parent; tagged with its insert), `TARGET` (allocated to a top-down insert on its
//! way), plus a lock bit (the paper's INUSE). Lock order: the heap lock, then nodes by increasing
//! index; every acquisition made while holding a lock goes to a larger index (a child, the right
//! sibling after the left, a descendant after the root), so there is no deadlock. A bottom-up
//! insert never waits while holding a lock: to step from `c` to its parent `p` it releases `c`,
//! then locks `p` and `c` (Hunt et al.).
//!
//! # Algorithm
//!
//! *Bottom-up insert* (a full batch, no delete active). Under the heap lock: `c =
//! target(++count)`, lock `c`, release the heap lock; write the sorted batch, release `c` as
//! `INSHOLD(me)`. Then until done: wait, holding no lock, until `p = c / 2` looks `AVAIL` and
//! unlocked; lock `p` and `c`. If `p` is not `AVAIL` (another insert's batch, or a top-down
//! insert's target not yet written), unlock and retry. If
//! `max(p) <= min(c)`: `c` becomes `AVAIL`, done (early stop, §4.3). Else `p` gets the `k`
//! smallest of `p ∪ c` (a swap when `max(c) <= min(p)`), `c` the rest and `AVAIL`; `p` becomes
//! `INSHOLD(me)`, or `AVAIL` at the root (done); continue at `p`. (Only this insert moves its
//! tag, so it always finds its batch where it left it.)
//!
//! *Top-down insert* (a full batch while deletes are active, or a buffer overflow). Under the
//! heap lock: `t = target(++count)` becomes `TARGET`; lock the root; release the heap lock.
//! The root keeps the `k` smallest of root ∪ batch, the other `k` are *carried* down the path
//! to `t` with lock coupling (lock the child, release the parent); at each node the node keeps
//! the `k` smallest of node ∪ carried (an `INSHOLD` node keeps its tag: its smallest keys stay).
//! At `t`: write the carried batch, `AVAIL`.
//!
//! *Partial insert / first node* (under the heap lock). `U` = merge of the batch and the buffer.
//! No node yet: the buffer keeps `U` if it is shorter than `k`, else the root is created from
//! `U`'s `k` smallest and the buffer keeps the rest. Otherwise lock the root: `V` = root ∪ `U`,
//! the root keeps the `k` smallest; if `|U| < k` the buffer keeps the rest, else the next `k` go
//! top-down as above and the buffer keeps the largest `|U| - k`.
//!
//! *Delete-min.* Announce (mode word), wait for the bottom-up inserts in flight. Under the heap
//! lock: no node: take the whole buffer. Else lock the root and copy it out (the result). If it
//! was the only node it becomes `EMPTY`. Otherwise lock the last node `target(count--)` (while it
//! is `TARGET`, waiting by looking at its state word, never by locking it), take its keys as the
//! carried batch `Z`, make it `EMPTY`; `Z` and the buffer exchange keys so `Z` holds the `k`
//! smallest; release the heap lock. Sift down from the
//! root (held): lock both children; `EMPTY` and `TARGET` children are absent. None present:
//! `cur = Z`, done. One present `x`: if `max(Z) <= min(x)`, `cur = Z`, done; else `cur` gets the
//! `k` smallest of `Z ∪ x`, `Z` the rest, continue at `x`. Two present: `hi`/`lo` = the `k`
//! smallest/largest of `l ∪ r`; if `max(Z) <= min(hi)`, `cur = Z`, done; else `lo` goes to the
//! child `t` with the larger maximum (so `t`'s subtree stays in order, §3.2.1), `cur` gets the
//! `k` smallest of `Z ∪ hi`, `Z` the rest, continue at the other child.
//!
//! # Invariants
//!
//! - **Heap order** (properties 1–2): a node's keys are sorted and `>= ` its parent's, except
//!   (a) an `INSHOLD` node against its parent, and (b) below a node held by a top-down operation
//!   (a delete's `cur`, whose real contents are its carried `Z`; a top-down insert's current node
//!   and the carried batch). Ancestors skipping over (a) still hold: an `INSHOLD` node's parent
//!   is `<= ` its children.
//! - **P3**: the partial buffer is sorted, shorter than `k`, and `>= ` the root.
//! - **Carried batches**: a top-down operation's carried keys are `>= ` every node it has set on
//!   its way down, and top-down operations never overtake each other (lock coupling), so a later
//!   one meets an earlier one's carried keys only after they are placed.
//! - **Modes**: while a delete is past its wait, no node is `INSHOLD` (every bottom-up insert
//!   counted in before it has finished, and no new one starts).
//! - `count` nodes are in use, at `target(1..=count)`; at a quiescent point none is locked,
//!   `INSHOLD` or `TARGET` ([`Heap::check`]).
//!
//! # Linearizability (§3.3.3)
//!
//! Deletes, top-down inserts and partial inserts lock the root while holding the heap lock, so
//! they are totally ordered by that acquisition; each is linearized there (a delete's result is
//! the root it reads). They never overtake each other on a path (lock coupling), a sifting
//! delete treats a `TARGET` node as absent only when it is ahead of that node's insert, and a
//! delete wanting a `TARGET` node as its last node waits for it; so every node sees them in root
//! order and the execution is equivalent to running them one at a time in that order: a delete
//! returns the `k` smallest keys of everything linearized before it (the root holds the `k`
//! smallest; carried batches still on their way are `>= ` the root), or the whole buffer when
//! no node is left. A bottom-up insert runs entirely between two deletes' linearization points
//! (it counted itself in when no delete was active, and any later delete waits for it), so it is
//! linearized anywhere in its own interval; when it returns, its batch is in heap order. Keys
//! are never created or destroyed, only moved between nodes under their locks: the multiset is
//! preserved. `runtime/tests/heap_history.rs` checks the observable consequences on recorded
//! histories, `runtime/tests/heap_loom.rs` the small cases exhaustively.
//!
//! # Memory ordering
//!
//! See `state.rs`: node contents and the heap-lock fields are accessed only between an `Acquire`
//! compare-and-swap and a `Release` store of the covering lock word. The mode word is updated
//! with `SeqCst` read-modify-writes (an insert's count-in and a delete's announcement are
//! totally ordered, so one of them sees the other) and polled with `Acquire` loads, so a
//! bottom-up insert's last release happens-before the work of a delete that saw it leave. Owner
//! ids come from a `Relaxed` fetch-and-add (uniqueness only).
//!
//! # Progress
//!
//! Waiting is spinning. Lock holders never wait for a smaller index (but a left child while
//! holding its right sibling, `lock_children`: only the parent's holder locks both); a bottom-up
//! insert waits only for the batch above it (whose insert can move, the topmost one always) or for a top-down
//! insert's target (that insert holds no lock it waits behind); a delete waits for the bottom-up
//! inserts in flight, which need no delete, and for its last node while a top-down insert ahead
//! of it has not written it (that insert holds no lock the delete holds). So some operation
//! always progresses while every thread runs (on the device: while every block that uses the
//! heap is resident). Waits for another operation look at a word and take no lock that
//! operation needs: a waiter that locked the node it waited on in every round could win every
//! race for that lock against the very operation it waited for (heap.cuh, PROGRESS: an H100
//! starved a top-down insert that way).

mod merge;
mod state;

use crate::backoff::Backoff;
use merge::{merge_into, step_toward, target};
use state::{
    held_by, inshold, kind, lock, lock_heap, release, try_lock_as, unlock_heap, AVAIL, EMPTY, INSHOLD, LOCKED, TARGET,
};

#[cfg(loom)]
use loom::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};

/// The mode word's unit for active deletes (its low half counts bottom-up inserts).
const DELETE_UNIT: u64 = 1 << 32;
const BOTTOM_UP_MASK: u64 = DELETE_UNIT - 1;

/// A `(priority, payload)` key: smaller priorities first, ties broken by the payload. `repr(C)`,
/// the layout of the device's `gc_heap_key<P, V>`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HeapKey<P, V> {
    /// Ordered first.
    pub prio: P,
    /// Ordered second (an index the caller resolves).
    pub payload: V,
}

/// Why an insert failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeapError {
    /// Every node is in use (nothing was inserted).
    #[error("the heap is full ({capacity} nodes of {k} keys)")]
    Full {
        /// Nodes.
        capacity: usize,
        /// Keys per node.
        k: usize,
    },
    /// An insert of more than `k` keys (split it into batches of at most `k`).
    #[error("an insert of {len} keys exceeds the node size {k}")]
    BatchTooLarge {
        /// Keys offered.
        len: usize,
        /// Keys per node.
        k: usize,
    },
}

/// One node's keys: `std`'s `UnsafeCell`, or `loom`'s (which checks every access for races).
struct Node<T>(#[cfg(not(loom))] std::cell::UnsafeCell<Vec<T>>, #[cfg(loom)] loom::cell::UnsafeCell<Vec<T>>);

impl<T: Copy> Node<T> {
    fn new(k: usize) -> Self {
        #[cfg(not(loom))]
        return Node(std::cell::UnsafeCell::new(Vec::with_capacity(k)));
        #[cfg(loom)]
        return Node(loom::cell::UnsafeCell::new(Vec::with_capacity(k)));
    }

    /// Copies the keys into `out`.
    ///
    /// # Safety
    ///
    /// The caller holds the lock that covers this node (module docs), so no write is concurrent.
    unsafe fn read(&self, out: &mut Vec<T>) {
        out.clear();
        #[cfg(not(loom))]
        // SAFETY: no concurrent write (the caller holds the covering lock).
        out.extend_from_slice(unsafe { &*self.0.get() });
        #[cfg(loom)]
        // SAFETY: as above; loom records the read.
        self.0.with(|p| out.extend_from_slice(unsafe { &*p }));
    }

    /// Replaces the keys with `src`.
    ///
    /// # Safety
    ///
    /// The caller holds the lock that covers this node, so no other access is concurrent.
    unsafe fn write(&self, src: &[T]) {
        #[cfg(not(loom))]
        {
            // SAFETY: exclusive access (the caller holds the covering lock).
            let v = unsafe { &mut *self.0.get() };
            v.clear();
            v.extend_from_slice(src);
        }
        #[cfg(loom)]
        self.0.with_mut(|p| {
            // SAFETY: as above; loom records the write.
            let v = unsafe { &mut *p };
            v.clear();
            v.extend_from_slice(src);
        });
    }
}

/// The concurrent batched heap (module docs). `k` keys per node, at most `capacity` nodes.
pub struct Heap<T> {
    k: usize,
    capacity: usize,
    /// The heap lock (0 free, 1 held).
    hlock: AtomicU32,
    /// Allocated nodes; read and written only under the heap lock.
    count: AtomicUsize,
    /// Keys in the partial buffer; only under the heap lock.
    pbuf_len: AtomicUsize,
    /// The partial buffer; only under the heap lock.
    pbuf: Node<T>,
    /// State words, by tree index (index 0 unused).
    states: Box<[AtomicU64]>,
    /// Node keys, by tree index (index 0 unused).
    nodes: Box<[Node<T>]>,
    next_owner: AtomicU64,
    /// Active deletes (high half) and bottom-up inserts (low half).
    mode: AtomicU64,
}

// SAFETY: the keys are plain `Copy` data moved between threads; every access to a `Node` happens
// under the lock that covers it (module docs), which orders it with every other access.
unsafe impl<T: Copy + Send> Sync for Heap<T> {}
// SAFETY: owning the heap owns its keys.
unsafe impl<T: Copy + Send> Send for Heap<T> {}

/// Working storage of one operation (the device keeps these in dynamic shared memory).
struct Scratch<T> {
    a: Vec<T>,
    b: Vec<T>,
    m: Vec<T>,
    n: Vec<T>,
}

impl<T> Scratch<T> {
    fn new(k: usize) -> Self {
        Scratch {
            a: Vec::with_capacity(k),
            b: Vec::with_capacity(k),
            m: Vec::with_capacity(3 * k),
            n: Vec::with_capacity(2 * k),
        }
    }
}

/// Last key of a sorted non-empty batch.
#[inline]
fn max_of<T: Copy>(v: &[T]) -> T {
    v[v.len() - 1]
}

impl<T: Ord + Copy + Send> Heap<T> {
    /// A heap of up to `capacity` nodes of `k` keys each (`k * capacity` keys, plus `k - 1` in
    /// the partial buffer).
    ///
    /// # Panics
    ///
    /// When `k` or `capacity` is zero, or `capacity >= 2^40`.
    pub fn new(k: usize, capacity: usize) -> Self {
        assert!(k > 0 && capacity > 0 && capacity < (1usize << 40), "heap with k = {k}, capacity = {capacity}");
        // Tree indices of target(1..=capacity) lie below 2^levels.
        let levels = usize::BITS - capacity.leading_zeros();
        let slots = 1usize << levels;
        Heap {
            k,
            capacity,
            hlock: AtomicU32::new(0),
            count: AtomicUsize::new(0),
            pbuf_len: AtomicUsize::new(0),
            pbuf: Node::new(k),
            states: (0..slots).map(|_| AtomicU64::new(EMPTY)).collect(),
            nodes: (0..slots).map(|_| Node::new(k)).collect(),
            next_owner: AtomicU64::new(1),
            mode: AtomicU64::new(0),
        }
    }

    /// Keys per node.
    pub fn k(&self) -> usize {
        self.k
    }

    /// Maximum number of nodes.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Keys in the heap: exact at a quiescent point, a snapshot (taken under the heap lock)
    /// otherwise.
    pub fn len(&self) -> usize {
        lock_heap(&self.hlock);
        let n = self.count.load(Ordering::Relaxed) * self.k + self.pbuf_len.load(Ordering::Relaxed);
        unlock_heap(&self.hlock);
        n
    }

    /// Whether [`Heap::len`] is zero.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    // ---- node access (callers hold the covering lock) -------------------------------------------

    fn read(&self, i: usize, out: &mut Vec<T>) {
        // SAFETY: every caller holds node `i`'s lock.
        unsafe { self.nodes[i].read(out) }
    }

    fn write(&self, i: usize, src: &[T]) {
        debug_assert_eq!(src.len(), self.k);
        // SAFETY: every caller holds node `i`'s lock.
        unsafe { self.nodes[i].write(src) }
    }

    fn read_pbuf(&self, out: &mut Vec<T>) {
        // SAFETY: every caller holds the heap lock.
        unsafe { self.pbuf.read(out) }
    }

    fn write_pbuf(&self, src: &[T]) {
        debug_assert!(src.len() < self.k);
        // SAFETY: every caller holds the heap lock.
        unsafe { self.pbuf.write(src) };
        self.pbuf_len.store(src.len(), Ordering::Relaxed);
    }

    fn lock_node(&self, i: usize) -> u64 {
        lock(&self.states[i])
    }

    fn release_node(&self, i: usize, s: u64) {
        release(&self.states[i], s)
    }

    /// Locks both children `l` and `l + 1` of a node the caller holds, returning their unlocked
    /// words: one guessing attempt at each (`AVAIL`), then an ordinary wait for each one missed,
    /// the right child possibly held while the left is waited for (heap.cuh, TUNING bit 1 clear:
    /// the device has both compare-and-swaps in flight at once). Outside the increasing-index
    /// order and safe: only a node's holder locks both its children, so whoever holds the left
    /// one waits only for its own descendants, never for the right one or for the parent.
    fn lock_children(&self, l: usize) -> (u64, u64) {
        let a = try_lock_as(&self.states[l], AVAIL);
        let b = try_lock_as(&self.states[l + 1], AVAIL);
        (a.unwrap_or_else(|| self.lock_node(l)), b.unwrap_or_else(|| self.lock_node(l + 1)))
    }

    // ---- insert ----------------------------------------------------------------------------------

    /// Inserts `keys` (`1..=k` of them, any order; none is a no-op). Returns when every delete
    /// that starts afterwards sees them.
    pub fn insert(&self, keys: &[T]) -> Result<(), HeapError> {
        let k = self.k;
        if keys.is_empty() {
            return Ok(());
        }
        if keys.len() > k {
            return Err(HeapError::BatchTooLarge { len: keys.len(), k });
        }
        let mut s = Scratch::new(k);
        s.a.extend_from_slice(keys);
        s.a.sort_unstable(); // the device: a block-wide bitonic sort
        if keys.len() < k {
            return self.insert_through_buffer(&mut s);
        }
        // A full batch: bottom-up unless a delete is active (module docs, "take turns"). Look
        // first: with a delete announced, go top-down without touching the mode word, so that a
        // stream of inserts counting in and out cannot keep the delete's wait from seeing zero
        // (heap.cuh, PROGRESS). Only the read-modify-write below decides.
        if self.mode.load(Ordering::Acquire) >= DELETE_UNIT {
            return self.insert_top_down(&mut s);
        }
        let before = self.mode.fetch_add(1, Ordering::SeqCst);
        if before >= DELETE_UNIT {
            self.mode.fetch_sub(1, Ordering::SeqCst);
            return self.insert_top_down(&mut s);
        }
        let r = self.insert_bottom_up(&mut s);
        self.mode.fetch_sub(1, Ordering::SeqCst);
        r
    }

    /// Allocates the next node under the heap lock; `None` when the heap is full.
    fn allocate(&self, n: usize) -> Option<usize> {
        if n == self.capacity {
            return None;
        }
        self.count.store(n + 1, Ordering::Relaxed);
        Some(target(n + 1))
    }

    fn insert_bottom_up(&self, s: &mut Scratch<T>) -> Result<(), HeapError> {
        let me = self.next_owner.fetch_add(1, Ordering::Relaxed);
        lock_heap(&self.hlock);
        let n = self.count.load(Ordering::Relaxed);
        if n == 0 {
            unlock_heap(&self.hlock);
            return self.insert_through_buffer(s);
        }
        let Some(c) = self.allocate(n) else {
            unlock_heap(&self.hlock);
            return Err(HeapError::Full { capacity: self.capacity, k: self.k });
        };
        let was = self.lock_node(c);
        debug_assert_eq!(kind(was), EMPTY, "target {c} of allocation {} in use", n + 1);
        unlock_heap(&self.hlock);
        self.write(c, &s.a);
        self.release_node(c, inshold(me));
        self.bubble_up(c, me, s);
        Ok(())
    }

    /// Moves `me`'s batch up from `c` (module docs, bottom-up insert).
    fn bubble_up(&self, mut c: usize, me: u64, s: &mut Scratch<T>) {
        let k = self.k;
        let mut backoff = Backoff::new();
        while c > 1 {
            let p = c / 2;
            // Wait by looking, holding no lock, until the parent is AVAIL and unlocked; the state
            // is checked again under the locks (heap.cuh, PROGRESS: waiters that locked the
            // parent to look formed a convoy on the GPU).
            loop {
                let w = self.states[p].load(Ordering::Acquire);
                if kind(w) == AVAIL && w & LOCKED == 0 {
                    break;
                }
                backoff.snooze();
            }
            let wp = self.lock_node(p);
            let wc = self.lock_node(c);
            debug_assert!(held_by(wc, me), "node {c} lost insert {me}'s tag: {wc:#x}");
            if kind(wp) != AVAIL {
                // Another insert's batch above ours (it moves first), or a top-down insert's
                // target it has not written yet.
                self.release_node(c, wc);
                self.release_node(p, wp);
                backoff.snooze();
                continue;
            }
            self.read(p, &mut s.a);
            self.read(c, &mut s.b);
            if max_of(&s.a) <= s.b[0] {
                self.release_node(c, AVAIL);
                self.release_node(p, wp);
                return;
            }
            if max_of(&s.b) <= s.a[0] {
                self.write(p, &s.b);
                self.write(c, &s.a);
            } else {
                s.m.clear();
                merge_into(&s.a, &s.b, &mut s.m);
                self.write(p, &s.m[..k]);
                self.write(c, &s.m[k..]);
            }
            self.release_node(c, AVAIL);
            self.release_node(p, if p == 1 { AVAIL } else { inshold(me) });
            c = p;
        }
        // Allocated as the root (only through the buffer path, which writes it AVAIL) or
        // merged into it: nothing left to move.
    }

    /// A full batch (sorted in `s.a`) while deletes are active: top-down from the root.
    fn insert_top_down(&self, s: &mut Scratch<T>) -> Result<(), HeapError> {
        lock_heap(&self.hlock);
        let n = self.count.load(Ordering::Relaxed);
        if n == 0 {
            unlock_heap(&self.hlock);
            return self.insert_through_buffer(s);
        }
        let Some(t) = self.allocate(n) else {
            unlock_heap(&self.hlock);
            return Err(HeapError::Full { capacity: self.capacity, k: self.k });
        };
        self.mark_target(t);
        let root = self.lock_node(1);
        unlock_heap(&self.hlock);
        self.read(1, &mut s.b);
        if s.a[0] < max_of(&s.b) {
            s.m.clear();
            merge_into(&s.b, &s.a, &mut s.m);
            self.write(1, &s.m[..self.k]);
            s.a.clear();
            s.a.extend_from_slice(&s.m[self.k..]);
        }
        self.carry_down(t, root, s);
        Ok(())
    }

    /// Marks the freshly allocated `t` as a top-down insert's target (under the heap lock).
    fn mark_target(&self, t: usize) {
        let was = self.lock_node(t);
        debug_assert_eq!(kind(was), EMPTY, "target {t} in use: {was:#x}");
        self.release_node(t, TARGET);
    }

    /// Carries the batch in `s.a` from the root (held, with word `root`) down to the target `t`
    /// (lock coupling), each node keeping the `k` smallest of itself and the carried keys.
    fn carry_down(&self, t: usize, root: u64, s: &mut Scratch<T>) {
        let k = self.k;
        let (mut cur, mut cur_word) = (1usize, root);
        loop {
            let next = step_toward(cur, t);
            let next_word = self.lock_node(next);
            self.release_node(cur, cur_word);
            if next == t {
                debug_assert_eq!(kind(next_word), TARGET);
                self.write(t, &s.a);
                self.release_node(t, AVAIL);
                return;
            }
            debug_assert!(matches!(kind(next_word), AVAIL | INSHOLD), "ancestor {next} of {t}: {next_word:#x}");
            self.read(next, &mut s.b);
            if s.a[0] < max_of(&s.b) {
                s.m.clear();
                merge_into(&s.b, &s.a, &mut s.m);
                self.write(next, &s.m[..k]);
                s.a.clear();
                s.a.extend_from_slice(&s.m[k..]);
            }
            // A tag stays: the node keeps its smallest keys, which are what may still be below
            // its parent.
            (cur, cur_word) = (next, next_word);
        }
    }

    /// A partial batch, or the first node (the batch is sorted in `s.a`): through the buffer
    /// and the root, under the heap lock; an overflow goes top-down.
    fn insert_through_buffer(&self, s: &mut Scratch<T>) -> Result<(), HeapError> {
        let k = self.k;
        lock_heap(&self.hlock);
        let n = self.count.load(Ordering::Relaxed);
        self.read_pbuf(&mut s.b);
        s.m.clear();
        merge_into(&s.a, &s.b, &mut s.m); // U
        let u = s.m.len();
        if n == 0 {
            if u >= k {
                // The first node: the k smallest; the buffer keeps the rest (P3).
                let Some(root) = self.allocate(0) else { unreachable!("capacity >= 1") };
                let was = self.lock_node(root);
                debug_assert_eq!(kind(was), EMPTY);
                self.write(root, &s.m[..k]);
                self.release_node(root, AVAIL);
                self.write_pbuf(&s.m[k..]);
            } else {
                self.write_pbuf(&s.m);
            }
            unlock_heap(&self.hlock);
            return Ok(());
        }
        let t = if u >= k {
            let Some(t) = self.allocate(n) else {
                unlock_heap(&self.hlock);
                return Err(HeapError::Full { capacity: self.capacity, k });
            };
            self.mark_target(t);
            Some(t)
        } else {
            None
        };
        let root = self.lock_node(1);
        self.read(1, &mut s.a);
        std::mem::swap(&mut s.m, &mut s.b); // U in s.b
        s.m.clear();
        merge_into(&s.a, &s.b, &mut s.m); // V = root ∪ U, k + u keys
        self.write(1, &s.m[..k]);
        let Some(t) = t else {
            self.write_pbuf(&s.m[k..]);
            unlock_heap(&self.hlock);
            self.release_node(1, root);
            return Ok(());
        };
        // Overflow: the next k go top-down to `t`, the largest u - k stay buffered.
        self.write_pbuf(&s.m[2 * k..]);
        unlock_heap(&self.hlock);
        s.a.clear();
        s.a.extend_from_slice(&s.m[k..2 * k]);
        self.carry_down(t, root, s);
        Ok(())
    }

    // ---- delete ----------------------------------------------------------------------------------

    /// Removes the smallest keys into `out` (cleared first, sorted ascending): `k` of them while
    /// a node is left, else the whole partial buffer (a partial batch; none when the heap is
    /// empty). Returns how many.
    pub fn delete_min(&self, out: &mut Vec<T>) -> usize {
        self.mode.fetch_add(DELETE_UNIT, Ordering::SeqCst);
        let mut backoff = Backoff::new();
        while self.mode.load(Ordering::Acquire) & BOTTOM_UP_MASK != 0 {
            backoff.snooze();
        }
        let n = self.delete_locked(out);
        self.mode.fetch_sub(DELETE_UNIT, Ordering::SeqCst);
        n
    }

    fn delete_locked(&self, out: &mut Vec<T>) -> usize {
        let k = self.k;
        let mut s = Scratch::new(k);
        out.clear();
        lock_heap(&self.hlock);
        let n = self.count.load(Ordering::Relaxed);
        if n == 0 {
            self.read_pbuf(out);
            self.write_pbuf(&[]);
            unlock_heap(&self.hlock);
            return out.len();
        }
        let _root = self.lock_node(1);
        if n >= 4 {
            // heap.cuh's fused delete (its default, TUNING bit 0 clear): the root, its children
            // and the last node (>= 4) locked in increasing index order before anything is read;
            // the sift-down starts with the root's children held.
            let last = target(n);
            self.count.store(n - 1, Ordering::Relaxed);
            let children = self.lock_children(2);
            self.wait_for_last(last);
            self.read(1, out);
            self.read(last, &mut s.a); // Z
            self.release_node(last, EMPTY);
            self.exchange_with_pbuf(&mut s);
            unlock_heap(&self.hlock);
            self.sift_down(&mut s, Some(children));
            return k;
        }
        self.read(1, out);
        if n == 1 {
            self.count.store(0, Ordering::Relaxed);
            self.release_node(1, EMPTY);
            unlock_heap(&self.hlock);
            return k;
        }
        let last = target(n);
        self.count.store(n - 1, Ordering::Relaxed);
        self.wait_for_last(last);
        self.read(last, &mut s.a); // Z
        self.release_node(last, EMPTY);
        self.exchange_with_pbuf(&mut s);
        unlock_heap(&self.hlock);
        self.sift_down(&mut s, None);
        k
    }

    /// Under the heap lock: the carried batch `s.a` and the partial buffer exchange keys so that
    /// `s.a` holds the `k` smallest of both (P3).
    fn exchange_with_pbuf(&self, s: &mut Scratch<T>) {
        let k = self.k;
        self.read_pbuf(&mut s.b);
        if !s.b.is_empty() && s.b[0] < max_of(&s.a) {
            s.m.clear();
            merge_into(&s.a, &s.b, &mut s.m);
            s.a.clear();
            s.a.extend_from_slice(&s.m[..k]);
            self.write_pbuf(&s.m[k..]);
        }
    }

    /// Locks the delete's last node `last` (under the heap lock, holding the root), first waiting
    /// while it is `TARGET`: a top-down insert ahead of the delete is still carrying its keys
    /// down and must lock `last` to write them. The wait looks at the state word and never takes
    /// the lock (heap.cuh, PROGRESS: a wait that locked `last` in every round starved that insert
    /// on an H100). Nothing makes `last` `TARGET` again while the heap lock is held, so once the
    /// look sees another kind the lock finds `AVAIL`.
    fn wait_for_last(&self, last: usize) {
        let mut backoff = Backoff::new();
        loop {
            while kind(self.states[last].load(Ordering::Acquire)) == TARGET {
                backoff.snooze();
            }
            let w = self.lock_node(last);
            if kind(w) != TARGET {
                debug_assert_eq!(kind(w), AVAIL, "last node {last}: {w:#x}");
                return;
            }
            self.release_node(last, w); // (not reached: see above)
        }
    }

    /// Sifts the carried batch `s.a` down from the root, which the caller holds; `pre`: the
    /// root's children are held already (their unlocked words; the fused delete).
    fn sift_down(&self, s: &mut Scratch<T>, mut pre: Option<(u64, u64)>) {
        let k = self.k;
        let present = |w: u64| {
            debug_assert_ne!(kind(w), INSHOLD, "a delete met a bottom-up insert's batch");
            kind(w) == AVAIL
        };
        let mut cur = 1usize;
        loop {
            let (l, r) = (2 * cur, 2 * cur + 1);
            if l >= self.nodes.len() {
                self.write(cur, &s.a);
                self.release_node(cur, AVAIL);
                return;
            }
            let (wl, wr) = match pre.take() {
                Some(words) => words,
                None => self.lock_children(l),
            };
            let (x, wx) = match (present(wl), present(wr)) {
                (false, false) => {
                    self.write(cur, &s.a);
                    self.release_node(r, wr);
                    self.release_node(l, wl);
                    self.release_node(cur, AVAIL);
                    return;
                }
                (true, false) => {
                    self.release_node(r, wr);
                    (l, wl)
                }
                (false, true) => {
                    self.release_node(l, wl);
                    (r, wr)
                }
                (true, true) => {
                    self.read(l, &mut s.b);
                    self.read(r, &mut s.n);
                    if max_of(&s.a) <= s.b[0].min(s.n[0]) {
                        self.write(cur, &s.a);
                        self.release_node(r, wr);
                        self.release_node(l, wl);
                        self.release_node(cur, AVAIL);
                        return;
                    }
                    let (t, o) = if max_of(&s.b) > max_of(&s.n) { (l, r) } else { (r, l) };
                    s.m.clear();
                    merge_into(&s.b, &s.n, &mut s.m); // hi = m[..k], lo = m[k..]
                    self.write(t, &s.m[k..]);
                    self.release_node(t, AVAIL);
                    s.n.clear();
                    merge_into(&s.a, &s.m[..k], &mut s.n); // cur = n[..k], Z = n[k..]
                    self.write(cur, &s.n[..k]);
                    self.release_node(cur, AVAIL);
                    s.a.clear();
                    s.a.extend_from_slice(&s.n[k..]);
                    cur = o; // still locked
                    continue;
                }
            };
            // One child present.
            self.read(x, &mut s.b);
            if max_of(&s.a) <= s.b[0] {
                self.write(cur, &s.a);
                self.release_node(x, wx);
                self.release_node(cur, AVAIL);
                return;
            }
            s.m.clear();
            merge_into(&s.a, &s.b, &mut s.m);
            self.write(cur, &s.m[..k]);
            self.release_node(cur, AVAIL);
            s.a.clear();
            s.a.extend_from_slice(&s.m[k..]);
            cur = x; // still locked
        }
    }

    // ---- inspection ------------------------------------------------------------------------------

    /// Checks the quiescent invariants (call only when no operation is in flight): the nodes in
    /// use are exactly `target(1..=count)`, none is locked, tagged or a pending target, each
    /// holds `k` sorted keys no smaller than its parent's (properties 1–2), and the partial
    /// buffer is sorted, shorter than `k` and no smaller than the root (property 3).
    pub fn check(&self) -> Result<(), String> {
        if self.mode.load(Ordering::Acquire) != 0 {
            return Err(format!("mode word {:#x} at a quiescent point", self.mode.load(Ordering::Acquire)));
        }
        lock_heap(&self.hlock);
        let r = self.check_locked();
        unlock_heap(&self.hlock);
        r
    }

    fn check_locked(&self) -> Result<(), String> {
        let k = self.k;
        let n = self.count.load(Ordering::Relaxed);
        let mut in_use = vec![false; self.nodes.len()];
        for m in 1..=n {
            in_use[target(m)] = true;
        }
        let (mut node, mut parent) = (Vec::new(), Vec::new());
        for (i, &used) in in_use.iter().enumerate().skip(1) {
            let w = self.states[i].load(Ordering::Acquire);
            if w & LOCKED != 0 {
                return Err(format!("node {i} is locked at a quiescent point"));
            }
            match (used, kind(w)) {
                (false, EMPTY) => continue,
                (true, AVAIL) => {}
                (used, _) => return Err(format!("node {i} has word {w:#x} (in use: {used}, count {n})")),
            }
            let _ = self.lock_node(i);
            self.read(i, &mut node);
            self.release_node(i, w);
            if node.len() != k || node.windows(2).any(|p| p[0] > p[1]) {
                return Err(format!("node {i} holds {} keys, not k = {k} sorted", node.len()));
            }
            if i > 1 {
                let _ = self.lock_node(i / 2);
                self.read(i / 2, &mut parent);
                self.release_node(i / 2, AVAIL);
                if max_of(&parent) > node[0] {
                    return Err(format!("node {i}'s smallest key is below its parent's largest"));
                }
            }
        }
        self.read_pbuf(&mut node);
        if node.len() != self.pbuf_len.load(Ordering::Relaxed) || node.len() >= k {
            return Err(format!("partial buffer of {} keys (k = {k})", node.len()));
        }
        if node.windows(2).any(|p| p[0] > p[1]) {
            return Err("partial buffer not sorted".into());
        }
        if n > 0 && !node.is_empty() {
            let _ = self.lock_node(1);
            self.read(1, &mut parent);
            self.release_node(1, AVAIL);
            if node[0] < max_of(&parent) {
                return Err("partial buffer below the root (property 3)".into());
            }
        }
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::collections::BinaryHeap;

    fn drain(h: &Heap<u32>) -> Vec<u32> {
        let mut all = Vec::new();
        let mut out = Vec::new();
        while h.delete_min(&mut out) > 0 {
            all.extend_from_slice(&out);
        }
        all
    }

    #[test]
    fn sequential_full_batches_come_out_sorted() {
        for k in [1usize, 2, 3, 4, 8] {
            let h = Heap::new(k, 64);
            let mut x = 12345u32;
            let mut all = Vec::new();
            for _ in 0..40 {
                let batch: Vec<u32> = (0..k)
                    .map(|_| {
                        x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
                        x >> 8
                    })
                    .collect();
                all.extend_from_slice(&batch);
                h.insert(&batch).unwrap();
                h.check().unwrap();
            }
            assert_eq!(h.len(), 40 * k);
            all.sort_unstable();
            assert_eq!(drain(&h), all, "k = {k}");
            assert!(h.is_empty());
            h.check().unwrap();
        }
    }

    #[test]
    fn sequential_mixed_partial_batches_match_a_binary_heap() {
        let k = 4;
        let h = Heap::new(k, 256);
        let mut model = BinaryHeap::new();
        let mut x = 99u32;
        let mut rnd = |m: u32| {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (x >> 7) % m
        };
        let mut out = Vec::new();
        for step in 0..2000 {
            if rnd(3) < 2 {
                let len = 1 + rnd(k as u32) as usize;
                let batch: Vec<u32> = (0..len).map(|_| rnd(1000)).collect();
                for &v in &batch {
                    model.push(std::cmp::Reverse(v));
                }
                h.insert(&batch).unwrap();
            } else {
                let got = h.delete_min(&mut out);
                // k while a node is left (always when k or more keys are in), else everything.
                assert_eq!(got, k.min(model.len()), "step {step}");
                let expect: Vec<u32> = (0..got).map(|_| model.pop().unwrap().0).collect();
                assert_eq!(out, expect, "step {step}");
            }
            h.check().unwrap_or_else(|e| panic!("step {step}: {e}"));
            assert_eq!(h.len(), model.len());
        }
    }

    #[test]
    fn partial_delete_only_when_no_node_is_left() {
        let h = Heap::new(4, 8);
        h.insert(&[5, 1]).unwrap();
        let mut out = Vec::new();
        assert_eq!(h.delete_min(&mut out), 2);
        assert_eq!(out, vec![1, 5]);
        h.insert(&[9, 3, 7]).unwrap();
        h.insert(&[2, 8]).unwrap(); // overflows: root [2,3,7,8], buffer [9]
        h.check().unwrap();
        assert_eq!(h.delete_min(&mut out), 4);
        assert_eq!(out, vec![2, 3, 7, 8]);
        assert_eq!(h.delete_min(&mut out), 1);
        assert_eq!(out, vec![9]);
        assert_eq!(h.delete_min(&mut out), 0);
    }

    #[test]
    fn errors() {
        let h = Heap::new(2, 1);
        assert_eq!(h.insert(&[1, 2, 3]), Err(HeapError::BatchTooLarge { len: 3, k: 2 }));
        h.insert(&[1, 2]).unwrap();
        assert_eq!(h.insert(&[3, 4]), Err(HeapError::Full { capacity: 1, k: 2 }));
        h.insert(&[5]).unwrap(); // fits the buffer
        assert_eq!(h.insert(&[6]), Err(HeapError::Full { capacity: 1, k: 2 })); // would overflow
        assert_eq!(h.len(), 3);
        h.check().unwrap();
        assert_eq!(h.insert(&[]), Ok(()));
    }

    #[test]
    fn keys_order_by_priority_then_payload() {
        let h = Heap::new(2, 8);
        let key = |prio: u32, payload: u64| HeapKey { prio, payload };
        h.insert(&[key(3, 0), key(1, 9)]).unwrap();
        h.insert(&[key(1, 2), key(2, 0)]).unwrap();
        let mut out = Vec::new();
        h.delete_min(&mut out);
        assert_eq!(out, vec![key(1, 2), key(1, 9)]);
        assert_eq!(std::mem::size_of::<HeapKey<u32, u32>>(), 8);
        assert_eq!(std::mem::size_of::<HeapKey<u32, u64>>(), 16);
    }

    /// A delete whose last node is a top-down insert's `TARGET` waits without taking that node's
    /// lock, so the insert it waits for always finds the node unlocked (issue 12's H100 hang: the
    /// delete locked and unlocked it in every round and the insert's compare-and-swap lost every
    /// race). The insert is played by this thread: it allocates the `TARGET` (as a top-down
    /// insert past the root has), lets the waiting delete run for 10,000 of its own yields, then
    /// writes the node. The delete must never have locked it while it was `TARGET`.
    #[test]
    fn waiting_delete_never_locks_its_target_last_node() {
        let h = Heap::new(1, 8);
        h.insert(&[10]).unwrap();
        h.insert(&[20]).unwrap();
        lock_heap(&h.hlock);
        let t = h.allocate(h.count.load(Ordering::Relaxed)).unwrap();
        h.mark_target(t);
        unlock_heap(&h.hlock);
        assert_eq!((t, h.count.load(Ordering::Relaxed)), (3, 3));
        let (out, locks) = std::thread::scope(|scope| {
            let del = scope.spawn(|| {
                state::watch_target_locks(&h.states[t]);
                let mut out = Vec::new();
                h.delete_min(&mut out);
                (out, state::watched_target_locks())
            });
            // The delete has taken `t` as its last node once it has lowered the count.
            while h.count.load(Ordering::Relaxed) != 2 {
                std::thread::yield_now();
            }
            for _ in 0..10_000 {
                assert_eq!(h.states[t].load(Ordering::Relaxed) & !LOCKED, TARGET);
                std::thread::yield_now();
            }
            assert_eq!(h.lock_node(t), TARGET);
            h.write(t, &[30]);
            h.release_node(t, AVAIL);
            del.join().unwrap()
        });
        assert_eq!(locks, 0, "the waiting delete locked its TARGET last node {locks} times");
        assert_eq!(out, vec![10]);
        h.check().unwrap();
        assert_eq!(drain(&h), vec![20, 30]);
    }
}

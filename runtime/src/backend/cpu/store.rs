//! One task function's channel stacks on the cpu backend, and the sub-kernel runner.
//!
//! For task `T` and every recursion level the store holds one pre-spawn queue of channel
//! elements (`T::Args` + where the result goes) and `SYNCS + 1` continuation queues of frames:
//! queue `k` holds frames waiting to run segment `k + 1`; the last one only ever holds *deferred
//! returns* (a `return` with children outstanding: the value waits there until they are done).
//!
//! # Results and frames
//!
//! A child writes its `Output` through a raw [`Dest`] pointer into its parent's frame, which sits
//! in a reserved slot of a continuation queue (stable address, see [`crate::channel::Channel::slot_ptr`]).
//! The worker running the parent buffers its spawns and its frame ([`Worker`]) and, at the next
//! flush, reserves and publishes the frame's slot first, then pushes the children with
//! destinations into it, all before any child runs (children run in a later dispatch). The
//! levelized scheduler runs the frame's continuation only once every level below is empty, i.e.
//! every child has finished and written its result; the dispatch barrier between the two (the
//! parallel iterator's join, then the next dispatch's fork) orders the children's writes before
//! the continuation's read.

use super::queue::{Exhausted, Pool, Queue};
use crate::channel::{Channel, Claim};
use crate::error::Error;
use crate::task::{CilkTask, Place, Registrar, Spawn, Step};
use rayon::prelude::*;
use std::any::{Any, TypeId};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Builds the channel stacks of every task reachable from a root, as [`CilkTask::register`]
/// visits them (root first): the one place this backend meets the task types by name.
pub(crate) struct StoreBuilder {
    segment_capacity: usize,
    stores: Vec<Box<dyn ErasedStore>>,
    ids: Vec<TypeId>,
}

impl StoreBuilder {
    /// The channel stacks of every task reachable from `T`, root first, and their type ids.
    pub(crate) fn of<T: CilkTask>(segment_capacity: usize) -> (Vec<Box<dyn ErasedStore>>, Vec<TypeId>) {
        let mut built = StoreBuilder { segment_capacity, stores: Vec::new(), ids: Vec::new() };
        T::register(&mut built);
        (built.stores, built.ids)
    }
}

impl Registrar for StoreBuilder {
    fn add<T: CilkTask>(&mut self) -> bool {
        let id = TypeId::of::<T>();
        if self.ids.contains(&id) {
            return false;
        }
        self.ids.push(id);
        self.stores.push(Box::new(TaskStore::<T>::new(self.segment_capacity)));
        true
    }
}

/// A task's channel stacks with the task type erased, as the scheduler loop sees them.
/// Queue index 0 is the pre-spawn channel; index `k >= 1` is continuation channel `k - 1`.
pub(crate) trait ErasedStore: Send + Sync {
    /// For typed access by spawns.
    fn as_any(&self) -> &dyn Any;
    /// The task's name.
    fn name(&self) -> &'static str;
    /// Children per task to plan for (static bound or largest seen).
    fn fanout(&self) -> usize;
    /// Allocates channel stacks down to `level`.
    fn ensure_level(&mut self, level: usize);
    /// Number of queues per level.
    fn queues(&self) -> usize;
    /// Elements waiting in one queue.
    fn pending(&self, level: usize, queue: usize) -> usize;
    /// Slots in use in one queue.
    fn occupancy(&self, level: usize, queue: usize) -> usize;
    /// Runs up to `n` elements of one queue in parallel.
    fn dispatch(&self, sh: &Shared<'_>, level: usize, queue: usize, n: usize, chunk: usize) -> Tally;
    /// Returns drained segments of `level` to the pool.
    fn recycle(&mut self, level: usize, pool: &Pool);
    /// Returns every segment to the pool.
    fn release(&mut self, pool: &Pool);
}

/// Where a task's result goes: a pointer to an `Output` inside a parent's frame (or the run's
/// root cell), or null for a discarded result.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Dest(*mut u8);

// SAFETY: a `Dest` is only dereferenced by the one task it was handed to, once, while the frame
// it points into is kept alive and unread by the scheduler (see the module docs).
unsafe impl Send for Dest {}
// SAFETY: as above; sharing the pointer value itself is harmless.
unsafe impl Sync for Dest {}

impl Dest {
    pub(crate) fn discard() -> Self {
        Dest(std::ptr::null_mut())
    }

    pub(crate) fn to<O>(cell: *mut O) -> Self {
        Dest(cell.cast())
    }

    /// Writes the result of a task of output type `O`.
    ///
    /// # Safety
    /// `self` must have been made for an `O` (by [`Place`]'s type witness or [`Dest::to`]) and
    /// its frame must still be live and not read concurrently.
    unsafe fn write<O>(self, value: O) {
        if !self.0.is_null() {
            // SAFETY: guaranteed by the caller: a live, correctly typed, unaliased location.
            unsafe { self.0.cast::<O>().write(value) };
        }
    }
}

/// A pre-spawn channel element.
pub(crate) struct PreElem<T: CilkTask> {
    pub(crate) args: T::Args,
    pub(crate) dest: Dest,
}

/// A continuation-channel element: a frame, or a deferred return value.
struct ContElem<T: CilkTask> {
    frame: MaybeUninit<T::Frame>,
    deferred: Option<T::Output>,
    dest: Dest,
}

/// The queues of one level.
struct Level<T: CilkTask> {
    pre: Queue<PreElem<T>>,
    cont: Vec<Queue<ContElem<T>>>,
}

/// Everything a sub-kernel needs to reach while it runs.
pub(crate) struct Shared<'a> {
    pub(crate) stores: &'a [Box<dyn ErasedStore>],
    pub(crate) ids: &'a [TypeId],
    pub(crate) pool: &'a Pool,
    /// The run's heap of task-scoped temporaries (`alloc!`).
    pub(crate) temps: &'a crate::temp::RunHeap,
}

impl Shared<'_> {
    fn store<C: CilkTask>(&self) -> &TaskStore<C> {
        let id = TypeId::of::<C>();
        let i = self.ids.iter().position(|x| *x == id);
        match i.and_then(|i| self.stores[i].as_any().downcast_ref::<TaskStore<C>>()) {
            Some(s) => s,
            // The registry is built from the root's `register`, which names every spawned task.
            None => panic!("task `{}` was spawned but is not registered (a gpu-cilk bug)", C::NAME),
        }
    }
}

/// What a dispatch produced, summed over its workers.
#[derive(Default)]
pub(crate) struct Tally {
    pub(crate) ran: u64,
    pub(crate) produced: usize,
    pub(crate) max_fanout: usize,
    pub(crate) error: Option<Error>,
}

impl Tally {
    fn merge(mut self, other: Tally) -> Tally {
        self.ran += other.ran;
        self.produced += other.produced;
        self.max_fanout = self.max_fanout.max(other.max_fanout);
        if self.error.is_none() {
            self.error = other.error;
        }
        self
    }
}

/// The channel stacks of task `T`.
pub(crate) struct TaskStore<T: CilkTask> {
    segment_capacity: usize,
    levels: Vec<Level<T>>,
    observed_fanout: AtomicUsize,
}

impl<T: CilkTask> TaskStore<T> {
    pub(crate) fn new(segment_capacity: usize) -> Self {
        TaskStore { segment_capacity, levels: Vec::new(), observed_fanout: AtomicUsize::new(0) }
    }

    fn level(&self, level: usize) -> &Level<T> {
        match self.levels.get(level) {
            Some(l) => l,
            // The scheduler calls `ensure_level(L + 1)` on every store before dispatching level L.
            None => panic!("level {level} of `{}` used before it was allocated (a gpu-cilk bug)", T::NAME),
        }
    }

    /// Pushes a pre-spawn element at `level`.
    pub(crate) fn push(&self, pool: &Pool, level: usize, elem: PreElem<T>) -> Result<(), Error> {
        let (seg, t) = self.level(level).pre.reserve(pool).map_err(|Exhausted| self.exhausted(pool, level))?;
        seg.enq(t, elem);
        Ok(())
    }

    fn exhausted(&self, pool: &Pool, level: usize) -> Error {
        Error::PoolExhausted {
            pool: "channel element pool",
            task: T::NAME,
            level,
            capacity: pool.capacity(),
            knob: "pool_capacity",
        }
    }
}

/// Elements (children and frames) a worker buffers before it flushes them into the channels with
/// one reservation and one publish per queue. Flushes happen between tasks, never inside one.
const FLUSH_AT: usize = 256;

/// Where a buffered child's result goes: nowhere, or `off` bytes into the frame that will be
/// element `idx` of the worker's buffer for continuation queue `q`. Resolved into a [`Dest`] at
/// the flush, once that frame has its channel slot (and so its stable address).
#[derive(Clone, Copy)]
enum DestRef {
    Discard,
    Frame { q: usize, idx: usize, off: usize },
}

impl DestRef {
    /// The destination pointer, given the frame-field addresses of the flushed frames
    /// (`bases[q][idx]`).
    fn resolve(self, bases: &[Vec<*mut u8>]) -> Dest {
        match self {
            DestRef::Discard => Dest::discard(),
            // SAFETY: `bases[q][idx]` is the `frame` field of the channel slot the parent's frame
            // was just enqueued into (stable for the channel's lifetime), and `off` comes from
            // `offset_of!` on the parent's frame type (checked by `Place`'s witness), so the
            // result stays inside that frame.
            DestRef::Frame { q, idx, off } => Dest(unsafe { bases[q][idx].add(off) }),
        }
    }
}

/// One worker's buffered spawns of task `C`, to be pushed one level down.
struct Children<C: CilkTask> {
    elems: Vec<(C::Args, DestRef)>,
}

/// [`Children`] with the callee's type erased (a worker buffers spawns of every callee).
trait ChildBuf {
    /// Pushes every buffered child into its pre-spawn queue at `level`: one reservation per
    /// segment touched ([`Queue::reserve_n`]) and one publish per run ([`Channel::enq_n`]).
    fn flush(&mut self, sh: &Shared<'_>, level: usize, bases: &[Vec<*mut u8>]) -> Result<(), Error>;
    /// Drops the buffer (the run is failing).
    fn clear(&mut self);
}

impl<C: CilkTask> ChildBuf for Children<C> {
    fn flush(&mut self, sh: &Shared<'_>, level: usize, bases: &[Vec<*mut u8>]) -> Result<(), Error> {
        if self.elems.is_empty() {
            return Ok(());
        }
        let store = sh.store::<C>();
        let queue = &store.level(level).pre;
        let mut left = self.elems.len();
        let mut elems = self.elems.drain(..);
        while left > 0 {
            let (seg, first, got) =
                queue.reserve_n(left, sh.pool).map_err(|Exhausted| store.exhausted(sh.pool, level))?;
            seg.enq_n(first, got, |_| {
                let (args, d) = elems.next().expect("one buffered child per reserved ticket");
                PreElem { args, dest: d.resolve(bases) }
            });
            left -= got;
        }
        Ok(())
    }

    fn clear(&mut self) {
        self.elems.clear();
    }
}

/// One rayon job's state while it runs a claimed run of elements of task `T` at `level`: the
/// host twin of warp aggregation. Spawns and frames are buffered here and flushed every
/// [`FLUSH_AT`] elements (and at the end) with one `talloc_n` and one publish per queue, instead
/// of one contended fetch-and-add per counter per element.
///
/// Frames are flushed before children: a child's destination points into its parent's frame, and
/// a frame's address is its channel slot's, known once the slot is reserved. Until then a
/// buffered child names its parent's frame by position ([`DestRef`]).
struct Worker<'s, 'a, T: CilkTask> {
    sh: &'s Shared<'a>,
    store: &'s TaskStore<T>,
    level: usize,
    /// Frames (and deferred returns) per continuation queue, in the order they were left.
    frames: Vec<Vec<ContElem<T>>>,
    /// Scratch for the flush: the frame-field address of every flushed frame, per queue.
    bases: Vec<Vec<*mut u8>>,
    /// Buffered children per callee (usually one or two entries).
    children: Vec<(TypeId, Box<dyn ChildBuf>)>,
    buffered: usize,
    /// Initial capacity of a buffer: the claim's length, at most [`FLUSH_AT`] (one allocation
    /// per buffer and job instead of a doubling series).
    hint: usize,
    tally: Tally,
}

impl<'s, 'a, T: CilkTask> Worker<'s, 'a, T> {
    fn new(sh: &'s Shared<'a>, store: &'s TaskStore<T>, level: usize) -> Self {
        Worker {
            sh,
            store,
            level,
            frames: (0..=T::SYNCS).map(|_| Vec::new()).collect(),
            bases: (0..=T::SYNCS).map(|_| Vec::new()).collect(),
            children: Vec::new(),
            buffered: 0,
            hint: 0,
            tally: Tally::default(),
        }
    }

    /// Runs every element of `claim` with `run`, flushing between elements, then flushes.
    /// Stops at the first error (the run is failing; the claim's drop drops what is left).
    fn consume<E>(&mut self, claim: Claim<'_, E>, mut run: impl FnMut(&mut Self, E)) -> Tally {
        self.hint = claim.len().min(FLUSH_AT);
        for r in claim {
            match r {
                Ok(e) => {
                    self.tally.ran += 1;
                    run(self, e);
                    if self.buffered >= FLUSH_AT {
                        self.flush();
                    }
                }
                Err(e) => {
                    self.tally.error.get_or_insert(Error::Internal(e.to_string()));
                }
            }
            if self.tally.error.is_some() {
                break;
            }
        }
        self.flush();
        std::mem::take(&mut self.tally)
    }

    /// This job's buffer for spawns of `C`.
    fn children<C: CilkTask>(&mut self) -> &mut Vec<(C::Args, DestRef)> {
        let id = TypeId::of::<C>();
        let i = match self.children.iter().position(|(x, _)| *x == id) {
            Some(i) => i,
            None => {
                self.children.push((id, Box::new(Children::<C> { elems: Vec::with_capacity(self.hint) })));
                self.children.len() - 1
            }
        };
        let buf: *mut dyn ChildBuf = &mut *self.children[i].1;
        // SAFETY: entry `i` is keyed by `TypeId::of::<C>()` and was created as a `Children<C>`
        // (above; nothing else inserts), so the trait object's data pointer is a `Children<C>`;
        // it is reborrowed from `&mut self`, so the reference is unique. (A checked `Any`
        // downcast here cost a virtual call and a stalled 128-bit compare on every spawn.)
        unsafe { &mut (*buf.cast::<Children<C>>()).elems }
    }

    /// Publishes everything buffered; on failure records the error and drops the buffers.
    fn flush(&mut self) {
        if self.buffered == 0 {
            return;
        }
        self.buffered = 0;
        if self.tally.error.is_none() {
            if let Err(e) = self.try_flush() {
                self.tally.error = Some(e);
            }
        }
        if self.tally.error.is_some() {
            self.frames.iter_mut().for_each(Vec::clear);
            self.children.iter_mut().for_each(|(_, c)| c.clear());
        }
    }

    fn try_flush(&mut self) -> Result<(), Error> {
        let (sh, store, level) = (self.sh, self.store, self.level);
        let l = store.level(level);
        for (q, frames) in self.frames.iter_mut().enumerate() {
            let bases = &mut self.bases[q];
            bases.clear();
            let mut left = frames.len();
            let mut elems = frames.drain(..);
            while left > 0 {
                let (seg, first, got) =
                    l.cont[q].reserve_n(left, sh.pool).map_err(|Exhausted| store.exhausted(sh.pool, level))?;
                for k in 0..got {
                    let elem = seg.slot_ptr(&seg.ticket(&first, k));
                    // SAFETY: `elem` points to a reserved slot (valid storage for a ContElem);
                    // `addr_of_mut!` computes the field address without reading or creating a
                    // reference.
                    bases.push(unsafe { std::ptr::addr_of_mut!((*elem).frame) }.cast::<u8>());
                }
                seg.enq_n(first, got, |_| elems.next().expect("one buffered frame per reserved ticket"));
                left -= got;
            }
        }
        for (_, c) in &mut self.children {
            c.flush(sh, level + 1, &self.bases)?;
        }
        Ok(())
    }

    /// Runs a pre-spawn element.
    fn run_pre(&mut self, elem: PreElem<T>) {
        let mut cx = Cx { w: self, segment: 0, spawned: 0 };
        let step = T::prespawn(elem.args, &mut cx);
        let spawned = cx.spawned;
        self.finish(0, spawned, step, elem.dest);
    }

    /// Runs an element of continuation queue `queue` (segment `queue + 1`).
    fn run_cont(&mut self, queue: usize, elem: ContElem<T>) {
        if let Some(v) = elem.deferred {
            // SAFETY: `dest` was made for `T::Output` and its frame is live (module docs).
            unsafe { elem.dest.write(v) };
            return;
        }
        // SAFETY: `deferred == None` elements are published with an initialized frame (`finish`).
        let frame = unsafe { elem.frame.assume_init() };
        let segment = queue + 1;
        let mut cx = Cx { w: self, segment, spawned: 0 };
        let step = T::resume(segment, frame, &mut cx);
        let spawned = cx.spawned;
        self.finish(segment, spawned, step, elem.dest);
    }

    /// Ends segment `segment` that spawned `spawned` children: delivers a result, runs the next
    /// segment inline when nothing was spawned, or buffers the frame (or deferred value) for
    /// continuation queue `segment`, where the children's destinations point.
    fn finish(&mut self, mut segment: usize, mut spawned: usize, mut step: Step<T>, dest: Dest) {
        loop {
            self.tally.max_fanout = self.tally.max_fanout.max(spawned);
            self.tally.produced += spawned;
            if spawned > 0 {
                self.tally.produced += 1;
                let elem = match step {
                    Step::Return(v) => ContElem { frame: MaybeUninit::uninit(), deferred: Some(v), dest },
                    Step::Sync(frame) => ContElem { frame: MaybeUninit::new(frame), deferred: None, dest },
                };
                let frames = &mut self.frames[segment];
                if frames.capacity() == 0 {
                    frames.reserve(self.hint);
                }
                frames.push(elem);
                self.buffered += 1;
                return;
            }
            match step {
                // SAFETY: `dest` was made for `T::Output` and its frame is live (module docs).
                Step::Return(v) => unsafe { dest.write(v) },
                Step::Sync(frame) => {
                    // Nothing outstanding: the next segment can run at once, here.
                    segment += 1;
                    let mut cx = Cx { w: self, segment, spawned: 0 };
                    step = T::resume(segment, frame, &mut cx);
                    spawned = cx.spawned;
                    continue;
                }
            }
            return;
        }
    }
}

/// The sub-kernels' view of the scheduler while one segment of one task runs.
struct Cx<'w, 's, 'a, T: CilkTask> {
    w: &'w mut Worker<'s, 'a, T>,
    segment: usize,
    spawned: usize,
}

impl<T: CilkTask> Spawn<T> for Cx<'_, '_, '_, T> {
    fn spawn<C: CilkTask>(&mut self, args: C::Args, place: Place<T::Frame, C::Output>) {
        self.spawned += 1;
        let dest = match place.offset() {
            // The frame this segment leaves behind becomes the next element of its queue's buffer
            // (`finish`; no flush runs inside a task).
            Some(off) => DestRef::Frame { q: self.segment, idx: self.w.frames[self.segment].len(), off },
            None => DestRef::Discard,
        };
        self.w.children::<C>().push((args, dest));
        self.w.buffered += 1;
    }

    fn alloc_temp<E: crate::temp::TempElem>(&mut self, len: usize) -> Option<crate::temp::Temp<E>> {
        let t = self.w.sh.temps.alloc(len);
        if t.is_none() {
            self.w.tally.error.get_or_insert(Error::TempHeapExhausted {
                heap: "temporary heap",
                task: T::NAME,
                level: self.w.level,
                elements: len as u64,
                bytes: (len as u64).saturating_mul(std::mem::size_of::<E>() as u64),
                capacity: self.w.sh.temps.capacity() as u64,
            });
        }
        t
    }

    unsafe fn free_temp<E: crate::temp::TempElem>(&mut self, t: crate::temp::Temp<E>) {
        // SAFETY: the caller's contract (`Spawn::free_temp`) is the heap's.
        unsafe { self.w.sh.temps.free(t) };
    }
}

impl<T: CilkTask> ErasedStore for TaskStore<T> {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn name(&self) -> &'static str {
        T::NAME
    }

    fn fanout(&self) -> usize {
        T::FANOUT.unwrap_or_else(|| self.observed_fanout.load(Ordering::Relaxed)).max(1)
    }

    fn ensure_level(&mut self, level: usize) {
        while self.levels.len() <= level {
            let seg = self.segment_capacity;
            self.levels.push(Level { pre: Queue::new(seg), cont: (0..=T::SYNCS).map(|_| Queue::new(seg)).collect() });
        }
    }

    fn queues(&self) -> usize {
        T::SYNCS + 2
    }

    fn pending(&self, level: usize, queue: usize) -> usize {
        match self.levels.get(level) {
            None => 0,
            Some(l) if queue == 0 => l.pre.len(),
            Some(l) => l.cont[queue - 1].len(),
        }
    }

    fn occupancy(&self, level: usize, queue: usize) -> usize {
        match self.levels.get(level) {
            None => 0,
            Some(l) if queue == 0 => l.pre.occupancy(),
            Some(l) => l.cont[queue - 1].occupancy(),
        }
    }

    fn dispatch(&self, sh: &Shared<'_>, level: usize, queue: usize, n: usize, chunk: usize) -> Tally {
        let l = self.level(level);
        let tally = match queue {
            0 => drain(l.pre.plan(n), chunk, |claim| Worker::new(sh, self, level).consume(claim, Worker::run_pre)),
            q => drain(l.cont[q - 1].plan(n), chunk, |claim| {
                Worker::new(sh, self, level).consume(claim, |w, e| w.run_cont(q - 1, e))
            }),
        };
        self.observed_fanout.fetch_max(tally.max_fanout, Ordering::Relaxed);
        tally
    }

    fn recycle(&mut self, level: usize, pool: &Pool) {
        if let Some(l) = self.levels.get_mut(level) {
            l.pre.recycle(pool);
            for q in &mut l.cont {
                q.recycle(pool);
            }
        }
    }

    fn release(&mut self, pool: &Pool) {
        for l in &mut self.levels {
            l.pre.release(pool);
            for q in &mut l.cont {
                q.release(pool);
            }
        }
    }
}

/// Consumes every planned element in parallel: the plan is cut into pieces of at most `chunk`
/// elements, one rayon job each, and each job claims its whole piece with one `claimed`
/// fetch-and-add ([`Channel::deq_n`]) and frees it with one `freed` add.
fn drain<E: Send>(plan: Vec<(&Channel<E>, usize)>, chunk: usize, run: impl Fn(Claim<'_, E>) -> Tally + Sync) -> Tally {
    let chunk = chunk.max(1);
    let pieces: Vec<(&Channel<E>, usize)> = plan
        .into_iter()
        .flat_map(|(seg, count)| (0..count).step_by(chunk).map(move |start| (seg, chunk.min(count - start))))
        .collect();
    pieces
        .into_par_iter()
        .map(|(seg, n)| match seg.deq_n(n) {
            Some(claim) if claim.len() == n => run(claim),
            // The plan counted published elements at a quiescent point, and nothing else
            // consumes this queue during the dispatch. (A short claim drops what it took.)
            _ => Tally {
                error: Some(Error::Internal("a planned channel element was missing".into())),
                ..Tally::default()
            },
        })
        .reduce(Tally::default, Tally::merge)
}

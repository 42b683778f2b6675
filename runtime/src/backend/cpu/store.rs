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
//! The parent reserves that slot at its first spawn and publishes the frame when the segment ends,
//! before any child runs (children run in a later dispatch). The levelized scheduler runs the
//! frame's continuation only once every level below is empty, i.e. every child has finished and
//! written its result; the dispatch barrier between the two (rayon's join, then the next dispatch's
//! job injection) orders the children's writes before the continuation's read.

use super::queue::{Exhausted, Pool, Queue};
use super::ErasedStore;
use crate::channel::{Channel, Ticket};
use crate::error::Error;
use crate::task::{CilkTask, Place, Spawn, Step};
use rayon::prelude::*;
use std::any::{Any, TypeId};
use std::mem::MaybeUninit;
use std::sync::atomic::{AtomicUsize, Ordering};

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

    /// Runs one element of queue `queue` (0 = pre-spawn, k = continuation queue k - 1).
    fn run_pre(&self, sh: &Shared<'_>, level: usize, elem: PreElem<T>, tally: &mut Tally) {
        let mut cx = Cx::new(sh, self, level, 0);
        let step = T::prespawn(elem.args, &mut cx);
        self.finish(cx, step, elem.dest, tally);
    }

    fn run_cont(&self, sh: &Shared<'_>, level: usize, queue: usize, elem: ContElem<T>, tally: &mut Tally) {
        if let Some(v) = elem.deferred {
            // SAFETY: `dest` was made for `T::Output` and its frame is live (module docs).
            unsafe { elem.dest.write(v) };
            return;
        }
        // SAFETY: `deferred == None` elements are published with an initialized frame (`finish`).
        let frame = unsafe { elem.frame.assume_init() };
        let segment = queue + 1;
        let mut cx = Cx::new(sh, self, level, segment);
        let step = T::resume(segment, frame, &mut cx);
        self.finish(cx, step, elem.dest, tally);
    }

    /// Ends a segment: delivers a result, runs the next segment inline when nothing was spawned,
    /// or publishes the frame (or deferred value) into the reserved continuation slot.
    fn finish<'s>(&'s self, mut cx: Cx<'s, '_, T>, mut step: Step<T>, dest: Dest, tally: &mut Tally) {
        loop {
            tally.max_fanout = tally.max_fanout.max(cx.spawned);
            if let Some(e) = cx.error.take() {
                tally.error.get_or_insert(e);
                return;
            }
            tally.produced += cx.spawned;
            let slot = cx.slot.take();
            match (step, slot) {
                (Step::Return(v), None) => {
                    // SAFETY: `dest` was made for `T::Output` and its frame is live (module docs).
                    unsafe { dest.write(v) };
                }
                (Step::Sync(frame), None) => {
                    // Nothing outstanding: the next segment can run at once, here.
                    let segment = cx.segment + 1;
                    cx = Cx::new(cx.sh, self, cx.level, segment);
                    step = T::resume(segment, frame, &mut cx);
                    continue;
                }
                (Step::Return(v), Some((seg, t))) => {
                    tally.produced += 1;
                    seg.enq(t, ContElem { frame: MaybeUninit::uninit(), deferred: Some(v), dest });
                }
                (Step::Sync(frame), Some((seg, t))) => {
                    tally.produced += 1;
                    seg.enq(t, ContElem { frame: MaybeUninit::new(frame), deferred: None, dest });
                }
            }
            return;
        }
    }
}

/// The sub-kernels' view of the scheduler while one segment of one task runs.
struct Cx<'s, 'a, T: CilkTask> {
    sh: &'s Shared<'a>,
    store: &'s TaskStore<T>,
    level: usize,
    segment: usize,
    spawned: usize,
    slot: Option<(&'s Channel<ContElem<T>>, Ticket)>,
    error: Option<Error>,
}

impl<'s, 'a, T: CilkTask> Cx<'s, 'a, T> {
    fn new(sh: &'s Shared<'a>, store: &'s TaskStore<T>, level: usize, segment: usize) -> Self {
        Cx { sh, store, level, segment, spawned: 0, slot: None, error: None }
    }

    /// The frame slot of the next segment, reserved at the first spawn.
    fn frame_base(&mut self) -> Option<*mut u8> {
        if self.slot.is_none() {
            let q = &self.store.level(self.level).cont[self.segment];
            match q.reserve(self.sh.pool) {
                Ok(s) => self.slot = Some(s),
                Err(Exhausted) => {
                    self.error.get_or_insert(self.store.exhausted(self.sh.pool, self.level));
                    return None;
                }
            }
        }
        let (seg, t) = self.slot.as_ref()?;
        let elem = seg.slot_ptr(t);
        // SAFETY: `elem` points to a reserved slot (valid, unaliased storage for a ContElem);
        // `addr_of_mut!` computes the field address without reading or creating a reference.
        Some(unsafe { std::ptr::addr_of_mut!((*elem).frame) }.cast::<u8>())
    }
}

impl<T: CilkTask> Spawn<T> for Cx<'_, '_, T> {
    fn spawn<C: CilkTask>(&mut self, args: C::Args, place: Place<T::Frame, C::Output>) {
        if self.error.is_some() {
            return; // the run is failing; the error is reported
        }
        self.spawned += 1;
        let Some(base) = self.frame_base() else { return };
        let dest = match place.offset() {
            // SAFETY: `offset` comes from `offset_of!` on `T::Frame` (checked by `Place`'s witness)
            // so it stays inside the frame.
            Some(off) => Dest(unsafe { base.add(off) }),
            None => Dest::discard(),
        };
        let child_level = self.level + 1;
        if let Err(e) = self.sh.store::<C>().push(self.sh.pool, child_level, PreElem { args, dest }) {
            self.error.get_or_insert(e);
        }
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

    fn dispatch(&self, sh: &Shared<'_>, level: usize, queue: usize, n: usize, min_len: usize) -> Tally {
        let l = self.level(level);
        let tally = match queue {
            0 => drain(l.pre.plan(n), min_len, |e, tally| self.run_pre(sh, level, e, tally)),
            q => drain(l.cont[q - 1].plan(n), min_len, |e, tally| self.run_cont(sh, level, q - 1, e, tally)),
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

/// Consumes every planned element in parallel (one `deq` each), running `run` on it.
fn drain<E: Send>(plan: Vec<(&Channel<E>, usize)>, min_len: usize, run: impl Fn(E, &mut Tally) + Sync) -> Tally {
    plan.into_par_iter()
        .map(|(seg, count)| {
            (0..count)
                .into_par_iter()
                .with_min_len(min_len)
                .fold(Tally::default, |mut tally, _| {
                    match seg.deq() {
                        Ok(Some(e)) => {
                            tally.ran += 1;
                            run(e, &mut tally);
                        }
                        // The plan counted published elements at a quiescent point, and nothing
                        // else consumes this queue during the dispatch.
                        Ok(None) => {
                            tally.error.get_or_insert(Error::Internal("a planned channel element was missing".into()));
                        }
                        Err(e) => {
                            tally.error.get_or_insert(Error::Internal(e.to_string()));
                        }
                    }
                    tally
                })
                .reduce(Tally::default, Tally::merge)
        })
        .reduce(Tally::default, Tally::merge)
}

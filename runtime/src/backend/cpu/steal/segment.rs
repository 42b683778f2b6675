//! The segment runner: runs one task's sub-kernels (`prespawn`, then `resume` per sync) on the
//! current worker, carrying out the lazy-creation [`policy`](super::policy) at each spawn, and
//! ends each segment by continuing at once, suspending on a heap frame, or finishing. It owns
//! [`Cx`] (the `Spawn` implementation the generated code calls), the per-segment bookkeeping, and
//! what the type-erased entries of the task storage do for the stealing scheduler
//! ([`Stealing`]): running a job's record (`job::RunJob`), resuming a heap frame
//! (`frame::Exec`), delivering a finished task's value ([`deliver`]). It must not touch deques
//! other than through the worker, nor decide policy.
//!
//! Results of children that ran at once (inline) are *stashed* on the worker while the segment
//! runs (the segment's frame value does not exist until it returns `Step::Sync(frame)`), then
//! written into the frame value. Real children write straight into the frame's heap storage,
//! which is why a segment allocates its cell at its first real spawn, before pushing that child.
//! An inline child that itself ends with real children outstanding cannot hand its value back
//! synchronously: it becomes a real child of its parent after the fact ([`Link::Inline`]), with
//! a destination in the parent's cell, before it seals its own counter.

use super::frame::{CellCache, Exec, DEFERRED};
use super::job::RunJob;
use super::policy::{weight, Choice};
use super::worker::{Cell, Dest, Header, Job, Marks, Ready, Stealing, Worker};
use crate::error::Error;
use crate::task::{CilkTask, Place, Spawn, Step};
use crate::temp::{Temp, TempElem};
use crate::view::Strided;
use std::marker::PhantomData;
use std::mem::size_of;
use std::ptr::{self, NonNull};

/// Where a task starts.
pub(super) enum Start<T: CilkTask> {
    /// Its pre-spawn sub-kernel, from its arguments.
    Pre(T::Args),
    /// Continuation `segment` (1-based), from its frame.
    Resume(usize, T::Frame),
}

/// How [`run_segments`] ended.
pub(super) enum Ended<O> {
    /// The task finished and was inline ([`Link::Inline`]): the caller stashes the value.
    Value(O),
    /// The task finished and delivered its value; maybe a frame became ready.
    Delivered(Ready),
    /// The task waits for children on its heap frame; whoever finishes last resumes it.
    Suspended,
}

/// Where the running task's value goes.
pub(super) enum Link<'p> {
    /// A known destination (a task from a deque, or a resumed frame).
    Dest(Dest),
    /// Back to the running segment `parent` that called this task inline, for its frame field at
    /// `offset`.
    Inline { parent: &'p mut Seg, offset: Option<usize> },
}

/// One running segment's state.
pub(super) struct Seg {
    /// The task's heap frame, allocated at the first real spawn (or reused from the last
    /// segment); null until then.
    cell: *mut Header,
    alloc: fn(&mut CellCache) -> *mut Header,
    frame_ptr: unsafe fn(*mut Header) -> *mut u8,
    cell_bytes: usize,
    /// Real children spawned (and inline children that became real) in this segment.
    real: usize,
    /// Spawns of this segment so far (every kind), for the splitting region's weights.
    spawns: usize,
    depth: usize,
    /// With `Config::check_races`: the slice ranges given to this segment's children so far.
    given: Vec<Given>,
}

/// A slice range (or a view's rows) a segment gave to a child (`Config::check_races`).
struct Given {
    /// The bytes: one range for a slice, a set of row ranges for a view.
    at: Strided,
    elem: usize,
    mutable: bool,
    site: &'static str,
}

/// What a child's argument `f` covers, in bytes.
fn covered<A>(args: &A, f: &crate::slice::SliceField) -> Option<Strided> {
    if f.view {
        return crate::view::read_view(args, f).map(|m| m.strided(f.elem_size));
    }
    let (ptr, len) = crate::slice::read_field(args, f)?;
    Some(Strided::contiguous(ptr, ptr.saturating_add(len.saturating_mul(f.elem_size))))
}

/// `&mut elements 4..10` of a slice, `&mut 3x4 block at element 17 (row stride 8)` of a view,
/// counted in elements from `base`.
fn describe(at: &Strided, elem: usize, mutable: bool, base: usize) -> String {
    let kind = if mutable { "&mut" } else { "&" };
    let e = elem.max(1) as i128;
    let rel = (at.lo as i128 - base as i128) / e;
    if at.rows == 1 {
        return format!("`{kind}` elements {rel}..{}", rel + at.width as i128 / e);
    }
    format!(
        "`{kind}` {}x{} block at element {rel} (row stride {})",
        at.rows,
        at.width as i128 / e,
        at.stride as i128 / e
    )
}

impl Seg {
    fn new<T: CilkTask>(cell: *mut Header, depth: usize) -> Seg {
        Seg {
            cell,
            alloc: Cell::<T>::alloc,
            frame_ptr: Cell::<T>::frame_ptr,
            cell_bytes: Cell::<T>::BYTES,
            real: 0,
            spawns: 0,
            depth,
            given: Vec::new(),
        }
    }

    /// Records the slice ranges in `args` (of a child `C` spawned at `site`) and returns the race
    /// with an earlier child of this segment, if two of them overlap and one is `&mut`.
    fn give<C: CilkTask>(&mut self, task: &'static str, args: &C::Args, site: &'static str) -> Option<Error> {
        let start = self.given.len();
        for f in C::SLICES.iter().filter(|f| !f.bound) {
            let Some(at) = covered(args, f) else { continue };
            if at.is_empty() {
                continue;
            }
            // Ranges given by this same spawn cannot race each other (borrowck checked the call).
            for g in &self.given[..start] {
                if (f.mutable || g.mutable) && at.overlaps(&g.at) {
                    return Some(Error::SliceRace {
                        task,
                        first_site: g.site,
                        first: describe(&g.at, g.elem, g.mutable, g.at.lo),
                        second_site: site,
                        second: describe(&at, f.elem_size, f.mutable, g.at.lo),
                    });
                }
            }
            self.given.push(Given { at, elem: f.elem_size, mutable: f.mutable, site });
        }
        None
    }

    /// The frame storage of this segment's cell, allocating the cell if needed.
    fn frame(&mut self, w: &mut Worker<'_>) -> *mut u8 {
        if self.cell.is_null() {
            self.cell = (self.alloc)(&mut w.cells);
            w.frame_alloc(self.cell_bytes);
        }
        // SAFETY: `cell` is a live cell of the task `frame_ptr` was made for (`Seg::new`).
        unsafe { (self.frame_ptr)(self.cell) }
    }

    /// The destination of a new real child writing an `O` at `offset`, registering the child:
    /// its byte range is the child's alone (the owner copies its frame around it).
    fn child_dest<O>(&mut self, w: &mut Worker<'_>, offset: Option<usize>) -> Dest {
        let base = self.frame(w);
        self.real += 1;
        let slot = match offset {
            Some(off) => {
                w.ranges.push((off, size_of::<O>()));
                // SAFETY: `off` comes from `Place` (checked by its type witness to be an `O` field
                // of the frame), so it lies inside the frame storage.
                unsafe { base.add(off) }
            }
            None => ptr::null_mut(),
        };
        Dest { slot, parent: self.cell }
    }
}

/// The sub-kernels' view of the scheduler while one segment of task `T` runs.
pub(super) struct Cx<'a, 'r, T> {
    w: &'a mut Worker<'r>,
    seg: Seg,
    _task: PhantomData<fn() -> T>,
}

impl<T: CilkTask> Spawn<T> for Cx<'_, '_, T> {
    fn spawn_at<C: CilkTask>(&mut self, args: C::Args, place: Place<T::Frame, C::Output>, site: &'static str) {
        if self.w.check_races && !C::SLICES.is_empty() {
            if let Some(e) = self.seg.give::<C>(T::NAME, &args, site) {
                self.w.fail(e);
                return;
            }
        }
        self.spawn::<C>(args, place)
    }

    fn spawn_prio<C: CilkTask>(
        &mut self,
        args: C::Args,
        place: Place<T::Frame, C::Output>,
        priority: u64,
        site: &'static str,
    ) {
        if self.w.check_races && !C::SLICES.is_empty() {
            if let Some(e) = self.seg.give::<C>(T::NAME, &args, site) {
                self.w.fail(e);
                return;
            }
        }
        if self.w.ranked_full() {
            // Beyond the queue's bound: a plain spawn, depth-first (see `ranked`).
            return self.spawn::<C>(args, place);
        }
        let w = &mut *self.w;
        if w.failing() {
            return;
        }
        let depth = self.seg.depth + 1;
        if depth >= w.max_depth {
            w.fail(Error::DepthExceeded { task: C::NAME, limit: w.max_depth });
            return;
        }
        // A real task in the run's best-first queue: inlining it would run it before better work
        // that is already waiting.
        let dest = self.seg.child_dest::<C::Output>(w, place.offset());
        w.push_ranked::<C>(priority, Job::new::<C>(args, dest, depth, 0));
    }

    #[inline]
    fn spawn<C: CilkTask>(&mut self, args: C::Args, place: Place<T::Frame, C::Output>) {
        let w = &mut *self.w;
        let depth = self.seg.depth + 1;
        self.seg.spawns += 1;
        // The callee's level in the splitting region: `nest` as counted from the spawner's, with
        // the later spawns of a segment weighing more (policy::weight).
        let nest = w.nest + weight(self.seg.spawns);
        let idle = w.idle_workers();
        let choice = w.policy.choose(
            w.local.len(),
            nest - 1,
            w.region(),
            || idle.load(std::sync::atomic::Ordering::Relaxed) > 0,
            || w.hungry_workers(),
        );
        match choice {
            Choice::Serial => {
                w.stats.calls_inlined += 1;
                let outer = std::mem::replace(&mut w.current, (C::NAME, depth));
                let epoch = w.hunger_epoch();
                let v = C::serial(args);
                // A worker started starving while this call held the only work this worker had,
                // and it still starves: the call was too big to be a serial call; split its
                // level from now on (`starved` reads the clock, only in this rare case).
                if w.hunger_epoch() != epoch && w.local.is_empty() && w.starved() {
                    w.deepen(nest - 1);
                }
                w.current = outer;
                if let Some(off) = place.offset() {
                    w.stash(off, v);
                }
            }
            choice => {
                if w.failing() {
                    return; // the run is stopping: nothing more is started
                }
                if depth >= w.max_depth {
                    w.fail(Error::DepthExceeded { task: C::NAME, limit: w.max_depth });
                    return;
                }
                if choice == Choice::Task {
                    let dest = self.seg.child_dest::<C::Output>(w, place.offset());
                    w.push_task::<C>(Job::new::<C>(args, dest, depth, nest));
                } else {
                    w.stats.tasks_inlined += 1;
                    let outer = std::mem::replace(&mut w.nest, nest);
                    let link = Link::Inline { parent: &mut self.seg, offset: place.offset() };
                    let ended = run_segments::<C>(w, Start::Pre(args), link, depth, ptr::null_mut());
                    w.nest = outer;
                    if let (Ended::Value(v), Some(off)) = (ended, place.offset()) {
                        w.stash(off, v);
                    }
                }
            }
        }
    }

    fn alloc_temp<E: TempElem>(&mut self, len: usize) -> Option<Temp<E>> {
        let heap = self.w.temps();
        let t = heap.alloc(len);
        if t.is_none() {
            self.w.fail(Error::TempHeapExhausted {
                heap: "temporary heap",
                task: T::NAME,
                level: self.seg.depth,
                elements: len as u64,
                bytes: (len as u64).saturating_mul(std::mem::size_of::<E>() as u64),
                capacity: heap.capacity() as u64,
            });
        }
        t
    }

    unsafe fn free_temp<E: TempElem>(&mut self, t: Temp<E>) {
        // SAFETY: the caller's contract (`Spawn::free_temp`) is the heap's.
        unsafe { self.w.temps().free(t) };
    }
}

/// Runs task `T` from `start` at recursion `depth` on this worker until it finishes or suspends
/// on its heap frame. `spare` is the task's cell when resuming (reused for the next segment's
/// children), else null.
pub(super) fn run_segments<T: CilkTask>(
    w: &mut Worker<'_>,
    mut start: Start<T>,
    mut link: Link<'_>,
    depth: usize,
    mut spare: *mut Header,
) -> Ended<T::Output> {
    loop {
        let marks = w.marks();
        if !spare.is_null() {
            // SAFETY: a spare cell is owned by this thread (its counter reached 0, or all_done).
            unsafe { (*spare).join.reset() };
        }
        let (segment, step, seg) = {
            let mut cx = Cx::<T> { w: &mut *w, seg: Seg::new::<T>(spare, depth), _task: PhantomData };
            let outer = std::mem::replace(&mut cx.w.current, (T::NAME, depth));
            let (segment, step) = match start {
                Start::Pre(args) => {
                    cx.w.stats.segment::<T>(depth, false);
                    (0, T::prespawn(args, &mut cx))
                }
                Start::Resume(k, frame) => {
                    cx.w.stats.segment::<T>(depth, true);
                    (k, T::resume(k, frame, &mut cx))
                }
            };
            cx.w.current = outer;
            (segment, step, cx.seg)
        };

        if seg.real == 0 {
            // Nothing outstanding: finish, or run the next segment here and now.
            match step {
                Step::Return(v) => {
                    w.drop_stash(marks);
                    if !seg.cell.is_null() {
                        // SAFETY: an unused spare cell of this task, owned by this thread.
                        unsafe { Cell::<T>::free(&mut w.cells, seg.cell) };
                        w.frame_free(Cell::<T>::BYTES);
                    }
                    return finish(w, link, v);
                }
                Step::Sync(mut frame) => {
                    w.apply_stash(marks, ptr::addr_of_mut!(frame).cast());
                    spare = seg.cell;
                    start = Start::Resume(crate::task::next_segment::<T>(segment), frame);
                    continue;
                }
            }
        }

        // Real children outstanding: leave the frame (or the deferred value) in the cell.
        let cell = seg.cell;
        let next = match step {
            Step::Return(v) => {
                w.drop_stash(marks);
                // SAFETY: the cell is this segment's, not sealed yet.
                unsafe { Cell::<T>::put_deferred(cell, v) };
                DEFERRED
            }
            Step::Sync(mut frame) => {
                w.apply_stash(marks, ptr::addr_of_mut!(frame).cast());
                // SAFETY: the cell is this segment's `Cell<T>`; the ranges are those of its real
                // children (pushed by `child_dest` since `marks`), which the copy leaves alone.
                unsafe { copy_around(&frame, Cell::<T>::frame_ptr(cell), &mut w.ranges[marks.ranges..]) };
                std::mem::forget(frame); // its bytes now live in the cell
                crate::task::next_segment::<T>(segment)
            }
        };
        w.ranges.truncate(marks.ranges);

        // SAFETY: `cell` is this segment's live cell; until the seal only this
        // thread writes its header, and its children touch only the counter and their ranges.
        if unsafe { (*cell).join.all_done(seg.real) } {
            // Every child already finished: the cell is ours again, no seal needed.
            // SAFETY: as above (this segment's live cell).
            match unsafe { Cell::<T>::take(cell, next) } {
                Err(v) => {
                    // SAFETY: as above (this segment's live cell).
                    unsafe { Cell::<T>::free(&mut w.cells, cell) };
                    w.frame_free(Cell::<T>::BYTES);
                    return finish(w, link, v);
                }
                Ok(frame) => {
                    spare = cell;
                    start = Start::Resume(next, frame);
                    continue;
                }
            }
        }

        // Suspend. The destination must be in the cell before the seal: from then on the last
        // child may resume the frame and deliver through it on another worker.
        let dest = match link {
            Link::Dest(d) => d,
            // This inline task becomes a real child of the segment that called it.
            Link::Inline { parent, offset } => parent.child_dest::<T::Output>(w, offset),
        };
        link = Link::Dest(dest);
        // SAFETY: as above (this segment's live cell).
        unsafe {
            (*cell).dest = dest;
            (*cell).next = next;
            (*cell).depth = depth;
        }
        // SAFETY: as above (this segment's live cell).
        if !unsafe { (*cell).join.seal(seg.real) } {
            return Ended::Suspended;
        }
        // The children finished between the check and the seal: continue here.
        // SAFETY: as above (this segment's live cell).
        match unsafe { Cell::<T>::take(cell, next) } {
            Err(v) => {
                // SAFETY: as above (this segment's live cell).
                unsafe { Cell::<T>::free(&mut w.cells, cell) };
                w.frame_free(Cell::<T>::BYTES);
                return finish(w, link, v);
            }
            Ok(frame) => {
                spare = cell;
                start = Start::Resume(next, frame);
            }
        }
    }
}

impl RunJob for Stealing {
    fn run_job<C: CilkTask>(
        w: &mut Worker<'_>,
        args: C::Args,
        dest: Dest,
        depth: usize,
        nest: usize,
        own: bool,
    ) -> Ready {
        w.frame_free(Job::bytes::<C>());
        w.nest = if own { nest } else { 0 };
        match run_segments::<C>(w, Start::Pre(args), Link::Dest(dest), depth, ptr::null_mut()) {
            Ended::Delivered(ready) => ready,
            Ended::Suspended => None,
            // SAFETY: a `Link::Dest` task never hands its value back; deliver it if it did.
            Ended::Value(v) => unsafe { deliver::<C::Output>(w, dest, v) },
        }
    }
}

impl Exec for Stealing {
    type Worker<'r> = Worker<'r>;

    unsafe fn resume_cell<T: CilkTask>(h: NonNull<Header>, w: &mut Worker<'_>) -> Ready {
        let h = h.as_ptr();
        // SAFETY: the caller owns the live cell; the owner wrote these fields before its seal,
        // which the counter's acquire ordered before this read.
        let (dest, next, depth) = unsafe { ((*h).dest, (*h).next, (*h).depth) };
        // SAFETY: as above, and `h` is a `Cell<T>` (caller).
        match unsafe { Cell::<T>::take(h, next) } {
            Err(v) => {
                // SAFETY: the cell is ours and nothing refers to it any more (all children are
                // done).
                unsafe { Cell::<T>::free(&mut w.cells, h) };
                w.frame_free(Cell::<T>::BYTES);
                // SAFETY: `dest` was made for a `T::Output` by the parent's `Place` (or the root
                // cell).
                unsafe { deliver::<T::Output>(w, dest, v) }
            }
            Ok(frame) => match run_segments::<T>(w, Start::Resume(next, frame), Link::Dest(dest), depth, h) {
                Ended::Delivered(ready) => ready,
                Ended::Suspended | Ended::Value(_) => None,
            },
        }
    }
}

/// Writes a finished task's value to its destination and signals the parent. Returns the parent
/// when this was its last outstanding child (the caller then resumes it).
///
/// # Safety
/// `dest.slot` must be null or point to an `O` in a live frame that only this task writes, and
/// `dest.parent` must be null (the root) or the live header of that frame.
unsafe fn deliver<O>(w: &mut Worker<'_>, dest: Dest, v: O) -> Ready {
    if !dest.slot.is_null() {
        // SAFETY: guaranteed by the caller.
        unsafe { dest.slot.cast::<O>().write(v) };
    }
    if dest.parent.is_null() {
        w.root_done();
        return None;
    }
    // SAFETY: the parent is live until its counter reaches 0, which needs this call.
    if unsafe { (*dest.parent).join.child_done() } {
        NonNull::new(dest.parent)
    } else {
        None
    }
}

/// Hands a finished task's value to where `link` says.
fn finish<O>(w: &mut Worker<'_>, link: Link<'_>, v: O) -> Ended<O> {
    match link {
        Link::Inline { .. } => Ended::Value(v),
        // SAFETY: a `Link::Dest` was made by `Seg::child_dest` for this task's output type (or is
        // the root's result cell), and its frame waits for this delivery.
        Link::Dest(d) => Ended::Delivered(unsafe { deliver::<O>(w, d, v) }),
    }
}

/// Copies the bytes of `frame` to `dst` except the byte ranges in `ranges` (sorted here), which
/// belong to real children that may be writing them concurrently.
///
/// # Safety
/// `dst` must be valid for `size_of::<F>()` bytes and every range must lie inside it.
unsafe fn copy_around<F>(frame: &F, dst: *mut u8, ranges: &mut [(usize, usize)]) {
    let src = (frame as *const F).cast::<u8>();
    let size = size_of::<F>();
    ranges.sort_unstable_by_key(|r| r.0);
    let mut at = 0;
    for &(off, len) in ranges.iter() {
        if off > at {
            // SAFETY: `at..off` lies inside both the frame and `dst` (caller), and no child owns it.
            unsafe { ptr::copy_nonoverlapping(src.add(at), dst.add(at), off - at) };
        }
        at = at.max(off + len);
    }
    if at < size {
        // SAFETY: as above for `at..size`.
        unsafe { ptr::copy_nonoverlapping(src.add(at), dst.add(at), size - at) };
    }
}

impl Worker<'_> {
    /// Stashes the value of an inline child for frame offset `off` of the running segment.
    #[inline]
    fn stash<O>(&mut self, off: usize, v: O) {
        let at = self.stash_bytes.len();
        let len = size_of::<O>();
        self.stash_bytes.reserve(len);
        // SAFETY: `reserve` made room for `len` more bytes after `at`; the write is unaligned
        // (the buffer is bytes), and `set_len` covers exactly the bytes written. Outputs are
        // `Copy`, so their bytes are a complete value.
        unsafe {
            ptr::write_unaligned(self.stash_bytes.as_mut_ptr().add(at).cast::<O>(), v);
            self.stash_bytes.set_len(at + len);
        }
        self.stash_at.push((off, at, len));
    }

    /// Writes the running segment's stashed values into its frame value at `frame`.
    #[inline]
    fn apply_stash(&mut self, marks: Marks, frame: *mut u8) {
        if self.stash_at.len() == marks.stash {
            return;
        }
        for &(off, at, len) in &self.stash_at[marks.stash..] {
            // SAFETY: `off` came from a `Place` of this frame type with an output of `len` bytes,
            // and `at..at + len` lies in `stash_bytes` (written by `stash`).
            unsafe { copy_small(self.stash_bytes.as_ptr().add(at), frame.add(off), len) };
        }
        self.drop_stash(marks);
    }

    /// Forgets the running segment's stashed values.
    #[inline]
    fn drop_stash(&mut self, marks: Marks) {
        self.stash_at.truncate(marks.stash);
        self.stash_bytes.truncate(marks.stash_bytes);
    }
}

/// `ptr::copy_nonoverlapping` of `len` bytes, with the common output sizes as single moves
/// instead of a `memcpy` call (this runs once per inline child).
///
/// # Safety
/// As `ptr::copy_nonoverlapping(src, dst, len)`.
#[inline]
unsafe fn copy_small(src: *const u8, dst: *mut u8, len: usize) {
    // SAFETY: guaranteed by the caller (every arm); the reads and writes are unaligned.
    unsafe {
        match len {
            8 => dst.cast::<u64>().write_unaligned(src.cast::<u64>().read_unaligned()),
            4 => dst.cast::<u32>().write_unaligned(src.cast::<u32>().read_unaligned()),
            16 => dst.cast::<u128>().write_unaligned(src.cast::<u128>().read_unaligned()),
            _ => ptr::copy_nonoverlapping(src, dst, len),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::copy_around;

    #[test]
    fn the_copy_leaves_the_childrens_ranges_alone() {
        let src: [u8; 16] = std::array::from_fn(|i| i as u8);
        let mut dst = [0xffu8; 16];
        let mut ranges = vec![(8, 4), (0, 2), (9, 1)];
        // SAFETY: 16-byte buffers, ranges inside.
        unsafe { copy_around(&src, dst.as_mut_ptr(), &mut ranges) };
        let expect: Vec<u8> = (0..16u8).map(|i| if i < 2 || (8..12).contains(&i) { 0xff } else { i }).collect();
        assert_eq!(dst.to_vec(), expect);
    }
}

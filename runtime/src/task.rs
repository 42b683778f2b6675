//! The contract between the code that `#[gpu_cilk]` emits and the schedulers.
//!
//! This module owns the traits and small types every backend agrees on: [`CilkTask`] (one per
//! annotated function), [`Step`] (how a sub-kernel ends), [`Place`] (where a spawned child writes
//! its result inside the parent's frame), [`Spawn`] (what a sub-kernel may ask of its scheduler),
//! [`Call`] (a root invocation), [`Registrar`] and [`Registry`] (the task functions reachable from a root),
//! and the markers [`DeviceFunction`] and [`TaskFunction`] through which generated code checks,
//! at each call and `spawn!`, that the callee was compiled by `#[gpu_cilk]`/`#[gpu_cilk::device]`.
//! It must not know how any backend stores or schedules work.
//!
//! # The execution model in one paragraph
//!
//! A task function's body is split at each top-level `sync!()` into *segments*. Segment 0, the
//! *pre-spawn* sub-kernel, starts from the [`CilkTask::Args`] of a channel element; every later
//! segment, a *continuation*, starts from the [`CilkTask::Frame`] that the previous segment left
//! behind. A segment ends with [`Step::Return`] (the task is finished, its value goes to the place
//! its parent named) or [`Step::Sync`] (the task waits for the children it spawned in this segment;
//! the frame is stored and the next segment runs once they are all done). Children write their
//! results directly into the parent's frame, at the offset a [`Place`] names. A `return` with
//! children still outstanding is an implicit sync: the scheduler waits for the children and then
//! delivers the value (Cilk semantics).

use std::any::TypeId;
use std::fmt;
use std::marker::PhantomData;

use crate::temp::{Temp, TempElem};

/// One `#[gpu_cilk]` function, as the schedulers see it. Implemented by generated code on the
/// marker type `<function>::Task`; there is no reason to implement it by hand except in tests.
pub trait CilkTask: Sized + Send + Sync + 'static {
    /// The channel-element payload: the function's parameters, `#[repr(C)]`.
    type Args: Copy + Send + Sync + 'static;
    /// The continuation frame: every local that lives across a `sync!()`, and every spawn
    /// destination, `#[repr(C)]`.
    type Frame: Send + 'static;
    /// The function's return type (a scalar, an array, a tuple of those, or `()`).
    type Output: Copy + Default + Send + Sync + 'static;

    /// The function's name, for statistics and error messages.
    const NAME: &'static str;
    /// The number of top-level `sync!()` points, i.e. of continuation segments.
    const SYNCS: usize;
    /// The most children one segment can spawn, when the compiler can count them (no spawn inside
    /// a loop); `None` otherwise. Schedulers use it to size dispatch chunks.
    const FANOUT: Option<usize>;

    /// The plain recursive function (spawn = call, sync = no-op): the serial backend and the oracle.
    fn serial(args: Self::Args) -> Self::Output;

    /// Segment 0: from the start of the body to the first `sync!()` (or a return).
    fn prespawn<S: Spawn<Self>>(args: Self::Args, cx: &mut S) -> Step<Self>;

    /// Segment `segment` (1-based, `1..=SYNCS`): from the `segment`-th `sync!()` to the next one
    /// (or a return).
    fn resume<S: Spawn<Self>>(segment: usize, frame: Self::Frame, cx: &mut S) -> Step<Self>;

    /// Visits this task and then every task it spawns, each once: `reg.add::<Self>()`, and when
    /// that says the task is new, the callees' `register`. Backends that need per-task state built
    /// for every task of a tree (the cpu backend's channel stacks) pass their own [`Registrar`];
    /// [`Registry`] is the one that records what every backend needs to know.
    fn register<R: Registrar>(reg: &mut R);

    /// The task's body is a state machine (some `sync!()` stands inside a branch, loop or block):
    /// it has one continuation, `resume(1, ..)`, which reads its resume point from the frame and
    /// may end at a sync again; after such a segment the next one is segment 1 again
    /// ([`next_segment`]). The levels schedulers, whose queues follow the segments in order,
    /// refuse such tasks.
    const MACHINE: bool = false;

    /// The task's CUDA C++ fragment, written by the compiler from the same IR as the Rust
    /// sub-kernels (`None` for hand-written tasks, which then run on host backends only).
    const CUDA: Option<&'static CudaFragment> = None;

    /// The Rust layout of [`CilkTask::Args`] (offsets from `offset_of!`), which the cuda backend
    /// checks against the C struct the compiler wrote for the device. [`ArgsLayout::UNCHECKED`]
    /// for hand-written tasks.
    const ARGS_LAYOUT: ArgsLayout = ArgsLayout::UNCHECKED;

    /// The Rust layout of [`CilkTask::Output`]: its size and, for a tuple, each element's offset
    /// and size (named `f0`, `f1`, .. as in the C struct `<task>_ret`), which the cuda backend
    /// checks against the device's (a root's result travels as bytes). [`ArgsLayout::UNCHECKED`]
    /// for hand-written tasks.
    const OUTPUT_LAYOUT: ArgsLayout = ArgsLayout::UNCHECKED;

    /// The slice parameters (`&[T]`, `&mut [T]`) in [`CilkTask::Args`]: the cuda backend uploads
    /// a root's slices before the run and downloads the mutable ones after it.
    const SLICES: &'static [crate::slice::SliceField] = &[];

    /// The device types of a generic task's type arguments (`["gc_u32"]` for `cilksort::<u32>`,
    /// from [`crate::Scalar::CXX`]), empty for a task that is not generic. A generic task's CUDA
    /// fragment is a C++ template; the cuda backend instantiates it with these, one task of the
    /// program per instantiation.
    const TYPE_ARGS: &'static [&'static str] = &[];
}

/// The segment to run after `segment` of `T` ended at a sync: `segment + 1`, or, after the last
/// one (which only a [`CilkTask::MACHINE`] task's continuation reaches), that segment again.
pub fn next_segment<T: CilkTask>(segment: usize) -> usize {
    if segment < T::SYNCS {
        segment + 1
    } else {
        segment
    }
}

/// Where one field of a task's `Args` lies in Rust (see [`CilkTask::ARGS_LAYOUT`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldLayout {
    /// The field's name in the C struct `<task>_args` (the compiler's spelling of the Rust name).
    pub name: &'static str,
    /// Its byte offset.
    pub offset: usize,
    /// Its size in bytes.
    pub size: usize,
}

/// The Rust layout of a task's `Args` struct: what the device's `<task>_args` must match.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArgsLayout {
    /// `size_of::<Args>()`.
    pub size: usize,
    /// The fields, in declaration order.
    pub fields: &'static [FieldLayout],
}

impl ArgsLayout {
    /// No layout to check (hand-written tasks).
    pub const UNCHECKED: ArgsLayout = ArgsLayout { size: 0, fields: &[] };
}

/// One task function in CUDA C++, in three sections that the cuda backend concatenates over all
/// tasks of a program (all `decls`, then all `types`, then helpers, then all `defs`), after the
/// device library (`kernels/`) and one `#define GC_QBASE_<name> <first queue>` per task.
#[derive(Debug)]
pub struct CudaFragment {
    /// The C identifier of the task (`fib` → `fib_task`, kernels `gc_fib_q<k>`).
    pub name: &'static str,
    /// `typedef <ret> <name>_ret; struct <name>_args { .. };`
    pub decls: &'static str,
    /// The frame struct and the `<name>_task` struct (element layouts, segment prototypes).
    pub types: &'static str,
    /// Segment bodies and `<name>_task::dev` (the task run as a plain call). Kernels are written
    /// by the cuda backend around the fragments, per scheduler.
    pub defs: &'static str,
    /// Rust source locations (`file:line:column`) of the fault sites numbered in `defs`.
    pub sites: &'static [&'static str],
    /// The `#[gpu_cilk::device]` helpers the task calls.
    pub helpers: &'static [&'static DeviceFn],
    /// Some segment allocates a temporary (`alloc!`): the program needs the device heap.
    pub uses_temps: bool,
    /// `Some(callees)`: the task's result is a constant plus the results of its children, which
    /// are calls of `callees` (C names). When every task reachable this way is such a task too,
    /// the persistent scheduler runs their trees as sum groups (`program.rs`, persistent.cuh).
    pub sum_of: Option<&'static [&'static str]>,
    /// The device structs (`#[derive(DeviceStruct)]`) the task's types name.
    pub structs: &'static [&'static crate::device_struct::StructDef],
}

/// A `#[gpu_cilk::device]` helper in CUDA C++.
#[derive(Debug)]
pub struct DeviceFn {
    /// The helper's name.
    pub name: &'static str,
    /// Its prototype (ends with `;`).
    pub decl: &'static str,
    /// Its definition.
    pub def: &'static str,
    /// Source locations of its fault sites.
    pub sites: &'static [&'static str],
    /// The macro its site numbers start from (`GC_SITEBASE_<c name>_dev`): the cuda backend
    /// defines it when it assembles a program, so each function's sites get a range of their own.
    pub site_base: &'static str,
    /// Helpers it calls.
    pub helpers: &'static [&'static DeviceFn],
    /// The device structs (`#[derive(DeviceStruct)]`) its types name.
    pub structs: &'static [&'static crate::device_struct::StructDef],
}

/// The marker of a function that has a device form: `f::Device` of every `#[gpu_cilk]` task and
/// every `#[gpu_cilk::device]` helper `f` implements it, and `f::__DEVICE` is `f`'s [`DeviceFn`].
///
/// Generated code names `<g::Device as DeviceFunction>::EXISTS` at every call `g(..)` in a task or
/// helper. For a `g` that neither macro compiled, `g::Device` is a stand-in the compiler put beside
/// the caller, which implements nothing, so the call fails with this message at `g`.
#[diagnostic::on_unimplemented(
    message = "a `#[gpu_cilk]` task or `#[gpu_cilk::device]` helper can only call `#[gpu_cilk]` and `#[gpu_cilk::device]` functions",
    label = "this function is neither `#[gpu_cilk]` nor `#[gpu_cilk::device]`",
    note = "annotate it with `#[gpu_cilk::device]` (a helper, called directly) or with `#[gpu_cilk]` (a task): the cuda backend runs its device form"
)]
pub trait DeviceFunction {
    /// Compiles only for an implementor: the check that generated code makes at a call.
    const EXISTS: () = ();
}

/// The marker of a function that `spawn!` can spawn: `f::Device` of every `#[gpu_cilk]` function
/// `f` implements it with `Task = f::Task`.
///
/// A `#[gpu_cilk::device]` helper, and the stand-in the compiler puts beside a task for a spawned
/// `g` that neither macro compiled, define `g::Task` as `<g::Device as TaskFunction>::Task`, which
/// does not exist, so `spawn!(g(..))` fails with this message at `g`. A parent's frame stores a
/// child's result as `g::Output` (a plain type for every `g`, so the frame itself never fails) and
/// reads it back through [`TaskFunction::output`], so that message stays the only one.
#[diagnostic::on_unimplemented(
    message = "`spawn!` needs a `#[gpu_cilk]` function",
    label = "this function is not `#[gpu_cilk]`",
    note = "annotate it with `#[gpu_cilk]`; or call it without `spawn!` (it then runs inside this task) and annotate it with `#[gpu_cilk::device]`"
)]
pub trait TaskFunction {
    /// The function's task type (`f::Task`).
    type Task: CilkTask;

    /// The identity on the task's output: how a parent reads a child's result back from its frame.
    /// For a function that is not a task the call fails with the message above and the result has
    /// no type that the rest of the parent could mismatch.
    fn output(value: <Self::Task as CilkTask>::Output) -> <Self::Task as CilkTask>::Output {
        value
    }
}

/// How a segment ends.
pub enum Step<T: CilkTask> {
    /// The task is finished with this value. If children spawned in this segment are still
    /// outstanding the scheduler delivers it only after they are done (implicit sync).
    Return(T::Output),
    /// Wait for this segment's children, then run the next segment on this frame.
    Sync(T::Frame),
}

impl<T: CilkTask> fmt::Debug for Step<T>
where
    T::Output: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Return(v) => f.debug_tuple("Return").field(v).finish(),
            Step::Sync(_) => f.write_str("Sync(..)"),
        }
    }
}

/// What a running sub-kernel may ask of its scheduler.
pub trait Spawn<T: CilkTask> {
    /// Spawns `C` with `args`; its result goes to `place` in the frame that the current segment
    /// will leave behind (the frame given to [`Step::Sync`], or the implicit one of a `return`).
    fn spawn<C: CilkTask>(&mut self, args: C::Args, place: Place<T::Frame, C::Output>);

    /// [`Spawn::spawn`] from the `spawn!` at `site` (`file:line:col`): what a task with slice
    /// parameters emits, so a scheduler that checks the slice ranges of parallel children
    /// (`Config::check_races`) can name both spawns. The default ignores the site.
    fn spawn_at<C: CilkTask>(&mut self, args: C::Args, place: Place<T::Frame, C::Output>, site: &'static str) {
        let _ = site;
        self.spawn::<C>(args, place)
    }

    /// `spawn!(C(..), priority = p)` at `site`: [`Spawn::spawn_at`] with the order-preserving key
    /// of `p` ([`crate::Priority::key`]; larger runs first). A scheduler that keeps prioritized
    /// ready work best-first (the cpu stealing scheduler) honors it; the default ignores it.
    fn spawn_prio<C: CilkTask>(
        &mut self,
        args: C::Args,
        place: Place<T::Frame, C::Output>,
        priority: u64,
        site: &'static str,
    ) {
        let _ = priority;
        self.spawn_at::<C>(args, place, site)
    }

    /// `alloc!(E, len)`: `len` zeroed elements that live until the task ends, or `None` when the
    /// backend's temporary heap cannot hold them (the scheduler then fails the run with an error
    /// naming the task and the size; the segment returns at once). The default draws from the
    /// process-wide serial pool and never fails.
    fn alloc_temp<E: TempElem>(&mut self, len: usize) -> Option<Temp<E>> {
        Some(crate::temp::serial_alloc(len))
    }

    /// Frees a temporary made by [`alloc_temp`](Spawn::alloc_temp) when its task ends (emitted
    /// before every return of a task that allocates; its children are done by then).
    ///
    /// # Safety
    /// Neither `t` nor any copy of it is used after this call: a backend may hand its bytes to a
    /// temporary of another element type, whose accesses would race at different widths (see
    /// [`TempElem`]). Generated code frees only at a task's returns, after its children, and a
    /// `Temp` cannot be returned.
    unsafe fn free_temp<E: TempElem>(&mut self, t: Temp<E>) {
        crate::temp::serial_free(t)
    }
}

/// Where in a frame of type `F` a child's result of type `O` goes: a byte offset, or nowhere.
///
/// Constructed only through [`Place::field`], [`Place::element`] and [`Place::discard`], whose
/// `witness` arguments make the compiler check that the location really has type `O`, so a
/// scheduler may write an `O` at `frame + offset`.
pub struct Place<F, O> {
    offset: Option<usize>,
    _types: PhantomData<fn(&F) -> &O>,
}

impl<F, O> Clone for Place<F, O> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<F, O> Copy for Place<F, O> {}

impl<F, O> fmt::Debug for Place<F, O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.offset {
            Some(o) => write!(f, "Place(+{o})"),
            None => f.write_str("Place(discard)"),
        }
    }
}

impl<F, O> Place<F, O> {
    /// The result is not stored (a `spawn!(f(..));` statement); the child still has to finish
    /// before the parent's next segment runs.
    pub const fn discard() -> Self {
        Place { offset: None, _types: PhantomData }
    }

    /// The frame field at `offset` (from `core::mem::offset_of!`); `witness` projects a frame to
    /// that field and is never called: it only makes the types line up.
    pub const fn field(offset: usize, witness: fn(&F) -> &O) -> Self {
        let _ = witness;
        Place { offset: Some(offset), _types: PhantomData }
    }

    /// Element `index` of the array field at `array_offset`.
    ///
    /// # Panics
    /// With Rust's own message when `index >= N`, exactly as `array[index] = ..` would.
    #[track_caller]
    pub fn element<const N: usize>(array_offset: usize, index: usize, witness: fn(&F) -> &[O; N]) -> Self {
        let _ = witness;
        if index >= N {
            panic!("index out of bounds: the len is {N} but the index is {index}");
        }
        Place { offset: Some(array_offset + index * std::mem::size_of::<O>()), _types: PhantomData }
    }

    /// The byte offset inside the frame, or `None` for a discarded result.
    pub const fn offset(&self) -> Option<usize> {
        self.offset
    }
}

/// A root invocation of a task function: `fib::task(30)`, or `sort::task(&mut v)` for a task
/// with slice parameters, whose call borrows the caller's slices for `'a` (see
/// [`crate::slice`]). `Copy` only when the arguments borrow nothing ([`OwnedArgs`]): one borrow,
/// one run.
pub struct Call<'a, T: CilkTask> {
    /// The root channel element.
    pub(crate) args: T::Args,
    _borrow: PhantomData<&'a mut ()>,
}

impl<'a, T: CilkTask> Call<'a, T> {
    /// Wraps root arguments. `Args` that hold slices come only from the `unsafe fn args` of a task
    /// with slice parameters; `f::task(..)` ties them to the borrow.
    pub fn new(args: T::Args) -> Self {
        Call { args, _borrow: PhantomData }
    }

    /// Runs the plain serial function: the oracle.
    pub fn serial(self) -> T::Output {
        T::serial(self.args)
    }
}

/// What [`Runtime::run`](crate::Runtime::run) takes: a root call `f::task(args)`, a [`Call`].
/// Its only implementor is [`Call`]; it exists so that passing anything else (most often the
/// value of the plain serial call, `rt.run(f(30))`) names the fix instead of a type mismatch.
#[diagnostic::on_unimplemented(
    message = "`Runtime::run` takes a task call `f::task(args)`, not a `{Self}`",
    label = "a `{Self}`, not a task call",
    note = "`f(args)` is the plain serial function: it has already run and this is its value; \
            write `rt.run(f::task(args))` to run `f` as tasks on the runtime's backend"
)]
pub trait IntoCall<'a> {
    /// The root task.
    type Task: CilkTask;
    /// The call itself.
    fn into_call(self) -> Call<'a, Self::Task>;
}

impl<'a, T: CilkTask> IntoCall<'a> for Call<'a, T> {
    type Task = T;
    fn into_call(self) -> Call<'a, T> {
        self
    }
}

/// `Args` that borrow nothing (no slice parameters): a [`Call`] of them may be copied and run any
/// number of times. `#[gpu_cilk]` implements it for every task without slice parameters.
pub trait OwnedArgs: Copy {}

impl<T: CilkTask> Clone for Call<'_, T>
where
    T::Args: OwnedArgs,
{
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: CilkTask> Copy for Call<'_, T> where T::Args: OwnedArgs {}

impl<T: CilkTask> fmt::Debug for Call<'_, T>
where
    T::Args: fmt::Debug,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{:?}", T::NAME, self.args)
    }
}

/// One registered task function, erased to what backends need to build per-task state.
#[derive(Clone, Copy)]
pub struct TaskEntry {
    /// `TypeId` of the `Task` marker type.
    pub id: TypeId,
    /// `CilkTask::NAME`.
    pub name: &'static str,
    /// `CilkTask::SYNCS`.
    pub syncs: usize,
    /// `CilkTask::FANOUT`.
    pub fanout: Option<usize>,
    /// The task's CUDA fragment, if the compiler wrote one.
    pub cuda: Option<&'static CudaFragment>,
    /// `CilkTask::ARGS_LAYOUT`.
    pub args_layout: ArgsLayout,
    /// `CilkTask::MACHINE`.
    pub machine: bool,
    /// `CilkTask::OUTPUT_LAYOUT`.
    pub output_layout: ArgsLayout,
    /// `CilkTask::TYPE_ARGS`.
    pub type_args: &'static [&'static str],
}

impl fmt::Debug for TaskEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}(syncs={})", self.name, self.syncs)
    }
}

/// A visitor of the task functions reachable from a root ([`CilkTask::register`]).
pub trait Registrar {
    /// Visits `T`; returns `true` when it was not visited before (so its callees come next).
    fn add<T: CilkTask>(&mut self) -> bool;
}

/// The task functions reachable from a root, in discovery order (the root first).
#[derive(Default)]
pub struct Registry {
    entries: Vec<TaskEntry>,
}

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Collects `T` and everything reachable from it.
    pub fn of<T: CilkTask>() -> Self {
        let mut reg = Registry::new();
        T::register(&mut reg);
        reg
    }

    /// The registered tasks, root first.
    pub fn entries(&self) -> &[TaskEntry] {
        &self.entries
    }

    /// The first registered task whose body is a state machine ([`CilkTask::MACHINE`]), which the
    /// levels schedulers cannot run: the error they report.
    pub fn levels_refusal(&self) -> Option<crate::error::Error> {
        self.entries.iter().find(|e| e.machine).map(|e| {
            crate::error::Error::Config(format!(
                "the levels scheduler cannot run `{}`: a `sync!()` inside a branch, loop or block makes its \
                 continuations repeat, which the levels' per-segment queues do not allow; use the stealing \
                 (cpu) or persistent (cuda) scheduler",
                e.name
            ))
        })
    }

    /// The index of task `T`, if registered.
    pub fn index_of<T: CilkTask>(&self) -> Option<usize> {
        let id = TypeId::of::<T>();
        self.entries.iter().position(|e| e.id == id)
    }
}

impl Registrar for Registry {
    /// Records `T` if it is new; returns `true` when it was (so the caller goes on to its callees).
    fn add<T: CilkTask>(&mut self) -> bool {
        let id = TypeId::of::<T>();
        if self.entries.iter().any(|e| e.id == id) {
            return false;
        }
        self.entries.push(TaskEntry {
            id,
            name: T::NAME,
            syncs: T::SYNCS,
            fanout: T::FANOUT,
            cuda: T::CUDA,
            args_layout: T::ARGS_LAYOUT,
            machine: T::MACHINE,
            output_layout: T::OUTPUT_LAYOUT,
            type_args: T::TYPE_ARGS,
        });
        true
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(&self.entries).finish()
    }
}

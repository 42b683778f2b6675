//! The IR: one `#[gpu_cilk]` function after lowering, the only thing the emitters read.
//!
//! This module owns the data types shared by `parse` (which builds the statement tree of a
//! [`Function`]), `lower` (which turns a [`Function`] into a [`Task`]: segments, frame layout,
//! callees) and the emitters (`write` for CUDA C++ text, `expand` for Rust), including the text
//! that `write` hands to `expand` through the pipeline ([`Fragment`], [`DeviceText`]). It has no
//! logic beyond small lookups (a stable text dump of a [`Task`] for the snapshot tests lives in
//! `tests/dump.rs`).
//!
//! # Shape
//!
//! A [`Task`] is its signature ([`Param`]s and output type), its [`FrameField`]s (every local that
//! lives across a `sync!()` and every spawn destination, in declaration order), its [`Callee`]s
//! (every function it spawns, in order of first appearance) and its [`Segment`]s: segment 0 is the
//! pre-spawn sub-kernel, segment `k >= 1` runs after the `k`-th top-level `sync!()`. A segment is a
//! tree of [`Stmt`]s whose control flow (`if`, `while`, `loop`, `for`, blocks) is structured, so a
//! [`SpawnSite`] can sit anywhere in it; every other expression is kept as a `syn::Expr`, already
//! checked against the subset (no closures, no `match`, no macros, no spawns inside it). A `return`
//! may still appear inside such an expression (`let v = if c { return 1; } else { 2 };`): emitters
//! translate `syn::Expr::Return` as a task return wherever it occurs.

use proc_macro2::Span;
use syn::{Expr, Ident, Path, Type, Visibility};

/// A parsed `#[gpu_cilk]` function before lowering: signature and statement tree, with `sync!()`
/// still a statement of the top-level list ([`Stmt::Sync`]).
#[derive(Debug, Clone)]
pub struct Function {
    /// The function name.
    pub name: Ident,
    /// Its visibility (the generated module gets the same one).
    pub vis: Visibility,
    /// Its type parameters (each bounded by `Key`), in order; lifetimes are not kept.
    pub generics: Vec<Ident>,
    /// The device struct types (`#[derive(DeviceStruct)]`) its types and struct literals name,
    /// each once, in order of appearance.
    pub structs: Vec<Path>,
    /// The parameters, in order.
    pub params: Vec<Param>,
    /// The return type; `None` for `()`.
    pub output: Option<Type>,
    /// The top-level statements, `sync!()` included (also nested in control flow).
    pub body: Vec<Stmt>,
    /// The tail expression of the body (its value), if any.
    pub tail: Option<Expr>,
}

/// A plain struct declared with `#[derive(DeviceStruct)]` (checked: `#[repr(C)]`, named fields
/// of scalars, arrays and other device structs).
#[derive(Debug, Clone)]
pub struct StructDecl {
    /// The struct's name (its C++ name too).
    pub name: Ident,
    /// The fields, in declaration order.
    pub fields: Vec<(Ident, Type)>,
}

/// One parameter: `[mut] name: ty`.
#[derive(Debug, Clone)]
pub struct Param {
    /// The name.
    pub name: Ident,
    /// Declared `mut`.
    pub mutable: bool,
    /// Its type (a scalar or a fixed-size array of scalars).
    pub ty: Type,
}

/// A lowered task function: what the emitters read.
#[derive(Debug, Clone)]
pub struct Task {
    /// The function name (also the generated module's name).
    pub name: Ident,
    /// Visibility of the function and of its module.
    pub vis: Visibility,
    /// The type parameters (each bounded by `Key`): a generic task is monomorphized per
    /// instantiation (Rust generics; a C++ template on the device, instantiated by the cuda
    /// backend with `CilkTask::TYPE_ARGS`).
    pub generics: Vec<Ident>,
    /// The device struct types its types and struct literals name (see [`Function::structs`]).
    pub structs: Vec<Path>,
    /// The parameters, in order: the fields of the channel element (`Args`).
    pub params: Vec<Param>,
    /// The return type; `None` for `()`.
    pub output: Option<Type>,
    /// The continuation frame, in declaration order (parameters first).
    pub frame: Vec<FrameField>,
    /// The functions this task spawns, in order of first appearance.
    pub callees: Vec<Callee>,
    /// `segments[0]` is the pre-spawn segment; `segments[k]` runs after the `k`-th `sync!()`.
    pub segments: Vec<Segment>,
    /// The most spawn sites in one segment, or `None` when a spawn sits inside a loop.
    pub fanout: Option<usize>,
    /// Set when some `sync!()` is nested in control flow (a branch, a loop, a block): the body is
    /// then a [`Machine`] (a control-flow graph whose resume point lives in the frame), and
    /// `segments` holds one segment, the whole structured body, for the serial device form.
    pub machine: Option<Machine>,
    /// `#[gpu_cilk(warp)]`: a leaf task that a whole warp runs (its `for i in lanes(..)` loops
    /// are spread over the lanes on the persistent scheduler; a plain loop everywhere else).
    pub warp: bool,
    /// `#[gpu_cilk(block)]`: a leaf task that a whole thread block runs (its `for i in
    /// threads(..)` loops are spread over the block's threads, its `shared!` arrays live in the
    /// block's shared memory and `block_sync!()` is a barrier on the persistent scheduler; the
    /// serial meaning everywhere else).
    pub block: bool,
    /// `Some(c)`: the task's result is the constant `c` plus every child's result, on every path
    /// that reaches its one sync (`x + y`, `1 + Σ sizes[j]`; `lower::sums`). The persistent device
    /// scheduler may then run a tree of such tasks as one sum group.
    pub sum_base: Option<u128>,
    /// `#[gpu_cilk(.., host = path)]`: on the host backends the task (a leaf) is `path(params)`,
    /// its serial function included; the device form is still the body (`crate::host`).
    pub host: Option<syn::Path>,
}

impl Task {
    /// The number of continuation entry points the schedulers see: the top-level `sync!()`s of a
    /// straight-line task, 1 for a [`Machine`] (its one continuation reads the resume point from
    /// the frame and may sync again).
    pub fn syncs(&self) -> usize {
        if self.machine.is_some() {
            return 1;
        }
        self.segments.len().saturating_sub(1)
    }
}

/// A task body lowered to a control-flow graph of blocks (the state-machine transform of an
/// `async fn`): block 0 is the entry; a block that ends at a `sync!()` stores the frame with the
/// block to resume at ([`Term::Sync`]), which a continuation reads back from the frame.
#[derive(Debug, Clone)]
pub struct Machine {
    /// The blocks; block 0 is the entry.
    pub blocks: Vec<Block>,
}

impl Machine {
    /// The blocks a continuation may start at (the targets of [`Term::Sync`]), ascending.
    pub fn resumes(&self) -> Vec<usize> {
        let mut v: Vec<usize> = self
            .blocks
            .iter()
            .filter_map(|b| match b.term {
                Term::Sync(k) => Some(k),
                _ => None,
            })
            .collect();
        v.sort_unstable();
        v.dedup();
        v
    }
}

/// A straight-line run of sync-free statements and how it ends.
#[derive(Debug, Clone)]
pub struct Block {
    /// The statements (structured, sync-free; [`Stmt::Jump`] may end them early).
    pub stmts: Vec<Stmt>,
    /// Where control goes next.
    pub term: Term,
    /// A loop header (the emitters mark progress there, as in every loop body).
    pub header: bool,
}

/// How a [`Block`] ends.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // one per block
pub enum Term {
    /// Continue with this block.
    Goto(usize),
    /// `if cond { then } else { els }`.
    Branch {
        /// Condition.
        cond: Expr,
        /// Block when true.
        then: usize,
        /// Block when false.
        els: usize,
    },
    /// `sync!()`: store the frame with this block as its resume point and wait for the children.
    Sync(usize),
    /// The function's tail expression: return its value.
    Tail(Expr),
    /// Control falls off the end of the body (see [`End::FallOff`]).
    FallOff,
}

/// A frame field: a local that lives across a `sync!()`, or a spawn destination.
#[derive(Debug, Clone)]
pub struct FrameField {
    /// The local's name (also the field's name).
    pub name: Ident,
    /// Declared `mut` (continuations rebind it with `mut`).
    pub mutable: bool,
    /// Its type.
    pub ty: FieldType,
    /// The segment whose top level declares it (0 for parameters).
    pub segment: usize,
    /// Where it comes from.
    pub origin: FieldOrigin,
    /// A temporary made by `alloc!` in this task (freed at every return).
    pub temp: bool,
}

/// The type of a frame field.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // a handful per task; boxing would only obscure the emitters
pub enum FieldType {
    /// Written in the source (annotation, parameter type) or read off the initializer (a suffixed
    /// literal, an `as` cast, a repeat `[v; N]` of those).
    Declared(Type),
    /// `let x = spawn!(g(..))`: the output type of callee `callees[i]`.
    OutputOf(usize),
}

/// Where a frame field comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldOrigin {
    /// A parameter (declared in segment 0).
    Param,
    /// A top-level `let`.
    Local,
}

/// A function spawned by the task.
#[derive(Debug, Clone)]
pub struct Callee {
    /// The path as written in `spawn!(path(..))`, relative to the function's own module.
    pub path: Path,
}

impl Callee {
    /// The path as text (`fib`, `other::g`), for messages and dumps.
    /// Type arguments count: `gmax::<u32>` and `gmax::<i64>` are two callees (two tasks).
    pub fn display(&self) -> String {
        let mut s = path_text(&self.path);
        if let Some(syn::PathArguments::AngleBracketed(a)) = self.path.segments.last().map(|seg| &seg.arguments) {
            let args: Vec<String> = a.args.iter().map(|g| quote::ToTokens::to_token_stream(g).to_string()).collect();
            s.push_str(&format!("::<{}>", args.join(", ")));
        }
        s
    }
}

/// One sub-kernel: the statements between two top-level `sync!()`s.
#[derive(Debug, Clone)]
pub struct Segment {
    /// 0 for the pre-spawn segment, `k` after the `k`-th sync.
    pub index: usize,
    /// Indices into [`Task::frame`] of the fields a continuation binds on entry (those declared in
    /// earlier segments); empty for segment 0, which starts from the parameters.
    pub restores: Vec<usize>,
    /// The statements.
    pub body: Vec<Stmt>,
    /// How it ends when control falls off its last statement.
    pub end: End,
    /// The spawn sites in this segment (textually; a site inside a loop counts once).
    pub spawns: usize,
}

/// How a segment ends when control reaches its end.
#[derive(Debug, Clone)]
#[allow(clippy::large_enum_variant)] // one per segment
pub enum End {
    /// A `sync!()`: store the frame, wait for the children, run the next segment.
    Sync,
    /// The function's tail expression: return its value.
    Tail(Expr),
    /// Control falls off the end of the body: return `()` for a unit function; for any other
    /// function the last statement diverges (rustc checked the serial function).
    FallOff,
}

/// A statement of the subset, with control flow structured and spawns resolved.
#[derive(Debug, Clone)]
pub enum Stmt {
    /// `let [mut] name[: ty] [= init];`
    Let(Let),
    /// `let x = spawn!(..);`, `x = spawn!(..);`, `a[i] = spawn!(..);`, `spawn!(..);`
    Spawn(SpawnSite),
    /// `if cond { .. } [else ..]` in statement position.
    If(If),
    /// `while cond { .. }`
    While {
        /// Loop condition (evaluated each iteration).
        cond: Expr,
        /// Body.
        body: Vec<Stmt>,
    },
    /// `loop { .. }` (no break value).
    Loop {
        /// Body.
        body: Vec<Stmt>,
    },
    /// `for [mut] var in start..end { .. }` or `start..=end`.
    For(For),
    /// `{ .. }` in statement position.
    Block(Vec<Stmt>),
    /// `return [value];` in statement position.
    Return(Option<Expr>),
    /// Any other expression statement (assignment, call, `break`, `continue`, ...); `semi` says
    /// whether it ends with `;` (a block's tail otherwise).
    Expr {
        /// The expression.
        expr: Expr,
        /// Followed by `;`.
        semi: bool,
    },
    /// `sync!()`: `lower` turns each into a segment boundary (or a block boundary of a
    /// [`Machine`]); the serial device form skips it.
    Sync(Span),
    /// Continue at block `k` of the task's [`Machine`]: a `break`/`continue` of a loop that
    /// contains a `sync!()`, made by `lower`.
    Jump(usize),
}

/// `let [mut] name[: ty] [= init];`
#[derive(Debug, Clone)]
pub struct Let {
    /// The bound name.
    pub name: Ident,
    /// `let mut`.
    pub mutable: bool,
    /// The annotation, if written.
    pub ty: Option<Type>,
    /// The initializer, if any.
    pub init: Option<Expr>,
    /// Set by `lower`: this top-level local is a frame field.
    pub frame: bool,
    /// `let t = alloc!(T, len);` (then `init` is `None` and `ty` is `Temp<T>`).
    pub alloc: Option<Box<Alloc>>,
}

/// `alloc!(elem, len)`: a task-scoped temporary, freed when the task returns.
#[derive(Debug, Clone)]
pub struct Alloc {
    /// The element type (a scalar of `syntax::TEMP_SCALARS`).
    pub elem: Type,
    /// The length (a `usize` expression).
    pub len: Expr,
    /// The span of the `alloc!` invocation.
    pub span: Span,
    /// Written `alloc!(T, n, uninit)`: the cuda backend does not zero it (host backends do).
    pub uninit: bool,
}

/// `if cond { then } [else ..]`
#[derive(Debug, Clone)]
pub struct If {
    /// Condition.
    pub cond: Expr,
    /// Then-branch.
    pub then: Vec<Stmt>,
    /// Else-branch: a block, or `else if` as a single [`Stmt::If`] in it.
    pub els: Option<Vec<Stmt>>,
    /// Written as `else if` (so the Rust emitter can print it the same way).
    pub else_if: bool,
}

/// `for [mut] var in start..end { body }`
#[derive(Debug, Clone)]
pub struct For {
    /// Loop variable.
    pub var: Ident,
    /// Declared `mut`.
    pub mutable: bool,
    /// Range start (evaluated once).
    pub start: Expr,
    /// Range end (evaluated once).
    pub end: Expr,
    /// `..=` rather than `..`.
    pub inclusive: bool,
    /// Written `for var in lanes(start, end)` (a warp task) or `for var in threads(start, end)` (a
    /// block task): a cooperative loop (iterations independent; lane `l` of a warp runs
    /// `start + l`, `start + l + 32`, .., thread `t` of a block `start + t`, `start + t +
    /// blockDim`, ..; sequential on one thread).
    pub lanes: bool,
    /// Body.
    pub body: Vec<Stmt>,
}

/// One `spawn!(callee(args))`.
#[derive(Debug, Clone)]
pub struct SpawnSite {
    /// Position among the task's spawn sites, in textual order (set by `lower`).
    pub index: usize,
    /// Index into [`Task::callees`] (set by `lower`).
    pub callee: usize,
    /// The callee path as written.
    pub path: Path,
    /// The call's arguments.
    pub args: Vec<Expr>,
    /// `spawn!(f(..), priority = e)`: the key `e` (larger runs first on the schedulers that
    /// honor it; the serial function drops it).
    pub priority: Option<Expr>,
    /// Where the child's result goes.
    pub dest: Dest,
    /// The site is inside a loop (set by `lower`).
    pub in_loop: bool,
    /// The span of the `spawn!` invocation.
    pub span: Span,
}

impl SpawnSite {
    /// The expressions the spawn evaluates besides its destination: the arguments, then the
    /// priority.
    pub fn exprs(&self) -> impl Iterator<Item = &Expr> {
        self.args.iter().chain(self.priority.as_ref())
    }
}

/// Where a spawned child's result goes.
#[derive(Debug, Clone)]
pub enum Dest {
    /// `spawn!(..);`: nowhere.
    Discard,
    /// The frame field `name`. `decl` is `Some` for `let [mut] name[: ty] = spawn!(..)`, which
    /// also declares the local (initialized to `Default::default()`).
    Local {
        /// The local.
        name: Ident,
        /// The declaration, for `let`.
        decl: Option<LetDecl>,
    },
    /// `array[index]`: element `index` (a `usize` expression) of the frame array `array`.
    Element {
        /// The array local.
        array: Ident,
        /// The index expression, as written.
        index: Expr,
    },
}

/// The declaration part of `let [mut] x[: ty] = spawn!(..)`.
#[derive(Debug, Clone)]
pub struct LetDecl {
    /// `let mut`.
    pub mutable: bool,
    /// The annotation, if written.
    pub ty: Option<Type>,
}

// ------------------------------------------------------------------------------------------------
// The CUDA text: what `write` makes of a task or helper, and what `expand` embeds in Rust.

/// A task's CUDA text, before it becomes a `CudaFragment` constant.
#[derive(Debug, Clone)]
pub struct Fragment {
    /// The C identifier (`fib`).
    pub name: String,
    /// Prelude, `<name>_ret`, `<name>_args`.
    pub decls: String,
    /// `<name>_frame`, `<name>_task`.
    pub types: String,
    /// Segment bodies and kernels.
    pub defs: String,
    /// `file:line:col` of each fault site.
    pub sites: Vec<String>,
    /// Device functions called (paths as written, relative to the function's module).
    pub helpers: Vec<Path>,
    /// The C names of the fields of `<name>_args`, in parameter order (for the layout check).
    pub arg_cnames: Vec<String>,
    /// Some segment allocates a temporary (`alloc!`): the program needs the device heap.
    pub uses_temps: bool,
    /// For a task whose result is a constant plus its children's results ([`Task::sum_base`]): the
    /// C names of the tasks it spawns.
    pub sum_of: Option<Vec<String>>,
}

/// A device function's CUDA text, before it becomes a `DeviceFn` static.
#[derive(Debug, Clone)]
pub struct DeviceText {
    /// The Rust name.
    pub name: String,
    /// The prototype.
    pub decl: String,
    /// The definition.
    pub def: String,
    /// `file:line:col` of each fault site.
    pub sites: Vec<String>,
    /// The macro its site numbers start from (`GC_SITEBASE_<cname>_dev`), which the runtime
    /// defines when it assembles a program.
    pub site_base: String,
    /// Device functions called or, in a task's serial form, spawned (each once, as first
    /// written).
    pub helpers: Vec<Path>,
    /// Every plain call `g(..)` of a device function, in textual order, as written (its span is
    /// the call's): each callee must have a device form, which the Rust side checks there.
    pub calls: Vec<Path>,
}

/// Calls `f` on every spawn site of `stmts`, in textual order.
pub fn visit_spawns<'a>(stmts: &'a [Stmt], f: &mut dyn FnMut(&'a SpawnSite)) {
    for s in stmts {
        match s {
            Stmt::Spawn(site) => f(site),
            Stmt::If(i) => visit_if_spawns(i, f),
            Stmt::While { body, .. } | Stmt::Loop { body } | Stmt::Block(body) => visit_spawns(body, f),
            Stmt::For(fl) => visit_spawns(&fl.body, f),
            Stmt::Let(_) | Stmt::Return(_) | Stmt::Expr { .. } | Stmt::Sync(_) | Stmt::Jump(_) => {}
        }
    }
}

/// Every expression of a statement tree (conditions, initializers, spawn arguments and indices,
/// loop bounds), and every name a `let` binds.
pub fn visit_exprs<'a>(stmts: &'a [Stmt], f: &mut dyn FnMut(&'a Expr), binds: &mut dyn FnMut(&syn::Ident)) {
    for s in stmts {
        match s {
            Stmt::Let(l) => {
                binds(&l.name);
                if let Some(e) = &l.init {
                    f(e);
                }
                if let Some(a) = &l.alloc {
                    f(&a.len);
                }
            }
            Stmt::Spawn(site) => {
                site.exprs().for_each(&mut *f);
                if let Dest::Element { index, .. } = &site.dest {
                    f(index);
                }
            }
            Stmt::If(i) => {
                f(&i.cond);
                visit_exprs(&i.then, f, binds);
                if let Some(e) = &i.els {
                    visit_exprs(e, f, binds);
                }
            }
            Stmt::While { cond, body } => {
                f(cond);
                visit_exprs(body, f, binds);
            }
            Stmt::Loop { body } | Stmt::Block(body) => visit_exprs(body, f, binds),
            Stmt::For(fl) => {
                binds(&fl.var);
                f(&fl.start);
                f(&fl.end);
                visit_exprs(&fl.body, f, binds);
            }
            Stmt::Return(Some(e)) | Stmt::Expr { expr: e, .. } => f(e),
            Stmt::Return(None) | Stmt::Sync(_) | Stmt::Jump(_) => {}
        }
    }
}

fn visit_if_spawns<'a>(i: &'a If, f: &mut dyn FnMut(&'a SpawnSite)) {
    visit_spawns(&i.then, f);
    if let Some(e) = &i.els {
        visit_spawns(e, f);
    }
}

/// A path as compact text: `a::b`.
pub fn path_text(p: &Path) -> String {
    let mut s = String::new();
    if p.leading_colon.is_some() {
        s.push_str("::");
    }
    let segs: Vec<String> = p.segments.iter().map(|seg| seg.ident.to_string()).collect();
    s.push_str(&segs.join("::"));
    s
}

//! The IR: one `#[gpu_cilk]` function after lowering, the only thing the emitters read.
//!
//! This module owns the data types shared by `parse` (which builds the statement tree of a
//! [`Function`]), `lower` (which turns a [`Function`] into a [`Task`]: segments, frame layout,
//! callees) and the emitters (`expand` for Rust, `write` for CUDA C++). It has no logic beyond
//! small lookups and a stable text [`dump`] used by tests.
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
use std::fmt::{self, Write as _};
use syn::{Attribute, Expr, Ident, Path, Type, Visibility};

/// A parsed `#[gpu_cilk]` function before lowering: signature and statement tree, with `sync!()`
/// still a statement of the top-level list ([`Stmt::Sync`]).
#[derive(Debug, Clone)]
pub struct Function {
    /// The function name.
    pub name: Ident,
    /// Its visibility (the generated module gets the same one).
    pub vis: Visibility,
    /// Its outer attributes (kept on the serial function only).
    pub attrs: Vec<Attribute>,
    /// The parameters, in order.
    pub params: Vec<Param>,
    /// The return type; `None` for `()`.
    pub output: Option<Type>,
    /// The top-level statements, `sync!()` included.
    pub body: Vec<Stmt>,
    /// The tail expression of the body (its value), if any.
    pub tail: Option<Expr>,
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
}

impl Task {
    /// The number of top-level `sync!()`s (= continuation segments).
    pub fn syncs(&self) -> usize {
        self.segments.len().saturating_sub(1)
    }

    /// The frame field called `name`.
    pub fn field(&self, name: &Ident) -> Option<&FrameField> {
        self.frame.iter().find(|f| f.name == *name)
    }

    /// Every spawn site, in textual order.
    pub fn spawn_sites(&self) -> Vec<&SpawnSite> {
        let mut out = Vec::new();
        for seg in &self.segments {
            visit_spawns(&seg.body, &mut |s| out.push(s));
        }
        out
    }
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
    /// Some spawn writes into it (the whole field, or an element of it).
    pub spawn_dest: bool,
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
    pub fn display(&self) -> String {
        path_text(&self.path)
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
    /// `sync!()`: only in [`Function::body`]; `lower` turns each into a segment boundary.
    Sync(Span),
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
    /// The element type (a scalar of `parse::TEMP_SCALARS`).
    pub elem: Type,
    /// The length (a `usize` expression).
    pub len: Expr,
    /// The span of the `alloc!` invocation.
    pub span: Span,
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
    /// Where the child's result goes.
    pub dest: Dest,
    /// The site is inside a loop (set by `lower`).
    pub in_loop: bool,
    /// The span of the `spawn!` invocation.
    pub span: Span,
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

/// Calls `f` on every spawn site of `stmts`, in textual order.
pub fn visit_spawns<'a>(stmts: &'a [Stmt], f: &mut dyn FnMut(&'a SpawnSite)) {
    for s in stmts {
        match s {
            Stmt::Spawn(site) => f(site),
            Stmt::If(i) => visit_if_spawns(i, f),
            Stmt::While { body, .. } | Stmt::Loop { body } | Stmt::Block(body) => visit_spawns(body, f),
            Stmt::For(fl) => visit_spawns(&fl.body, f),
            Stmt::Let(_) | Stmt::Return(_) | Stmt::Expr { .. } | Stmt::Sync(_) => {}
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

/// A stable, compact text form of a task (for tests and for reading): signature, frame,
/// callees, then each segment's statements with expressions printed as token text.
pub fn dump(task: &Task) -> String {
    let mut d = Dumper { out: String::new() };
    d.task(task);
    d.out
}

struct Dumper {
    out: String,
}

fn tok<T: quote::ToTokens>(t: &T) -> String {
    t.to_token_stream().to_string()
}

impl Dumper {
    fn line(&mut self, depth: usize, text: fmt::Arguments<'_>) {
        for _ in 0..depth {
            self.out.push_str("  ");
        }
        let _ = self.out.write_fmt(text);
        self.out.push('\n');
    }

    fn task(&mut self, t: &Task) {
        let params: Vec<String> = t
            .params
            .iter()
            .map(|p| format!("{}{}: {}", if p.mutable { "mut " } else { "" }, p.name, tok(&p.ty)))
            .collect();
        let out = t.output.as_ref().map_or("()".to_string(), tok);
        self.line(0, format_args!("task {}({}) -> {}", t.name, params.join(", "), out));
        self.line(0, format_args!("syncs {}, fanout {:?}", t.syncs(), t.fanout));
        let callees: Vec<String> = t.callees.iter().map(Callee::display).collect();
        self.line(0, format_args!("callees [{}]", callees.join(", ")));
        self.line(0, format_args!("frame"));
        for f in &t.frame {
            let ty = match &f.ty {
                FieldType::Declared(ty) => tok(ty),
                FieldType::OutputOf(c) => {
                    format!("output of {}", t.callees.get(*c).map_or("?".into(), Callee::display))
                }
            };
            self.line(
                1,
                format_args!(
                    "{}{}: {} (seg {}, {:?}{})",
                    if f.mutable { "mut " } else { "" },
                    f.name,
                    ty,
                    f.segment,
                    f.origin,
                    if f.spawn_dest {
                        ", spawn dest"
                    } else if f.temp {
                        ", temp"
                    } else {
                        ""
                    }
                ),
            );
        }
        for s in &t.segments {
            let restores: Vec<String> =
                s.restores.iter().filter_map(|&i| t.frame.get(i)).map(|f| f.name.to_string()).collect();
            self.line(0, format_args!("segment {} (spawns {}) restores [{}]", s.index, s.spawns, restores.join(", ")));
            self.stmts(1, &s.body);
            match &s.end {
                End::Sync => self.line(1, format_args!("=> sync")),
                End::Tail(e) => self.line(1, format_args!("=> return {}", tok(e))),
                End::FallOff => self.line(1, format_args!("=> fall off")),
            }
        }
    }

    fn stmts(&mut self, depth: usize, stmts: &[Stmt]) {
        for s in stmts {
            self.stmt(depth, s);
        }
    }

    fn stmt(&mut self, depth: usize, s: &Stmt) {
        match s {
            Stmt::Let(l) => {
                let ty = l.ty.as_ref().map(|t| format!(": {}", tok(t))).unwrap_or_default();
                let init = l.init.as_ref().map(|e| format!(" = {}", tok(e))).unwrap_or_default();
                let frame = if l.frame { "  [frame]" } else { "" };
                let m = if l.mutable { "mut " } else { "" };
                let init = match &l.alloc {
                    Some(a) => format!(" = alloc({}, {})", tok(&a.elem), tok(&a.len)),
                    None => init,
                };
                self.line(depth, format_args!("let {m}{}{ty}{init}{frame}", l.name));
            }
            Stmt::Spawn(site) => {
                let args: Vec<String> = site.args.iter().map(tok).collect();
                let dest = match &site.dest {
                    Dest::Discard => "discard".to_string(),
                    Dest::Local { name, decl: Some(_) } => format!("let {name}"),
                    Dest::Local { name, decl: None } => name.to_string(),
                    Dest::Element { array, index } => format!("{array}[{}]", tok(index)),
                };
                let lp = if site.in_loop { " (in loop)" } else { "" };
                self.line(
                    depth,
                    format_args!("spawn#{} {}({}) -> {dest}{lp}", site.index, path_text(&site.path), args.join(", ")),
                );
            }
            Stmt::If(i) => {
                self.line(depth, format_args!("if {}", tok(&i.cond)));
                self.stmts(depth + 1, &i.then);
                if let Some(e) = &i.els {
                    self.line(depth, format_args!("else"));
                    self.stmts(depth + 1, e);
                }
            }
            Stmt::While { cond, body } => {
                self.line(depth, format_args!("while {}", tok(cond)));
                self.stmts(depth + 1, body);
            }
            Stmt::Loop { body } => {
                self.line(depth, format_args!("loop"));
                self.stmts(depth + 1, body);
            }
            Stmt::For(f) => {
                let op = if f.inclusive { "..=" } else { ".." };
                self.line(depth, format_args!("for {} in {}{op}{}", f.var, tok(&f.start), tok(&f.end)));
                self.stmts(depth + 1, &f.body);
            }
            Stmt::Block(b) => {
                self.line(depth, format_args!("block"));
                self.stmts(depth + 1, b);
            }
            Stmt::Return(e) => {
                let v = e.as_ref().map(tok).unwrap_or_default();
                self.line(depth, format_args!("return {v}"));
            }
            Stmt::Expr { expr, semi } => {
                self.line(depth, format_args!("{}{}", tok(expr), if *semi { ";" } else { "" }));
            }
            Stmt::Sync(_) => self.line(depth, format_args!("sync")),
        }
    }
}

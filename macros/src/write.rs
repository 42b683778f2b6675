//! IR → CUDA C++: the task's fragment (decls / types / defs) and device functions.
//!
//! This module owns the CUDA emitter. It reads only the IR ([`Task`], and [`Function`] for
//! `#[gpu_cilk::device]` helpers) and writes text in exactly the form of
//! `kernels/tests/fib_hand.cu`: per task a `decls` section (`<name>_ret`, `<name>_args`), a `types`
//! section (`<name>_frame`, `<name>_task` with `seg0`/`resume` prototypes) and a `defs` section
//! (the segment bodies and the kernels `gc_<name>_q0 ..= gc_<name>_q<SYNCS + 1>`). Every task also
//! gets a *serial device function* `<name>_dev(cx, args..)` (spawn = call, sync = nothing), which
//! is what a plain (not spawned) call of the task from device code runs; helpers are `<name>_dev`
//! too, so a call `h(x)` is always `h_dev(cx, x)` and names `__gpu_cilk_device_h` on the Rust side.
//!
//! Rust semantics: integer `+ - *` wrap (`gc_add`..), `/ %` and indexing are checked and raise a
//! device fault with a *site* number (an index into the fragment's `sites`, `file:line:col`),
//! shifts mask, `& | ^ !` and methods go through small templates of the emitter's prelude
//! (`write_prelude.cuh`, guarded so that every fragment can carry it). Unsuffixed literals take
//! the type of the operand they meet (`(gc_u32)2`); an unannotated `let x = 0;` takes the type of
//! the first typed operand `x` is combined with later in its block. What cannot be translated
//! becomes a `static_assert(false, "..")` naming the construct and its location, so the CUDA
//! program fails to compile with a clear message while the host backends still work.
//!
//! Output is deterministic: no hash iteration, names and site numbers follow the source order.

use crate::ir::{Dest, End, FieldType, For, Function, If, Param, SpawnSite, Stmt, Task};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};
use std::collections::BTreeSet;
use std::fmt::Write as _;
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::{BinOp, Expr, Ident, Lit, Path, Type, UnOp};

/// The emitter's own device helpers, carried (guarded) in every task's `decls`.
pub const PRELUDE: &str = include_str!("write_prelude.cuh");

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
    /// Device functions called.
    pub helpers: Vec<Path>,
}

// ------------------------------------------------------------------------------------------------
// Types.

#[derive(Debug, Clone, PartialEq)]
enum Ty {
    /// A Rust scalar: `u32`, `f64`, `bool`, ...
    Prim(String),
    Unit,
    Array(Box<Ty>, String),
    /// A task-scoped temporary `Temp<T>` (`gc_temp<T>`).
    Temp(Box<Ty>),
    /// A C++ type spelled out (`fib_ret`, `decltype(x)`).
    Named(String),
}

const PRIMS: &[&str] = &["u8", "u16", "u32", "u64", "i8", "i16", "i32", "i64", "usize", "isize", "f32", "f64", "bool"];

impl Ty {
    fn cxx(&self) -> String {
        match self {
            Ty::Prim(p) => format!("gc_{p}"),
            Ty::Unit => "gc_unit".into(),
            Ty::Array(e, n) => format!("gc_array<{}, {n}>", e.cxx()),
            Ty::Temp(e) => format!("gc_temp<{}>", e.cxx()),
            Ty::Named(s) => s.clone(),
        }
    }
    fn is_float(&self) -> bool {
        matches!(self, Ty::Prim(p) if p == "f32" || p == "f64")
    }
    fn is_int(&self) -> bool {
        matches!(self, Ty::Prim(p) if p != "f32" && p != "f64" && p != "bool")
    }
    fn is_bool(&self) -> bool {
        matches!(self, Ty::Prim(p) if p == "bool")
    }
}

fn prim(s: &str) -> Ty {
    Ty::Prim(s.to_string())
}

fn ty_of_type(t: &Type) -> Ty {
    if let Some(elem) = crate::parse::temp_type_elem(t) {
        return Ty::Temp(Box::new(ty_of_type(elem)));
    }
    match t {
        Type::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
            let id = p.path.segments[0].ident.to_string();
            if PRIMS.contains(&id.as_str()) {
                Ty::Prim(id)
            } else {
                Ty::Named(id)
            }
        }
        Type::Array(a) => Ty::Array(Box::new(ty_of_type(&a.elem)), tok(&a.len)),
        Type::Tuple(t) if t.elems.is_empty() => Ty::Unit,
        Type::Paren(p) => ty_of_type(&p.elem),
        Type::Group(g) => ty_of_type(&g.elem),
        other => Ty::Named(tok(other)),
    }
}

fn tok<T: quote::ToTokens>(t: &T) -> String {
    t.to_token_stream().to_string()
}

const CXX_RESERVED: &[&str] = &[
    "a",
    "cx",
    "f",
    "k",
    "out",
    "ret",
    "L",
    "alignas",
    "alignof",
    "asm",
    "auto",
    "bool",
    "case",
    "catch",
    "char",
    "class",
    "const",
    "constexpr",
    "default",
    "delete",
    "do",
    "double",
    "explicit",
    "export",
    "extern",
    "float",
    "friend",
    "goto",
    "inline",
    "int",
    "long",
    "namespace",
    "new",
    "noexcept",
    "nullptr",
    "operator",
    "private",
    "protected",
    "public",
    "register",
    "short",
    "signed",
    "sizeof",
    "static",
    "switch",
    "template",
    "this",
    "throw",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "and",
    "or",
    "not",
    "xor",
    "bitand",
    "bitor",
    "compl",
    "min",
    "max",
    "abs",
    "sqrt",
    "pow",
    "threadIdx",
    "blockIdx",
    "blockDim",
    "gridDim",
    "warpSize",
    "NULL",
];

/// A user name as a C++ identifier that cannot meet the emitter's own names.
fn mangle(name: &str) -> String {
    let name = name.strip_prefix("r#").unwrap_or(name);
    if CXX_RESERVED.contains(&name) || name.starts_with("gc_") || name.starts_with("GC_") || name.contains("__") {
        format!("{name}_")
    } else {
        name.to_string()
    }
}

/// `file:line:col` (1-based column) of a span.
fn location(span: Span) -> String {
    let start = span.start();
    format!("{}:{}:{}", span.file(), start.line, start.column + 1)
}

fn callee_cname(p: &Path) -> String {
    p.segments.last().map(|s| mangle(&s.ident.to_string())).unwrap_or_default()
}

// ------------------------------------------------------------------------------------------------
// The writer.

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// A task segment: spawns are `gc_spawn`, returns write `*ret`.
    Segment,
    /// A device function (helper, or a task's serial form): spawns are calls, returns return.
    Device,
}

struct Binding {
    rust: String,
    cxx: String,
    ty: Option<Ty>,
}

struct W<'t> {
    task: Option<&'t Task>,
    mode: Mode,
    /// The C name of the current task (for segments).
    tname: String,
    ret: Option<Ty>,
    out: String,
    depth: usize,
    sites: Vec<String>,
    /// Site numbers are `site_base + n` (helpers: a per-helper base macro).
    site_base: Option<String>,
    helpers: Vec<Path>,
    scopes: Vec<Vec<Binding>>,
    used: BTreeSet<String>,
    unsupported: Vec<String>,
    tmp: usize,
    /// C++ names of the temporaries this task allocated that are in scope (freed at returns).
    temps: Vec<String>,
}

impl<'t> W<'t> {
    fn new(task: Option<&'t Task>, mode: Mode, tname: String, ret: Option<Ty>) -> Self {
        W {
            task,
            mode,
            tname,
            ret,
            out: String::new(),
            depth: 0,
            sites: Vec::new(),
            site_base: None,
            helpers: Vec::new(),
            scopes: vec![Vec::new()],
            used: BTreeSet::new(),
            unsupported: Vec::new(),
            tmp: 0,
            temps: Vec::new(),
        }
    }

    fn line(&mut self, s: &str) {
        for _ in 0..self.depth {
            self.out.push_str("  ");
        }
        self.out.push_str(s);
        self.out.push('\n');
    }

    fn site(&mut self, span: Span) -> String {
        let n = self.sites.len();
        self.sites.push(location(span));
        match &self.site_base {
            Some(b) => format!("{b} + {n}u"),
            None => format!("{n}u"),
        }
    }

    fn helper(&mut self, p: &Path) {
        let text = crate::ir::path_text(p);
        if !self.helpers.iter().any(|h| crate::ir::path_text(h) == text) {
            self.helpers.push(p.clone());
        }
    }

    fn unsupported(&mut self, what: &str, span: Span) -> String {
        let msg = format!("gpu-cilk: {what} is not supported in CUDA ({})", location(span));
        if !self.unsupported.contains(&msg) {
            self.unsupported.push(msg);
        }
        "0".into()
    }

    fn push(&mut self) {
        self.scopes.push(Vec::new());
    }
    fn pop(&mut self) {
        self.scopes.pop();
    }

    fn lookup(&self, name: &str) -> Option<&Binding> {
        self.scopes.iter().rev().flat_map(|s| s.iter().rev()).find(|b| b.rust == name)
    }

    /// Declares `rust` in the current scope with a fresh C++ name; returns the C++ name.
    fn declare(&mut self, rust: &Ident, ty: Option<Ty>) -> String {
        let base = mangle(&rust.to_string());
        let mut name = base.clone();
        let mut n = 0;
        while self.used.contains(&name) {
            n += 1;
            name = format!("{base}_{n}");
        }
        self.used.insert(name.clone());
        let ty = ty.or_else(|| Some(Ty::Named(format!("decltype({name})"))));
        if let Some(s) = self.scopes.last_mut() {
            s.push(Binding { rust: rust.to_string(), cxx: name.clone(), ty });
        }
        name
    }

    fn fresh(&mut self, base: &str) -> String {
        self.tmp += 1;
        format!("gc_{base}{}", self.tmp)
    }

    // -------------------------------------------------------------------------------------------
    // Static types of expressions (only as far as literals need them).

    fn ty_of(&self, e: &Expr) -> Option<Ty> {
        match e {
            Expr::Lit(l) => match &l.lit {
                Lit::Int(i) if !i.suffix().is_empty() => Some(prim(i.suffix())),
                Lit::Float(f) if !f.suffix().is_empty() => Some(prim(f.suffix())),
                Lit::Bool(_) => Some(prim("bool")),
                _ => None,
            },
            Expr::Path(p) => {
                if let Some(id) = p.path.get_ident() {
                    return self.lookup(&id.to_string()).and_then(|b| b.ty.clone());
                }
                let segs: Vec<String> = p.path.segments.iter().map(|s| s.ident.to_string()).collect();
                (segs.len() == 2 && PRIMS.contains(&segs[0].as_str())).then(|| prim(&segs[0]))
            }
            Expr::Cast(c) => Some(ty_of_type(&c.ty)),
            Expr::Paren(p) => self.ty_of(&p.expr),
            Expr::Group(g) => self.ty_of(&g.expr),
            Expr::Unary(u) => match u.op {
                UnOp::Not(_) | UnOp::Neg(_) => self.ty_of(&u.expr),
                _ => None,
            },
            Expr::Binary(b) => match b.op {
                BinOp::Eq(_) | BinOp::Ne(_) | BinOp::Lt(_) | BinOp::Le(_) | BinOp::Gt(_) | BinOp::Ge(_) => {
                    Some(prim("bool"))
                }
                BinOp::And(_) | BinOp::Or(_) => Some(prim("bool")),
                BinOp::Shl(_) | BinOp::Shr(_) => self.ty_of(&b.left),
                _ => self.ty_of(&b.left).or_else(|| self.ty_of(&b.right)),
            },
            Expr::Index(i) => match self.ty_of(&i.expr) {
                Some(Ty::Array(e, _)) | Some(Ty::Temp(e)) => Some(*e),
                _ => None,
            },
            Expr::MethodCall(m) => {
                let name = m.method.to_string();
                match name.as_str() {
                    "count_ones" | "count_zeros" | "leading_zeros" | "trailing_zeros" => Some(prim("u32")),
                    "is_power_of_two" | "is_nan" => Some(prim("bool")),
                    "len" => Some(prim("usize")),
                    _ => self.ty_of(&m.receiver).or_else(|| m.args.first().and_then(|a| self.ty_of(a))),
                }
            }
            Expr::Call(c) => match &*c.func {
                Expr::Path(p) if prim_assoc(&p.path).is_some() => prim_assoc(&p.path).map(|(t, _)| prim(&t)),
                _ => None,
            },
            Expr::If(i) => block_tail(&i.then_branch.stmts).and_then(|t| self.ty_of(t)),
            Expr::Block(b) => block_tail(&b.block.stmts).and_then(|t| self.ty_of(t)),
            Expr::Repeat(r) => self.ty_of(&r.expr).map(|t| Ty::Array(Box::new(t), tok(&r.len))),
            Expr::Array(a) => {
                a.elems.iter().find_map(|x| self.ty_of(x)).map(|t| Ty::Array(Box::new(t), a.elems.len().to_string()))
            }
            _ => None,
        }
    }

    /// The type a literal meeting `e` takes: `e`'s type, or `decltype` of it.
    fn ty_or_decltype(&self, e: &Expr, text: &str) -> Option<Ty> {
        if is_poly_literal(e) {
            return None;
        }
        Some(self.ty_of(e).unwrap_or_else(|| Ty::Named(format!("gc_noref_t<decltype({text})>"))))
    }

    /// The type of an unannotated `let x = <literal>` (or loop variable) from how `x` is used.
    fn infer_from_uses(&self, name: &Ident, rest: &[Stmt], tail: Option<&Expr>) -> Option<Ty> {
        let mut f = UseFinder { name: name.to_string(), others: Vec::new(), indexed: false };
        for s in rest {
            walk_stmt_exprs(s, &mut |e| f.visit_expr(e));
        }
        if let Some(t) = tail {
            f.visit_expr(t);
        }
        for o in &f.others {
            if let Some(t) = self.ty_of(o) {
                if t != Ty::Named(String::new()) {
                    return Some(t);
                }
            }
        }
        f.indexed.then(|| prim("usize"))
    }

    // -------------------------------------------------------------------------------------------
    // Expressions.

    fn lit(&mut self, l: &syn::ExprLit, want: Option<&Ty>) -> String {
        match &l.lit {
            Lit::Int(i) => {
                let digits = i.base10_digits();
                let big = digits.parse::<u128>().map_or(true, |v| v > i64::MAX as u128);
                let text = if big { format!("{digits}ull") } else { digits.to_string() };
                if !i.suffix().is_empty() {
                    format!("({}){text}", prim(i.suffix()).cxx())
                } else if let Some(t) = want {
                    if t.is_float() {
                        format!("({}){text}.0", t.cxx())
                    } else {
                        format!("({}){text}", t.cxx())
                    }
                } else {
                    text
                }
            }
            Lit::Float(f) => {
                let mut text = f.base10_digits().to_string();
                if !text.contains(['.', 'e', 'E']) {
                    text.push_str(".0");
                }
                let t = if !f.suffix().is_empty() { Some(prim(f.suffix())) } else { want.cloned() };
                match t {
                    Some(t) if t.cxx() != "gc_f64" => format!("({}){text}", t.cxx()),
                    _ => text,
                }
            }
            Lit::Bool(b) => if b.value { "true" } else { "false" }.into(),
            _ => self.unsupported("this literal", l.span()),
        }
    }

    fn expr(&mut self, e: &Expr, want: Option<&Ty>) -> String {
        match e {
            Expr::Lit(l) => self.lit(l, want),
            Expr::Path(p) => {
                if let Some(id) = p.path.get_ident() {
                    return match self.lookup(&id.to_string()) {
                        Some(b) => b.cxx.clone(),
                        None => mangle(&id.to_string()),
                    };
                }
                match prim_assoc(&p.path) {
                    Some((t, c)) if c == "MAX" => format!("gc_max_of<{}>()", prim(&t).cxx()),
                    Some((t, c)) if c == "MIN" => format!("gc_min_of<{}>()", prim(&t).cxx()),
                    Some((t, c)) if c == "BITS" => format!("(gc_u32)(sizeof({}) * 8)", prim(&t).cxx()),
                    _ => self.unsupported(&format!("the path `{}`", tok(&p.path)), p.span()),
                }
            }
            Expr::Paren(p) => self.expr(&p.expr, want),
            Expr::Group(g) => self.expr(&g.expr, want),
            Expr::Cast(c) => {
                let to = ty_of_type(&c.ty);
                let from = self.ty_of(&c.expr);
                let inner = self.expr(&c.expr, None);
                if from.as_ref().is_some_and(Ty::is_float) && to.is_int() {
                    format!("gc_cast_sat<{}>({inner})", to.cxx())
                } else if is_atom(&inner) {
                    format!("({}){inner}", to.cxx())
                } else {
                    format!("({})({inner})", to.cxx())
                }
            }
            Expr::Unary(u) => match u.op {
                UnOp::Neg(_) => {
                    if let Expr::Lit(l) = &*u.expr {
                        let t = self.ty_of(e).or_else(|| want.cloned());
                        let v = self.lit(l, None);
                        return match t {
                            Some(t) => format!("({})-{v}", t.cxx()),
                            None => format!("-{v}"),
                        };
                    }
                    let v = self.expr(&u.expr, want);
                    format!("gc_neg({v})")
                }
                UnOp::Not(_) => {
                    let t = self.ty_of(&u.expr).or_else(|| want.cloned());
                    let v = self.expr(&u.expr, want);
                    if t.as_ref().is_some_and(Ty::is_bool) {
                        if is_atom(&v) {
                            format!("!{v}")
                        } else {
                            format!("!({v})")
                        }
                    } else {
                        format!("gc_not({v})")
                    }
                }
                _ => self.unsupported("this unary operator", u.span()),
            },
            Expr::Binary(b) => self.binary(b, want),
            Expr::Index(i) => self.index(i),
            Expr::MethodCall(m) => {
                let args: Vec<&Expr> = m.args.iter().collect();
                self.method(&m.method, &m.receiver, &args, m.span())
            }
            Expr::Call(c) => self.call(c),
            Expr::If(i) => self.if_expr(i, want),
            Expr::Block(b) if b.block.stmts.len() == 1 => match block_tail(&b.block.stmts) {
                Some(t) => self.expr(t, want),
                None => self.unsupported("a block expression with statements", b.span()),
            },
            Expr::Repeat(r) => {
                let t = match want {
                    Some(Ty::Array(e, n)) => Some((*e.clone(), n.clone())),
                    _ => None,
                }
                .or_else(|| self.ty_of(&r.expr).map(|t| (t, tok(&r.len))))
                .unwrap_or_else(|| (prim(if is_float_lit(&r.expr) { "f64" } else { "i32" }), tok(&r.len)));
                let v = self.expr(&r.expr, Some(&t.0));
                format!("gc_array_splat<{}, {}>({v})", t.0.cxx(), t.1)
            }
            Expr::Array(a) => {
                let elem = match want {
                    Some(Ty::Array(e, _)) => Some(*e.clone()),
                    _ => None,
                }
                .or_else(|| a.elems.iter().find_map(|x| self.ty_of(x)))
                .unwrap_or_else(|| prim("i32"));
                let vals: Vec<String> = a.elems.iter().map(|x| self.expr(x, Some(&elem))).collect();
                format!("gc_array<{}, {}>{{{{{}}}}}", elem.cxx(), a.elems.len(), vals.join(", "))
            }
            Expr::Return(r) => self.unsupported("`return` inside an expression", r.span()),
            other => self.unsupported("this expression", other.span()),
        }
    }

    fn binary(&mut self, b: &syn::ExprBinary, want: Option<&Ty>) -> String {
        let (l, r) = (&*b.left, &*b.right);
        let infix = |op: &str, w: &mut Self, t: Option<Ty>| {
            let ls = w.expr(l, t.as_ref());
            let rs = w.expr(r, t.as_ref());
            format!("{} {op} {}", paren_infix(l, ls), paren_infix(r, rs))
        };
        match b.op {
            BinOp::And(_) => infix("&&", self, None),
            BinOp::Or(_) => infix("||", self, None),
            BinOp::Eq(_) | BinOp::Ne(_) | BinOp::Lt(_) | BinOp::Le(_) | BinOp::Gt(_) | BinOp::Ge(_) => {
                let op = tok(&b.op);
                let t = self.operand_type(l, r, None);
                infix(&op, self, t)
            }
            BinOp::Shl(_) | BinOp::Shr(_) => {
                let f = if matches!(b.op, BinOp::Shl(_)) { "gc_shl" } else { "gc_shr" };
                let t = self.ty_of(l).or_else(|| want.cloned());
                let ls = self.expr(l, t.as_ref());
                let rs = self.expr(r, None);
                format!("{f}({ls}, {rs})")
            }
            _ => {
                let Some(f) = arith_fn(&b.op) else {
                    return self.unsupported("a compound assignment inside an expression", b.span());
                };
                let t = self.operand_type(l, r, want);
                let ls = self.expr(l, t.as_ref());
                let rs = self.expr(r, t.as_ref());
                if f == "gc_div" || f == "gc_rem" {
                    let s = self.site(b.op.span());
                    format!("{f}(cx, {ls}, {rs}, {s})")
                } else {
                    format!("{f}({ls}, {rs})")
                }
            }
        }
    }

    /// The type both operands of a binary operator share, as far as a literal among them needs it.
    fn operand_type(&self, l: &Expr, r: &Expr, want: Option<&Ty>) -> Option<Ty> {
        if let Some(t) = self.ty_of(l).or_else(|| self.ty_of(r)) {
            return Some(t);
        }
        if let Some(w) = want {
            if !w.is_bool() {
                return Some(w.clone());
            }
        }
        // Neither side's type is known here: a literal takes `decltype` of the other side.
        if is_poly_literal(l) && !is_poly_literal(r) {
            let mut probe = W::new(self.task, self.mode, self.tname.clone(), None);
            probe.scopes = self.scopes.iter().map(|s| s.iter().map(Binding::clone_b).collect()).collect();
            let text = probe.expr(r, None);
            return self.ty_or_decltype(r, &text);
        }
        if is_poly_literal(r) && !is_poly_literal(l) {
            let mut probe = W::new(self.task, self.mode, self.tname.clone(), None);
            probe.scopes = self.scopes.iter().map(|s| s.iter().map(Binding::clone_b).collect()).collect();
            let text = probe.expr(l, None);
            return self.ty_or_decltype(l, &text);
        }
        None
    }

    fn index(&mut self, i: &syn::ExprIndex) -> String {
        let base = self.expr(&i.expr, None);
        let idx = self.expr(&i.index, Some(&prim("usize")));
        let s = self.site(i.index.span());
        let idx = strip_usize_cast(&idx);
        format!("{base}.at(cx, (gc_u64)({idx}), {s})")
    }

    fn method(&mut self, m: &Ident, recv: &Expr, args: &[&Expr], span: Span) -> String {
        let name = m.to_string();
        let t = self.ty_of(recv).or_else(|| args.first().and_then(|a| self.ty_of(a)));
        let r = self.expr(recv, t.as_ref());
        if name == "len" && matches!(self.ty_of(recv), Some(Ty::Temp(_))) {
            return format!("{r}.len()");
        }
        let arg = |w: &mut Self, i: usize, t: Option<&Ty>| args.get(i).map(|a| w.expr(a, t)).unwrap_or_default();
        let same = |w: &mut Self, f: &str| {
            let a = arg(w, 0, t.as_ref());
            format!("{f}({r}, {a})")
        };
        match name.as_str() {
            "wrapping_add" => same(self, "gc_add"),
            "wrapping_sub" => same(self, "gc_sub"),
            "wrapping_mul" => same(self, "gc_mul"),
            "wrapping_neg" => format!("gc_neg({r})"),
            "wrapping_div" | "wrapping_rem" => {
                let a = arg(self, 0, t.as_ref());
                let s = self.site(span);
                let f = if name == "wrapping_div" { "gc_div" } else { "gc_rem" };
                format!("{f}(cx, {r}, {a}, {s})")
            }
            "wrapping_shl" | "wrapping_shr" => {
                let a = arg(self, 0, None);
                let f = if name == "wrapping_shl" { "gc_shl" } else { "gc_shr" };
                format!("{f}({r}, {a})")
            }
            "min" | "max" => same(self, &format!("gc_{name}")),
            "clamp" => {
                let a = arg(self, 0, t.as_ref());
                let b = arg(self, 1, t.as_ref());
                format!("gc_clamp({r}, {a}, {b})")
            }
            "abs" => format!("gc_abs({r})"),
            "pow" => {
                let a = arg(self, 0, Some(&prim("u32")));
                format!("gc_pow({r}, {a})")
            }
            "count_ones" | "count_zeros" | "leading_zeros" | "trailing_zeros" | "is_power_of_two" => {
                format!("gc_{name}({r})")
            }
            "rotate_left" | "rotate_right" => {
                let a = arg(self, 0, Some(&prim("u32")));
                let f = if name == "rotate_left" { "gc_rotl" } else { "gc_rotr" };
                format!("{f}({r}, {a})")
            }
            "sqrt" | "floor" | "ceil" | "trunc" | "round" | "sin" | "cos" | "tan" | "exp" | "exp2" | "log2"
            | "log10" | "cbrt" => format!("{name}({r})"),
            "ln" => format!("log({r})"),
            "is_nan" => format!("({r} != {r})"),
            "powf" | "hypot" | "atan2" => {
                let a = arg(self, 0, t.as_ref());
                let f = if name == "powf" { "pow" } else { &name };
                format!("{f}({r}, {a})")
            }
            "powi" => {
                let a = arg(self, 0, Some(&prim("i32")));
                format!("pow({r}, {a})")
            }
            "mul_add" => {
                let a = arg(self, 0, t.as_ref());
                let b = arg(self, 1, t.as_ref());
                format!("fma({r}, {a}, {b})")
            }
            _ => self.unsupported(&format!("the method `{name}`"), span),
        }
    }

    fn call(&mut self, c: &syn::ExprCall) -> String {
        let Expr::Path(p) = &*c.func else {
            return self.unsupported("a call of a non-path", c.span());
        };
        if let Some((_, method)) = prim_assoc(&p.path) {
            // `u64::max(a, b)` is `a.max(b)`.
            let args: Vec<&Expr> = c.args.iter().collect();
            if let Some((first, rest)) = args.split_first() {
                return self.method(&Ident::new(&method, p.span()), first, rest, c.span());
            }
        }
        // A device function: a `#[gpu_cilk::device]` helper or another task's serial form.
        self.helper(&p.path);
        let args: Vec<String> = c.args.iter().map(|a| self.expr(a, None)).collect();
        let mut all = vec!["cx".to_string()];
        all.extend(args);
        format!("{}_dev({})", callee_cname(&p.path), all.join(", "))
    }

    fn if_expr(&mut self, i: &syn::ExprIf, want: Option<&Ty>) -> String {
        let then = block_tail_only(&i.then_branch.stmts);
        let els = match &i.else_branch {
            Some((_, e)) => match &**e {
                Expr::Block(b) => block_tail_only(&b.block.stmts),
                other @ Expr::If(_) => Some(other),
                _ => None,
            },
            None => None,
        };
        let (Some(then), Some(els)) = (then, els) else {
            return self.unsupported("an `if` expression whose branches are not single values", i.span());
        };
        let t = want.cloned().or_else(|| self.ty_of(then)).or_else(|| self.ty_of(els));
        let c = self.expr(&i.cond, None);
        let a = self.expr(then, t.as_ref());
        let b = self.expr(els, t.as_ref());
        format!("({c} ? {a} : {b})")
    }

    // -------------------------------------------------------------------------------------------
    // Statements.

    fn stmts(&mut self, stmts: &[Stmt], tail: Option<&Expr>) {
        for (i, s) in stmts.iter().enumerate() {
            self.stmt(s, stmts.get(i + 1..).unwrap_or_default(), tail);
        }
    }

    /// `gc_progress();` as the first statement of a loop body (see runtime.cuh).
    fn progress_line(&mut self) {
        self.depth += 1;
        self.line("gc_progress();");
        self.depth -= 1;
    }

    fn block(&mut self, stmts: &[Stmt]) {
        self.depth += 1;
        self.push();
        self.stmts(stmts, None);
        self.pop();
        self.depth -= 1;
    }

    fn stmt(&mut self, s: &Stmt, rest: &[Stmt], tail: Option<&Expr>) {
        match s {
            Stmt::Let(l) if l.alloc.is_some() => {
                let Some(a) = &l.alloc else { return };
                let elem = ty_of_type(&a.elem);
                let len = self.expr(&a.len, Some(&prim("usize")));
                let len = strip_usize_cast(&len);
                let site = self.site(a.span);
                let ty = Ty::Temp(Box::new(elem.clone()));
                let name = self.declare(&l.name, Some(ty.clone()));
                self.line(&format!(
                    "{} {name} = gc_alloc_temp<{}>(cx, (gc_u64)({len}), {site});",
                    ty.cxx(),
                    elem.cxx()
                ));
                // An exhausted heap has raised a fault (the run fails); end the segment now.
                let fail = match self.mode {
                    Mode::Segment => "{ *ret = Ret(); return false; }".to_string(),
                    Mode::Device => {
                        format!("return {}();", self.ret.as_ref().map_or("gc_unit".to_string(), Ty::cxx))
                    }
                };
                self.line(&format!("if ({name}.ptr == nullptr) {fail}"));
                self.temps.push(name);
            }
            Stmt::Let(l) => {
                let mut ty = l.ty.as_ref().map(ty_of_type).or_else(|| l.init.as_ref().and_then(|e| self.ty_of(e)));
                if ty.is_none() {
                    if let Some(init) = &l.init {
                        if is_poly_literal(init) {
                            let default = if is_float_lit(init) { "f64" } else { "i32" };
                            ty = Some(self.infer_from_uses(&l.name, rest, tail).unwrap_or_else(|| prim(default)));
                        }
                    }
                }
                let init = l.init.as_ref().map(|e| self.expr(e, ty.as_ref()));
                let name = self.declare(&l.name, ty.clone());
                let decl = match (&ty, init) {
                    (Some(t), Some(i)) => format!("{} {name} = {i};", t.cxx()),
                    (Some(t), None) => format!("{} {name} = {}();", t.cxx(), t.cxx()),
                    (None, Some(i)) => format!("auto {name} = {i};"),
                    (None, None) => {
                        let u = self.unsupported("a `let` without type or initializer", l.name.span());
                        format!("int {name} = {u};")
                    }
                };
                self.line(&decl);
            }
            Stmt::Spawn(site) => self.spawn(site),
            Stmt::If(i) => {
                self.if_stmt(i, "");
                self.line("}");
            }
            Stmt::While { cond, body } => {
                let c = self.expr(cond, None);
                self.line(&format!("while ({c}) {{"));
                // Rust loops may run forever; C++ may assume a loop without side effects ends.
                self.progress_line();
                self.block(body);
                self.line("}");
            }
            Stmt::Loop { body } => {
                self.line("for (;;) {");
                self.progress_line();
                self.block(body);
                self.line("}");
            }
            Stmt::For(f) => self.for_stmt(f),
            Stmt::Block(b) => {
                self.line("{");
                self.block(b);
                self.line("}");
            }
            Stmt::Return(e) => self.ret(e.as_ref()),
            Stmt::Expr { expr, .. } => self.expr_stmt(expr),
            Stmt::Sync(span) => {
                let u = self.unsupported("`sync!()` inside a segment", *span);
                self.line(&format!("(void){u};"));
            }
        }
    }

    fn if_stmt(&mut self, i: &If, prefix: &str) {
        let c = self.expr(&i.cond, None);
        self.line(&format!("{prefix}if ({c}) {{"));
        self.block(&i.then);
        if let Some(e) = &i.els {
            match e.as_slice() {
                [Stmt::If(inner)] if i.else_if => self.if_stmt(inner, "} else "),
                _ => {
                    self.line("} else {");
                    self.block(e);
                }
            }
        }
    }

    fn for_stmt(&mut self, f: &For) {
        let ty = self
            .ty_of(&f.start)
            .or_else(|| self.ty_of(&f.end))
            .or_else(|| self.infer_from_uses(&f.var, &f.body, None))
            .unwrap_or_else(|| prim("i32"));
        let t = ty.cxx();
        let lo = self.expr(&f.start, Some(&ty));
        let hi = self.expr(&f.end, Some(&ty));
        let (it, end) = (self.fresh("i"), self.fresh("end"));
        self.line("{");
        self.depth += 1;
        self.line(&format!("{t} {end} = {hi};"));
        if f.inclusive {
            let go = self.fresh("go");
            self.line(&format!("bool {go} = {lo} <= {end};"));
            self.line(&format!(
                "for ({t} {it} = {lo}; {go}; {go} = {it} != {end}, {it} = {go} ? ({t})({it} + 1) : {it}) {{"
            ));
        } else {
            self.line(&format!("for ({t} {it} = {lo}; {it} < {end}; {it} = ({t})({it} + 1)) {{"));
        }
        self.depth += 1;
        self.push();
        let v = self.declare(&f.var, Some(ty.clone()));
        self.line(&format!("{t} {v} = {it};"));
        self.stmts(&f.body, None);
        self.pop();
        self.depth -= 1;
        self.line("}");
        self.depth -= 1;
        self.line("}");
    }

    fn ret(&mut self, e: Option<&Expr>) {
        let v = match (e, &self.ret) {
            (Some(e), Some(t)) => {
                let t = t.clone();
                self.expr(e, Some(&t))
            }
            (Some(e), None) => {
                if !matches!(e, Expr::Tuple(t) if t.elems.is_empty()) {
                    self.expr_stmt(e);
                }
                "gc_unit{}".into()
            }
            (None, _) => "gc_unit{}".into(),
        };
        let frees: Vec<String> = self.temps.iter().map(|t| format!("gc_free_temp(cx, {t});")).collect();
        match self.mode {
            Mode::Segment => {
                self.line(&format!("*ret = {v};"));
                for f in &frees {
                    self.line(f);
                }
                self.line("return false;");
            }
            Mode::Device if frees.is_empty() => self.line(&format!("return {v};")),
            Mode::Device => {
                let rv = self.fresh("rv");
                let t = self.ret.as_ref().map_or("gc_unit".to_string(), Ty::cxx);
                self.line("{");
                self.depth += 1;
                self.line(&format!("{t} {rv} = {v};"));
                for f in &frees {
                    self.line(f);
                }
                self.line(&format!("return {rv};"));
                self.depth -= 1;
                self.line("}");
            }
        }
    }

    fn expr_stmt(&mut self, e: &Expr) {
        match e {
            Expr::Break(b) => {
                if b.label.is_some() || b.expr.is_some() {
                    self.unsupported("a labelled `break` or `break` with a value", b.span());
                }
                self.line("break;");
            }
            Expr::Continue(c) => {
                if c.label.is_some() {
                    self.unsupported("a labelled `continue`", c.span());
                }
                self.line("continue;");
            }
            Expr::Return(r) => self.ret(r.expr.as_deref()),
            Expr::Assign(a) => {
                let t = self.ty_of(&a.left);
                let rhs = self.expr(&a.right, t.as_ref());
                let lhs = self.expr(&a.left, None);
                self.line(&format!("{lhs} = {rhs};"));
            }
            Expr::Binary(b) if compound_fn(&b.op).is_some() => {
                let f = compound_fn(&b.op).unwrap_or_default();
                let t = self.ty_of(&b.left);
                let shift = f == "gc_shl" || f == "gc_shr";
                let rhs = self.expr(&b.right, if shift { None } else { t.as_ref() });
                let site = (f == "gc_div" || f == "gc_rem").then(|| self.site(b.op.span()));
                let simple = matches!(&*b.left, Expr::Path(_));
                let lhs = self.expr(&b.left, None);
                let place = if simple {
                    lhs
                } else {
                    let lv = self.fresh("lv");
                    self.line("{");
                    self.depth += 1;
                    self.line(&format!("auto& {lv} = {lhs};"));
                    lv
                };
                let value = match site {
                    Some(s) => format!("{f}(cx, {place}, {rhs}, {s})"),
                    None => format!("{f}({place}, {rhs})"),
                };
                self.line(&format!("{place} = {value};"));
                if !simple {
                    self.depth -= 1;
                    self.line("}");
                }
            }
            Expr::Paren(p) => self.expr_stmt(&p.expr),
            other => {
                let v = self.expr(other, None);
                self.line(&format!("{v};"));
            }
        }
    }

    fn spawn(&mut self, site: &SpawnSite) {
        let callee = callee_cname(&site.path);
        let self_call = self.task.is_some_and(|t| t.name == callee.as_str());
        let params: Vec<Option<Ty>> = match self.task {
            Some(t) if self_call => t.params.iter().map(|p| Some(ty_of_type(&p.ty))).collect(),
            _ => Vec::new(),
        };
        let args: Vec<String> = site
            .args
            .iter()
            .enumerate()
            .map(|(i, a)| self.expr(a, params.get(i).cloned().flatten().as_ref()))
            .collect();
        if self.mode == Mode::Device {
            self.helper(&site.path);
            let mut all = vec!["cx".to_string()];
            all.extend(args);
            let call = format!("{callee}_dev({})", all.join(", "));
            match &site.dest {
                Dest::Discard => self.line(&format!("{call};")),
                Dest::Local { name, decl: Some(d) } => {
                    let ty = d.ty.as_ref().map(ty_of_type);
                    let n = self.declare(name, ty.clone());
                    let t = ty.map_or("auto".to_string(), |t| t.cxx());
                    self.line(&format!("{t} {n} = {call};"));
                }
                Dest::Local { name, decl: None } => {
                    let n = self.expr(&syn::parse_quote!(#name), None);
                    self.line(&format!("{n} = {call};"));
                }
                Dest::Element { array, index } => {
                    let e: Expr = syn::parse_quote!(#array[#index]);
                    let lhs = self.expr(&e, None);
                    self.line(&format!("{lhs} = {call};"));
                }
            }
            return;
        }
        let tname = self.tname.clone();
        let frame = format!("{tname}_frame");
        let offset = match &site.dest {
            Dest::Discard => "~0ull".to_string(),
            Dest::Local { name, decl } => {
                if let Some(d) = decl {
                    let ty = d.ty.as_ref().map(ty_of_type).unwrap_or_else(|| Ty::Named(format!("{callee}_ret")));
                    let n = self.declare(name, Some(ty.clone()));
                    self.line(&format!("{} {n} = {}();", ty.cxx(), ty.cxx()));
                }
                format!("GC_OFFSETOF({frame}, {})", mangle(&name.to_string()))
            }
            Dest::Element { array, index } => {
                let arr = self.expr(&syn::parse_quote!(#array), None);
                let idx = self.expr(index, Some(&prim("usize")));
                let idx = strip_usize_cast(&idx);
                let s = self.site(index.span());
                format!(
                    "gc_elem_offset(cx, {arr}, GC_OFFSETOF({frame}, {}), (gc_u64)({idx}), {s})",
                    mangle(&array.to_string())
                )
            }
        };
        let s = self.site(site.span);
        self.line(&format!(
            "gc_spawn<{tname}_task, {callee}_task>(cx, {callee}_task::Args{{{}}}, {offset}, {s});",
            args.join(", ")
        ));
    }
}

impl Binding {
    fn clone_b(&self) -> Binding {
        Binding { rust: self.rust.clone(), cxx: self.cxx.clone(), ty: self.ty.clone() }
    }
}

// ------------------------------------------------------------------------------------------------
// Small syntactic helpers.

fn arith_fn(op: &BinOp) -> Option<&'static str> {
    Some(match op {
        BinOp::Add(_) => "gc_add",
        BinOp::Sub(_) => "gc_sub",
        BinOp::Mul(_) => "gc_mul",
        BinOp::Div(_) => "gc_div",
        BinOp::Rem(_) => "gc_rem",
        BinOp::BitAnd(_) => "gc_and",
        BinOp::BitOr(_) => "gc_or",
        BinOp::BitXor(_) => "gc_xor",
        _ => return None,
    })
}

fn compound_fn(op: &BinOp) -> Option<&'static str> {
    Some(match op {
        BinOp::AddAssign(_) => "gc_add",
        BinOp::SubAssign(_) => "gc_sub",
        BinOp::MulAssign(_) => "gc_mul",
        BinOp::DivAssign(_) => "gc_div",
        BinOp::RemAssign(_) => "gc_rem",
        BinOp::BitAndAssign(_) => "gc_and",
        BinOp::BitOrAssign(_) => "gc_or",
        BinOp::BitXorAssign(_) => "gc_xor",
        BinOp::ShlAssign(_) => "gc_shl",
        BinOp::ShrAssign(_) => "gc_shr",
        _ => return None,
    })
}

/// `u64::max` → `("u64", "max")`.
fn prim_assoc(p: &Path) -> Option<(String, String)> {
    let segs: Vec<String> = p.segments.iter().map(|s| s.ident.to_string()).collect();
    match segs.as_slice() {
        [t, m] if PRIMS.contains(&t.as_str()) => Some((t.clone(), m.clone())),
        _ => None,
    }
}

/// An unsuffixed numeric literal (or an arithmetic expression of only such): its type comes
/// from context.
fn is_poly_literal(e: &Expr) -> bool {
    match e {
        Expr::Lit(l) => match &l.lit {
            Lit::Int(i) => i.suffix().is_empty(),
            Lit::Float(f) => f.suffix().is_empty(),
            _ => false,
        },
        Expr::Unary(u) if matches!(u.op, UnOp::Neg(_)) => is_poly_literal(&u.expr),
        Expr::Paren(p) => is_poly_literal(&p.expr),
        Expr::Binary(b) if arith_fn(&b.op).is_some() => is_poly_literal(&b.left) && is_poly_literal(&b.right),
        _ => false,
    }
}

fn is_float_lit(e: &Expr) -> bool {
    match e {
        Expr::Lit(l) => matches!(l.lit, Lit::Float(_)),
        Expr::Unary(u) => is_float_lit(&u.expr),
        Expr::Paren(p) => is_float_lit(&p.expr),
        Expr::Binary(b) => is_float_lit(&b.left) || is_float_lit(&b.right),
        _ => false,
    }
}

/// Text that needs no parentheses as a cast operand.
fn is_atom(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        || (s.ends_with(')') && !s.starts_with('(') && balanced_call(s))
}

fn balanced_call(s: &str) -> bool {
    // `name(...)` whose first `(` closes at the end.
    let Some(open) = s.find('(') else { return false };
    if !s[..open]
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '<' || c == '>' || c == ',' || c == ' ')
    {
        return false;
    }
    let mut depth = 0i32;
    for (i, c) in s.char_indices().skip(open) {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1 == s.len();
                }
            }
            _ => {}
        }
    }
    false
}

/// Parenthesizes an operand of an infix operator when it is itself infix.
fn paren_infix(e: &Expr, text: String) -> String {
    let infix = match e {
        Expr::Binary(b) => matches!(
            b.op,
            BinOp::And(_)
                | BinOp::Or(_)
                | BinOp::Eq(_)
                | BinOp::Ne(_)
                | BinOp::Lt(_)
                | BinOp::Le(_)
                | BinOp::Gt(_)
                | BinOp::Ge(_)
        ),
        _ => false,
    };
    if infix {
        format!("({text})")
    } else {
        text
    }
}

/// `(gc_usize)x` → `x` where the result is cast to `gc_u64` anyway.
fn strip_usize_cast(s: &str) -> String {
    for p in ["(gc_usize)", "(gc_u64)"] {
        if let Some(rest) = s.strip_prefix(p) {
            if is_atom(rest) && !rest.starts_with('(') {
                return rest.to_string();
            }
            if rest.starts_with('(') && balanced_call(&format!("x{rest}")) {
                return rest[1..rest.len() - 1].to_string();
            }
        }
    }
    s.to_string()
}

fn block_tail(stmts: &[syn::Stmt]) -> Option<&Expr> {
    match stmts.last() {
        Some(syn::Stmt::Expr(e, None)) => Some(e),
        _ => None,
    }
}

fn block_tail_only(stmts: &[syn::Stmt]) -> Option<&Expr> {
    if stmts.len() == 1 {
        block_tail(stmts)
    } else {
        None
    }
}

/// Every expression directly held by a statement tree (not descending into expressions).
fn walk_stmt_exprs<'a>(s: &'a Stmt, f: &mut dyn FnMut(&'a Expr)) {
    match s {
        Stmt::Let(l) => {
            if let Some(e) = &l.init {
                f(e);
            }
        }
        Stmt::Spawn(site) => {
            for a in &site.args {
                f(a);
            }
            if let Dest::Element { index, .. } = &site.dest {
                f(index);
            }
        }
        Stmt::If(i) => {
            f(&i.cond);
            for s in &i.then {
                walk_stmt_exprs(s, f);
            }
            for s in i.els.iter().flatten() {
                walk_stmt_exprs(s, f);
            }
        }
        Stmt::While { cond, body } => {
            f(cond);
            for s in body {
                walk_stmt_exprs(s, f);
            }
        }
        Stmt::Loop { body } | Stmt::Block(body) => {
            for s in body {
                walk_stmt_exprs(s, f);
            }
        }
        Stmt::For(fl) => {
            f(&fl.start);
            f(&fl.end);
            for s in &fl.body {
                walk_stmt_exprs(s, f);
            }
        }
        Stmt::Return(Some(e)) | Stmt::Expr { expr: e, .. } => f(e),
        Stmt::Return(None) | Stmt::Sync(_) => {}
    }
}

/// Finds the operands `name` is combined, compared or assigned with, in order.
struct UseFinder {
    name: String,
    others: Vec<Expr>,
    indexed: bool,
}

impl UseFinder {
    fn is_name(&self, e: &Expr) -> bool {
        match e {
            Expr::Path(p) => p.path.get_ident().is_some_and(|i| *i == self.name),
            Expr::Paren(p) => self.is_name(&p.expr),
            _ => false,
        }
    }
}

impl<'a> Visit<'a> for UseFinder {
    fn visit_expr_binary(&mut self, b: &'a syn::ExprBinary) {
        if !matches!(
            b.op,
            BinOp::Shl(_) | BinOp::Shr(_) | BinOp::ShlAssign(_) | BinOp::ShrAssign(_) | BinOp::And(_) | BinOp::Or(_)
        ) {
            if self.is_name(&b.left) {
                self.others.push((*b.right).clone());
            } else if self.is_name(&b.right) {
                self.others.push((*b.left).clone());
            }
        }
        syn::visit::visit_expr_binary(self, b);
    }
    fn visit_expr_assign(&mut self, a: &'a syn::ExprAssign) {
        if self.is_name(&a.left) {
            self.others.push((*a.right).clone());
        } else if self.is_name(&a.right) {
            self.others.push((*a.left).clone());
        }
        syn::visit::visit_expr_assign(self, a);
    }
    fn visit_expr_index(&mut self, i: &'a syn::ExprIndex) {
        if self.is_name(&i.index) {
            self.indexed = true;
        }
        syn::visit::visit_expr_index(self, i);
    }
}

// ------------------------------------------------------------------------------------------------
// Tasks.

fn field_ty(task: &Task, ty: &FieldType) -> Ty {
    match ty {
        FieldType::Declared(t) => ty_of_type(t),
        FieldType::OutputOf(c) => {
            Ty::Named(format!("{}_ret", task.callees.get(*c).map(|c| callee_cname(&c.path)).unwrap_or_default()))
        }
    }
}

fn output_ty(out: &Option<Type>) -> Option<Ty> {
    out.as_ref().map(ty_of_type)
}

fn asserts(unsupported: &[String]) -> String {
    let mut s = String::new();
    for u in unsupported {
        let _ = writeln!(s, "static_assert(false, \"{}\");", u.replace('\\', "\\\\").replace('"', "\\\""));
    }
    s
}

/// The CUDA fragment of a lowered task.
pub fn task_fragment(task: &Task) -> Fragment {
    let name = mangle(&task.name.to_string());
    let ret = output_ty(&task.output);
    let ret_c = ret.as_ref().map_or("gc_unit".to_string(), Ty::cxx);

    let mut decls = String::new();
    decls.push_str(PRELUDE);
    let _ = writeln!(decls, "// ---- decls: {name}");
    let _ = writeln!(decls, "typedef {ret_c} {name}_ret;");
    let fields: Vec<String> =
        task.params.iter().map(|p| format!("{} {};", ty_of_type(&p.ty).cxx(), mangle(&p.name.to_string()))).collect();
    let _ = writeln!(decls, "struct {name}_args {{ {} }};", fields.join(" "));

    let mut types = String::new();
    let _ = writeln!(types, "// ---- types: {name}");
    let ff: Vec<String> = task
        .frame
        .iter()
        .map(|f| format!("{} {};", field_ty(task, &f.ty).cxx(), mangle(&f.name.to_string())))
        .collect();
    let _ = writeln!(types, "struct {name}_frame {{ {} }};", ff.join(" "));
    let _ = writeln!(types, "struct {name}_task {{");
    for l in [
        format!("typedef {name}_args Args;"),
        format!("typedef {name}_frame Frame;"),
        format!("typedef {name}_ret Ret;"),
        "struct Pre { Args args; void* dest; };".into(),
        "struct Cont { Frame frame; Ret deferred; gc_u32 has_deferred; void* dest; };".into(),
        format!("static const gc_u32 QBASE = GC_QBASE_{name};"),
        format!("static const gc_u32 SYNCS = {};", task.syncs()),
        "static __device__ bool seg0(gc_cx& cx, Args a, Frame* out, Ret* ret);".into(),
        "static __device__ bool resume(gc_cx& cx, gc_u32 k, Frame f, Frame* out, Ret* ret);".into(),
    ] {
        let _ = writeln!(types, "  {l}");
    }
    types.push_str("};\n");

    let mut w = W::new(Some(task), Mode::Segment, name.clone(), ret);
    // Segment 0.
    w.line(&format!("__device__ bool {name}_task::seg0(gc_cx& cx, Args a, Frame* out, Ret* ret) {{"));
    w.depth = 1;
    for p in &task.params {
        let t = ty_of_type(&p.ty);
        let n = w.declare(&p.name, Some(t.clone()));
        w.line(&format!("{} {n} = a.{};", t.cxx(), mangle(&p.name.to_string())));
    }
    if let Some(seg) = task.segments.first() {
        w.temps.clear();
        segment_body(&mut w, task, seg);
    }
    w.depth = 0;
    w.line("}");
    w.line("");
    // Continuations.
    w.line(&format!("__device__ bool {name}_task::resume(gc_cx& cx, gc_u32 k, Frame f, Frame* out, Ret* ret) {{"));
    w.depth = 1;
    w.line("switch (k) {");
    for seg in task.segments.iter().skip(1) {
        w.depth = 2;
        w.line(&format!("case {}: {{", seg.index));
        w.depth = 3;
        w.scopes = vec![Vec::new()];
        w.used.clear();
        w.temps.clear();
        for &i in &seg.restores {
            if let Some(fl) = task.frame.get(i) {
                let t = field_ty(task, &fl.ty);
                let n = w.declare(&fl.name, Some(t.clone()));
                w.line(&format!("{} {n} = f.{};", t.cxx(), mangle(&fl.name.to_string())));
                if fl.temp {
                    w.temps.push(n);
                }
            }
        }
        segment_body(&mut w, task, seg);
        w.depth = 2;
        w.line("}");
    }
    w.depth = 1;
    w.line("}");
    w.line("return false;");
    w.depth = 0;
    w.line("}");
    w.line("");
    for q in 0..=task.syncs() + 1 {
        w.line(&format!("extern \"C\" __global__ void gc_{name}_q{q}(gc_launch L) {{ gc_run<{name}_task>(L, {q}); }}"));
    }
    let defs = format!("// ---- defs: {name}\n{}{}", asserts(&w.unsupported), w.out);
    Fragment { name, decls, types, defs, sites: w.sites, helpers: w.helpers }
}

fn segment_body(w: &mut W<'_>, task: &Task, seg: &crate::ir::Segment) {
    let tail = match &seg.end {
        End::Tail(e) => Some(e),
        _ => None,
    };
    w.stmts(&seg.body, tail);
    match &seg.end {
        End::Sync => {
            let vals: Vec<String> = task
                .frame
                .iter()
                .map(|f| {
                    if f.segment <= seg.index {
                        if let Some(b) = w.lookup(&f.name.to_string()) {
                            return b.cxx.clone();
                        }
                    }
                    format!("{}()", field_ty(task, &f.ty).cxx())
                })
                .collect();
            w.line(&format!("*out = {}_frame{{{}}};", w.tname, vals.join(", ")));
            w.line("return true;");
        }
        End::Tail(e) => w.ret(Some(e)),
        End::FallOff => {
            if task.output.is_none() {
                w.ret(None);
            } else {
                w.line("return false;");
            }
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Device functions.

fn device_text(
    name: &Ident,
    params: &[Param],
    output: &Option<Type>,
    task: Option<&Task>,
    body: DevBody<'_>,
) -> DeviceText {
    let cname = format!("{}_dev", mangle(&name.to_string()));
    let ret = output_ty(output);
    let ret_c = ret.as_ref().map_or("gc_unit".to_string(), Ty::cxx);
    let mut w = W::new(task, Mode::Device, mangle(&name.to_string()), ret);
    let base = format!("GC_SITEBASE_{cname}");
    w.site_base = Some(base.clone());
    let mut ps = vec!["const gc_cx& cx".to_string()];
    for p in params {
        let t = ty_of_type(&p.ty);
        let n = w.declare(&p.name, Some(t.clone()));
        ps.push(format!("{} {n}", t.cxx()));
    }
    let proto = format!("__device__ {ret_c} {cname}({})", ps.join(", "));
    w.line(&format!("{proto} {{"));
    w.depth = 1;
    match body {
        DevBody::Function(f) => {
            w.stmts(&f.body, f.tail.as_ref());
            match &f.tail {
                Some(t) => w.ret(Some(t)),
                None if f.output.is_none() => w.ret(None),
                None => {}
            }
        }
        DevBody::Task(t) => {
            for seg in &t.segments {
                let tail = match &seg.end {
                    End::Tail(e) => Some(e),
                    _ => None,
                };
                w.stmts(&seg.body, tail);
                match &seg.end {
                    End::Tail(e) => w.ret(Some(e)),
                    End::FallOff if t.output.is_none() => w.ret(None),
                    _ => {}
                }
            }
        }
    }
    w.depth = 0;
    w.line("}");
    let decl = format!("#ifndef {base}\n#define {base} 0x80000000u\n#endif\n{proto};\n");
    let def = format!("{}{}", asserts(&w.unsupported), w.out);
    DeviceText { name: name.to_string(), decl, def, sites: w.sites, helpers: w.helpers }
}

enum DevBody<'a> {
    Function(&'a Function),
    Task(&'a Task),
}

/// The serial device function of a task (what a plain call of it runs on the device).
pub fn task_device_fn(task: &Task) -> DeviceText {
    device_text(&task.name, &task.params, &task.output, Some(task), DevBody::Task(task))
}

/// The device function of a `#[gpu_cilk::device]` helper.
pub fn device_fn(f: &Function) -> DeviceText {
    device_text(&f.name, &f.params, &f.output, None, DevBody::Function(f))
}

// ------------------------------------------------------------------------------------------------
// Rust tokens.

/// `__gpu_cilk_device_<name>` for a function path, as seen from `from_module` levels below the
/// function's module (0: beside it; 1: inside the generated task module).
fn static_path(p: &Path, from_module: bool) -> TokenStream {
    let span = p.span();
    let mut p = p.clone();
    if let Some(last) = p.segments.last_mut() {
        last.ident = format_ident!("__gpu_cilk_device_{}", last.ident, span = span);
        last.arguments = syn::PathArguments::None;
    }
    if !from_module {
        return quote_spanned!(span=> #p);
    }
    match p.segments.first() {
        Some(first) if p.leading_colon.is_none() && first.ident == "self" => {
            let rest = p.segments.iter().skip(1);
            quote_spanned!(span=> super #(:: #rest)*)
        }
        Some(first) if p.leading_colon.is_none() && first.ident == "super" => quote_spanned!(span=> super::#p),
        _ => quote_spanned!(span=> #p),
    }
}

fn helper_refs(helpers: &[Path], from_module: bool) -> Vec<TokenStream> {
    helpers
        .iter()
        .map(|h| {
            let p = static_path(h, from_module);
            let span = h.span();
            quote_spanned!(span=> &#p)
        })
        .collect()
}

/// `const CUDA: Option<&'static CudaFragment> = Some(&CudaFragment { .. });` for the task's
/// `impl CilkTask` (inside the generated module).
pub fn cuda_const(task: &Task) -> TokenStream {
    let f = task_fragment(task);
    let (name, decls, types, defs) = (&f.name, &f.decls, &f.types, &f.defs);
    let sites = &f.sites;
    let helpers = helper_refs(&f.helpers, true);
    quote! {
        const CUDA: ::core::option::Option<&'static ::gpu_cilk::runtime::CudaFragment> =
            ::core::option::Option::Some(&::gpu_cilk::runtime::CudaFragment {
                name: #name,
                decls: #decls,
                types: #types,
                defs: #defs,
                sites: &[#(#sites),*],
                helpers: &[#(#helpers),*],
            });
    }
}

fn device_static(vis: &syn::Visibility, name: &Ident, d: &DeviceText) -> TokenStream {
    let id = format_ident!("__gpu_cilk_device_{}", name);
    let (n, decl, def, sites) = (&d.name, &d.decl, &d.def, &d.sites);
    let helpers = helper_refs(&d.helpers, false);
    quote! {
        #[doc(hidden)]
        #[allow(non_upper_case_globals)]
        #vis static #id: ::gpu_cilk::runtime::DeviceFn = ::gpu_cilk::runtime::DeviceFn {
            name: #n,
            decl: #decl,
            def: #def,
            sites: &[#(#sites),*],
            helpers: &[#(#helpers),*],
        };
    }
}

/// The `__gpu_cilk_device_<name>` static of a task (its serial device function).
pub fn task_static(task: &Task) -> TokenStream {
    device_static(&task.vis, &task.name, &task_device_fn(task))
}

/// The `__gpu_cilk_device_<name>` static of a `#[gpu_cilk::device]` helper.
pub fn helper_static(f: &Function) -> TokenStream {
    device_static(&f.vis, &f.name, &device_fn(f))
}

//! Name resolution and the read-before-sync rule, segment by segment.
//!
//! This module owns the scoping of the subset (blocks, `for` variables, shadowing): every use of a
//! name is resolved to a *top-level declaration* ([`Decl`]: a parameter or a `let` directly in
//! the body) or to a nested local; it records which declarations are used in a later segment or
//! written by a spawn, and reports spawns into nested or unknown locals and uses of a spawn
//! destination after a spawn into it in the same segment (or anywhere in a loop that spawns into
//! it). What becomes a frame field is decided by `lower` from the result.

use crate::error::{self, Errors};
use crate::ir::{Dest, FieldOrigin, FieldType, If, Param, SpawnSite, Stmt};
use proc_macro2::Span;
use syn::visit::Visit;
use syn::{Expr, Ident, Type};

/// What name resolution found: every top-level declaration, and the pairs of top-level
/// declarations of the same name.
pub(super) struct Resolved {
    /// Parameters first, then the top-level `let`s and `let x = spawn!(..)`s, in textual order.
    pub(super) decls: Vec<Decl>,
    /// (earlier declaration, later declaration) of the same name at top level.
    pub(super) shadows: Vec<(usize, usize)>,
}

/// Resolves every name of the segments `bodies` (and of the tail expression, which ends the last
/// one); reports spawns into nested or unknown locals and reads of spawned values before the
/// next `sync!()`.
pub(super) fn resolve(params: &[Param], bodies: &[Vec<Stmt>], tail: Option<&Expr>, errors: &mut Errors) -> Resolved {
    let mut r = Resolver::new(errors);
    for p in params {
        r.declare_top(Decl {
            name: p.name.clone(),
            mutable: p.mutable,
            segment: 0,
            origin: FieldOrigin::Param,
            ty: Some(FieldType::Declared(p.ty.clone())),
            init: true,
            spawn_dest: false,
            used_later: false,
            temp: false,
        });
    }
    for (k, body) in bodies.iter().enumerate() {
        r.segment = k;
        r.events.clear();
        r.stmts(body, true);
        if k + 1 == bodies.len() {
            if let Some(t) = tail {
                r.visit_expr(t);
            }
        }
        r.check_events();
    }
    Resolved { decls: r.decls, shadows: r.shadows }
}

/// A top-level declaration (a parameter or a `let` directly in the body).
#[derive(Debug, Clone)]
pub(super) struct Decl {
    pub(super) name: Ident,
    pub(super) mutable: bool,
    /// The segment whose top level declares it.
    pub(super) segment: usize,
    pub(super) origin: FieldOrigin,
    /// Its type, where written or readable off the initializer.
    pub(super) ty: Option<FieldType>,
    /// Initialized where declared.
    pub(super) init: bool,
    /// Some spawn writes into it.
    pub(super) spawn_dest: bool,
    /// Used in a later segment than the one that declares it.
    pub(super) used_later: bool,
    /// A temporary made by `alloc!`.
    pub(super) temp: bool,
}

#[derive(Debug, Clone, Copy)]
enum Binding {
    Top(usize),
    Nested,
}

/// One event of a segment, in textual order, for the read-before-sync rule.
#[derive(Debug)]
enum Event {
    Use { decl: usize, span: Span, loops: Vec<usize> },
    Spawn { decl: usize, loops: Vec<usize> },
}

struct Resolver<'e> {
    errors: &'e mut Errors,
    /// Innermost scope last; each scope maps names to bindings, latest binding last.
    scopes: Vec<Vec<(String, Binding)>>,
    decls: Vec<Decl>,
    /// (earlier declaration, later declaration) of the same name at top level.
    shadows: Vec<(usize, usize)>,
    segment: usize,
    loops: Vec<usize>,
    next_loop: usize,
    events: Vec<Event>,
}

impl<'e> Resolver<'e> {
    fn new(errors: &'e mut Errors) -> Self {
        Resolver {
            errors,
            scopes: vec![Vec::new()],
            decls: Vec::new(),
            shadows: Vec::new(),
            segment: 0,
            loops: Vec::new(),
            next_loop: 0,
            events: Vec::new(),
        }
    }

    fn lookup(&self, name: &str) -> Option<Binding> {
        self.scopes.iter().rev().find_map(|s| s.iter().rev().find(|(n, _)| n == name).map(|(_, b)| *b))
    }

    fn declare_top(&mut self, d: Decl) -> usize {
        let name = d.name.to_string();
        if let Some(Binding::Top(old)) =
            self.scopes.first().and_then(|s| s.iter().rev().find(|(n, _)| *n == name)).map(|(_, b)| *b)
        {
            self.shadows.push((old, self.decls.len()));
        }
        self.decls.push(d);
        let id = self.decls.len() - 1;
        if let Some(top) = self.scopes.first_mut() {
            top.push((name, Binding::Top(id)));
        }
        id
    }

    fn declare_nested(&mut self, name: &Ident) {
        if let Some(s) = self.scopes.last_mut() {
            s.push((name.to_string(), Binding::Nested));
        }
    }

    fn use_name(&mut self, name: &Ident) {
        if let Some(Binding::Top(id)) = self.lookup(&name.to_string()) {
            if let Some(d) = self.decls.get_mut(id) {
                if self.segment > d.segment {
                    d.used_later = true;
                }
            }
            self.events.push(Event::Use { decl: id, span: name.span(), loops: self.loops.clone() });
        }
    }

    fn scoped(&mut self, f: impl FnOnce(&mut Self)) {
        self.scopes.push(Vec::new());
        f(self);
        self.scopes.pop();
    }

    fn in_loop(&mut self, f: impl FnOnce(&mut Self)) {
        self.loops.push(self.next_loop);
        self.next_loop += 1;
        f(self);
        self.loops.pop();
    }

    fn stmts(&mut self, stmts: &[Stmt], top: bool) {
        for s in stmts {
            self.stmt(s, top);
        }
    }

    fn block(&mut self, stmts: &[Stmt]) {
        self.scoped(|r| r.stmts(stmts, false));
    }

    fn stmt(&mut self, s: &Stmt, top: bool) {
        match s {
            Stmt::Let(l) => {
                if let Some(init) = &l.init {
                    self.visit_expr(init);
                }
                if let Some(a) = &l.alloc {
                    self.visit_expr(&a.len);
                }
                if top {
                    let ty = l.ty.clone().or_else(|| l.init.as_ref().and_then(syntactic_type)).map(FieldType::Declared);
                    self.declare_top(Decl {
                        name: l.name.clone(),
                        mutable: l.mutable,
                        segment: self.segment,
                        origin: FieldOrigin::Local,
                        ty,
                        init: l.init.is_some() || l.alloc.is_some(),
                        spawn_dest: false,
                        used_later: false,
                        temp: l.alloc.is_some(),
                    });
                } else {
                    self.declare_nested(&l.name);
                }
            }
            Stmt::Spawn(site) => self.spawn(site, top),
            Stmt::If(i) => self.if_stmt(i),
            Stmt::While { cond, body } => self.in_loop(|r| {
                r.visit_expr(cond);
                r.block(body);
            }),
            Stmt::Loop { body } => self.in_loop(|r| r.block(body)),
            Stmt::For(f) => {
                self.visit_expr(&f.start);
                self.visit_expr(&f.end);
                self.in_loop(|r| {
                    r.scoped(|r| {
                        r.declare_nested(&f.var);
                        r.stmts(&f.body, false);
                    })
                });
            }
            Stmt::Block(b) => self.block(b),
            Stmt::Return(e) => {
                if let Some(e) = e {
                    self.visit_expr(e);
                }
            }
            Stmt::Expr { expr, .. } => self.visit_expr(expr),
            Stmt::Sync(_) | Stmt::Jump(_) => {}
        }
    }

    fn if_stmt(&mut self, i: &If) {
        self.visit_expr(&i.cond);
        self.block(&i.then);
        if let Some(e) = &i.els {
            self.block(e);
        }
    }

    fn spawn(&mut self, site: &SpawnSite, top: bool) {
        for a in site.exprs() {
            self.visit_expr(a);
        }
        let target = match &site.dest {
            Dest::Discard => return,
            Dest::Local { name, decl: Some(decl) } => {
                if !top {
                    self.errors.push(error::spawn_into_nested(name));
                    self.declare_nested(name);
                    return;
                }
                let ty = Some(match &decl.ty {
                    Some(t) => FieldType::Declared(t.clone()),
                    None => FieldType::OutputOf(site.callee),
                });
                let id = self.declare_top(Decl {
                    name: name.clone(),
                    mutable: decl.mutable,
                    segment: self.segment,
                    origin: FieldOrigin::Local,
                    ty,
                    init: true,
                    spawn_dest: true,
                    used_later: false,
                    temp: false,
                });
                self.events.push(Event::Spawn { decl: id, loops: self.loops.clone() });
                return;
            }
            Dest::Local { name, decl: None } => name,
            Dest::Element { array, index } => {
                self.visit_expr(index);
                array
            }
        };
        match self.lookup(&target.to_string()) {
            Some(Binding::Top(id)) => {
                if let Some(d) = self.decls.get_mut(id) {
                    d.spawn_dest = true;
                    if self.segment > d.segment {
                        d.used_later = true;
                    }
                }
                self.events.push(Event::Spawn { decl: id, loops: self.loops.clone() });
            }
            Some(Binding::Nested) => self.errors.push(error::spawn_into_nested(target)),
            None => self.errors.push(error::spawn_into_unknown(target)),
        }
    }

    /// Reports uses of spawn destinations after a spawn into them, or in a loop that spawns into
    /// them, within the current segment.
    fn check_events(&mut self) {
        let mut reported = Vec::new();
        for (i, ev) in self.events.iter().enumerate() {
            let Event::Use { decl, span, loops } = ev else { continue };
            let bad = self.events.iter().enumerate().any(|(j, other)| match other {
                Event::Spawn { decl: d, loops: sl } if d == decl => j < i || sl.iter().any(|l| loops.contains(l)),
                _ => false,
            });
            if bad {
                if let Some(d) = self.decls.get(*decl) {
                    reported.push(error::read_before_sync(*span, &d.name));
                }
            }
        }
        for e in reported {
            self.errors.push(e);
        }
    }
}

impl<'ast> Visit<'ast> for Resolver<'_> {
    fn visit_expr_path(&mut self, p: &'ast syn::ExprPath) {
        if let Some(name) = crate::syntax::single_ident(p) {
            self.use_name(&name);
        }
    }

    fn visit_block(&mut self, b: &'ast syn::Block) {
        self.scoped(|r| {
            for s in &b.stmts {
                r.visit_stmt(s);
            }
        });
    }

    fn visit_local(&mut self, l: &'ast syn::Local) {
        if let Some(init) = &l.init {
            self.visit_expr(&init.expr);
        }
        if let Some((name, _, _)) = crate::syntax::let_binding(&l.pat) {
            self.declare_nested(&name);
        }
    }

    fn visit_expr_while(&mut self, w: &'ast syn::ExprWhile) {
        self.in_loop(|r| {
            r.visit_expr(&w.cond);
            r.visit_block(&w.body);
        });
    }

    fn visit_expr_loop(&mut self, l: &'ast syn::ExprLoop) {
        self.in_loop(|r| r.visit_block(&l.body));
    }

    fn visit_expr_for_loop(&mut self, f: &'ast syn::ExprForLoop) {
        self.visit_expr(&f.expr);
        self.in_loop(|r| {
            r.scoped(|r| {
                if let syn::Pat::Ident(pi) = &*f.pat {
                    r.declare_nested(&pi.ident);
                }
                r.visit_block(&f.body);
            })
        });
    }

    fn visit_macro(&mut self, _: &'ast syn::Macro) {}

    fn visit_expr_method_call(&mut self, m: &'ast syn::ExprMethodCall) {
        self.visit_expr(&m.receiver);
        for a in &m.args {
            self.visit_expr(a);
        }
    }
}

/// The type of an initializer when it is written in it: a suffixed literal, `true`/`false`, an
/// `as` cast, or an array of those (`[0u64; 16]`, `[1u8, 2, 3]`).
pub fn syntactic_type(e: &Expr) -> Option<Type> {
    match e {
        Expr::Lit(l) => {
            let suffix = match &l.lit {
                syn::Lit::Int(i) => i.suffix().to_string(),
                syn::Lit::Float(f) => f.suffix().to_string(),
                syn::Lit::Bool(_) => "bool".to_string(),
                _ => String::new(),
            };
            if suffix.is_empty() {
                None
            } else {
                syn::parse_str::<Type>(&suffix).ok()
            }
        }
        Expr::Cast(c) => Some((*c.ty).clone()),
        Expr::Paren(p) => syntactic_type(&p.expr),
        Expr::Group(g) => syntactic_type(&g.expr),
        Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => syntactic_type(&u.expr),
        Expr::Repeat(r) => {
            let elem = syntactic_type(&r.expr)?;
            let len = &r.len;
            Some(syn::parse_quote!([#elem; #len]))
        }
        Expr::Tuple(t) if !t.elems.is_empty() => {
            let elems = t.elems.iter().map(syntactic_type).collect::<Option<Vec<Type>>>()?;
            Some(syn::parse_quote!((#(#elems),*)))
        }
        Expr::Array(a) => {
            let elem = a.elems.iter().find_map(syntactic_type)?;
            let len = a.elems.len();
            Some(syn::parse_quote!([#elem; #len]))
        }
        _ => None,
    }
}
